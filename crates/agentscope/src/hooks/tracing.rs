//! [`TracingHook`]: `tracing` spans for every call, model call and tool call, named after the
//! OpenTelemetry GenAI semantic conventions.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 0 ([`TracingHook::PRIORITY`]) | PreCall, PostCall, PreReasoning, PostReasoning, PreActing, PostActing, PreSummary, PostSummary, Error (no chunk events) | nothing: it only reads events |
//!
//! Spans, fields, failure handling and cleanup are documented on [`TracingHook`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentscope_core::{
    AgentError, AgentInfo, ChatUsage, GenerateOptions, GenerateReason, Hook, HookError, HookEvent,
    HookEventType, HookEventTypes, ModelError, Msg, ToolResultBlock, ToolUseBlock,
};
use serde::Deserialize;
use tracing::Span;
use tracing::field::Empty;

/// How many calls may have open spans at once before the oldest is closed.
const DEFAULT_MAX_OPEN_CALLS: usize = 1024;

/// The `error.type` of spans left open by a call that never finished.
const CANCELLED: &str = "cancelled";

/// Emits OpenTelemetry-GenAI-style `tracing` spans for each call (`invoke_agent`), model call
/// (`chat`) and tool call (`execute_tool`).
///
/// Priority 0 ([`TracingHook::PRIORITY`]); handles PreCall, PostCall, PreReasoning, PostReasoning,
/// PreActing, PostActing, PreSummary, PostSummary and Error (no chunk events); changes
/// nothing. Cloning is cheap and clones share their open spans, so one handle can be
/// registered on many agents.
///
/// # Spans
///
/// | Span (`otel.name`) | Opens at | Closes at | Parent | Fields |
/// |---|---|---|---|---|
/// | `invoke_agent` (`invoke_agent {agent}`) | PreCall | PostCall / Error | the current span of the caller | `gen_ai.operation.name = "invoke_agent"`, `gen_ai.agent.name`, `gen_ai.agent.id`, `gen_ai.usage.input_tokens` / `output_tokens` (summed over the call) |
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
/// | invalid input, pending tool calls, goto limit, memory | `invalid_input`, `pending_tool_calls`, `goto_limit_exceeded`, `memory_error` |
/// | anything else | `_OTHER` |
///
/// # Per-call state
///
/// One `TracingHook` may serve many agents running at once (register clones of one handle,
/// or one system hook): open spans are kept per agent id, and tool spans per tool call id,
/// in a mutex-guarded map that is never held across an `.await`. An agent runs one call at a
/// time (the busy check), so its id identifies the running call.
///
/// A call that is dropped (or interrupted by a dropped stream) fires neither PostCall nor
/// Error, so its entry stays behind. It is cleaned up
/// - when the same agent starts its next call: the stale spans close with
///   `error.type = "cancelled"`;
/// - or when more than [`with_max_open_calls`](TracingHook::with_max_open_calls) calls (default
///   1024) are open: the oldest entry is closed the same way.
///
/// So memory stays bounded; keep the bound above the number of agents that run at the same
/// time. Agents built with `check_running(false)` that run concurrent calls on one agent share
/// one id: a second concurrent call closes the first one's spans as `cancelled`. Agents
/// should have distinct ids (the default, a UUID, is).
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
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Clone, Copy)]
struct Config {
    max_open_calls: usize,
    record_content: bool,
}

#[derive(Default)]
struct State {
    calls: HashMap<String, CallSpans>,
    next_seq: u64,
}

/// The open spans of one call.
///
/// Fields drop in declaration order: children close before the call span.
struct CallSpans {
    chat: Option<Span>,
    tools: Vec<(String, Span)>,
    span: Span,
    /// When the call started, relative to the others (for eviction).
    seq: u64,
    /// The model of the last reasoning step (the summary's `chat` span reuses it).
    model: Option<String>,
    usage: Option<ChatUsage>,
}

impl CallSpans {
    fn new(seq: u64, span: Span) -> Self {
        Self {
            seq,
            span,
            model: None,
            chat: None,
            tools: Vec::new(),
            usage: None,
        }
    }

    /// Closes every span of the call, recording `error.type` (and the status) on each.
    fn close_all(self, error_type: &str, description: &str) {
        for span in self.children() {
            mark_error(&span, error_type, description);
        }
        mark_error(&self.span, error_type, description);
    }

    fn children(&self) -> impl Iterator<Item = Span> + '_ {
        self.chat
            .iter()
            .cloned()
            .chain(self.tools.iter().map(|(_, span)| span.clone()))
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
                max_open_calls: DEFAULT_MAX_OPEN_CALLS,
                record_content: false,
            },
            state: Arc::default(),
        }
    }

    /// How many calls may have open spans at once (default 1024, at least 1). When a new call
    /// would exceed it, the oldest call's spans are closed as `cancelled`: only calls that
    /// were dropped should ever reach it.
    pub fn with_max_open_calls(mut self, max: usize) -> Self {
        self.config.max_open_calls = max.max(1);
        self
    }

    /// Also records tool arguments (`gen_ai.tool.call.arguments`, JSON) and results
    /// (`gen_ai.tool.call.result`, text) on `execute_tool` spans (default off: they may hold
    /// sensitive data).
    pub fn with_content(mut self, record: bool) -> Self {
        self.config.record_content = record;
        self
    }

    /// How many calls have open spans right now (calls in progress, plus dropped calls that
    /// were not cleaned up yet).
    pub fn open_calls(&self) -> usize {
        self.lock().calls.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn observe(&self, event: &HookEvent) {
        match event {
            HookEvent::PreCall(e) => self.start_call(e.agent()),
            HookEvent::PostCall(e) => self.finish_call(e.agent(), e.final_message()),
            HookEvent::PreReasoning(e) => {
                self.start_chat(e.agent(), Some(e.model_name()), e.generate_options())
            }
            HookEvent::PostReasoning(e) => self.finish_chat(e.agent(), e.reasoning_message()),
            HookEvent::PreSummary(e) => self.start_chat(e.agent(), None, e.generate_options()),
            HookEvent::PostSummary(e) => self.finish_chat(e.agent(), e.summary_message()),
            HookEvent::PreActing(e) => self.start_tool(e.agent(), e.tool_use()),
            HookEvent::PostActing(e) => self.finish_tool(e.agent(), e.tool_result()),
            HookEvent::Error(e) => self.fail_call(e.agent(), e.error()),
            HookEvent::ReasoningChunk(_)
            | HookEvent::ActingChunk(_)
            | HookEvent::SummaryChunk(_) => {}
        }
    }

    fn start_call(&self, agent: &AgentInfo) {
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = %format_args!("invoke_agent {}", agent.name()),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = agent.name(),
            gen_ai.agent.id = agent.id(),
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            error.type = Empty,
            otel.status_code = Empty,
            otel.status_description = Empty,
        );
        let mut stale = Vec::new();
        {
            let mut state = self.lock();
            let seq = state.next_seq;
            state.next_seq += 1;
            if let Some(previous) = state.calls.remove(agent.id()) {
                stale.push(previous);
            }
            while state.calls.len() >= self.config.max_open_calls {
                let Some(oldest) = state
                    .calls
                    .iter()
                    .min_by_key(|(_, call)| call.seq)
                    .map(|(id, _)| id.clone())
                else {
                    break;
                };
                stale.extend(state.calls.remove(&oldest));
            }
            state
                .calls
                .insert(agent.id().to_owned(), CallSpans::new(seq, span));
        }
        // Closed outside the lock: closing runs the subscriber's callbacks.
        for call in stale {
            call.close_all(
                CANCELLED,
                "the call ended without PostCall or Error (it was dropped)",
            );
        }
    }

    fn finish_call(&self, agent: &AgentInfo, reply: &Msg) {
        let Some(call) = self.lock().calls.remove(agent.id()) else {
            return;
        };
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

    fn fail_call(&self, agent: &AgentInfo, error: &AgentError) {
        let kind = error_type(error);
        let Some(call) = self.lock().calls.remove(agent.id()) else {
            // Its spans were closed already (evicted): keep the failure visible as an event.
            tracing::error!(
                gen_ai.agent.name = agent.name(),
                gen_ai.agent.id = agent.id(),
                error.type = %kind,
                "agent call failed after its spans were closed: {error}"
            );
            return;
        };
        call.close_all(&kind, &error.to_string());
    }

    /// Opens a `chat` span; `model` is `None` for the summary (the last reasoning step's
    /// model is used).
    fn start_chat(&self, agent: &AgentInfo, model: Option<&str>, options: &GenerateOptions) {
        let previous = {
            let mut state = self.lock();
            let call = call_entry(&mut state, agent);
            if let Some(model) = model
                && call.model.as_deref() != Some(model)
            {
                call.model = Some(model.to_owned());
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
                error.type = Empty,
                otel.status_code = Empty,
                otel.status_description = Empty,
            );
            record_options(&span, options);
            call.chat.replace(span)
        };
        drop(previous);
    }

    fn finish_chat(&self, agent: &AgentInfo, message: &Msg) {
        let usage = message_usage(message);
        let span = {
            let mut state = self.lock();
            let Some(call) = state.calls.get_mut(agent.id()) else {
                return;
            };
            if let Some(usage) = usage {
                let total = call.usage.get_or_insert_with(ChatUsage::default);
                total.input_tokens += usage.input_tokens;
                total.output_tokens += usage.output_tokens;
            }
            call.chat.take()
        };
        if let (Some(span), Some(usage)) = (&span, usage) {
            record_usage(span, usage);
        }
    }

    fn start_tool(&self, agent: &AgentInfo, tool_use: &ToolUseBlock) {
        let previous = {
            let mut state = self.lock();
            let call = call_entry(&mut state, agent);
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
            if self.config.record_content {
                span.record(
                    "gen_ai.tool.call.arguments",
                    tracing::field::display(&tool_use.input),
                );
            }
            let previous = take_tool(&mut call.tools, &tool_use.id);
            call.tools.push((tool_use.id.clone(), span));
            previous
        };
        drop(previous);
    }

    fn finish_tool(&self, agent: &AgentInfo, result: &ToolResultBlock) {
        let span = {
            let mut state = self.lock();
            let Some(call) = state.calls.get_mut(agent.id()) else {
                return;
            };
            take_tool(&mut call.tools, &result.id)
        };
        let Some(span) = span else { return };
        let text = result.text_output();
        if self.config.record_content {
            span.record("gen_ai.tool.call.result", text.as_str());
        }
        if result.is_error {
            mark_error(&span, "tool_error", &text);
        }
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
            .field("max_open_calls", &self.config.max_open_calls)
            .field("record_content", &self.config.record_content)
            .field("open_calls", &self.open_calls())
            .finish()
    }
}

impl Hook for TracingHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        self.observe(event);
        Ok(())
    }

    fn priority(&self) -> i32 {
        Self::PRIORITY
    }

    fn interests(&self) -> HookEventTypes {
        HookEventType::PreCall
            | HookEventType::PostCall
            | HookEventType::PreReasoning
            | HookEventType::PostReasoning
            | HookEventType::PreActing
            | HookEventType::PostActing
            | HookEventType::PreSummary
            | HookEventType::PostSummary
            | HookEventType::Error
    }

    fn name(&self) -> &str {
        Self::NAME
    }
}

/// The call's entry; created (without a call span, so its children become roots) when the
/// PreCall was not seen, e.g. because the entry was evicted.
fn call_entry<'a>(state: &'a mut State, agent: &AgentInfo) -> &'a mut CallSpans {
    let seq = state.next_seq;
    state.next_seq += 1;
    state
        .calls
        .entry(agent.id().to_owned())
        .or_insert_with(|| CallSpans::new(seq, Span::none()))
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
        AgentError::Model(model) => match model {
            ModelError::Status { status, .. } => return Cow::Owned(status.to_string()),
            ModelError::Timeout => "timeout",
            ModelError::Connection { .. } => "connection_error",
            ModelError::InvalidResponse { .. } => "invalid_response",
            ModelError::Stream { .. } => "stream_error",
            ModelError::EmptyResponse { .. } => "empty_response",
            ModelError::Config { .. } => "config_error",
            ModelError::Other { .. } => "model_error",
            _ => "_OTHER",
        },
        AgentError::InvalidInput { .. } => "invalid_input",
        AgentError::PendingToolCalls { .. } => "pending_tool_calls",
        AgentError::GotoLimitExceeded { .. } => "goto_limit_exceeded",
        AgentError::Memory { .. } => "memory_error",
        _ => "_OTHER",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::{ErrorEvent, PostCallEvent, PreCallEvent, PreReasoningEvent};
    use serde_json::json;

    fn agent(id: &str) -> Arc<AgentInfo> {
        Arc::new(AgentInfo::new("a", id))
    }

    fn pre_call(id: &str) -> HookEvent {
        PreCallEvent::new(agent(id), vec![], vec![], None).into()
    }

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
                ModelError::EmptyResponse { model: "m".into() }.into(),
                "empty_response",
            ),
            (AgentError::invalid_input("x"), "invalid_input"),
            (
                AgentError::GotoLimitExceeded { max: 1 },
                "goto_limit_exceeded",
            ),
            (
                AgentError::PendingToolCalls {
                    ids: vec!["c1".into()],
                },
                "pending_tool_calls",
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
        assert_eq!(
            message_usage(&msg),
            Some(ChatUsage {
                input_tokens: 3,
                output_tokens: 4
            })
        );
        msg.metadata.insert("usage".into(), json!("garbage"));
        assert_eq!(message_usage(&msg), None);
    }

    #[test]
    fn calls_are_tracked_per_agent_and_cleaned_up() {
        let hook = TracingHook::new();
        hook.observe(&pre_call("1"));
        hook.observe(&pre_call("2"));
        assert_eq!(hook.open_calls(), 2);
        // A second PreCall for agent 1 replaces its stale entry.
        hook.observe(&pre_call("1"));
        assert_eq!(hook.open_calls(), 2);
        hook.observe(&PostCallEvent::new(agent("1"), Msg::assistant("done")).into());
        assert_eq!(hook.open_calls(), 1);
        hook.observe(&ErrorEvent::new(agent("2"), AgentError::invalid_input("bad")).into());
        assert_eq!(hook.open_calls(), 0);
    }

    #[test]
    fn the_oldest_call_is_evicted_at_the_bound() {
        let hook = TracingHook::new().with_max_open_calls(2);
        for id in ["1", "2", "3"] {
            hook.observe(&pre_call(id));
        }
        let open: Vec<String> = {
            let mut ids: Vec<String> = hook.lock().calls.keys().cloned().collect();
            ids.sort();
            ids
        };
        assert_eq!(open, ["2", "3"]);
    }

    #[test]
    fn child_events_without_a_call_create_an_entry() {
        let hook = TracingHook::new();
        hook.observe(
            &PreReasoningEvent::new(agent("9"), vec![], None, "m", GenerateOptions::default(), 0)
                .into(),
        );
        assert_eq!(hook.open_calls(), 1);
        assert_eq!(hook.lock().calls["9"].model.as_deref(), Some("m"));
    }
}
