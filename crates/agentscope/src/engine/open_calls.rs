//! [`OpenToolCalls`]: the guarantee that no tool call stays in memory without a result.

use agentscope_core::{Memory, Msg, ToolResultBlock, ToolUseBlock};

/// Tool calls that are stored in memory but have no stored result yet, with any result
/// already computed for them.
///
/// Whatever ends the call early (an error, an interrupt, or dropping the call future)
/// closes them: each gets its computed result if there is one, otherwise an error result.
/// Memory is synchronous, so this works even from `Drop`.
pub(super) struct OpenToolCalls<'a> {
    memory: &'a dyn Memory,
    calls: Vec<OpenCall>,
}

struct OpenCall {
    id: String,
    name: String,
    result: Option<ToolResultBlock>,
}

impl<'a> OpenToolCalls<'a> {
    pub(super) fn new(memory: &'a dyn Memory) -> Self {
        Self {
            memory,
            calls: Vec::new(),
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
    pub(super) fn computed(&mut self, result: &ToolResultBlock) {
        if let Some(open) = self.calls.iter_mut().find(|open| open.id == result.id) {
            open.result = Some(result.clone());
        }
    }

    /// Stops tracking a call: its result was stored, or it stays pending on purpose.
    pub(super) fn settle(&mut self, id: &str) {
        self.calls.retain(|open| open.id != id);
    }

    /// Stores a result for every open call: the computed one, or an error saying `reason`.
    pub(super) fn close(&mut self, reason: &str) {
        for open in self.calls.drain(..) {
            let result = open
                .result
                .unwrap_or_else(|| ToolResultBlock::error(open.id, open.name, reason));
            self.memory.add(Msg::tool_result(result));
        }
    }
}

impl Drop for OpenToolCalls<'_> {
    fn drop(&mut self) {
        self.close(super::CANCELLED_RESULT);
    }
}
