//! [`CompactionReport`]: what a [`ContextWindowHook`](super::ContextWindowHook) did to one
//! model input, for later hooks and traces.

use agentscope_core::SharedString;

/// What a [`ContextWindowHook`](super::ContextWindowHook) did to one model input: the tokens
/// before and after, and which messages it left out, summarised or cut.
///
/// The hook puts one into the call's [extensions](agentscope_core::Extensions) at each
/// PreReasoning (and PreSummary) when asked to: for every call with
/// [`with_reports(true)`](super::ContextWindowHook::with_reports), or for one call when an
/// earlier hook of that call inserted [`CollectCompactionReports`]. A hook that runs after
/// it (priority above [`ContextWindowHook::PRIORITY`](super::ContextWindowHook::PRIORITY))
/// reads it with `event.extensions().get::<CompactionReport>()`; it is replaced at the next
/// model call of the call. Ids are those of the messages in memory.
///
/// ```
/// use agentscope::context::CompactionReport;
///
/// let report = CompactionReport::default();
/// assert!(!report.changed());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CompactionReport {
    /// The model the input is for.
    pub model: String,
    /// The window the hook worked with: the model's, or less after the provider refused a
    /// request of that size.
    pub window: usize,
    /// The input's tokens (system message included) before the hook changed anything
    /// (after applying an existing summary and the tool-result previews).
    pub tokens_before: usize,
    /// The input's tokens as sent.
    pub tokens_after: usize,
    /// Whether the tokens were measured from the provider's reported usage (see
    /// [`InputTokens`](super::InputTokens)) rather than counted.
    pub used_reported_usage: bool,
    /// How many messages the hook received (memory).
    pub messages_before: usize,
    /// How many messages it passed on.
    pub messages_after: usize,
    /// Whether this was the retry after the provider refused the input as too long
    /// (`PreReasoningEvent::context_exceeded`): compaction ran whatever the thresholds.
    pub forced: bool,
    /// The messages the sliding window left out (whole units: a tool call goes with its
    /// results), oldest first.
    pub dropped: Vec<SharedString>,
    /// The messages the summary stands for, oldest first.
    pub summarized: Vec<SharedString>,
    /// The summary sent, when there is one.
    pub summary: Option<SummaryUse>,
    /// Why summarising failed, when it was due and the summary model failed (the input was
    /// then compacted without it).
    pub summary_error: Option<String>,
    /// The tool results sent as a preview.
    pub truncated: Vec<TruncatedResult>,
}

impl CompactionReport {
    /// Whether the hook changed the input.
    pub fn changed(&self) -> bool {
        !(self.dropped.is_empty() && self.summarized.is_empty() && self.truncated.is_empty())
    }
}

/// The summary a [`CompactionReport`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SummaryUse {
    /// The id of the last message it covers.
    pub through: SharedString,
    /// How many messages it covers.
    pub messages: usize,
    /// Whether it was made for this input (`false`: made at an earlier step and reused).
    pub fresh: bool,
}

/// A tool result a [`CompactionReport`] says was cut to a preview.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TruncatedResult {
    /// The id of the message that carries it.
    pub message: SharedString,
    /// The stash id: the tool call's id.
    pub stash_id: SharedString,
    /// The tool's name.
    pub tool: SharedString,
    /// The length of its full text, in characters.
    pub chars: usize,
}

/// Asks a [`ContextWindowHook`](super::ContextWindowHook) for a [`CompactionReport`] at each
/// model call of this call: insert it into the call's extensions from an earlier hook (at
/// PreCall, say).
///
/// ```
/// use agentscope::context::CollectCompactionReports;
/// use agentscope::{HookEvent, HookEventType, hook_fn};
///
/// let ask = hook_fn(|event| {
///     if let HookEvent::PreCall(e) = event {
///         e.extensions_mut().insert(CollectCompactionReports);
///     }
///     Ok(())
/// })
/// .with_interests(HookEventType::PreCall);
/// # drop(ask);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CollectCompactionReports;
