//! [`TracingHook`]: `tracing` spans for every call, model call and tool call, named, typed
//! and attributed as the OpenTelemetry GenAI semantic conventions say, with what hooks
//! decided as span events.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 0 ([`TracingHook::PRIORITY`]) | PreCall, PostCall, PreReasoning, PostReasoning, PreActing, PostActing, PreSummary, PostSummary, Error (no chunk events) | nothing: it only reads events |
//!
//! Spans, fields, events, failure handling and cleanup are documented on [`TracingHook`];
//! `docs/observability.md` is the guide (exporting them with `agentscope-otel`).

use std::borrow::Cow;
use std::fmt;

use agentscope_core::{
    AgentError, CallInfo, ChatUsage, ContentBlock, ConversationError, Extensions, GenerateOptions,
    GenerateReason, Hook, HookError, HookEvent, ModelError, Msg, Role, ToolResultBlock,
    ToolUseBlock,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::Span;
use tracing::field::Empty;

use super::call_state::{self, InstanceId};

/// The `error.type` of spans left open by a call that never finished.
const CANCELLED: &str = "cancelled";

/// The variable of the GenAI conventions that opts in to capturing message content.
const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Emits `tracing` spans for each call (`invoke_agent`), model call (`chat`) and tool call
/// (`execute_tool`) as the OpenTelemetry GenAI semantic conventions name them, and span
/// events for what hooks decided.
///
/// Priority 0 ([`TracingHook::PRIORITY`]); handles PreCall, PostCall, PreReasoning, PostReasoning,
/// PreActing, PostActing, PreSummary, PostSummary and Error (no chunk events); changes
/// nothing. Cloning is cheap; one handle can be registered on many agents.
///
/// # Spans
///
/// | Span (`otel.name`) | `otel.kind` | Opens at | Closes at | Parent | Fields |
/// |---|---|---|---|---|---|
/// | `invoke_agent` (`invoke_agent {agent}`) | internal | PreCall | PostCall / Error | the current span of the caller | `gen_ai.operation.name = "invoke_agent"`, `gen_ai.provider.name`, `gen_ai.agent.name`, `gen_ai.agent.id`, `gen_ai.conversation.id` (the session id, for an agent bound to a session), `gen_ai.usage.input_tokens` / `output_tokens` / `cache_read.input_tokens` / `cache_creation.input_tokens` (summed over the call), `agentscope.call.id`, `agentscope.call.resumed_from` (for resumes) |
/// | `chat` (`chat {model}`) | client | PreReasoning, PreSummary | PostReasoning, PostSummary | `invoke_agent` | `gen_ai.operation.name = "chat"`, `gen_ai.provider.name`, `gen_ai.conversation.id`, `gen_ai.request.model`, `gen_ai.request.temperature` / `top_p` / `max_tokens` / `seed` (when set), `gen_ai.response.id` / `model` / `finish_reasons`, `gen_ai.usage.*` as above; with content capture `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages` |
/// | `execute_tool` (`execute_tool {tool}`) | internal | when the tool starts | PostActing | `invoke_agent` | `gen_ai.operation.name = "execute_tool"`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type = "function"`, `gen_ai.tool.description`; with content capture `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result` |
///
/// `gen_ai.provider.name` is [`Model::provider_name`](agentscope_core::Model::provider_name)
/// (`"openai"`, `"anthropic"`), `"_OTHER"` when the model does not say. Message content is
/// the conventions' JSON (`[{"role": "user", "parts": [{"type": "text", "content": ..}]}]`)
/// as a string.
///
/// Every tool call has its own `execute_tool` span, opened when its tool starts (parallel
/// tools: sibling spans that overlap) and run as the tool's current span, so what the tool
/// logs or calls is inside it. A call a hook skipped, or one that did not run, gets a span at
/// PostActing that lasts no time. Each `chat` span is the current span while the model is
/// called, so the model layers' retries and fallbacks are inside it.
///
/// Every span also declares `error.type`, `otel.status_code` and `otel.status_description`,
/// recorded only when the operation failed. `otel.*` are the special fields of
/// [`tracing-opentelemetry`](https://docs.rs/tracing-opentelemetry): with that layer installed
/// (`agentscope-otel` does it in one line) the spans reach an OpenTelemetry exporter named
/// `invoke_agent assistant`, `chat gpt-4o`, `execute_tool calculator`, with their kind and
/// an error status on failure. Span metadata names are static (`tracing` requires it), so
/// `otel.name` carries the full name. Spans are at `INFO` level with the target
/// `agentscope::hooks::tracing`.
///
/// # Decisions
///
/// What hooks and the engine decided is recorded as `INFO` events (span events once
/// exported) whose message is a stable name:
///
/// | Event | On | Fields |
/// |---|---|---|
/// | `agentscope.approval.asked` | `invoke_agent` | `gen_ai.tool.name`, `gen_ai.tool.call.id` (one per call that needs a decision) |
/// | `agentscope.approval.approved` / `.edited` / `.rejected` | `invoke_agent` | `gen_ai.tool.name`, `gen_ai.tool.call.id` |
/// | `agentscope.tool.skipped` | `invoke_agent` | `agentscope.hook.name` (whose `skip_with` stands), `gen_ai.tool.name`, `gen_ai.tool.call.id` |
/// | `agentscope.goto_reasoning` | `invoke_agent` | `agentscope.hook.name` |
/// | `agentscope.stop_agent` | `invoke_agent` | `agentscope.hook.name`, `agentscope.step` (`"reasoning"` or `"acting"`) |
/// | `agentscope.context.compacted` | `invoke_agent` | `agentscope.context.tokens_before`, `agentscope.context.tokens_after` |
/// | `agentscope.model.retry` | `chat` | see [`model_layers`](crate::model_layers) |
/// | `agentscope.model.fallback` | `chat` | see [`model_layers`](crate::model_layers) |
///
/// # Content
///
/// Message content, system instructions and tool arguments and results may hold sensitive
/// data: they are recorded only with [`with_content(true)`](TracingHook::with_content), or
/// when the conventions' variable `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is
/// `true` when the hook is made ([`new`](TracingHook::new)).
///
/// Hooks run inside the engine's future, which a hook cannot enter, so the hook never makes
/// the `invoke_agent` span *current*: `chat` and `execute_tool` spans name their parent
/// explicitly, and the `invoke_agent` span takes the caller's current span as its parent
/// (call the agent inside your request span and the agent's spans nest under it). The
/// engine makes it current while a custom [`Reply`](crate::Reply) runs, so what the reply
/// does nests under the call (a remote agent's requests carry the call's trace context).
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
/// call. With two `TracingHook`s on one agent, the first one's spans are the current ones
/// and carry the decisions.
///
/// Every `invoke_agent` span also carries `agentscope.call.id` (the call's
/// [`CallId`](agentscope_core::CallId), which hooks see as `event.call_id()`) and, for a call
/// that resumes one that stopped with tool calls pending (approval, a suspended tool),
/// `agentscope.call.resumed_from`: the id of the call it resumes, so a trace backend can
/// find the two (they are separate traces: the first one ended).
///
/// # Priority
///
/// At priority 0 the hook runs before the other built-in and user hooks, so a span opens
/// before they run. It records request attributes (model, options) as it sees them then:
/// options a later PreReasoning hook changes are not reflected. Token usage and the
/// response are read at PostReasoning from the message's metadata.
///
/// Without a subscriber (or with one that filters the `invoke_agent` span out) the hook
/// records nothing for the call: it opens no span and keeps no state, and each event returns
/// at once.
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
/// // With a subscriber installed (e.g. agentscope-otel's), this call produces an
/// // `invoke_agent` span with one `chat` child.
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

impl TracingHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order).
    pub const NAME: &'static str = "tracing";
    /// The hook's priority.
    pub const PRIORITY: i32 = 0;

    /// A hook with the default configuration: content is recorded only when
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `true` (read now).
    pub fn new() -> Self {
        let record_content = std::env::var(CAPTURE_CONTENT_ENV)
            .is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"));
        Self {
            config: Config { record_content },
            instance: InstanceId::next(),
        }
    }

    /// Also records message content (`gen_ai.system_instructions`, `gen_ai.input.messages`,
    /// `gen_ai.output.messages` on `chat` spans) and tool arguments and results
    /// (`gen_ai.tool.call.arguments` / `gen_ai.tool.call.result` on `execute_tool` spans),
    /// whatever the environment says (default: off, they may hold sensitive data).
    pub fn with_content(mut self, record: bool) -> Self {
        self.config.record_content = record;
        self
    }

    /// This hook's spans in a call.
    fn spans<'a>(&self, extensions: &'a mut Extensions) -> Option<&'a mut CallSpans> {
        call_state::get_mut::<CallSpans>(extensions, self.instance)
    }

    fn observe(&self, event: &mut HookEvent) {
        let record_content = self.config.record_content;
        // Without spans for this call (no subscriber, or one that filters them out) there is
        // nothing to record: leave before copying anything out of the event.
        if !matches!(event, HookEvent::PreCall(_)) && self.spans(event.extensions_mut()).is_none() {
            return;
        }
        match event {
            // An observation is no call: no span.
            HookEvent::PreCall(e) if e.is_observation() => {}
            HookEvent::PreCall(e) => {
                let span = call_span(e.call());
                if !span.is_disabled() {
                    let spans = CallSpans::new(span, record_content);
                    call_state::insert(e.extensions_mut(), self.instance, spans);
                }
            }
            HookEvent::PostCall(e) => {
                let spans = call_state::take::<CallSpans>(e.extensions_mut(), self.instance);
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
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    start_chat(spans, &call, Some(model), &options, content);
                }
            }
            HookEvent::PostReasoning(e) => {
                let response = Response::of(e.reasoning_message(), record_content);
                if let Some(spans) = self.spans(e.extensions_mut()) {
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
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    start_chat(spans, &call, None, &options, content);
                }
            }
            HookEvent::PostSummary(e) => {
                let response = Response::of(e.summary_message(), record_content);
                if let Some(spans) = self.spans(e.extensions_mut()) {
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
                if let Some(spans) = self.spans(e.extensions_mut()) {
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
                if let Some(spans) = self.spans(e.extensions_mut()) {
                    finish_tool(spans, &result);
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

// ---------------------------------------------------------------------------------------
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
            tracing::info!(
                parent: parent,
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
        Decision::Skipped { hook, tool } => tracing::info!(
            parent: parent,
            agentscope.hook.name = hook,
            gen_ai.tool.name = tool.name.as_str(),
            gen_ai.tool.call.id = tool.id.as_str(),
            "agentscope.tool.skipped"
        ),
        Decision::Goto { hook } => tracing::info!(
            parent: parent,
            agentscope.hook.name = hook,
            "agentscope.goto_reasoning"
        ),
        Decision::Stop { hook, step } => tracing::info!(
            parent: parent,
            agentscope.hook.name = hook,
            agentscope.step = step,
            "agentscope.stop_agent"
        ),
        #[cfg(feature = "context")]
        Decision::Compacted { before, after } => tracing::info!(
            parent: parent,
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
        None => tracing::error!(
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
