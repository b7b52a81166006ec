//! [`ContextWindowHook`]: keeps each model input within the model's context window.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 800 | PreCall, PreReasoning, PreSummary | PreReasoning / PreSummary: `set_input_messages` (this model call only; memory is unchanged): an existing summary replaces the messages it covers, large tool results become previews, the oldest turns are summarised past the threshold, the sliding window and the window's hard limit leave out the oldest turns; PreCall: fills the stash from the conversation |
//!
//! Here: the hook's type, its settings methods and its `Hook` impl, which hands each model
//! input to `compact.rs` (what to do to it), carried out by `work.rs`.

use std::fmt;
use std::sync::Arc;

use agentscope_core::session::HookState;
use agentscope_core::{Hook, HookError, HookEvent};

use super::compact::{Target, compact};
use super::config::Config;
use super::stash::{RetrieveStashedTool, ToolResultLimit, ToolResultStash, stash_all};
use super::state::{HOOK_NAME, Shared};
use super::summary::{Summarizer, SummaryRecord};
use super::tokens::TokenCounter;
use super::window::ContextWindows;
use crate::hooks::builtin_hook_meta;

/// Keeps every model input within the model's context window, without changing memory.
///
/// Priority 800; handles PreReasoning (and PreSummary, the model call at the iteration
/// limit) by replacing the input messages of that model call, and PreCall to fill its
/// stash. Memory keeps the whole conversation: the hook decides, at every model call, what
/// of it is sent.
///
/// # What it does, in order
///
/// 1. **An existing summary** replaces the messages it covers (see below).
/// 2. **Large tool results** ([`with_tool_result_limit`](Self::with_tool_result_limit), off
///    by default) are sent as a preview: their first characters and a note naming the stash
///    id (the tool call's id) and the [`retrieve_stashed`](RetrieveStashedTool) tool, which
///    you register on the toolkit ([`retrieve_tool`](Self::retrieve_tool)).
/// 3. **The tokens are measured** with the [`TokenCounter`] (by default the model's OpenAI
///    tokenizer, see [`default_counter`](super::default_counter)), preferring the provider's reported usage: when the
///    last reply with usage answered the very input this hook sent before it, the tokens up to
///    that reply are its usage, and only what came after is counted.
/// 4. **The oldest turns are summarised** ([`with_summarizer`](Self::with_summarizer), off by
///    default) when the input reaches the summarizer's threshold (85% of the model's window by
///    default): one model call turns everything before the most recent messages into a
///    summary message. The summary is recorded (see [`SummaryRecord`]) and used at every
///    later model call without calling the model again, until the input reaches the threshold
///    again; then the old summary and the next turns are summarised together.
/// 5. **The sliding window** ([`with_max_messages`](Self::with_max_messages),
///    [`with_max_input_tokens`](Self::with_max_input_tokens)) and the **hard limit** (on by
///    default: never more than the model's window, less the `max_tokens` of the generation
///    options) leave out the oldest turns until the input fits.
///
/// # What it never does
///
/// - separate a tool call from its results: turns are left out, summarised or kept whole
///   (an assistant message with tool calls and the tool messages answering them go together);
/// - leave out the system message (it is not touched), the latest user turn, the summary,
///   or the most recent turn;
/// - reorder messages: what is sent is the summary (if any), then memory's messages in
///   memory's order, some left out.
///
/// # When the provider refuses an input as too long
///
/// The engine runs PreReasoning once more with
/// [`PreReasoningEvent::context_exceeded`](agentscope_core::PreReasoningEvent::context_exceeded) set. The hook then compacts whatever the
/// thresholds say: it summarises everything before the latest user turn (when it has a
/// summarizer), aims for [`with_forced_target`](Self::with_forced_target) of the window (50%
/// by default), and remembers 90% of the refused size as the window from then on, so the
/// next model calls do not fail the same way.
///
/// # Sessions
///
/// The hook's state per conversation (the summary, the fingerprint of the last input it
/// sent, a window learned from a refusal) lives in the session's [`HookState`] under
/// [`NAME`](Self::NAME) when the agent has a session, so a reloaded agent sends exactly the
/// input the original would have; without a session it is kept in memory, by agent id. The
/// stash keeps no text of its own (see [`ToolResultStash`]): it is rebuilt from the
/// conversation, so it survives reloads too.
///
/// # Tracing and reports
///
/// Every model call emits a `tracing` event (target `agentscope::context`; INFO when the
/// input was changed, DEBUG otherwise) with `tokens_before`, `tokens_after`, `window`,
/// `messages_before`, `messages_after`, `dropped`, `summarized`, `truncated` and `forced`.
/// For the details, a [`CompactionReport`](super::CompactionReport) goes into the call's extensions, for every call
/// ([`with_reports`](Self::with_reports)) or for calls that ask
/// ([`CollectCompactionReports`](super::CollectCompactionReports)).
///
/// ```
/// use agentscope::context::{ContextWindowHook, ContextWindows, Summarizer, ToolResultLimit};
/// use agentscope::prelude::*;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
/// let context = ContextWindowHook::new()
///     .with_windows(ContextWindows::new().with("scripted-model", 32_000))
///     .with_tool_result_limit(ToolResultLimit::default())
///     .with_summarizer(Summarizer::new(model.clone()).with_keep_recent(8));
/// let agent = ReActAgent::builder()
///     .model(model)
///     .toolkit(Toolkit::new().tool(context.retrieve_tool()))
///     .hook(context)
///     .build()?;
/// assert_eq!(agent.call("Hi").await?.text(), "Hello!");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ContextWindowHook {
    config: Arc<Config>,
    shared: Arc<Shared>,
}

impl ContextWindowHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order), and the key of its
    /// entry in the session's [`HookState`].
    pub const NAME: &'static str = HOOK_NAME;
    /// The hook's priority: after user hooks (100) and the tool-approval hook (200) changed
    /// the input, before the JSONL trace (900) records it.
    pub const PRIORITY: i32 = 800;

    /// A hook with the built-in [`ContextWindows`], the model's default counter, and only
    /// the hard limit on: no message is left out until the input would not fit the window.
    pub fn new() -> Self {
        Self {
            config: Arc::new(Config::default()),
            shared: Arc::new(Shared::new()),
        }
    }

    fn config_mut(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// The context windows of the models (default: [`ContextWindows::new`]).
    #[must_use]
    pub fn with_windows(mut self, windows: ContextWindows) -> Self {
        self.config_mut().windows = windows;
        self
    }

    /// Counts tokens with `counter` for every model (default: [`default_counter`](super::default_counter) of the
    /// model's name).
    #[must_use]
    pub fn with_counter(mut self, counter: impl TokenCounter) -> Self {
        self.config_mut().counter = Some(Arc::new(counter));
        self
    }

    /// Sliding window by messages: sends at most `messages` messages besides the summary
    /// (more when the latest user turn and the most recent turn need them).
    #[must_use]
    pub fn with_max_messages(mut self, messages: usize) -> Self {
        self.config_mut().max_messages = Some(messages);
        self
    }

    /// Sliding window by tokens: sends at most `tokens` tokens, system message included
    /// (more when the latest user turn and the most recent turn need them).
    #[must_use]
    pub fn with_max_input_tokens(mut self, tokens: usize) -> Self {
        self.config_mut().max_input_tokens = Some(tokens);
        self
    }

    /// Sends tool results over `limit` as a preview, their full text in the
    /// [stash](Self::stash). Register [`retrieve_tool`](Self::retrieve_tool) on the agent's
    /// toolkit too: the preview tells the model to call it.
    #[must_use]
    pub fn with_tool_result_limit(mut self, limit: ToolResultLimit) -> Self {
        self.config_mut().tool_results = Some(limit);
        self
    }

    /// Summarises the oldest turns when the input reaches the summarizer's threshold.
    #[must_use]
    pub fn with_summarizer(mut self, summarizer: Summarizer) -> Self {
        self.config_mut().summarizer = Some(summarizer);
        self
    }

    /// Whether to leave out the oldest turns when the input would not fit the model's window
    /// less the `max_tokens` of the generation options (default `true`). Without it, an input
    /// that does not fit goes to the provider, which refuses it.
    #[must_use]
    pub fn with_hard_limit(mut self, on: bool) -> Self {
        self.config_mut().hard_limit = on;
        self
    }

    /// After the provider refused an input as too long, aim for this fraction of the window
    /// (default 0.5; clamped to 0.05..=1.0).
    #[must_use]
    pub fn with_forced_target(mut self, fraction: f32) -> Self {
        if !fraction.is_nan() {
            self.config_mut().forced_target = fraction.clamp(0.05, 1.0);
        }
        self
    }

    /// Puts a [`CompactionReport`](super::CompactionReport) into the call's extensions at every model call (default
    /// `false`: only for calls holding
    /// [`CollectCompactionReports`](super::CollectCompactionReports)).
    #[must_use]
    pub fn with_reports(mut self, on: bool) -> Self {
        self.config_mut().reports = on;
        self
    }

    /// The stash of the tool results sent as previews.
    pub fn stash(&self) -> &ToolResultStash {
        &self.shared.stash
    }

    /// The `retrieve_stashed` tool reading this hook's stash, to register on the agent's
    /// toolkit.
    pub fn retrieve_tool(&self) -> RetrieveStashedTool {
        self.shared.stash.retrieve_tool()
    }

    /// The summary in use for the conversation of the agent with id `agent_id`, when it has
    /// no session (with a session, it is in the session's [`HookState`] under
    /// [`NAME`](Self::NAME), as `{"summary": {"through", "messages", "text"}, ..}`).
    pub fn summary(&self, agent_id: &str) -> Option<SummaryRecord> {
        self.shared.conversations.summary(agent_id)
    }
}

impl Default for ContextWindowHook {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ContextWindowHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = &*self.config;
        f.debug_struct("ContextWindowHook")
            .field("windows", &config.windows)
            .field("max_messages", &config.max_messages)
            .field("max_input_tokens", &config.max_input_tokens)
            .field("tool_results", &config.tool_results)
            .field("summarizer", &config.summarizer)
            .field("hard_limit", &config.hard_limit)
            .field("forced_target", &config.forced_target)
            .field("reports", &config.reports)
            .finish_non_exhaustive()
    }
}

impl Hook for ContextWindowHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        match event {
            HookEvent::PreCall(e) => {
                if let Some(limit) = self.config.tool_results {
                    stash_all(e.history(), &self.shared.stash, limit);
                    stash_all(e.input_messages(), &self.shared.stash, limit);
                }
                let merged = match e.extensions().get::<HookState>() {
                    Some(state) => {
                        let conversations = &self.shared.conversations;
                        conversations.caught_up(state, e.agent().id(), e.history())?
                    }
                    None => None,
                };
                if let Some(merged) = merged
                    && let Some(state) = e.extensions_mut().get_mut::<HookState>()
                {
                    state.set(Self::NAME, &merged);
                }
                Ok(())
            }
            HookEvent::PreReasoning(e) => {
                compact(&self.config, &self.shared, Target::Reasoning(e)).await
            }
            HookEvent::PreSummary(e) => {
                compact(&self.config, &self.shared, Target::Summary(e)).await
            }
            _ => Ok(()),
        }
    }

    builtin_hook_meta!(PreCall | PreReasoning | PreSummary);
}
