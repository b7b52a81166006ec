//! [`OpenToolCalls`]: the guarantee that no tool call stays in memory without a result.

use agentscope_core::{Memory, Msg, SharedString, ToolResultBlock, ToolUseBlock};

/// Tool calls that are stored in memory but have no stored result yet, with any result
/// already computed for them.
///
/// Whatever ends the call early (an error, an interrupt, or dropping the call future)
/// closes them: each gets an error result, or, for a computed result, the result itself
/// when no hook would have seen it at PostActing (`withhold` false) or the call was
/// interrupted; otherwise the result is withheld, so a failing PostActing hook (a
/// redaction) is never bypassed. Memory is synchronous, so this works even from `Drop`.
pub(super) struct OpenToolCalls<'a> {
    memory: &'a dyn Memory,
    calls: Vec<OpenCall>,
    /// Whether hooks listen to PostActing: computed results that did not pass it are then
    /// stored as [`WITHHELD_RESULT`](super::WITHHELD_RESULT) errors.
    withhold: bool,
}

struct OpenCall {
    id: SharedString,
    name: SharedString,
    result: Option<ToolResultBlock>,
}

impl<'a> OpenToolCalls<'a> {
    pub(super) fn new(memory: &'a dyn Memory, withhold: bool) -> Self {
        Self {
            memory,
            calls: Vec::new(),
            withhold,
        }
    }

    /// Tracks `calls` (already-tracked ids are skipped).
    pub(super) fn open<'c>(&mut self, calls: impl IntoIterator<Item = &'c ToolUseBlock>) {
        for call in calls {
            if !self.calls.iter().any(|open| open.id == call.id) {
                self.calls.push(OpenCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    result: None,
                });
            }
        }
    }

    /// Remembers a computed result, to be stored if the call ends before it is.
    pub(super) fn computed(&mut self, result: ToolResultBlock) {
        if let Some(open) = self.calls.iter_mut().find(|open| open.id == result.id) {
            open.result = Some(result);
        }
    }

    /// Stops tracking a call: its result was stored, or it stays pending on purpose.
    pub(super) fn settle(&mut self, id: &str) {
        self.calls.retain(|open| open.id != id);
    }

    /// Stores a result for every open call of a call that failed or was dropped: the
    /// computed one (withheld when PostActing hooks never saw it), or an error saying
    /// `reason`.
    pub(super) fn close(&mut self, reason: &str) {
        self.close_with(reason, self.withhold);
    }

    /// Stores a result for every open call of an interrupted call: the computed one, or an
    /// error saying `reason`.
    pub(super) fn close_interrupted(&mut self, reason: &str) {
        self.close_with(reason, false);
    }

    fn close_with(&mut self, reason: &str, withhold: bool) {
        for open in self.calls.drain(..) {
            let result = match open.result {
                Some(result) if withhold => {
                    ToolResultBlock::error(result.id, result.name, super::WITHHELD_RESULT)
                }
                Some(result) => result,
                None => ToolResultBlock::error(open.id, open.name, reason),
            };
            self.memory.add(Msg::tool_result(result));
        }
    }
}

impl Drop for OpenToolCalls<'_> {
    fn drop(&mut self) {
        self.close(super::CANCELLED_RESULT);
    }
}
