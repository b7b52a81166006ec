//! `input-required`: the question a task asks when its context awaits answers (tool calls
//! stopped for approval, tool calls in doubt after a crash), and the answers a later
//! message gives.
//!
//! The answer is a data part of a user message on the task, one entry per call:
//!
//! ```json
//! {"decisions": [
//!   {"toolCallId": "c1", "approved": true},
//!   {"toolCallId": "c2", "approved": true, "arguments": {"path": "/tmp/b"}},
//!   {"toolCallId": "c3", "approved": false, "reason": "not that one"},
//!   {"toolCallId": "c4", "action": "done", "result": "paid, receipt 42"},
//!   {"toolCallId": "c5", "action": "retry"},
//!   {"toolCallId": "c6", "action": "fail", "reason": "declined"}
//! ]}
//! ```
//!
//! A call awaiting approval takes `approved`; a call in doubt takes an `action`
//! ([`InDoubtResolution::from_json`]).

use std::collections::HashSet;

use a2a::{Message, Part, PartContent};
use agentscope::hooks::ApprovalDecision;
use agentscope::{InDoubtResolution, ToolUseBlock};
use agentscope_serving::idempotency_key;
use serde_json::{Value, json};

use crate::convert;

/// An answer's entry for a call awaiting approval.
const APPROVAL_ENTRY: &str =
    r#"{"toolCallId": "...", "approved": true|false, "arguments"?: {...}, "reason"?: "..."}"#;

/// An answer's entries for a call in doubt.
const IN_DOUBT_ENTRY: &str = r#"{"toolCallId": "...", "action": "done", "result": "..."} | {"toolCallId": "...", "action": "retry"} | {"toolCallId": "...", "action": "fail", "reason"?: "..."}"#;

/// What a task asks about: the calls of its context awaiting answers, as A2A's
/// `input-required` puts them (the core's `Awaiting` says which they are).
#[derive(Debug, Default)]
pub(crate) struct Question {
    /// Calls stopped for a decision (the approval hook's pending calls).
    pub(crate) approvals: Vec<ToolUseBlock>,
    /// Calls in doubt: recorded as started, their result never stored, no call running.
    pub(crate) in_doubt: Vec<ToolUseBlock>,
    /// The context's session: the scope of the calls' idempotency keys.
    pub(crate) session: String,
}

/// One call's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// A call awaiting approval, decided.
    Decision(ApprovalDecision),
    /// A call in doubt, resolved.
    InDoubt(InDoubtResolution),
}

impl Question {
    pub(crate) fn is_empty(&self) -> bool {
        self.approvals.is_empty() && self.in_doubt.is_empty()
    }

    pub(crate) fn calls(&self) -> impl Iterator<Item = &ToolUseBlock> {
        self.approvals.iter().chain(&self.in_doubt)
    }

    /// The status message of a task that awaits answers: what to answer, as text, and the
    /// calls as a data part `{"pendingToolCalls": [{"id", "name", "input"}],
    /// "inDoubtToolCalls": [{"id", "name", "input", "idempotencyKey"}]}` (each list only
    /// when it has calls).
    pub(crate) fn question(&self, problem: Option<&str>) -> Vec<Part> {
        let mut sentences: Vec<String> = problem.map(str::to_owned).into_iter().collect();
        let mut data = serde_json::Map::new();
        if !self.approvals.is_empty() {
            let calls: Vec<String> = self.approvals.iter().map(describe).collect();
            sentences.push(format!("Approval needed for: {}.", calls.join(", ")));
            let pending: Vec<Value> = self
                .approvals
                .iter()
                .map(|call| json!({"id": call.id.as_str(), "name": call.name.as_str(), "input": call.input}))
                .collect();
            data.insert("pendingToolCalls".to_owned(), Value::Array(pending));
        }
        if !self.in_doubt.is_empty() {
            let calls: Vec<String> = self.in_doubt.iter().map(describe).collect();
            sentences.push(format!(
                "In doubt: {} started before the agent stopped and its result was never \
                 stored, so it may or may not have happened; check with its idempotency key, \
                 then mark it done with its result, retry it (with the same key) or fail it.",
                calls.join(", ")
            ));
            let in_doubt: Vec<Value> = self
                .in_doubt
                .iter()
                .map(|call| {
                    let key = idempotency_key(&self.session, call);
                    json!({"id": call.id.as_str(), "name": call.name.as_str(),
                           "input": call.input, "idempotencyKey": key})
                })
                .collect();
            data.insert("inDoubtToolCalls".to_owned(), Value::Array(in_doubt));
        }
        sentences.push(format!("Answer with {}.", self.shape()));
        vec![
            Part::text(sentences.join(" ")),
            Part::data(Value::Object(data)),
        ]
    }

    /// The shape of an answer to what is awaited.
    fn shape(&self) -> String {
        match (self.approvals.is_empty(), self.in_doubt.is_empty()) {
            (false, true) => format!(
                r#"a data part {{"decisions": [{APPROVAL_ENTRY}]}}, one entry per pending call"#
            ),
            (true, false) => format!(
                r#"a data part {{"decisions": [{IN_DOUBT_ENTRY}]}}, one entry per call in doubt"#
            ),
            _ => format!(
                r#"a data part {{"decisions": [...]}}, one entry per call: {APPROVAL_ENTRY} for a call awaiting approval, {IN_DOUBT_ENTRY} for a call in doubt"#
            ),
        }
    }

    /// The answers a message carries: `None` when it carries none (no data part with
    /// `decisions`), an error saying what is wrong with them (never echoing argument values),
    /// or one answer per awaited call.
    pub(crate) fn answers(
        &self,
        message: &Message,
    ) -> Result<Option<Vec<(ToolUseBlock, Answer)>>, String> {
        let Some(entries) = message.parts.iter().find_map(|part| match &part.content {
            PartContent::Data(value) => value.get("decisions"),
            _ => None,
        }) else {
            return Ok(None);
        };
        let Value::Array(entries) = entries else {
            return Err("`decisions` is not an array.".to_owned());
        };
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let Some(Value::String(id)) = entry.get("toolCallId") else {
                return Err(format!("Decision {index} has no string `toolCallId`."));
            };
            let Some(call) = self.calls().find(|call| call.id == id.as_str()) else {
                return Err(format!("Decision {index}: no pending tool call {id:?}."));
            };
            if !seen.insert(id.clone()) {
                return Err(format!("Tool call {id:?} is decided twice."));
            }
            let answer = if self.in_doubt.contains(call) {
                Answer::InDoubt(
                    InDoubtResolution::from_json(entry)
                        .map_err(|problem| format!("Decision {index} {problem}."))?,
                )
            } else {
                Answer::Decision(decision(index, entry)?)
            };
            out.push((call.clone(), answer));
        }
        let missing: Vec<&str> = self
            .calls()
            .map(|call| call.id.as_str())
            .filter(|id| !seen.contains(*id))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "Every pending call must be decided; missing: {}.",
                missing.join(", ")
            ));
        }
        Ok(Some(out))
    }
}

/// `name(input) [id]`.
fn describe(call: &ToolUseBlock) -> String {
    format!("{}({}) [{}]", call.name, call.input, call.id)
}

/// An approval decision: a boolean `approved`, an object `arguments` (approve with edits)
/// and a string `reason` (a rejection's) if given.
fn decision(index: usize, entry: &Value) -> Result<ApprovalDecision, String> {
    let field = |name: &str| entry.get(name).filter(|value| !value.is_null());
    let reason = match field("reason") {
        None => None,
        Some(Value::String(reason)) => Some(reason.trim().to_owned()).filter(|r| !r.is_empty()),
        Some(_) => {
            return Err(format!(
                "Decision {index} has a `reason` that is not a string."
            ));
        }
    };
    match (field("approved"), field("arguments")) {
        (Some(Value::Bool(false)), _) => Ok(ApprovalDecision::Reject(
            reason.unwrap_or_else(|| "not approved".to_owned()),
        )),
        (Some(Value::Bool(true)), None) => Ok(ApprovalDecision::Approve),
        (Some(Value::Bool(true)), Some(arguments @ Value::Object(_))) => Ok(
            ApprovalDecision::Edit(convert::integral_numbers(arguments.clone())),
        ),
        (Some(Value::Bool(true)), Some(_)) => Err(format!(
            "Decision {index} has `arguments` that are not an object."
        )),
        _ => Err(format!("Decision {index} has no boolean `approved`.")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use a2a::Role;

    fn message(data: Value) -> Message {
        Message::new(Role::User, vec![Part::text("here"), Part::data(data)])
    }

    fn call(id: &str, name: &str, input: Value) -> ToolUseBlock {
        ToolUseBlock::new(id, name, input)
    }

    fn awaiting() -> Question {
        Question {
            approvals: vec![
                call("c1", "delete", json!({"path": "/a"})),
                call("c2", "delete", json!({"path": "/b"})),
            ],
            in_doubt: Vec::new(),
            session: "assistant.c".to_owned(),
        }
    }

    fn ids(answers: Vec<(ToolUseBlock, Answer)>) -> Vec<(String, Answer)> {
        answers
            .into_iter()
            .map(|(call, answer)| (call.id.to_string(), answer))
            .collect()
    }

    #[test]
    fn approve_edit_and_reject_are_read() {
        let got = awaiting()
            .answers(&message(json!({"decisions": [
                {"toolCallId": "c2", "approved": false, "reason": " no "},
                {"toolCallId": "c1", "approved": true, "arguments": {"path": "/c"}},
            ]})))
            .unwrap()
            .map(ids);
        assert_eq!(
            got,
            Some(vec![
                (
                    "c2".to_owned(),
                    Answer::Decision(ApprovalDecision::Reject("no".into()))
                ),
                (
                    "c1".to_owned(),
                    Answer::Decision(ApprovalDecision::Edit(json!({"path": "/c"})))
                ),
            ])
        );
        let plain = message(json!({"decisions": [
            {"toolCallId": "c1", "approved": true},
            {"toolCallId": "c2", "approved": false},
        ]}));
        assert_eq!(
            awaiting().answers(&plain).unwrap().map(ids),
            Some(vec![
                ("c1".to_owned(), Answer::Decision(ApprovalDecision::Approve)),
                (
                    "c2".to_owned(),
                    Answer::Decision(ApprovalDecision::Reject("not approved".into()))
                ),
            ])
        );
    }

    #[test]
    fn calls_in_doubt_take_an_action_and_approvals_do_not() {
        let mixed = Question {
            approvals: vec![call("c1", "delete", json!({}))],
            in_doubt: vec![call("p1", "pay", json!({"invoice": 7}))],
            session: "assistant.c".to_owned(),
        };
        let got = mixed
            .answers(&message(json!({"decisions": [
                {"toolCallId": "p1", "action": "done", "result": "paid, receipt 42"},
                {"toolCallId": "c1", "approved": true},
            ]})))
            .unwrap()
            .map(ids);
        assert_eq!(
            got,
            Some(vec![
                (
                    "p1".to_owned(),
                    Answer::InDoubt(InDoubtResolution::Done("paid, receipt 42".into()))
                ),
                ("c1".to_owned(), Answer::Decision(ApprovalDecision::Approve)),
            ])
        );
        let check = |data: Value| mixed.answers(&message(data)).unwrap_err();
        assert_eq!(
            check(json!({"decisions": [
                {"toolCallId": "p1", "approved": true}, {"toolCallId": "c1", "approved": true}
            ]})),
            "Decision 0 has no `action`."
        );
        assert_eq!(
            check(json!({"decisions": [
                {"toolCallId": "p1", "action": "retry"}, {"toolCallId": "c1", "action": "retry"}
            ]})),
            "Decision 1 has no boolean `approved`."
        );
    }

    #[test]
    fn a_message_without_decisions_carries_none() {
        let text = Message::new(Role::User, vec![Part::text("yes please")]);
        assert_eq!(awaiting().answers(&text).unwrap(), None);
    }

    #[test]
    fn wrong_answers_say_what_is_wrong() {
        let check = |data: Value| awaiting().answers(&message(data)).unwrap_err();
        assert_eq!(
            check(json!({"decisions": {}})),
            "`decisions` is not an array."
        );
        assert_eq!(
            check(json!({"decisions": [{"toolCallId": "c1", "approved": true}]})),
            "Every pending call must be decided; missing: c2."
        );
        assert_eq!(
            check(json!({"decisions": [{"toolCallId": "c9", "approved": true}]})),
            "Decision 0: no pending tool call \"c9\"."
        );
        assert_eq!(
            check(json!({"decisions": [
                {"toolCallId": "c1", "approved": true}, {"toolCallId": "c1", "approved": true}
            ]})),
            "Tool call \"c1\" is decided twice."
        );
        assert_eq!(
            check(json!({"decisions": [{"toolCallId": "c1", "approved": "yes"}]})),
            "Decision 0 has no boolean `approved`."
        );
        assert_eq!(
            check(json!({"decisions": [{"toolCallId": "c1", "approved": true, "arguments": 3}]})),
            "Decision 0 has `arguments` that are not an object."
        );
    }

    #[test]
    fn the_question_lists_the_calls_in_text_and_as_data() {
        let one = Question {
            approvals: awaiting().approvals[..1].to_vec(),
            ..Question::default()
        };
        assert_eq!(
            one.question(None),
            vec![
                Part::text(format!(
                    "Approval needed for: delete({{\"path\":\"/a\"}}) [c1]. Answer with a data part \
                     {{\"decisions\": [{APPROVAL_ENTRY}]}}, one entry per pending call."
                )),
                Part::data(json!({"pendingToolCalls": [
                    {"id": "c1", "name": "delete", "input": {"path": "/a"}}
                ]})),
            ]
        );
    }

    #[test]
    fn a_call_in_doubt_is_asked_about_with_its_idempotency_key() {
        let pay = call("p1", "pay", json!({"invoice": 7}));
        let key = idempotency_key("assistant.c", &pay);
        let in_doubt = Question {
            in_doubt: vec![pay],
            session: "assistant.c".to_owned(),
            ..Question::default()
        };
        assert_eq!(
            in_doubt.question(Some("The message carries no decisions.")),
            vec![
                Part::text(format!(
                    "The message carries no decisions. In doubt: pay({{\"invoice\":7}}) [p1] \
                     started before the agent stopped and its result was never stored, so it \
                     may or may not have happened; check with its idempotency key, then mark it \
                     done with its result, retry it (with the same key) or fail it. Answer with \
                     a data part {{\"decisions\": [{IN_DOUBT_ENTRY}]}}, one entry per call in \
                     doubt."
                )),
                Part::data(json!({"inDoubtToolCalls": [
                    {"id": "p1", "name": "pay", "input": {"invoice": 7}, "idempotencyKey": key}
                ]})),
            ]
        );
    }
}
