//! [`FinishStep`]: the per-call step that runs after the loop and before PostCall.
//!
//! Built-ins that install temporary engine for one call (structured output) use it to
//! rewrite what that call stored while the call still holds the agent, so no other call can
//! interleave with the rewrite.

use agentscope_core::{AgentError, Memory, Msg};

/// Rewrites the messages a call stored and decides its outcome.
///
/// Arguments: the agent's memory, the index of the first message this call stored, and how
/// the loop ended: `Some(outcome)` before PostCall (the returned value replaces the outcome),
/// `None` when the call was dropped (the returned value is ignored).
pub(crate) type Finish = Box<
    dyn FnOnce(&dyn Memory, usize, Option<Result<Msg, AgentError>>) -> Result<Msg, AgentError>
        + Send,
>;

/// Holds a call's [`Finish`] and runs it exactly once: after the loop, or when dropped.
pub(super) struct FinishStep<'a> {
    memory: &'a dyn Memory,
    start: usize,
    finish: Option<Finish>,
}

impl<'a> FinishStep<'a> {
    /// Remembers where the call's messages start (memory's length now).
    pub(super) fn new(memory: &'a dyn Memory, finish: Option<Finish>) -> Self {
        Self {
            memory,
            start: memory.len(),
            finish,
        }
    }

    /// Whether there is a step to run.
    pub(super) fn is_armed(&self) -> bool {
        self.finish.is_some()
    }

    /// Runs the step on the loop's outcome.
    pub(super) fn run(&mut self, outcome: Result<Msg, AgentError>) -> Result<Msg, AgentError> {
        match self.finish.take() {
            Some(finish) => finish(self.memory, self.start, Some(outcome)),
            None => outcome,
        }
    }
}

impl Drop for FinishStep<'_> {
    fn drop(&mut self) {
        if let Some(finish) = self.finish.take() {
            // The call was dropped: only the memory rewrite matters.
            let _ = finish(self.memory, self.start, None);
        }
    }
}
