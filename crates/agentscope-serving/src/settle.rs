//! The orphan rule: the state of a run that says `working` while no call holds its session
//! (the call serving it stopped before it wrote its end: its process died, its lease
//! expired), read from what the conversation holds. One rule for every protocol, applied
//! wherever such a run is found: by the next call on the session (under its lease), and by a
//! reader that took the session's lease to check.

use agentscope::{ContentBlock, GenerateReason, Msg, Role};

use crate::awaiting::Awaiting;
use crate::record::{Run, RunEvent, RunState};

/// What a client reads about a run whose call stopped before it finished.
pub const STOPPED: &str = "The call serving this run stopped before it finished: the process \
     running it ended.";
/// What a client reads about a run whose call stopped while tools ran.
pub const STOPPED_IN_DOUBT: &str = "The call serving this run stopped before it finished, while \
     tool calls were running: they are in doubt, and the next message in this conversation is \
     answered with them (their idempotency keys, and how to resolve each).";

/// The state run `run` ends in, which says `working` while no call holds its session:
///
/// - its part of the conversation ends with the model's answer (no pending call): the call
///   finished, so the run is `completed` with that answer (`canceled` when the answer is the
///   interrupt reply), whatever the record says;
/// - calls of its part await approval: it asks for them (`input-required`);
/// - calls of its part are in doubt: `failed` ([`STOPPED_IN_DOUBT`]), and the next message
///   asks about them;
/// - otherwise its call stopped in the middle: `failed` ([`STOPPED`]).
///
/// `awaiting` is what the session awaits, read while no call holds it.
pub fn settle(run: &Run, messages: &[Msg], awaiting: &Awaiting) -> (RunState, Option<RunEvent>) {
    let part = run_part(run, messages);
    // The run's calls: those of its part, and those pending in the message it was admitted
    // after (a run that answers a question resumes the calls of that message).
    let resumed = run
        .after
        .as_deref()
        .and_then(|after| messages.iter().rev().find(|msg| msg.id == after));
    let in_part = |id: &str| {
        part.iter()
            .chain(resumed)
            .flat_map(|msg| msg.tool_uses())
            .any(|call| call.id == id)
    };
    if awaiting.in_doubt.iter().any(|call| in_part(&call.id)) {
        return (
            RunState::Failed {
                reason: STOPPED_IN_DOUBT.to_owned(),
                error_id: None,
            },
            None,
        );
    }
    let approvals: Vec<String> = awaiting
        .approvals
        .iter()
        .filter(|call| in_part(&call.id))
        .map(|call| call.id.to_string())
        .collect();
    if !approvals.is_empty() {
        let asked = RunEvent::Asked {
            approvals,
            in_doubt: Vec::new(),
            problem: None,
        };
        return (RunState::InputRequired, Some(asked));
    }
    let answered = !awaiting.unanswered
        && awaiting.ready.is_empty()
        && awaiting.running.is_empty()
        && part
            .last()
            .is_some_and(|last| last.role == Role::Assistant && last.tool_uses().is_empty());
    if answered && let Some(reply) = part.last() {
        let id = reply.id.to_string();
        let state = if reply.generate_reason() == Some(GenerateReason::Interrupted) {
            RunState::Canceled { reply: Some(id) }
        } else {
            RunState::Completed { reply: id }
        };
        return (state, None);
    }
    (
        RunState::Failed {
            reason: STOPPED.to_owned(),
            error_id: None,
        },
        None,
    )
}

/// The run's part of the conversation: the messages after the one it was admitted after (or,
/// when that message is gone, after the last message the run received that is still there;
/// else the messages since the last user message).
pub fn run_part<'a>(run: &Run, messages: &'a [Msg]) -> &'a [Msg] {
    let position = |id: &str| messages.iter().rposition(|msg| msg.id == id);
    let start = match &run.after {
        None => Some(0),
        Some(after) => position(after).map(|at| at + 1),
    };
    let start = start
        .or_else(|| run.received_ids().filter_map(position).max())
        .or_else(|| {
            messages.iter().rposition(|msg| {
                msg.role == Role::User
                    && msg
                        .content
                        .iter()
                        .any(|block| !matches!(block, ContentBlock::ToolResult(_)))
            })
        })
        .unwrap_or(0);
    &messages[start.min(messages.len())..]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentscope::{ToolResultBlock, ToolUseBlock};
    use serde_json::json;

    fn run_after(after: Option<&str>) -> Run {
        Run::new(
            "t1",
            "a2a",
            after.map(str::to_owned),
            vec![RunEvent::Received {
                id: "u1".into(),
                data: None,
            }],
        )
    }

    fn user(id: &str, text: &str) -> Msg {
        Msg::builder().id(id).role(Role::User).text(text).build()
    }

    fn pay_call() -> Msg {
        Msg::builder()
            .role(Role::Assistant)
            .block(ToolUseBlock::new("p1", "pay", json!({"cents": 5})))
            .build()
    }

    #[test]
    fn a_run_whose_call_finished_is_completed_with_its_answer() {
        let reply = Msg::assistant("Paid.");
        let messages = vec![
            user("u0", "earlier"),
            Msg::assistant("ok"),
            user("u1", "Pay"),
            pay_call(),
            Msg::tool_result(ToolResultBlock::text("p1", "pay", "receipt 7")),
            reply.clone(),
        ];
        let awaiting = Awaiting::of(&messages, &[], None, false);
        let run = run_after(Some(&messages[1].id));
        assert_eq!(run_part(&run, &messages).len(), 4);
        assert_eq!(
            settle(&run, &messages, &awaiting),
            (
                RunState::Completed {
                    reply: reply.id.to_string()
                },
                None
            )
        );
    }

    #[test]
    fn a_run_stopped_mid_tool_fails_and_its_calls_are_in_doubt() {
        let messages = vec![user("u1", "Pay"), pay_call()];
        let running = vec!["p1".to_owned()];
        let awaiting = Awaiting::of(&messages, &running, None, false);
        let (state, asked) = settle(&run_after(None), &messages, &awaiting);
        assert_eq!(
            state,
            RunState::Failed {
                reason: STOPPED_IN_DOUBT.into(),
                error_id: None
            }
        );
        assert_eq!(asked, None);
    }

    /// A run that resumed calls (it answered a question) was admitted after the message
    /// holding them: a call of that message left running is the run's, in doubt.
    #[test]
    fn a_run_that_resumed_a_call_and_stopped_mid_tool_leaves_it_in_doubt() {
        let asked = pay_call();
        let messages = vec![user("u1", "Pay"), asked.clone()];
        let running = vec!["p1".to_owned()];
        let awaiting = Awaiting::of(&messages, &running, None, false);
        let resumed = Run::new("t2", "a2a", Some(asked.id.to_string()), Vec::new());
        assert!(run_part(&resumed, &messages).is_empty());
        assert_eq!(
            settle(&resumed, &messages, &awaiting).0,
            RunState::Failed {
                reason: STOPPED_IN_DOUBT.into(),
                error_id: None
            }
        );
    }

    #[test]
    fn a_run_stopped_before_the_model_answered_fails() {
        let messages = vec![
            user("u1", "Pay"),
            pay_call(),
            Msg::tool_result(ToolResultBlock::text("p1", "pay", "receipt 7")),
        ];
        let awaiting = Awaiting::of(&messages, &[], None, false);
        assert_eq!(
            settle(&run_after(None), &messages, &awaiting).0,
            RunState::Failed {
                reason: STOPPED.into(),
                error_id: None
            }
        );
    }

    #[test]
    fn an_answer_of_an_earlier_run_is_not_this_runs() {
        // The run was admitted after the answer: its own part is empty.
        let messages = vec![user("u0", "Hi"), Msg::assistant("Hello")];
        let awaiting = Awaiting::of(&messages, &[], None, false);
        let run = run_after(Some(&messages[1].id));
        assert!(run_part(&run, &messages).is_empty());
        assert_eq!(settle(&run, &messages, &awaiting).0.name(), "failed");
    }
}
