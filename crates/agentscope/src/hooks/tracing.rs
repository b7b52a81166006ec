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

use std::fmt;

use agentscope_core::{Hook, HookError, HookEvent};

use crate::call_state::InstanceId;
use crate::engine::spans;

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
/// | `agentscope.in_doubt.resolved` | `invoke_agent` | `gen_ai.tool.name`, `gen_ai.tool.call.id`, `agentscope.in_doubt.action`: `done`, `retry`, `fail`, `dismissed` ([`CallInput::resolve`](crate::CallInput::resolve), or [`retry`](crate::CallInput::retry) for `retry`), `result` (a tool result given otherwise), `moved_on` (new input moved on past it); one per call in doubt the call's input resolves, in call order |
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
/// [`Extensions`](agentscope_core::Extensions)), not in the hook, so one `TracingHook` may
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

impl TracingHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order).
    pub const NAME: &'static str = "tracing";
    /// The hook's priority.
    pub const PRIORITY: i32 = 0;
    /// The `tracing` target of the spans and span events this hook asks for
    /// (`agentscope::hooks::tracing`), for filters (`RUST_LOG=agentscope::hooks::tracing=info`)
    /// and exporters that pick them out.
    pub const TARGET: &'static str = spans::TARGET;

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
        spans::observe(event, self.instance, self.config.record_content);
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
