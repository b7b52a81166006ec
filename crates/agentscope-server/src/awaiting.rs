//! [`Awaiting`]: what a thread awaits, read from its stored state, so that every thread with
//! pending tool calls can be continued or closed: each pending call either is an interrupt
//! (it awaits approval, or it is in doubt) that a `resume` answers, or needs no answer and a
//! run without new messages runs it, or is running (a call holds the thread).

use agentscope::ToolUseBlock;
use agentscope::hooks::ToolApprovalHook;
use agentscope::session::AgentState;
use agentscope::{Msg, Role};
use agentscope_core::plumbing::conversation::pending_tool_uses;

use crate::interrupts;
use crate::protocol::Interrupt;

/// What a thread awaits.
#[derive(Debug, Default)]
pub(crate) struct Awaiting {
    /// Pending calls that await a decision (the approval hook's list, restored from the
    /// thread).
    pub(crate) approvals: Vec<ToolUseBlock>,
    /// Pending calls in doubt: recorded as running, their result never stored, and no call
    /// holds the thread.
    pub(crate) in_doubt: Vec<ToolUseBlock>,
    /// Pending calls recorded as running while a call holds the thread: they are running.
    pub(crate) running: Vec<ToolUseBlock>,
    /// A call holds the thread now: what its state shows is in progress.
    pub(crate) held: bool,
    /// Pending calls that need no answer (no longer guarded, decided in a run that stopped
    /// before they started, or rejected before): a run without new messages runs them.
    pub(crate) ready: Vec<ToolUseBlock>,
    /// The conversation ends before the model answered (with tool results or a user
    /// message) and nothing is pending: a run without new messages lets the model answer.
    pub(crate) unanswered: bool,
}

/// Whether the thread stored as `state` may be in the middle of a call: it has pending calls
/// recorded as running (in doubt, or running), or it ends with a message the model has not
/// answered. Only then does [`Awaiting::of`] need to know whether a call holds the thread.
pub(crate) fn may_be_running(state: Option<&AgentState>) -> bool {
    state.is_some_and(|state| {
        ends_unanswered(&state.messages)
            || pending_tool_uses(&state.messages)
                .iter()
                .any(|call| state.running_tools.iter().any(|id| call.id == *id))
    })
}

impl Awaiting {
    /// What the thread stored as `state` awaits; `approvals` (the agent's approval hook)
    /// must have been restored from `state` (`restore_state`). `held`: a call holds the
    /// thread now (on this instance or another), so its calls recorded as running are
    /// running, not in doubt.
    pub(crate) fn of(
        state: Option<&AgentState>,
        approvals: Option<&ToolApprovalHook>,
        held: bool,
    ) -> Self {
        let Some(state) = state else {
            return Self::default();
        };
        let asked: Vec<ToolUseBlock> = approvals.map(ToolApprovalHook::pending).unwrap_or_default();
        let mut awaiting = Self {
            held,
            ..Self::default()
        };
        for call in pending_tool_uses(&state.messages) {
            if state.running_tools.iter().any(|id| call.id == *id) {
                if held {
                    awaiting.running.push(call);
                } else {
                    awaiting.in_doubt.push(call);
                }
            } else if asked.iter().any(|asked| asked.id == call.id) {
                awaiting.approvals.push(call);
            } else {
                awaiting.ready.push(call);
            }
        }
        let nothing_pending = awaiting.approvals.is_empty()
            && awaiting.in_doubt.is_empty()
            && awaiting.running.is_empty()
            && awaiting.ready.is_empty();
        awaiting.unanswered = nothing_pending && ends_unanswered(&state.messages);
        awaiting
    }

    /// Whether a `resume` must answer something: calls awaiting approval or in doubt.
    pub(crate) fn has_interrupts(&self) -> bool {
        !self.approvals.is_empty() || !self.in_doubt.is_empty()
    }

    /// The ids of the interrupts, in call order within each kind (approvals first).
    pub(crate) fn interrupt_ids(&self) -> Vec<String> {
        self.approvals
            .iter()
            .chain(&self.in_doubt)
            .map(|call| call.id.to_string())
            .collect()
    }

    /// The interrupts of the thread stored as `session`.
    pub(crate) fn interrupts(&self, session: &str) -> Vec<Interrupt> {
        self.approvals
            .iter()
            .map(interrupts::approval)
            .chain(
                self.in_doubt
                    .iter()
                    .map(|call| interrupts::in_doubt(call, session)),
            )
            .collect()
    }

    /// What the thread awaits, as `GET /agents/{agent}/threads/{thread}` says it:
    /// `"busy"` (the end of the call that holds it), `"resume"` (answers to its
    /// interrupts), `"run"` (a run without new messages continues it) or `"message"` (a new
    /// user message).
    pub(crate) fn label(&self) -> &'static str {
        if self.held {
            "busy"
        } else if self.has_interrupts() {
            "resume"
        } else if !self.ready.is_empty() || self.unanswered {
            "run"
        } else {
            "message"
        }
    }
}

/// Whether the conversation's last message is one the model has not answered yet.
fn ends_unanswered(messages: &[Msg]) -> bool {
    messages
        .iter()
        .rev()
        .find(|msg| msg.role != Role::System)
        .is_some_and(|last| matches!(last.role, Role::User | Role::Tool))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentscope::hooks::ApprovalPolicy;
    use agentscope::session::AgentIdentity;
    use agentscope::{ToolResultBlock, ToolUseBlock};
    use serde_json::json;

    fn asked(calls: &[(&str, &str)]) -> Msg {
        let mut msg = Msg::builder().role(Role::Assistant);
        for (id, name) in calls {
            msg = msg.block(ToolUseBlock::new(*id, *name, json!({})));
        }
        msg.build()
    }

    fn state(messages: Vec<Msg>, running: &[&str]) -> AgentState {
        let mut state = AgentState::new(AgentIdentity::new("assistant", "a-1"), messages);
        state.running_tools = running.iter().map(|id| (*id).to_owned()).collect();
        state
    }

    fn ids(calls: &[ToolUseBlock]) -> Vec<&str> {
        calls.iter().map(|call| call.id.as_str()).collect()
    }

    #[test]
    fn each_pending_call_is_an_approval_in_doubt_or_ready() {
        let state = state(
            vec![
                Msg::user("Clean up and pay."),
                asked(&[("c1", "rm"), ("c2", "pay"), ("c3", "search"), ("c4", "rm")]),
                Msg::tool_result(ToolResultBlock::text("c4", "rm", "done")),
            ],
            &["c2"],
        );
        let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["rm", "pay"]));
        approvals.restore_state(&state).unwrap();
        let awaiting = Awaiting::of(Some(&state), Some(&approvals), false);
        assert_eq!(ids(&awaiting.approvals), ["c1"]);
        assert_eq!(ids(&awaiting.in_doubt), ["c2"]);
        assert_eq!(ids(&awaiting.ready), ["c3"]);
        assert!(!awaiting.unanswered);
        assert_eq!(awaiting.interrupt_ids(), ["c1", "c2"]);
        assert_eq!(awaiting.label(), "resume");
        let reasons: Vec<&str> = awaiting
            .interrupts("assistant.t")
            .iter()
            .map(|i| i.reason)
            .collect();
        assert_eq!(reasons, ["tool_approval", "tool_in_doubt"]);

        // Without an approval policy, the guarded call needs no answer any more.
        let awaiting = Awaiting::of(Some(&state), None, false);
        assert_eq!(ids(&awaiting.ready), ["c1", "c3"]);
        assert_eq!(ids(&awaiting.in_doubt), ["c2"]);

        // While a call holds the thread, the call recorded as running is running.
        assert!(may_be_running(Some(&state)));
        let awaiting = Awaiting::of(Some(&state), Some(&approvals), true);
        assert_eq!(ids(&awaiting.running), ["c2"]);
        assert!(awaiting.in_doubt.is_empty());
        assert_eq!(awaiting.interrupt_ids(), ["c1"]);
        assert_eq!(awaiting.label(), "busy");
    }

    #[test]
    fn a_thread_awaits_a_run_a_message_or_nothing() {
        assert_eq!(Awaiting::of(None, None, false).label(), "message");
        let answered = state(vec![Msg::user("Hi"), Msg::assistant("Hello")], &[]);
        assert!(!may_be_running(Some(&answered)));
        assert_eq!(
            Awaiting::of(Some(&answered), None, false).label(),
            "message"
        );
        let cut = state(
            vec![
                Msg::user("Search"),
                asked(&[("c1", "search")]),
                Msg::tool_result(ToolResultBlock::text("c1", "search", "found")),
            ],
            &[],
        );
        assert!(may_be_running(Some(&cut)));
        let awaiting = Awaiting::of(Some(&cut), None, false);
        assert!(awaiting.unanswered);
        assert_eq!(awaiting.label(), "run");
        assert_eq!(Awaiting::of(Some(&cut), None, true).label(), "busy");
        let ready = state(vec![Msg::user("Search"), asked(&[("c1", "search")])], &[]);
        assert_eq!(Awaiting::of(Some(&ready), None, false).label(), "run");
    }
}
