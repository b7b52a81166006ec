//! [`ContextWindowHook`]: keeps each model input within the model's context window.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 800 | PreCall, PreReasoning, PreSummary | PreReasoning / PreSummary: `set_input_messages` (this model call only; memory is unchanged): an existing summary replaces the messages it covers, large tool results become previews, the oldest turns are summarised past the threshold, the sliding window and the window's hard limit leave out the oldest turns; PreCall: fills the stash from the conversation |

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentscope_core::session::HookState;
use agentscope_core::{
    ContentBlock, Extensions, Hook, HookError, HookEvent, HookEventType, HookEventTypes, Msg,
    PreReasoningEvent, PreSummaryEvent, SharedString,
};
use serde::{Deserialize, Serialize};

use super::report::{CollectCompactionReports, CompactionReport, SummaryUse, TruncatedResult};
use super::stash::{
    RetrieveStashedTool, ToolResultLimit, ToolResultStash, stash_all, truncate_message,
};
use super::summary::{Summarizer, SummaryRecord};
use super::tokens::{TokenCounter, default_counter, reported_usage, usage_tokens};
use super::units::{cut_points, latest_user_turn, units};
use super::window::ContextWindows;

/// How much of the window a forced compaction aims for by default (see
/// [`ContextWindowHook::with_forced_target`]).
pub const DEFAULT_FORCED_TARGET: f32 = 0.5;

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
///    tokenizer, see [`default_counter`]), preferring the provider's reported usage: when the
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
/// [`PreReasoningEvent::context_exceeded`] set. The hook then compacts whatever the
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
/// For the details, a [`CompactionReport`] goes into the call's extensions, for every call
/// ([`with_reports`](Self::with_reports)) or for calls that ask
/// ([`CollectCompactionReports`]).
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

#[derive(Clone)]
struct Config {
    windows: ContextWindows,
    counter: Option<Arc<dyn TokenCounter>>,
    max_messages: Option<usize>,
    max_input_tokens: Option<usize>,
    tool_results: Option<ToolResultLimit>,
    summarizer: Option<Summarizer>,
    hard_limit: bool,
    forced_target: f32,
    reports: bool,
}

struct Shared {
    instance: u64,
    stash: ToolResultStash,
    /// The state per conversation, by agent id, for agents without a session.
    conversations: Mutex<HashMap<String, Persisted>>,
    counts: Mutex<CountCache>,
}

/// What the hook keeps per conversation (in the session's `HookState`, or in memory).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Persisted {
    /// The summary in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<SummaryRecord>,
    /// The input sent at the last model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sent: Option<Sent>,
    /// A window learned from a refusal, below the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window: Option<usize>,
}

/// The last input sent: its length and fingerprint, to know whether the next reply's usage
/// measures the same messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Sent {
    messages: usize,
    fingerprint: String,
}

impl ContextWindowHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order), and the key of its
    /// entry in the session's [`HookState`].
    pub const NAME: &'static str = "context_window";
    /// The hook's priority: after user hooks (100) and the tool-approval hook (200) changed
    /// the input, before the JSONL trace (900) records it.
    pub const PRIORITY: i32 = 800;

    /// A hook with the built-in [`ContextWindows`], the model's default counter, and only
    /// the hard limit on: no message is left out until the input would not fit the window.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self {
            config: Arc::new(Config {
                windows: ContextWindows::new(),
                counter: None,
                max_messages: None,
                max_input_tokens: None,
                tool_results: None,
                summarizer: None,
                hard_limit: true,
                forced_target: DEFAULT_FORCED_TARGET,
                reports: false,
            }),
            shared: Arc::new(Shared {
                instance: NEXT.fetch_add(1, Ordering::Relaxed),
                stash: ToolResultStash::new(),
                conversations: Mutex::new(HashMap::new()),
                counts: Mutex::new(CountCache::default()),
            }),
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

    /// Counts tokens with `counter` for every model (default: [`default_counter`] of the
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

    /// Puts a [`CompactionReport`] into the call's extensions at every model call (default
    /// `false`: only for calls holding [`CollectCompactionReports`]).
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
        self.conversations()
            .get(agent_id)
            .and_then(|state| state.summary.clone())
    }

    fn conversations(&self) -> MutexGuard<'_, HashMap<String, Persisted>> {
        self.shared
            .conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn load(&self, extensions: &Extensions, agent: &str) -> Persisted {
        match extensions.get::<HookState>() {
            Some(state) => state.get(Self::NAME).unwrap_or_default(),
            None => self.conversations().get(agent).cloned().unwrap_or_default(),
        }
    }

    fn store(&self, extensions: &mut Extensions, agent: &str, persisted: Persisted) {
        match extensions.get_mut::<HookState>() {
            Some(state) if persisted == Persisted::default() => {
                state.remove(Self::NAME);
            }
            Some(state) => state.set(Self::NAME, &persisted),
            None => {}
        }
        // Kept in memory with a session too: see `caught_up`.
        self.conversations().insert(agent.to_owned(), persisted);
    }

    /// At PreCall of an agent with a session: what this process knows and the session does
    /// not (a change the session missed, such as one made at a call's last model call, which
    /// the session saves without the hooks' state) goes into the session's `HookState`; the
    /// engine saves it after PreCall. The more advanced of the two summaries applicable to
    /// the conversation wins, and the smaller learned window. `None`: nothing to change.
    fn caught_up(&self, state: &HookState, agent: &str, history: &[Msg]) -> Option<Persisted> {
        let known = self.conversations().get(agent).cloned()?;
        let stored: Persisted = state.get(Self::NAME).unwrap_or_default();
        let reach = |record: &Option<SummaryRecord>| {
            record.as_ref().and_then(|record| {
                history
                    .iter()
                    .position(|message| message.id == record.through.as_str())
            })
        };
        let summary = if reach(&known.summary) > reach(&stored.summary) {
            known.summary
        } else {
            stored.summary.clone()
        };
        let merged = Persisted {
            summary,
            sent: known.sent.or_else(|| stored.sent.clone()),
            window: match (known.window, stored.window) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        };
        (merged != stored).then_some(merged)
    }

    fn counter_for(&self, model: &str) -> (Arc<dyn TokenCounter>, u64) {
        match &self.config.counter {
            Some(counter) => (Arc::clone(counter), 0),
            None => (default_counter(model), word_hash(model.as_bytes()) | 1),
        }
    }

    async fn compact(&self, mut target: Target<'_>) -> Result<(), HookError> {
        let config = &*self.config;
        let forced = target.context_exceeded();
        let agent = target.agent_id();
        let instance = self.shared.instance;
        let model = match &mut target {
            Target::Reasoning(e) => {
                let model = e.model_name().to_owned();
                notes(e.extensions_mut(), instance).model = Some(model.clone());
                model
            }
            Target::Summary(e) => notes(e.extensions_mut(), instance)
                .model
                .clone()
                .unwrap_or_default(),
        };
        let messages_before = target.input().len();
        if messages_before == 0 {
            return Ok(());
        }
        let system = target.system().cloned();
        let mut persisted = self.load(target.extensions(), &agent);
        let (counter, counter_key) = self.counter_for(&model);
        let wants_report =
            config.reports || target.extensions().contains::<CollectCompactionReports>();

        // 1-3: the existing summary, previews, tokens.
        let mut work = Work::new(
            self,
            target.input(),
            system.as_ref(),
            &persisted,
            &*counter,
            counter_key,
        );
        let tokens_before = work.total;

        let model_window = config.windows.window_for(&model);
        if forced {
            let refused = notes(target.extensions_mut(), instance).sent_tokens;
            if let Some(refused) = refused {
                let learned = (refused.saturating_mul(9) / 10).max(1);
                persisted.window = Some(persisted.window.map_or(learned, |w| w.min(learned)));
            }
        }
        let window = persisted
            .window
            .map_or(model_window, |w| w.min(model_window));

        // 4: summarise the oldest turns.
        let mut summary_error = None;
        let mut fresh_summary = false;
        if let Some(summarizer) = &config.summarizer {
            // Rounded: 0.85 as an f32 is a hair above 0.85.
            let threshold = (f64::from(summarizer.threshold()) * window as f64).round();
            let due = forced || work.total as f64 >= threshold;
            if due
                && let Some((from, cut)) =
                    work.summary_range(summarizer.keep_recent(), forced, target.input())
            {
                let previous = work.summary_text(&persisted);
                match summarizer
                    .summarize(previous.as_deref(), &work.view(target.input())[from..cut])
                    .await
                {
                    Ok(text) => {
                        let record = work.summarise(cut, text, &*counter, target.input());
                        persisted.summary = Some(record);
                        fresh_summary = true;
                    }
                    Err(error) => {
                        tracing::warn!(
                            target: "agentscope::context",
                            hook = Self::NAME,
                            %error,
                            "summarising the oldest turns failed; the input is not summarised"
                        );
                        summary_error = Some(error.to_string());
                    }
                }
            }
        }

        // 5: the sliding window and the hard limit.
        let reserve = match &target {
            Target::Reasoning(e) => e.generate_options().max_tokens.map_or(0, |n| n as usize),
            Target::Summary(e) => e.generate_options().max_tokens.map_or(0, |n| n as usize),
        };
        let mut budget = config.max_input_tokens;
        let mut limit = |tokens: usize| budget = Some(budget.map_or(tokens, |b| b.min(tokens)));
        if config.hard_limit {
            limit(window.saturating_sub(reserve).max(1));
        }
        if forced {
            limit(((window as f64) * f64::from(config.forced_target)) as usize);
        }
        let dropped = work.slide(config.max_messages, budget, target.input());

        // What is sent.
        let summary = work.summary_in_use(&persisted);
        let report = CompactionReport {
            model: model.clone(),
            window,
            tokens_before,
            tokens_after: work.total,
            used_reported_usage: work.used_usage,
            messages_before,
            messages_after: work.len(),
            forced,
            dropped,
            // Listing thousands of ids at every step only when someone reads them.
            summarized: if wants_report {
                target.input()[..work.covered]
                    .iter()
                    .map(|m| m.id.clone())
                    .collect()
            } else {
                Vec::new()
            },
            summary: summary.as_ref().map(|record| SummaryUse {
                through: record.through.as_str().into(),
                messages: record.messages,
                fresh: fresh_summary,
            }),
            summary_error,
            truncated: std::mem::take(&mut work.truncated),
        };
        trace(&report, work.covered);

        if let Target::Reasoning(_) = target {
            persisted.sent = Some(Sent {
                messages: work.len(),
                fingerprint: format!(
                    "{:016x}",
                    fingerprint(system.as_ref(), work.view(target.input()), &work.origins)
                ),
            });
            notes(target.extensions_mut(), instance).sent_tokens = Some(work.total);
        }
        self.store(target.extensions_mut(), &agent, persisted);
        if wants_report {
            target.extensions_mut().insert(report);
        } else {
            target.extensions_mut().remove::<CompactionReport>();
        }
        if input_changed(&work, messages_before) {
            target.set_input(work.msgs);
        }
        Ok(())
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
                let merged = e
                    .extensions()
                    .get::<HookState>()
                    .and_then(|state| self.caught_up(state, e.agent().id(), e.history()));
                if let Some(merged) = merged
                    && let Some(state) = e.extensions_mut().get_mut::<HookState>()
                {
                    state.set(Self::NAME, &merged);
                }
                Ok(())
            }
            HookEvent::PreReasoning(e) => self.compact(Target::Reasoning(e)).await,
            HookEvent::PreSummary(e) => self.compact(Target::Summary(e)).await,
            _ => Ok(()),
        }
    }

    fn priority(&self) -> i32 {
        Self::PRIORITY
    }

    fn interests(&self) -> HookEventTypes {
        HookEventType::PreCall | HookEventType::PreReasoning | HookEventType::PreSummary
    }

    fn name(&self) -> &str {
        Self::NAME
    }
}

/// The event whose input the hook compacts.
enum Target<'a> {
    Reasoning(&'a mut PreReasoningEvent),
    Summary(&'a mut PreSummaryEvent),
}

impl Target<'_> {
    fn context_exceeded(&self) -> bool {
        match self {
            Target::Reasoning(e) => e.context_exceeded(),
            Target::Summary(_) => false,
        }
    }

    fn agent_id(&self) -> String {
        match self {
            Target::Reasoning(e) => e.agent().id().to_owned(),
            Target::Summary(e) => e.agent().id().to_owned(),
        }
    }

    fn input(&self) -> &[Msg] {
        match self {
            Target::Reasoning(e) => e.input_messages(),
            Target::Summary(e) => e.input_messages(),
        }
    }

    fn system(&self) -> Option<&Msg> {
        match self {
            Target::Reasoning(e) => e.system_message(),
            Target::Summary(e) => e.system_message(),
        }
    }

    fn extensions(&self) -> &Extensions {
        match self {
            Target::Reasoning(e) => e.extensions(),
            Target::Summary(e) => e.extensions(),
        }
    }

    fn extensions_mut(&mut self) -> &mut Extensions {
        match self {
            Target::Reasoning(e) => e.extensions_mut(),
            Target::Summary(e) => e.extensions_mut(),
        }
    }

    fn set_input(&mut self, messages: Vec<Msg>) {
        match self {
            Target::Reasoning(e) => e.set_input_messages(messages),
            Target::Summary(e) => e.set_input_messages(messages),
        }
    }
}

/// What the hook remembers within one call, per instance (the call's extensions hold one
/// value per type).
#[derive(Default)]
struct Notes {
    /// The model of the call's reasoning steps (PreSummary does not name it).
    model: Option<String>,
    /// The tokens of the input last sent: the size a refusal refers to.
    sent_tokens: Option<usize>,
}

#[derive(Default)]
struct CallNotes(Vec<(u64, Notes)>);

fn notes(extensions: &mut Extensions, instance: u64) -> &mut Notes {
    let entries = &mut extensions.get_or_insert_with(CallNotes::default).0;
    let at = match entries.iter().position(|(id, _)| *id == instance) {
        Some(at) => at,
        None => {
            entries.push((instance, Notes::default()));
            entries.len() - 1
        }
    };
    &mut entries[at].1
}

/// Where a message of the working input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Memory's message at this index, sent as is or with previews.
    Memory { index: usize, truncated: bool },
    /// The summary.
    Summary,
}

/// The input being compacted: messages, their tokens and origins, and the measured total.
struct Work {
    /// The messages, once they differ from the input (see `lazy`).
    msgs: Vec<Msg>,
    /// Whether the messages are still the input's, unchanged: `msgs` is empty and the
    /// input stands for it (see `view`), so a step that changes nothing copies nothing.
    lazy: bool,
    tokens: Vec<usize>,
    origins: Vec<Origin>,
    /// The tokens of the whole input (system message included), as measured.
    total: usize,
    used_usage: bool,
    /// The index in `msgs` of the latest user turn.
    user_turn: Option<usize>,
    /// How many of memory's first messages the summary stands for.
    covered: usize,
    truncated: Vec<TruncatedResult>,
}

impl Work {
    fn new(
        hook: &ContextWindowHook,
        input: &[Msg],
        system: Option<&Msg>,
        persisted: &Persisted,
        counter: &dyn TokenCounter,
        counter_key: u64,
    ) -> Self {
        let latest_user = latest_user_turn(input);
        let mut msgs = Vec::with_capacity(input.len() + 1);
        let mut origins = Vec::with_capacity(input.len() + 1);
        // 1: an existing summary of messages before the latest user turn, ending where the
        // conversation may be cut (a record made elsewhere might not).
        let covered = persisted.summary.as_ref().and_then(|record| {
            let at = input.iter().position(|m| m.id == record.through.as_str())?;
            let usable = latest_user.is_none_or(|user| at < user) && ends_a_unit(input, at);
            usable.then_some((record, at))
        });
        let start = match covered {
            Some((record, at)) => {
                msgs.push(record.message(input[at].timestamp));
                origins.push(Origin::Summary);
                at + 1
            }
            None => 0,
        };
        // 2: previews of large tool results.
        let mut truncated = Vec::new();
        let mut previews = Vec::new();
        let stash = &hook.shared.stash;
        if let Some(limit) = hook.config.tool_results {
            stash_all(&input[..start], stash, limit);
            for (index, message) in input.iter().enumerate().skip(start) {
                if let Some((preview, results)) = truncate_message(message, stash, limit) {
                    truncated.extend(results.into_iter().map(|(stash_id, tool, chars)| {
                        TruncatedResult {
                            message: message.id.clone(),
                            stash_id,
                            tool,
                            chars,
                        }
                    }));
                    previews.push((index, preview));
                }
            }
        }
        let lazy = start == 0 && previews.is_empty();
        let mut previews = previews.into_iter().peekable();
        for (index, message) in input.iter().enumerate().skip(start) {
            let preview = previews
                .next_if(|(at, _)| *at == index)
                .map(|(_, preview)| preview);
            origins.push(Origin::Memory {
                index,
                truncated: preview.is_some(),
            });
            if !lazy {
                msgs.push(preview.unwrap_or_else(|| message.clone()));
            }
        }
        let user_turn = latest_user.and_then(|user| {
            origins
                .iter()
                .position(|origin| matches!(origin, Origin::Memory { index, .. } if *index == user))
        });
        // 3: tokens.
        let tokens = hook.count(if lazy { input } else { &msgs }, counter, counter_key);
        let system_tokens = system.map_or(0, |system| counter.count_message(system));
        let counted = system_tokens + tokens.iter().sum::<usize>();
        let mut work = Self {
            msgs,
            lazy,
            tokens,
            origins,
            total: counted,
            used_usage: false,
            user_turn,
            covered: start,
            truncated,
        };
        if let Some(total) = work.reported_total(system, persisted, input) {
            work.total = total;
            work.used_usage = true;
        }
        work
    }

    /// The messages: the input's while nothing changed them.
    fn view<'a>(&'a self, input: &'a [Msg]) -> &'a [Msg] {
        if self.lazy { input } else { &self.msgs }
    }

    /// Copies the input's messages, to change them.
    fn materialize(&mut self, input: &[Msg]) {
        if self.lazy {
            self.msgs = input.to_vec();
            self.lazy = false;
        }
    }

    /// How many messages are sent.
    fn len(&self) -> usize {
        self.origins.len()
    }

    /// The tokens measured from the provider's usage: when the last reply with usage
    /// answered exactly the input sent before it (same messages, same previews, same
    /// summary, same system message), its usage stands for everything up to it.
    fn reported_total(
        &self,
        system: Option<&Msg>,
        persisted: &Persisted,
        input: &[Msg],
    ) -> Option<usize> {
        let sent = persisted.sent.as_ref()?;
        let msgs = self.view(input);
        let (at, usage) = msgs.iter().enumerate().rev().find_map(|(at, message)| {
            matches!(self.origins[at], Origin::Memory { .. })
                .then(|| reported_usage(message))
                .flatten()
                .map(|usage| (at, usage))
        })?;
        if at != sent.messages {
            return None;
        }
        let prefix = format!(
            "{:016x}",
            fingerprint(system, &msgs[..at], &self.origins[..at])
        );
        (prefix == sent.fingerprint)
            .then(|| usage_tokens(usage) + self.tokens[at + 1..].iter().sum::<usize>())
    }

    /// The summary text the input starts with, if any.
    fn summary_text(&self, persisted: &Persisted) -> Option<String> {
        self.summary_in_use(persisted).map(|record| record.text)
    }

    fn summary_in_use(&self, persisted: &Persisted) -> Option<SummaryRecord> {
        (self.origins.first() == Some(&Origin::Summary))
            .then(|| persisted.summary.clone())
            .flatten()
    }

    /// The messages to summarise, `from..cut`: everything after the current summary and
    /// before the most recent `keep_recent` messages (everything before the latest user
    /// turn when `forced`), never past the latest user turn, never inside a unit. `None`
    /// when that is nothing.
    fn summary_range(
        &self,
        keep_recent: usize,
        forced: bool,
        input: &[Msg],
    ) -> Option<(usize, usize)> {
        let from = usize::from(self.origins.first() == Some(&Origin::Summary));
        let len = self.len();
        let mut cut = if forced {
            len
        } else {
            len.saturating_sub(keep_recent)
        };
        if let Some(user) = self.user_turn {
            cut = cut.min(user);
        }
        let allowed = cut_points(self.view(input));
        while cut > from && !allowed[cut] {
            cut -= 1;
        }
        (cut > from).then_some((from, cut))
    }

    /// Replaces `msgs[..cut]` (the old summary and the messages after it) by a summary
    /// saying `text`, and returns its record.
    fn summarise(
        &mut self,
        cut: usize,
        text: String,
        counter: &dyn TokenCounter,
        input: &[Msg],
    ) -> SummaryRecord {
        self.materialize(input);
        let (through, messages) = match self.origins[cut - 1] {
            // Previews keep their message's id.
            Origin::Memory { index, .. } => (self.msgs[cut - 1].id.to_string(), index + 1),
            // `cut` is past the old summary.
            Origin::Summary => (String::new(), 0),
        };
        let record = SummaryRecord::new(through, messages, text);
        let message = record.message(self.msgs[cut - 1].timestamp);
        let tokens = counter.count_message(&message);
        let removed: usize = self.tokens[..cut].iter().sum();
        self.total = self.total.saturating_sub(removed) + tokens;
        self.msgs.splice(..cut, [message]);
        self.tokens.splice(..cut, [tokens]);
        self.origins.splice(..cut, [Origin::Summary]);
        self.user_turn = self.user_turn.map(|user| user + 1 - cut);
        self.covered = messages;
        record
    }

    /// Leaves out the oldest units, keeping the summary, the latest user turn's unit and the
    /// last unit, until at most `max_messages` messages (besides the summary) and at most
    /// `budget` tokens remain. Returns the ids of the messages left out.
    fn slide(
        &mut self,
        max_messages: Option<usize>,
        budget: Option<usize>,
        input: &[Msg],
    ) -> Vec<SharedString> {
        let summary = usize::from(self.origins.first() == Some(&Origin::Summary));
        let mut count = self.len() - summary;
        let over = |count: usize, total: usize| {
            max_messages.is_some_and(|max| count > max) || budget.is_some_and(|max| total > max)
        };
        if !over(count, self.total) {
            return Vec::new();
        }
        self.materialize(input);
        let units = units(&self.msgs);
        let last = units.len().saturating_sub(1);
        let mut keep = vec![true; self.msgs.len()];
        for (n, unit) in units.iter().enumerate() {
            if !over(count, self.total) {
                break;
            }
            let protected = n == last
                || unit.start < summary
                || self.user_turn.is_some_and(|user| unit.contains(&user));
            if protected {
                continue;
            }
            for at in unit.clone() {
                keep[at] = false;
                count -= 1;
                self.total = self.total.saturating_sub(self.tokens[at]);
            }
        }
        let mut dropped = Vec::new();
        let mut at = 0;
        let mut user_turn = self.user_turn;
        let msgs = std::mem::take(&mut self.msgs);
        let mut kept = Vec::with_capacity(msgs.len());
        for (index, message) in msgs.into_iter().enumerate() {
            if keep[index] {
                kept.push(message);
            } else {
                if let Some(user) = &mut user_turn
                    && index < *user
                {
                    *user -= 1;
                }
                dropped.push(message.id);
            }
        }
        self.msgs = kept;
        self.tokens.retain(|_| {
            at += 1;
            keep[at - 1]
        });
        at = 0;
        self.origins.retain(|_| {
            at += 1;
            keep[at - 1]
        });
        self.user_turn = user_turn;
        dropped
    }
}

/// Whether the conversation may be cut right after message `at`: no later message answers a
/// call made up to it.
fn ends_a_unit(input: &[Msg], at: usize) -> bool {
    let calls: std::collections::HashSet<&str> = input[..=at]
        .iter()
        .flat_map(|message| message.content.iter())
        .filter_map(ContentBlock::as_tool_use)
        .map(|call| call.id.as_str())
        .collect();
    calls.is_empty()
        || !input[at + 1..]
            .iter()
            .flat_map(Msg::tool_results)
            .any(|result| calls.contains(result.id.as_str()))
}

/// Whether the input sent differs from memory's copy (when it does not, the event keeps
/// its own vector).
fn input_changed(work: &Work, messages_before: usize) -> bool {
    !work.lazy && work.msgs.len() != messages_before
        || work.origins.iter().any(|origin| {
            !matches!(
                origin,
                Origin::Memory {
                    truncated: false,
                    ..
                }
            )
        })
}

impl ContextWindowHook {
    /// The tokens of each message, from the cache when the message was counted before.
    fn count(&self, msgs: &[Msg], counter: &dyn TokenCounter, counter_key: u64) -> Vec<usize> {
        let mut cache = self
            .shared
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        cache.make_room(msgs.len());
        msgs.iter()
            .map(|message| {
                let key = shape(message) ^ counter_key;
                match cache.entries.get(&message.id) {
                    Some(&(known, tokens)) if known == key => tokens,
                    _ => {
                        let tokens = counter.count_message(message);
                        cache.entries.insert(message.id.clone(), (key, tokens));
                        tokens
                    }
                }
            })
            .collect()
    }
}

/// Token counts by message id, with the shape of the message counted (and the counter):
/// tokenizing a long conversation at every step would cost more than everything else.
#[derive(Default)]
struct CountCache {
    entries: HashMap<SharedString, (u64, usize), BuildHasherDefault<WordHash>>,
}

impl CountCache {
    /// Keeps the cache bounded: cleared when it holds far more messages than one input.
    fn make_room(&mut self, input: usize) {
        if self.entries.len() > input.saturating_mul(4).max(4_096) {
            self.entries.clear();
        }
    }
}

/// A cheap fingerprint of what a message's count depends on: role, block kinds and lengths.
fn shape(message: &Msg) -> u64 {
    let mut hash = WordHash::default();
    let word = |kind: u64, a: usize, b: usize| kind << 56 ^ (a as u64) << 24 ^ b as u64;
    hash.mix(message.role as u64);
    for block in message.content.iter() {
        match block {
            ContentBlock::Text(text) => hash.mix(word(1, text.text.len(), 0)),
            ContentBlock::Thinking(thinking) => hash.mix(word(2, thinking.thinking.len(), 0)),
            ContentBlock::ToolUse(call) => {
                let raw = call.raw_input.as_ref().map_or(0, |raw| raw.len() + 1);
                // The arguments' top level: enough to notice an edit, and no serialisation.
                let arguments = call.input.as_object().map_or(0, |map| map.len() + 1);
                hash.mix(word(3, call.name.len(), raw));
                hash.mix(arguments as u64);
            }
            ContentBlock::ToolResult(result) => {
                hash.mix(word(4, result.name.len(), result.output.len()));
                for output in &result.output {
                    hash.mix(output.as_text().map_or(u64::MAX, |text| text.len() as u64));
                }
            }
            _ => hash.mix(5 << 56),
        }
    }
    hash.finish()
}

/// A fingerprint of an input: the system message's text and, per message, its id and how
/// it was sent (as is, with previews, a summary). Stable across processes and versions
/// ([`WordHash`]), so it can be stored with a session.
fn fingerprint(system: Option<&Msg>, msgs: &[Msg], origins: &[Origin]) -> u64 {
    let mut hash = WordHash::default();
    if let Some(system) = system {
        for block in system.content.iter() {
            if let Some(text) = block.as_text() {
                hash.write(text.as_bytes());
                hash.write_u8(0xfe);
            }
        }
    }
    hash.write_u8(0xfd);
    for (message, origin) in msgs.iter().zip(origins) {
        hash.write(message.id.as_bytes());
        hash.write_u8(match origin {
            Origin::Memory {
                truncated: false, ..
            } => 0xf0,
            Origin::Memory {
                truncated: true, ..
            } => 0xf1,
            Origin::Summary => 0xf2,
        });
    }
    hash.finish()
}

fn word_hash(bytes: &[u8]) -> u64 {
    let mut hash = WordHash::default();
    hash.write(bytes);
    hash.finish()
}

/// A fast hash, eight bytes at a time, with a fixed algorithm (so fingerprints stay the same
/// across processes, platforms and versions, and can be stored with a session): each word is
/// mixed in the way of rustc's FxHash, and the result is finished with MurmurHash3's mixer.
#[derive(Clone, Copy)]
struct WordHash(u64);

impl WordHash {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Default for WordHash {
    fn default() -> Self {
        WordHash(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        let mut hash = self.0;
        hash ^= hash >> 33;
        hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
        hash ^= hash >> 33;
        hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        hash ^ (hash >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        let mut word = [0u8; 8];
        for chunk in &mut chunks {
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        self.mix(u64::from_le_bytes(word) ^ ((bytes.len() as u64) << 56));
    }
}

/// Emits the `tracing` event of one compaction (`summarized`: how many messages the summary
/// stands for).
fn trace(report: &CompactionReport, summarized: usize) {
    macro_rules! event {
        ($level:expr, $message:literal) => {
            tracing::event!(
                target: "agentscope::context",
                $level,
                hook = ContextWindowHook::NAME,
                model = %report.model,
                window = report.window,
                tokens_before = report.tokens_before,
                tokens_after = report.tokens_after,
                messages_before = report.messages_before,
                messages_after = report.messages_after,
                dropped = report.dropped.len(),
                summarized = summarized,
                truncated = report.truncated.len(),
                forced = report.forced,
                $message
            )
        };
    }
    if report.changed() || summarized > 0 {
        event!(tracing::Level::INFO, "context compacted");
    } else {
        event!(tracing::Level::DEBUG, "context within limits");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_see_ids_previews_and_the_system_message() {
        let a = Msg::user("a");
        let b = Msg::assistant("b");
        let plain = [
            Origin::Memory {
                index: 0,
                truncated: false,
            },
            Origin::Memory {
                index: 1,
                truncated: false,
            },
        ];
        let mut cut = plain;
        cut[1] = Origin::Memory {
            index: 1,
            truncated: true,
        };
        let msgs = [a.clone(), b.clone()];
        let base = fingerprint(None, &msgs, &plain);
        assert_eq!(base, fingerprint(None, &msgs, &plain));
        assert_ne!(base, fingerprint(None, &msgs, &cut));
        assert_ne!(base, fingerprint(Some(&Msg::system("s")), &msgs, &plain));
        assert_ne!(base, fingerprint(None, &[b, a], &plain));
        // A fixed value: the same in every process, on every platform.
        assert_eq!(word_hash(b"a"), 0x6fb1_58b7_7044_205f);
        assert_ne!(word_hash(b"a"), word_hash(b"a\0"));
        assert_ne!(word_hash(b"abcdefgh"), word_hash(b"abcdefg"));
    }

    #[test]
    fn shapes_change_with_content() {
        let a = Msg::user("abc");
        let mut b = a.clone();
        assert_eq!(shape(&a), shape(&b));
        b.content.push(ContentBlock::text("d"));
        assert_ne!(shape(&a), shape(&b));
    }
}
