//! [`TracingHook`]: `tracing` spans for every call, model call and tool call, named after the
//! OpenTelemetry GenAI semantic conventions.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 0 ([`TracingHook::PRIORITY`]) | PreCall, PostCall, PreReasoning, PostReasoning, PreActing, PostActing, PreSummary, PostSummary, Error (no chunk events) | nothing: it only reads events |
//!
//! Spans, fields, failure handling and cleanup are documented on [`TracingHook`].

use std::borrow::Cow;
use std::fmt;

use agentscope_core::{
    AgentError, CallInfo, ChatUsage, ConversationError, Extensions, GenerateOptions,
    GenerateReason, Hook, HookError, HookEvent, ModelError, Msg, ToolResultBlock, ToolUseBlock,
};
use serde::Deserialize;
use tracing::Span;
use tracing::field::Empty;

use super::call_state::{self, InstanceId};

/// The `error.type` of spans left open by a call that never finished.
const CANCELLED: &str = "cancelled";

/// Emits OpenTelemetry-GenAI-style `tracing` spans for each call (`invoke_agent`), model call
/// (`chat`) and tool call (`execute_tool`).
///
/// Priority 0 ([`TracingHook::PRIORITY`]); handles PreCall, PostCall, PreReasoning, PostReasoning,
/// PreActing, PostActing, PreSummary, PostSummary and Error (no chunk events); changes
/// nothing. Cloning is cheap; one handle can be registered on many agents.
///
/// # Spans
///
/// | Span (`otel.name`) | Opens at | Closes at | Parent | Fields |
/// |---|---|---|---|---|
/// | `invoke_agent` (`invoke_agent {agent}`) | PreCall | PostCall / Error | the current span of the caller | `gen_ai.operation.name = "invoke_agent"`, `gen_ai.agent.name`, `gen_ai.agent.id`, `gen_ai.usage.input_tokens` / `output_tokens` (summed over the call), `agentscope.call.id`, `agentscope.call.resumed_from` (for resumes) |
/// | `chat` (`chat {model}`) | PreReasoning, PreSummary | PostReasoning, PostSummary | `invoke_agent` | `gen_ai.operation.name = "chat"`, `gen_ai.request.model`, `gen_ai.request.temperature` / `top_p` / `max_tokens` / `seed` (when set), `gen_ai.usage.input_tokens` / `output_tokens` |
/// | `execute_tool` (`execute_tool {tool}`) | PreActing | PostActing | `invoke_agent` | `gen_ai.operation.name = "execute_tool"`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type = "function"`, with [`with_content`](TracingHook::with_content) also `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result` |
///
/// The engine fires PreActing for every call of a batch before any tool runs and PostActing
/// after the whole batch, so each `execute_tool` span covers the batch (with sequential tools,
/// also the tools before it), not the tool alone.
///
/// Every span also declares `error.type`, `otel.status_code` and `otel.status_description`,
/// recorded only when the operation failed. `otel.*` are the special fields of
/// [`tracing-opentelemetry`](https://docs.rs/tracing-opentelemetry): with that layer installed
/// the spans reach an OpenTelemetry exporter named `invoke_agent assistant`,
/// `chat gpt-4o`, `execute_tool calculator` and with an error status on failure. Span metadata
/// names are static (`tracing` requires it), so `otel.name` carries the full name. Spans are
/// at `INFO` level with the target `agentscope::hooks::tracing`.
///
/// Hooks run inside the engine's future, which a hook cannot enter, so the hook never makes
/// its spans *current*: `chat` and `execute_tool` spans name their parent explicitly, and the
/// `invoke_agent` span takes the caller's current span as its parent (call the agent inside
/// your request span and the agent's spans nest under it). Events that other code logs while
/// the call runs are therefore not inside these spans.
///
/// # Failures
///
/// - A failed call (ErrorEvent) records `error.type` (see the table below), an `ERROR` status and
///   the error's text on the call span and on every `chat` / `execute_tool` span still open.
/// - A tool that returns an error result (unknown tool, invalid arguments, tool error: the
///   model sees it and the call goes on) marks its `execute_tool` span with
///   `error.type = "tool_error"`.
/// - A hook that runs after this one and fails PostCall fails the call after the call span
///   closed (the engine sends ErrorEvent only to hooks that did not see PostCall), so that
///   span shows success; likewise a hook failing PostActing after this one leaves the tool
///   span a success and marks the call span. Give such hooks a negative priority if their
///   failures must be on the span of the step they reject.
/// - Spans still open when the call completes were cut short: `"interrupted"` after
///   `interrupt()`, `"_OTHER"` otherwise (a summary whose model call failed); suspended tools
///   (external execution) close without an error.
///
/// | Agent error | `error.type` |
/// |---|---|
/// | a hook failed | `hook_error` |
/// | model: HTTP status | the status code, e.g. `429` |
/// | model: timeout, connection, invalid response, stream, empty response, configuration, other | `timeout`, `connection_error`, `invalid_response`, `stream_error`, `empty_response`, `config_error`, `model_error` |
/// | invalid input (a broken conversation rule included), pending tool calls, goto limit, session | `invalid_input`, `pending_tool_calls`, `goto_limit_exceeded`, `session_error` |
/// | anything else | `_OTHER` |
///
/// # Per-call state
///
/// The open spans of a call live in the call's extensions (see
/// [`Extensions`]), not in the hook, so one `TracingHook` may
/// serve many agents and concurrent calls (even concurrent calls on one agent with
/// `check_running(false)`) without them seeing each other's spans. A call that is dropped (or
/// interrupted by a dropped stream) fires neither PostCall nor Error: its spans close when the
/// engine drops the call's extensions, with `error.type = "cancelled"`. Nothing outlives the
/// call.
///
/// Every `invoke_agent` span also carries `agentscope.call.id` (the call's
/// [`CallId`](agentscope_core::CallId), which hooks see as `event.call_id()`) and, for a call
/// that resumes one that stopped with tool calls pending (approval, a suspended tool),
/// `agentscope.call.resumed_from`, so a trace can link the two.
///
/// # Priority
///
/// At priority 0 the hook runs before the other built-in and user hooks, so a span opens
/// before they run. It records request attributes (model, options) as it sees them then:
/// options a later PreReasoning hook changes are not reflected. Token usage is read at
/// PostReasoning from the message's `metadata["usage"]`.
///
/// ```
/// use agentscope::hooks::TracingHook;
/// use agentscope::prelude::*;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let agent = ReActAgent::builder()
///     .model(ScriptedModel::new([ScriptedResponse::text("Hi!")]))
///     .hook(TracingHook::new())
///     .build()?;
/// // With a subscriber installed (e.g. tracing-subscriber with tracing-opentelemetry), this
/// // call produces an `invoke_agent` span with one `chat` child.
/// assert_eq!(agent.call("Hello").await?.text(), "Hi!");
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
#[must_use]
pub struct TracingHook {
    config: Config,
    /// Keys this hook's spans in a call's extensions.
    instance: InstanceId,
}

#[derive(Debug, Clone, Copy)]
struct Config {
    record_content: bool,
}

/// The open spans of one call, kept in the call's extensions.
///
/// Fields drop in declaration order: children close before the call span.
struct CallSpans {
    chat: Option<Span>,
    tools: Vec<(String, Span)>,
    span: Span,
    /// The model of the last reasoning step (the summary's `chat` span reuses it).
    model: Option<String>,
    usage: Option<ChatUsage>,
    /// Whether PostCall or Error closed the spans; otherwise dropping them marks them
    /// cancelled.
    closed: bool,
}

impl CallSpans {
    fn new(span: Span) -> Self {
        Self {
            span,
            model: None,
            chat: None,
            tools: Vec::new(),
            usage: None,
            closed: false,
        }
    }

    /// Records `error.type` (and the status) on every span of the call.
    fn fail_all(&mut self, error_type: &str, description: &str) {
        for span in self
            .chat
            .iter()
            .chain(self.tools.iter().map(|(_, span)| span))
        {
            mark_error(span, error_type, description);
        }
        mark_error(&self.span, error_type, description);
        self.closed = true;
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

impl TracingHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order).
    pub const NAME: &'static str = "tracing";
    /// The hook's priority.
    pub const PRIORITY: i32 = 0;

    /// A hook with the default configuration.
    pub fn new() -> Self {
        Self {
            config: Config {
                record_content: false,
            },
            instance: InstanceId::next(),
        }
    }

    /// Also records tool arguments (`gen_ai.tool.call.arguments`, JSON) and results
    /// (`gen_ai.tool.call.result`, text) on `execute_tool` spans (default off: they may hold
    /// sensitive data).
    pub fn with_content(mut self, record: bool) -> Self {
        self.config.record_content = record;
        self
    }

    /// This hook's spans in a call.
    fn spans<'a>(&self, extensions: &'a mut Extensions) -> Option<&'a mut CallSpans> {
        call_state::get_mut::<CallSpans>(extensions, self.instance)
    }

    fn observe(&self, event: &mut HookEvent) {
        match event {
            // An observation is no call: no span.
            HookEvent::PreCall(e) if e.is_observation() => {}
            HookEvent::PreCall(e) => {
                let spans = CallSpans::new(call_span(e.call()));
                call_state::insert(e.extensions_mut(), self.instance, spans);
            }
            HookEvent::PostCall(e) => {
                let spans = call_state::take::<CallSpans>(e.extensions_mut(), self.instance);
                finish_call(spans, e.final_message());
            }
            HookEvent::PreReasoning(e) => {
                let (model, options) = (e.model_name().to_owned(), e.generate_options().clone());
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    start_chat(spans, Some(model), &options);
                }
            }
            HookEvent::PostReasoning(e) => {
                let usage = message_usage(e.reasoning_message());
                let finish = e.reasoning_message().finish_reason().map(str::to_owned);
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    finish_chat(spans, usage, finish.as_deref());
                }
            }
            HookEvent::PreSummary(e) => {
                let options = e.generate_options().clone();
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    start_chat(spans, None, &options);
                }
            }
            HookEvent::PostSummary(e) => {
                let usage = message_usage(e.summary_message());
                let finish = e.summary_message().finish_reason().map(str::to_owned);
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    finish_chat(spans, usage, finish.as_deref());
                }
            }
            HookEvent::PreActing(e) => {
                let tool_use = e.tool_use().clone();
                let record_content = self.config.record_content;
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    start_tool(spans, &tool_use, record_content);
                }
            }
            HookEvent::PostActing(e) => {
                let result = e.tool_result().clone();
                let record_content = self.config.record_content;
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    finish_tool(spans, &result, record_content);
                }
            }
            HookEvent::Error(e) => {
                let spans = call_state::take::<CallSpans>(e.extensions_mut(), self.instance);
                fail_call(spans, e.call(), e.error());
            }
            HookEvent::ReasoningChunk(_)
            | HookEvent::ActingChunk(_)
            | HookEvent::SummaryChunk(_) => {}
        }
    }
}

/// Opens a call's `invoke_agent` span.
fn call_span(call: &CallInfo) -> Span {
    let agent = call.agent();
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {}", agent.name()),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = agent.name(),
        gen_ai.agent.id = agent.id(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
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
    for (_, tool) in &call.tools {
        if reason != Some(GenerateReason::ToolSuspended) {
            mark_cut_short(tool, reason);
        }
    }
}

fn fail_call(spans: Option<CallSpans>, call: &CallInfo, error: &AgentError) {
    let kind = error_type(error);
    match spans {
        Some(mut spans) => spans.fail_all(&kind, &error.to_string()),
        // The call started before this hook was registered: keep the failure visible.
        None => tracing::error!(
            gen_ai.agent.name = call.agent().name(),
            gen_ai.agent.id = call.agent().id(),
            error.type = %kind,
            "agent call failed without an open call span: {error}"
        ),
    }
}

/// Opens a `chat` span; `model` is `None` for the summary (the last reasoning step's model
/// is used).
fn start_chat(call: &mut CallSpans, model: Option<String>, options: &GenerateOptions) {
    if let Some(model) = model {
        call.model = Some(model);
    }
    let model = call.model.as_deref().unwrap_or("unknown");
    let span = tracing::info_span!(
        parent: &call.span,
        "chat",
        otel.name = %format_args!("chat {model}"),
        gen_ai.operation.name = "chat",
        gen_ai.request.model = model,
        gen_ai.request.temperature = Empty,
        gen_ai.request.top_p = Empty,
        gen_ai.request.max_tokens = Empty,
        gen_ai.request.seed = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    record_options(&span, options);
    call.chat = Some(span);
}

fn finish_chat(call: &mut CallSpans, usage: Option<ChatUsage>, finish_reason: Option<&str>) {
    if let Some(usage) = usage {
        let total = call.usage.get_or_insert_with(ChatUsage::default);
        total.input_tokens += usage.input_tokens;
        total.output_tokens += usage.output_tokens;
    }
    let span = call.chat.take();
    if let (Some(span), Some(usage)) = (&span, usage) {
        record_usage(span, usage);
    }
    if let (Some(span), Some(reason)) = (&span, finish_reason) {
        // The semantic conventions' array of one choice's reason, as a JSON array.
        span.record(
            "gen_ai.response.finish_reasons",
            serde_json::json!([reason]).to_string(),
        );
    }
}

fn start_tool(call: &mut CallSpans, tool_use: &ToolUseBlock, record_content: bool) {
    let span = tracing::info_span!(
        parent: &call.span,
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", tool_use.name),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool_use.name.as_str(),
        gen_ai.tool.call.id = tool_use.id.as_str(),
        gen_ai.tool.type = "function",
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
    drop(take_tool(&mut call.tools, &tool_use.id));
    call.tools.push((tool_use.id.to_string(), span));
}

fn finish_tool(call: &mut CallSpans, result: &ToolResultBlock, record_content: bool) {
    let Some(span) = take_tool(&mut call.tools, &result.id) else {
        return;
    };
    let text = result.text_output();
    if record_content {
        span.record("gen_ai.tool.call.result", text.as_str());
    }
    if result.is_error {
        mark_error(&span, "tool_error", &text);
    }
}

impl Default for TracingHook {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for TracingHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TracingHook")
            .field("record_content", &self.config.record_content)
            .finish()
    }
}

impl Hook for TracingHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        self.observe(event);
        Ok(())
    }

    builtin_hook_meta!(
        PreCall
            | PostCall
            | PreReasoning
            | PostReasoning
            | PreActing
            | PostActing
            | PreSummary
            | PostSummary
            | Error
    );
}

fn take_tool(tools: &mut Vec<(String, Span)>, id: &str) -> Option<Span> {
    let at = tools.iter().position(|(open, _)| open == id)?;
    Some(tools.swap_remove(at).1)
}

fn record_options(span: &Span, options: &GenerateOptions) {
    if let Some(temperature) = options.temperature {
        span.record("gen_ai.request.temperature", f64::from(temperature));
    }
    if let Some(top_p) = options.top_p {
        span.record("gen_ai.request.top_p", f64::from(top_p));
    }
    if let Some(max_tokens) = options.max_tokens {
        span.record("gen_ai.request.max_tokens", u64::from(max_tokens));
    }
    if let Some(seed) = options.seed {
        span.record("gen_ai.request.seed", seed);
    }
}

fn record_usage(span: &Span, usage: ChatUsage) {
    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
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
fn model_error_type(error: &ModelError) -> Cow<'static, str> {
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
    use agentscope_core::HookEventType;
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
