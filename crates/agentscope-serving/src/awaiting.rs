//! [`Awaiting`]: what a session awaits, read from its stored state, so that every session
//! with pending tool calls can be continued or closed: each pending call either awaits an
//! answer (approval, or it is in doubt), or needs none and a call without new input runs it,
//! or is running (a call holds the session).

use agentscope::hooks::ToolApprovalHook;
use agentscope::{Msg, Role, ToolContext, ToolUseBlock};
use agentscope_core::pending_tool_uses;

/// What a session awaits.
#[derive(Debug, Default, Clone, PartialEq)]
#[non_exhaustive]
pub struct Awaiting {
    /// Pending calls that await a decision (the approval hook's list, restored from the
    /// session).
    pub approvals: Vec<ToolUseBlock>,
    /// Pending calls in doubt: recorded as running, their result never stored, and no call
    /// holds the session.
    pub in_doubt: Vec<ToolUseBlock>,
    /// Pending calls recorded as running while a call holds the session: they are running.
    pub running: Vec<ToolUseBlock>,
    /// A call holds the session now: what its state shows is in progress.
    pub held: bool,
    /// Pending calls that need no answer (no longer guarded, decided in a call that stopped
    /// before they started, or rejected before): a call without new input runs them.
    pub ready: Vec<ToolUseBlock>,
    /// The conversation ends before the model answered (with tool results or a user
    /// message) and nothing is pending: a call without new input lets the model answer.
    pub unanswered: bool,
}

/// What a thread awaits, in a word (see [`Awaiting::label`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Awaits {
    /// A call holds the session: wait for its end.
    Busy,
    /// Answers to its questions (calls awaiting approval, calls in doubt).
    Answers,
    /// A call without new input continues it.
    Run,
    /// A new user message.
    Message,
}

impl Awaits {
    /// The word: `"busy"`, `"resume"`, `"run"` or `"message"` (as AG-UI's thread view says
    /// it).
    pub fn as_str(self) -> &'static str {
        match self {
            Awaits::Busy => "busy",
            Awaits::Answers => "resume",
            Awaits::Run => "run",
            Awaits::Message => "message",
        }
    }
}

/// Whether a session holding `messages`, with `running` tool calls recorded as started, may
/// be in the middle of a call: it has pending calls recorded as running, or it ends with a
/// message the model has not answered. Only then does [`Awaiting::of`] need to know whether
/// a call holds the session.
pub fn may_be_running(messages: &[Msg], running: &[String]) -> bool {
    ends_unanswered(messages)
        || pending_tool_uses(messages)
            .iter()
            .any(|call| running.iter().any(|id| call.id == *id))
}

impl Awaiting {
    /// What a session holding `messages`, with `running` tool calls recorded as started,
    /// awaits; `approvals` (the agent's approval hook) must have been restored from the
    /// session (`restore_state`). `held`: a call holds the session now (on this instance or
    /// another), so its calls recorded as running are running, not in doubt.
    pub fn of(
        messages: &[Msg],
        running: &[String],
        approvals: Option<&ToolApprovalHook>,
        held: bool,
    ) -> Self {
        let asked: Vec<ToolUseBlock> = approvals.map(ToolApprovalHook::pending).unwrap_or_default();
        let mut awaiting = Self {
            held,
            ..Self::default()
        };
        for call in pending_tool_uses(messages) {
            if running.iter().any(|id| call.id == *id) {
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
        awaiting.unanswered = nothing_pending && ends_unanswered(messages);
        awaiting
    }

    /// Whether answers are awaited: calls awaiting approval or in doubt.
    pub fn has_questions(&self) -> bool {
        !self.approvals.is_empty() || !self.in_doubt.is_empty()
    }

    /// The calls awaiting answers, approvals first, each kind in call order.
    pub fn questions(&self) -> impl Iterator<Item = &ToolUseBlock> {
        self.approvals.iter().chain(&self.in_doubt)
    }

    /// The ids of the calls awaiting answers, approvals first.
    pub fn question_ids(&self) -> Vec<String> {
        self.questions().map(|call| call.id.to_string()).collect()
    }

    /// What the session awaits, in a word.
    pub fn label(&self) -> Awaits {
        if self.held {
            Awaits::Busy
        } else if self.has_questions() {
            Awaits::Answers
        } else if !self.ready.is_empty() || self.unanswered {
            Awaits::Run
        } else {
            Awaits::Message
        }
    }
}

/// The idempotency key tool call `call` of session `session` got (and gets again on a
/// retry): what the service the tool called knows the call by, shown with a call in doubt.
pub fn idempotency_key(session: &str, call: &ToolUseBlock) -> String {
    ToolContext::new(call.clone())
        .with_scope(session)
        .idempotency_key()
}

/// Whether the conversation's last message is one the model has not answered yet.
pub(crate) fn ends_unanswered(messages: &[Msg]) -> bool {
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
    use agentscope::ToolResultBlock;
    use agentscope::hooks::ApprovalPolicy;
    use agentscope::session::{AgentIdentity, AgentState};
    use serde_json::json;

    fn asked(calls: &[(&str, &str)]) -> Msg {
        let mut msg = Msg::builder().role(Role::Assistant);
        for (id, name) in calls {
            msg = msg.block(ToolUseBlock::new(*id, *name, json!({})));
        }
        msg.build()
    }

    fn ids(calls: &[ToolUseBlock]) -> Vec<&str> {
        calls.iter().map(|call| call.id.as_str()).collect()
    }

    #[test]
    fn each_pending_call_is_an_approval_in_doubt_or_ready() {
        let messages = vec![
            Msg::user("Clean up and pay."),
            asked(&[("c1", "rm"), ("c2", "pay"), ("c3", "search"), ("c4", "rm")]),
            Msg::tool_result(ToolResultBlock::text("c4", "rm", "done")),
        ];
        let running = vec!["c2".to_owned()];
        let mut state = AgentState::new(AgentIdentity::new("assistant", "a-1"), messages.clone());
        state.running_tools = running.clone();
        let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["rm", "pay"]));
        approvals.restore_state(&state).unwrap();
        let awaiting = Awaiting::of(&messages, &running, Some(&approvals), false);
        assert_eq!(ids(&awaiting.approvals), ["c1"]);
        assert_eq!(ids(&awaiting.in_doubt), ["c2"]);
        assert_eq!(ids(&awaiting.ready), ["c3"]);
        assert!(!awaiting.unanswered);
        assert_eq!(awaiting.question_ids(), ["c1", "c2"]);
        assert_eq!(awaiting.label(), Awaits::Answers);

        // Without an approval policy, the guarded call needs no answer any more.
        let awaiting = Awaiting::of(&messages, &running, None, false);
        assert_eq!(ids(&awaiting.ready), ["c1", "c3"]);
        assert_eq!(ids(&awaiting.in_doubt), ["c2"]);

        // While a call holds the session, the call recorded as running is running.
        assert!(may_be_running(&messages, &running));
        let awaiting = Awaiting::of(&messages, &running, Some(&approvals), true);
        assert_eq!(ids(&awaiting.running), ["c2"]);
        assert!(awaiting.in_doubt.is_empty());
        assert_eq!(awaiting.question_ids(), ["c1"]);
        assert_eq!(awaiting.label(), Awaits::Busy);
    }

    #[test]
    fn a_session_awaits_a_run_a_message_or_nothing() {
        assert_eq!(Awaiting::of(&[], &[], None, false).label(), Awaits::Message);
        let answered = vec![Msg::user("Hi"), Msg::assistant("Hello")];
        assert!(!may_be_running(&answered, &[]));
        assert_eq!(
            Awaiting::of(&answered, &[], None, false).label(),
            Awaits::Message
        );
        let cut = vec![
            Msg::user("Search"),
            asked(&[("c1", "search")]),
            Msg::tool_result(ToolResultBlock::text("c1", "search", "found")),
        ];
        assert!(may_be_running(&cut, &[]));
        let awaiting = Awaiting::of(&cut, &[], None, false);
        assert!(awaiting.unanswered);
        assert_eq!(awaiting.label(), Awaits::Run);
        assert_eq!(Awaiting::of(&cut, &[], None, true).label(), Awaits::Busy);
        let ready = vec![Msg::user("Search"), asked(&[("c1", "search")])];
        assert_eq!(Awaiting::of(&ready, &[], None, false).label(), Awaits::Run);
        assert_eq!(Awaits::Answers.as_str(), "resume");
    }
}
