//! The engine's spans: `invoke_agent` for a call, `chat` for a model call and
//! `execute_tool` for a tool call, named, typed and attributed as the OpenTelemetry GenAI
//! semantic conventions say, with what hooks and the engine decided as span events.
//!
//! A [`TracingHook`](crate::hooks::TracingHook) asks for them: it hands each event of a call
//! to [`observe`], which opens, fills and closes the spans and keeps them in the call's
//! extensions. The engine makes the open `chat` or `execute_tool` span current while the model
//! or a tool runs ([`chat_span`], [`tool_spans`], [`invoke_span`]), and records decisions on
//! the call span ([`record`]). Without a `TracingHook` none of this does anything.

use std::borrow::Cow;

use agentscope_core::{
    AgentError, CallInfo, ChatUsage, ContentBlock, ConversationError, Extensions, GenerateOptions,
    GenerateReason, HookEvent, ModelError, Msg, Role, ToolResultBlock, ToolUseBlock,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::Span;
use tracing::field::Empty;

use crate::call_state::{self, InstanceId};

/// The target of every span and span event here: the hook that asks for them, as it was
/// before the spans moved into the engine, so filters and exporters keep matching them
/// ([`TracingHook::TARGET`](crate::hooks::TracingHook::TARGET)).
pub(crate) const TARGET: &str = "agentscope::hooks::tracing";

/// The `error.type` of spans left open by a call that never finished.
const CANCELLED: &str = "cancelled";

/// A tool call of the batch: its span opens when its tool starts.
struct ToolSpan {
    tool_use: ToolUseBlock,
    description: Option<String>,
    span: Option<Span>,
}

/// The open spans of one call, kept in the call's extensions.
///
/// Fields drop in declaration order: children close before the call span.
struct CallSpans {
    chat: Option<Span>,
    tools: Vec<ToolSpan>,
    span: Span,
    record_content: bool,
    /// The model of the last reasoning step (the summary's `chat` span reuses it).
    model: Option<String>,
    usage: Option<ChatUsage>,
    /// Whether PostCall or Error closed the spans; otherwise dropping them marks them
    /// cancelled.
    closed: bool,
}

impl CallSpans {
    fn new(span: Span, record_content: bool) -> Self {
        Self {
            span,
            record_content,
            model: None,
            chat: None,
            tools: Vec::new(),
            usage: None,
            closed: false,
        }
    }

    /// Records `error.type` (and the status) on every open span of the call.
    fn fail_all(&mut self, error_type: &str, description: &str) {
        for span in self
            .chat
            .iter()
            .chain(self.tools.iter().filter_map(|tool| tool.span.as_ref()))
        {
            mark_error(span, error_type, description);
        }
        mark_error(&self.span, error_type, description);
        self.closed = true;
    }

    /// The `execute_tool` span of `id`, opened now if its tool had not started.
    fn open_tool(&mut self, id: &str) -> Option<Span> {
        let parent = &self.span;
        let record_content = self.record_content;
        let tool = self.tools.iter_mut().find(|tool| tool.tool_use.id == id)?;
        let span = tool.span.get_or_insert_with(|| {
            tool_span(
                parent,
                &tool.tool_use,
                tool.description.as_deref(),
                record_content,
            )
        });
        Some(span.clone())
    }
}

impl Drop for CallSpans {
    fn drop(&mut self) {
        if !self.closed {
            self.fail_all(
                CANCELLED,
                "the call ended without PostCall or Error (it was dropped)",
            );
        }
    }
}

/// The spans of the `TracingHook` registered as `instance` in a call.
fn spans_of(extensions: &mut Extensions, instance: InstanceId) -> Option<&mut CallSpans> {
    call_state::get_mut::<CallSpans>(extensions, instance)
}

/// Opens, fills and closes the spans of `event`'s call for the
/// [`TracingHook`](crate::hooks::TracingHook) registered as `instance` (its spans live in the
/// call's extensions under that instance), with message content when `record_content`.
pub(crate) fn observe(event: &mut HookEvent, instance: InstanceId, record_content: bool) {
    // Without spans for this call (no subscriber, or one that filters them out) there is
    // nothing to record: leave before copying anything out of the event.
    if !matches!(event, HookEvent::PreCall(_))
        && spans_of(event.extensions_mut(), instance).is_none()
    {
        return;
    }
    match event {
        // An observation is no call: no span.
        HookEvent::PreCall(e) if e.is_observation() => {}
        HookEvent::PreCall(e) => {
            let span = call_span(e.call());
            if !span.is_disabled() {
                let spans = CallSpans::new(span, record_content);
                call_state::insert(e.extensions_mut(), instance, spans);
            }
        }
        HookEvent::PostCall(e) => {
            let spans = call_state::take::<CallSpans>(e.extensions_mut(), instance);
            finish_call(spans, e.final_message());
        }
        HookEvent::PreReasoning(e) => {
            let (model, options) = (e.model_name().to_owned(), e.generate_options().clone());
            let content = record_content.then(|| {
                (
                    input_messages(e.input_messages()),
                    system(e.system_message()),
                )
            });
            let call = e.call().clone();
            if let Some(spans) = spans_of(e.extensions_mut(), instance) {
                start_chat(spans, &call, Some(model), &options, content);
            }
        }
        HookEvent::PostReasoning(e) => {
            let response = Response::of(e.reasoning_message(), record_content);
            if let Some(spans) = spans_of(e.extensions_mut(), instance) {
                finish_chat(spans, response);
            }
        }
        HookEvent::PreSummary(e) => {
            let options = e.generate_options().clone();
            let content = record_content.then(|| {
                (
                    input_messages(e.input_messages()),
                    system(e.system_message()),
                )
            });
            let call = e.call().clone();
            if let Some(spans) = spans_of(e.extensions_mut(), instance) {
                start_chat(spans, &call, None, &options, content);
            }
        }
        HookEvent::PostSummary(e) => {
            let response = Response::of(e.summary_message(), record_content);
            if let Some(spans) = spans_of(e.extensions_mut(), instance) {
                finish_chat(spans, response);
            }
        }
        HookEvent::PreActing(e) => {
            let tool_use = e.tool_use().clone();
            let description = e
                .call()
                .tool_schema(&tool_use.name)
                .map(|schema| schema.description.clone())
                .filter(|description| !description.is_empty());
            if let Some(spans) = spans_of(e.extensions_mut(), instance) {
                // A call seen again (a hook replaced it) starts over.
                spans.tools.retain(|tool| tool.tool_use.id != tool_use.id);
                spans.tools.push(ToolSpan {
                    tool_use,
                    description,
                    span: None,
                });
            }
        }
        HookEvent::PostActing(e) => {
            let result = e.tool_result().clone();
            if let Some(spans) = spans_of(e.extensions_mut(), instance) {
                finish_tool(spans, &result);
            }
        }
        HookEvent::Error(e) => {
            let spans = call_state::take::<CallSpans>(e.extensions_mut(), instance);
            fail_call(spans, e.call(), e.error());
        }
        HookEvent::ReasoningChunk(_) | HookEvent::ActingChunk(_) | HookEvent::SummaryChunk(_) => {}
    }
}

// The engine's side: the spans it makes current, and the decisions it records.

/// The `chat` span open in this call (the first `TracingHook`'s), for the engine to make
/// current while the model is called; a disabled span without one.
pub(crate) fn chat_span(extensions: &mut Extensions) -> Span {
    call_state::first_mut::<CallSpans>(extensions)
        .and_then(|spans| spans.chat.clone())
        .unwrap_or_else(Span::none)
}

/// The `invoke_agent` span of this call (the first `TracingHook`'s), for the engine to make
/// current while a custom reply runs; a disabled span without one.
pub(crate) fn invoke_span(extensions: &mut Extensions) -> Span {
    call_state::first_mut::<CallSpans>(extensions)
        .map(|spans| spans.span.clone())
        .unwrap_or_else(Span::none)
}

/// Opens the `execute_tool` span of each call whose id is given (the first
/// `TracingHook`'s), for the engine to make current while the tool runs: one span per
/// item (a disabled one for `None`); no spans at all without a `TracingHook`.
pub(crate) fn tool_spans<'a>(
    extensions: &mut Extensions,
    ids: impl Iterator<Item = Option<&'a str>>,
) -> Vec<Span> {
    match call_state::first_mut::<CallSpans>(extensions) {
        Some(spans) => ids
            .map(|id| {
                id.and_then(|id| spans.open_tool(id))
                    .unwrap_or_else(Span::none)
            })
            .collect(),
        None => Vec::new(),
    }
}

/// What a hook or the engine decided, recorded as an event on the call span.
pub(crate) enum Decision<'a> {
    /// A tool call needs a person's decision (the call stops).
    ApprovalAsked(&'a ToolUseBlock),
    /// A person approved a tool call.
    Approved(&'a ToolUseBlock),
    /// A person changed a tool call's arguments.
    Edited(&'a ToolUseBlock),
    /// A person rejected a tool call.
    Rejected(&'a ToolUseBlock),
    /// A PreActing hook answered a call instead of its tool.
    Skipped {
        hook: &'a str,
        tool: &'a ToolUseBlock,
    },
    /// The call's input resolved a tool call in doubt, with `action` (see
    /// `Call::resolved_in_doubt` in the engine).
    InDoubtResolved {
        tool: &'a ToolUseBlock,
        action: &'static str,
    },
    /// A PostReasoning hook asked to reason again.
    Goto { hook: &'a str },
    /// A hook asked to stop, after reasoning or acting.
    Stop { hook: &'a str, step: &'static str },
    /// A context hook shrank the request.
    #[cfg(feature = "context")]
    Compacted { before: u64, after: u64 },
}

/// Records `decision` on the call span of the first `TracingHook` (nothing without one).
pub(crate) fn record(extensions: &mut Extensions, decision: Decision<'_>) {
    let Some(spans) = call_state::first_mut::<CallSpans>(extensions) else {
        return;
    };
    let parent = &spans.span;
    macro_rules! tool_event {
        ($name:literal, $tool:expr) => {
            tracing::event!(
                target: TARGET,
                parent: parent,
                tracing::Level::INFO,
                gen_ai.tool.name = $tool.name.as_str(),
                gen_ai.tool.call.id = $tool.id.as_str(),
                $name
            )
        };
    }
    match decision {
        Decision::ApprovalAsked(tool) => tool_event!("agentscope.approval.asked", tool),
        Decision::Approved(tool) => tool_event!("agentscope.approval.approved", tool),
        Decision::Edited(tool) => tool_event!("agentscope.approval.edited", tool),
        Decision::Rejected(tool) => tool_event!("agentscope.approval.rejected", tool),
        Decision::Skipped { hook, tool } => tracing::event!(
            target: TARGET,
            parent: parent,
            tracing::Level::INFO,
            agentscope.hook.name = hook,
            gen_ai.tool.name = tool.name.as_str(),
            gen_ai.tool.call.id = tool.id.as_str(),
            "agentscope.tool.skipped"
        ),
        Decision::InDoubtResolved { tool, action } => tracing::event!(
            target: TARGET,
            parent: parent,
            tracing::Level::INFO,
            gen_ai.tool.name = tool.name.as_str(),
            gen_ai.tool.call.id = tool.id.as_str(),
            agentscope.in_doubt.action = action,
            "agentscope.in_doubt.resolved"
        ),
        Decision::Goto { hook } => tracing::event!(
            target: TARGET,
            parent: parent,
            tracing::Level::INFO,
            agentscope.hook.name = hook,
            "agentscope.goto_reasoning"
        ),
        Decision::Stop { hook, step } => tracing::event!(
            target: TARGET,
            parent: parent,
            tracing::Level::INFO,
            agentscope.hook.name = hook,
            agentscope.step = step,
            "agentscope.stop_agent"
        ),
        #[cfg(feature = "context")]
        Decision::Compacted { before, after } => tracing::event!(
            target: TARGET,
            parent: parent,
            tracing::Level::INFO,
            agentscope.context.tokens_before = int(before),
            agentscope.context.tokens_after = int(after),
            "agentscope.context.compacted"
        ),
    }
}

// ---------------------------------------------------------------------------------------

/// `gen_ai.provider.name`: the model's provider, `_OTHER` when it does not say.
fn provider(call: &CallInfo) -> &str {
    call.agent().model_provider().unwrap_or("_OTHER")
}

/// Opens a call's `invoke_agent` span.
fn call_span(call: &CallInfo) -> Span {
    let agent = call.agent();
    let span = tracing::info_span!(
        target: TARGET,
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {}", agent.name()),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = provider(call),
        gen_ai.agent.name = agent.name(),
        gen_ai.agent.id = agent.id(),
        gen_ai.conversation.id = agent.conversation_id(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        agentscope.call.id = %call.id(),
        agentscope.call.resumed_from = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if let Some(previous) = call.resumed_from() {
        span.record(
            "agentscope.call.resumed_from",
            tracing::field::display(previous),
        );
    }
    span
}

fn finish_call(spans: Option<CallSpans>, reply: &Msg) {
    let Some(mut call) = spans else { return };
    call.closed = true;
    if let Some(usage) = call.usage {
        record_usage(&call.span, usage);
    }
    let reason = reply.generate_reason();
    if let Some(chat) = &call.chat {
        mark_cut_short(chat, reason);
    }
    for tool in &call.tools {
        if let Some(span) = &tool.span
            && reason != Some(GenerateReason::ToolSuspended)
        {
            mark_cut_short(span, reason);
        }
    }
}

fn fail_call(spans: Option<CallSpans>, call: &CallInfo, error: &AgentError) {
    let kind = error_type(error);
    match spans {
        Some(mut spans) => spans.fail_all(&kind, &error.to_string()),
        // The call started before this hook was registered: keep the failure visible.
        None => tracing::event!(
            target: TARGET,
            tracing::Level::ERROR,
            gen_ai.agent.name = call.agent().name(),
            gen_ai.agent.id = call.agent().id(),
            error.type = %kind,
            "agent call failed without an open call span: {error}"
        ),
    }
}

/// Opens a `chat` span; `model` is `None` for the summary (the last reasoning step's model
/// is used). `content`: the input messages and system instructions, as JSON, when recorded.
fn start_chat(
    call: &mut CallSpans,
    info: &CallInfo,
    model: Option<String>,
    options: &GenerateOptions,
    content: Option<(String, Option<String>)>,
) {
    if let Some(model) = model {
        call.model = Some(model);
    }
    let model = call.model.as_deref().unwrap_or("unknown");
    let span = tracing::info_span!(
        target: TARGET,
        parent: &call.span,
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider(info),
        gen_ai.conversation.id = info.agent().conversation_id(),
        gen_ai.request.model = model,
        gen_ai.request.temperature = Empty,
        gen_ai.request.top_p = Empty,
        gen_ai.request.max_tokens = Empty,
        gen_ai.request.seed = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.system_instructions = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    record_options(&span, options);
    if let Some((input, system)) = content {
        span.record("gen_ai.input.messages", input);
        if let Some(system) = system {
            span.record("gen_ai.system_instructions", system);
        }
    }
    // A step that did not finish (the provider refused the input as too long and the
    // step starts over) was cut short.
    if let Some(previous) = call.chat.replace(span) {
        mark_error(&previous, "_OTHER", "the model call was made again");
    }
}

/// What a model message says about its response.
struct Response {
    usage: Option<ChatUsage>,
    id: Option<String>,
    model: Option<String>,
    finish_reason: Option<String>,
    /// `gen_ai.output.messages`, when content is recorded.
    output: Option<String>,
}

impl Response {
    fn of(message: &Msg, record_content: bool) -> Self {
        Self {
            usage: message_usage(message),
            id: message.response_id().map(str::to_owned),
            model: message.response_model().map(str::to_owned),
            finish_reason: message.finish_reason().map(str::to_owned),
            output: record_content.then(|| output_messages(message)),
        }
    }
}

fn finish_chat(call: &mut CallSpans, response: Response) {
    if let Some(usage) = &response.usage {
        call.usage.get_or_insert_with(ChatUsage::default).add(usage);
    }
    let Some(span) = call.chat.take() else {
        return;
    };
    if let Some(usage) = response.usage {
        record_usage(&span, usage);
    }
    if let Some(id) = &response.id {
        span.record("gen_ai.response.id", id.as_str());
    }
    if let Some(model) = &response.model {
        span.record("gen_ai.response.model", model.as_str());
    }
    if let Some(reason) = &response.finish_reason {
        // The conventions' array of one reason per choice (one choice here), as JSON:
        // `tracing` has no array values (agentscope-otel exports it as an array).
        span.record(
            "gen_ai.response.finish_reasons",
            json!([reason]).to_string(),
        );
    }
    if let Some(output) = response.output {
        span.record("gen_ai.output.messages", output);
    }
}

fn tool_span(
    parent: &Span,
    tool_use: &ToolUseBlock,
    description: Option<&str>,
    record_content: bool,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        parent: parent,
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", tool_use.name),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool_use.name.as_str(),
        gen_ai.tool.call.id = tool_use.id.as_str(),
        gen_ai.tool.type = "function",
        gen_ai.tool.description = description,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if record_content {
        span.record(
            "gen_ai.tool.call.arguments",
            tracing::field::display(&tool_use.input),
        );
    }
    span
}

fn finish_tool(call: &mut CallSpans, result: &ToolResultBlock) {
    // Opened now when its tool never started (a hook skipped it): it lasts no time.
    let Some(span) = call.open_tool(&result.id) else {
        return;
    };
    call.tools.retain(|tool| tool.tool_use.id != result.id);
    let text = result.text_output();
    if call.record_content {
        span.record("gen_ai.tool.call.result", text.as_str());
    }
    if result.is_error {
        mark_error(&span, "tool_error", &text);
    }
}

// ---------------------------------------------------------------------------------------
// Content, as the conventions' JSON: messages of parts.

/// One content block as a part, `None` for what is not captured (images, ...).
fn part(block: &ContentBlock) -> Option<Value> {
    Some(match block {
        ContentBlock::Text(text) => json!({"type": "text", "content": &*text.text}),
        ContentBlock::Thinking(thinking) => {
            json!({"type": "reasoning", "content": &*thinking.thinking})
        }
        ContentBlock::ToolUse(call) => json!({
            "type": "tool_call", "id": call.id.as_str(), "name": call.name.as_str(),
            "arguments": &call.input,
        }),
        ContentBlock::ToolResult(result) => json!({
            "type": "tool_call_response", "id": result.id.as_str(),
            "result": result.text_output(),
        }),
        _ => return None,
    })
}

fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
    }
}

fn message(msg: &Msg) -> Value {
    let parts: Vec<Value> = msg.content.iter().filter_map(part).collect();
    json!({"role": role(msg.role), "parts": parts})
}

/// `gen_ai.input.messages`.
fn input_messages(messages: &[Msg]) -> String {
    Value::Array(messages.iter().map(message).collect()).to_string()
}

/// `gen_ai.system_instructions`: the system message's parts.
fn system(system: Option<&Msg>) -> Option<String> {
    let parts: Vec<Value> = system?.content.iter().filter_map(part).collect();
    Some(Value::Array(parts).to_string())
}

/// `gen_ai.output.messages`: the one choice, with its finish reason.
fn output_messages(msg: &Msg) -> String {
    let mut output = message(msg);
    if let Some(reason) = msg.finish_reason() {
        output["finish_reason"] = json!(reason);
    }
    json!([output]).to_string()
}

fn record_options(span: &Span, options: &GenerateOptions) {
    if let Some(temperature) = options.temperature {
        span.record("gen_ai.request.temperature", f64::from(temperature));
    }
    if let Some(top_p) = options.top_p {
        span.record("gen_ai.request.top_p", f64::from(top_p));
    }
    if let Some(max_tokens) = options.max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(max_tokens));
    }
    if let Some(seed) = options.seed {
        match i64::try_from(seed) {
            Ok(seed) => span.record("gen_ai.request.seed", seed),
            // Beyond OpenTelemetry's integers: as text.
            Err(_) => span.record("gen_ai.request.seed", seed),
        };
    }
}

fn record_usage(span: &Span, usage: ChatUsage) {
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    if let Some(read) = usage.cache_read_input_tokens {
        span.record("gen_ai.usage.cache_read.input_tokens", int(read));
    }
    if let Some(written) = usage.cache_creation_input_tokens {
        span.record("gen_ai.usage.cache_creation.input_tokens", int(written));
    }
}

/// A count as the conventions' `int`: `tracing-opentelemetry` exports a `u64` field as a
/// string (OpenTelemetry has no unsigned integers) and an `i64` as an integer.
pub(crate) fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

fn mark_error(span: &Span, error_type: &str, description: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", description);
}

/// Marks a span that was still open when its call completed.
fn mark_cut_short(span: &Span, reason: Option<GenerateReason>) {
    if reason == Some(GenerateReason::Interrupted) {
        mark_error(span, "interrupted", "the call was interrupted");
    } else {
        mark_error(
            span,
            "_OTHER",
            "the call completed before this operation finished",
        );
    }
}

/// The usage the engine stored in a model message's metadata.
fn message_usage(message: &Msg) -> Option<ChatUsage> {
    message
        .metadata
        .get("usage")
        .and_then(|value| ChatUsage::deserialize(value).ok())
}

/// A short, low-cardinality name for the kind of `error` (the `error.type` attribute).
pub(crate) fn error_type(error: &AgentError) -> Cow<'static, str> {
    Cow::Borrowed(match error {
        AgentError::Busy => "busy",
        AgentError::Hook { .. } => "hook_error",
        AgentError::Model(model) => return model_error_type(model),
        AgentError::Conversation(ConversationError::PendingToolCalls { .. }) => {
            "pending_tool_calls"
        }
        AgentError::InvalidInput { .. } | AgentError::Conversation(_) => "invalid_input",
        AgentError::GotoLimitExceeded { .. } => "goto_limit_exceeded",
        AgentError::Session(_) => "session_error",
        _ => "_OTHER",
    })
}

/// A model failure's `error.type`: the last attempt's, for a request its retries gave up on.
pub(crate) fn model_error_type(error: &ModelError) -> Cow<'static, str> {
    Cow::Borrowed(match error {
        ModelError::RetriesExhausted { source, .. } => return model_error_type(source),
        ModelError::Status { status, .. } => return Cow::Owned(status.to_string()),
        ModelError::Timeout => "timeout",
        ModelError::Connection { .. } => "connection_error",
        ModelError::InvalidResponse { .. } => "invalid_response",
        ModelError::Stream { .. } => "stream_error",
        ModelError::EmptyResponse { .. } => "empty_response",
        ModelError::Config { .. } => "config_error",
        ModelError::Other { .. } => "model_error",
        _ => "_OTHER",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::{HookError, HookEventType};
    use serde_json::json;

    #[test]
    fn error_types_are_stable_names() {
        let cases = [
            (AgentError::Busy, "busy"),
            (
                AgentError::Hook {
                    hook: "h".into(),
                    event: HookEventType::PreCall,
                    source: HookError::msg("x"),
                },
                "hook_error",
            ),
            (ModelError::msg("x").into(), "model_error"),
            (ModelError::Timeout.into(), "timeout"),
            (
                ModelError::Status {
                    status: 429,
                    message: "slow down".into(),
                    retry_after: None,
                }
                .into(),
                "429",
            ),
            (
                ModelError::gave_up_after(
                    3,
                    ModelError::Status {
                        status: 503,
                        message: "overloaded".into(),
                        retry_after: None,
                    },
                )
                .into(),
                "503",
            ),
            (
                ModelError::EmptyResponse { model: "m".into() }.into(),
                "empty_response",
            ),
            (AgentError::invalid_input("x"), "invalid_input"),
            (
                AgentError::GotoLimitExceeded {
                    max: 1,
                    hook: "h".into(),
                },
                "goto_limit_exceeded",
            ),
            (
                ConversationError::PendingToolCalls {
                    ids: vec!["c1".into()],
                }
                .into(),
                "pending_tool_calls",
            ),
            (
                ConversationError::DuplicateToolResult { id: "c1".into() }.into(),
                "invalid_input",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error_type(&error), expected, "{error:?}");
        }
    }

    #[test]
    fn usage_is_read_from_metadata() {
        let mut msg = Msg::assistant("hi");
        assert_eq!(message_usage(&msg), None);
        msg.metadata.insert(
            "usage".into(),
            json!({"input_tokens": 3, "output_tokens": 4}),
        );
        assert_eq!(message_usage(&msg), Some(ChatUsage::new(3, 4)));
        msg.metadata.insert("usage".into(), json!("garbage"));
        assert_eq!(message_usage(&msg), None);
    }
}
