//! The answers of a run's `resume`: every entry checked against what the thread awaits and
//! against its interrupt's `responseSchema` before anything is decided or run, then applied
//! (approval decisions on the approval hook; results and retries of calls in doubt as the
//! call's input).

use std::collections::HashSet;

use agentscope::hooks::{ApprovalDecision, ToolApprovalHook};
use agentscope::{CallInput, InDoubtResolution, ToolUseBlock};
use serde_json::Value;

use crate::error::{ApiError, shorten};
use crate::protocol::{ResumeEntry, ResumeStatus};
use crate::timeline::Timeline;
use agentscope_serving::Awaiting;

/// What one resume entry says.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// An approval decided.
    Decision(ApprovalDecision),
    /// A call in doubt resolved.
    InDoubt(InDoubtResolution),
}

/// The checked answers of a resume, one per interrupt.
#[derive(Debug)]
pub(crate) struct Answers(Vec<(ToolUseBlock, Answer)>);

/// Checks `entries` against `awaiting`: each answers one of its interrupts (once), every
/// interrupt is answered, and each payload has the shape its interrupt asks for.
pub(crate) fn check(entries: &[ResumeEntry], awaiting: &Awaiting) -> Result<Answers, ApiError> {
    let answered: HashSet<&str> = entries
        .iter()
        .map(|entry| entry.interrupt_id.as_str())
        .collect();
    let missing: Vec<String> = awaiting
        .question_ids()
        .into_iter()
        .filter(|id| !answered.contains(id.as_str()))
        .collect();
    if !missing.is_empty() {
        return Err(ApiError::bad_request(
            "unanswered_interrupts",
            format!(
                "every pending interrupt must be answered; missing: {}",
                missing.join(", ")
            ),
        ));
    }
    let mut seen: HashSet<&str> = HashSet::new();
    let mut answers = Vec::with_capacity(entries.len());
    for entry in entries {
        let id = entry.interrupt_id.as_str();
        if !seen.insert(id) {
            return Err(ApiError::bad_request(
                "duplicate_answer",
                format!("interrupt {:?} is answered twice", shorten(id)),
            ));
        }
        let find = |calls: &[ToolUseBlock]| calls.iter().find(|call| call.id == id).cloned();
        let answer = if let Some(call) = find(&awaiting.approvals) {
            (call, decision(entry)?)
        } else if let Some(call) = find(&awaiting.in_doubt) {
            (call, in_doubt_answer(entry)?)
        } else {
            return Err(ApiError::bad_request(
                "unknown_interrupt",
                format!("no pending interrupt {:?} on this thread", shorten(id)),
            ));
        };
        answers.push(answer);
    }
    Ok(Answers(answers))
}

impl Answers {
    /// Gives the approval decisions to `approvals` and returns the call's input: the results
    /// of the calls in doubt answered done or failed, and the ids to run again.
    ///
    /// # Errors
    ///
    /// `400 invalid_decision` when the hook refuses a decision (edited arguments that do
    /// not match the tool's schema).
    /// The decisions are marked on the run's `timeline`.
    pub(crate) fn apply(
        self,
        approvals: Option<&ToolApprovalHook>,
        timeline: &Timeline,
    ) -> Result<CallInput, ApiError> {
        let mut input = CallInput::default();
        for (call, answer) in self.0 {
            match answer {
                Answer::Decision(decision) => {
                    // Approval interrupts exist only with an approval hook.
                    if let Some(approvals) = approvals {
                        timeline.decided(&call, &decision);
                        approvals.decide(&call.id, decision).map_err(|err| {
                            ApiError::bad_request("invalid_decision", err.to_string())
                        })?;
                    }
                }
                Answer::InDoubt(resolution) => input = input.resolve(&call, resolution),
            }
        }
        Ok(input)
    }
}

fn invalid_payload(entry: &ResumeEntry, expected: &str, problem: &str) -> ApiError {
    ApiError::bad_request(
        "invalid_payload",
        format!(
            "the answer to interrupt {:?} {problem}; expected {expected}",
            shorten(&entry.interrupt_id)
        ),
    )
}

const APPROVAL_PAYLOAD: &str =
    r#"{"approved": true|false, "arguments"?: {...}, "reason"?: "..."} or status "cancelled""#;

/// An approval's answer: `cancelled` rejects; `resolved` needs a boolean `approved`, an
/// object `arguments` (approve with edits) and a string `reason` (a rejection's) if given.
fn decision(entry: &ResumeEntry) -> Result<Answer, ApiError> {
    let payload = entry.payload.as_ref();
    let field = |name: &str| payload.and_then(|p| p.get(name));
    let reason = match field("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason.trim()).filter(|reason| !reason.is_empty()),
        Some(_) => {
            return Err(invalid_payload(
                entry,
                APPROVAL_PAYLOAD,
                "has a `reason` that is not a string",
            ));
        }
    };
    if entry.status == ResumeStatus::Cancelled {
        let reason = reason.unwrap_or("cancelled").to_owned();
        return Ok(Answer::Decision(ApprovalDecision::Reject(reason)));
    }
    if payload.is_some_and(|p| !p.is_object()) {
        return Err(invalid_payload(entry, APPROVAL_PAYLOAD, "is not an object"));
    }
    let approved = match field("approved") {
        Some(Value::Bool(approved)) => *approved,
        None | Some(Value::Null) => {
            return Err(invalid_payload(
                entry,
                APPROVAL_PAYLOAD,
                "has no `approved`",
            ));
        }
        Some(_) => {
            return Err(invalid_payload(
                entry,
                APPROVAL_PAYLOAD,
                "has an `approved` that is not a boolean",
            ));
        }
    };
    let decision = match (approved, field("arguments")) {
        (false, _) => ApprovalDecision::Reject(reason.unwrap_or("not approved").to_owned()),
        (true, None | Some(Value::Null)) => ApprovalDecision::Approve,
        (true, Some(arguments @ Value::Object(_))) => ApprovalDecision::Edit(arguments.clone()),
        (true, Some(_)) => {
            return Err(invalid_payload(
                entry,
                APPROVAL_PAYLOAD,
                "has `arguments` that are not an object",
            ));
        }
    };
    Ok(Answer::Decision(decision))
}

const IN_DOUBT_PAYLOAD: &str = r#"{"action": "done", "result": "..."}, {"action": "retry"}, {"action": "fail", "reason"?: "..."} or status "cancelled""#;

/// A call in doubt's answer: `cancelled` dismisses it; `resolved` needs one of the three
/// actions, with exactly its fields.
fn in_doubt_answer(entry: &ResumeEntry) -> Result<Answer, ApiError> {
    if entry.status == ResumeStatus::Cancelled {
        return Ok(Answer::InDoubt(InDoubtResolution::Dismissed));
    }
    let payload = entry.payload.as_ref().unwrap_or(&Value::Null);
    InDoubtResolution::from_json(payload)
        .map(Answer::InDoubt)
        .map_err(|problem| invalid_payload(entry, IN_DOUBT_PAYLOAD, &problem))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(status: &str, payload: Value) -> ResumeEntry {
        serde_json::from_value(json!({"interruptId": "p1", "status": status, "payload": payload}))
            .unwrap()
    }

    fn code(result: Result<Answer, ApiError>) -> &'static str {
        result.unwrap_err().code()
    }

    #[test]
    fn in_doubt_answers_read_their_three_actions_and_dismissal() {
        let read = |status: &str, payload: Value| in_doubt_answer(&entry(status, payload));
        assert_eq!(
            read(
                "resolved",
                json!({"action": "done", "result": " paid, receipt 42 "})
            )
            .unwrap(),
            Answer::InDoubt(InDoubtResolution::Done("paid, receipt 42".into()))
        );
        assert_eq!(
            read("resolved", json!({"action": "retry"})).unwrap(),
            Answer::InDoubt(InDoubtResolution::Retry)
        );
        assert_eq!(
            read(
                "resolved",
                json!({"action": "fail", "reason": "card declined"})
            )
            .unwrap(),
            Answer::InDoubt(InDoubtResolution::Failed(Some("card declined".into())))
        );
        assert_eq!(
            read("resolved", json!({"action": "fail", "reason": " "})).unwrap(),
            Answer::InDoubt(InDoubtResolution::Failed(None))
        );
        assert_eq!(
            read("cancelled", Value::Null).unwrap(),
            Answer::InDoubt(InDoubtResolution::Dismissed)
        );
        for bad in [
            Value::Null,
            json!("retry"),
            json!({}),
            json!({"action": 1}),
            json!({"action": "undo"}),
            json!({"action": "done"}),
            json!({"action": "done", "result": "  "}),
            json!({"action": "done", "result": 42}),
            json!({"action": "retry", "result": "paid"}),
            json!({"action": "fail", "reason": false}),
            json!({"approved": true}),
        ] {
            assert_eq!(
                code(read("resolved", bad.clone())),
                "invalid_payload",
                "{bad}"
            );
        }
    }

    #[test]
    fn approval_answers_need_a_boolean_approved() {
        let read = |status: &str, payload: Value| decision(&entry(status, payload));
        assert_eq!(
            read("resolved", json!({"approved": true})).unwrap(),
            Answer::Decision(ApprovalDecision::Approve)
        );
        assert_eq!(
            read(
                "resolved",
                json!({"approved": true, "arguments": {"glob": "*.tmp"}})
            )
            .unwrap(),
            Answer::Decision(ApprovalDecision::Edit(json!({"glob": "*.tmp"})))
        );
        assert_eq!(
            read("resolved", json!({"approved": false, "reason": "not now"})).unwrap(),
            Answer::Decision(ApprovalDecision::Reject("not now".into()))
        );
        assert_eq!(
            read("resolved", json!({"approved": false})).unwrap(),
            Answer::Decision(ApprovalDecision::Reject("not approved".into()))
        );
        assert_eq!(
            read("cancelled", Value::Null).unwrap(),
            Answer::Decision(ApprovalDecision::Reject("cancelled".into()))
        );
        for bad in [
            Value::Null,
            json!({}),
            json!({"approved": "yes"}),
            json!({"approved": 1}),
            json!({"approved": true, "arguments": "*.tmp"}),
            json!({"approved": false, "reason": 7}),
            json!([true]),
        ] {
            assert_eq!(
                code(read("resolved", bad.clone())),
                "invalid_payload",
                "{bad}"
            );
        }
    }
}
