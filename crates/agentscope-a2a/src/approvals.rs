//! Approvals as `input-required`: the question a stopped call asks (its pending tool calls
//! as a data part) and the decisions a later message answers it with.
//!
//! The answer is a data part of a user message on the task:
//!
//! ```json
//! {"decisions": [
//!   {"toolCallId": "c1", "approved": true},
//!   {"toolCallId": "c2", "approved": true, "arguments": {"path": "/tmp/b"}},
//!   {"toolCallId": "c3", "approved": false, "reason": "not that one"}
//! ]}
//! ```

use std::collections::HashSet;

use a2a::{Message, Part, PartContent};
use agentscope::ToolUseBlock;
use agentscope::hooks::ApprovalDecision;
use serde_json::{Value, json};

use crate::convert;

/// The shape of an answer, for the messages that ask again.
pub(crate) const DECISIONS_SHAPE: &str = r#"a data part {"decisions": [{"toolCallId": "...", "approved": true|false, "arguments"?: {...}, "reason"?: "..."}]}, one entry per pending call"#;

/// The status message of a task that awaits decisions: what to decide, as text, and the
/// pending calls as a data part `{"pendingToolCalls": [{"id", "name", "input"}]}`.
pub(crate) fn question(pending: &[ToolUseBlock], problem: Option<&str>) -> Vec<Part> {
    let calls: Vec<String> = pending
        .iter()
        .map(|call| format!("{}({}) [{}]", call.name, call.input, call.id))
        .collect();
    let mut text = format!("Approval needed for: {}.", calls.join(", "));
    if let Some(problem) = problem {
        text = format!("{problem} {text}");
    }
    text.push_str(&format!(" Answer with {DECISIONS_SHAPE}."));
    let pending: Vec<Value> = pending
        .iter()
        .map(
            |call| json!({"id": call.id.as_str(), "name": call.name.as_str(), "input": call.input}),
        )
        .collect();
    vec![
        Part::text(text),
        Part::data(json!({"pendingToolCalls": pending})),
    ]
}

/// The decisions a message carries: `None` when it carries none (no data part with
/// `decisions`), an error saying what is wrong with them (never echoing argument values),
/// or one decision per pending call.
pub(crate) fn decisions(
    message: &Message,
    pending: &[ToolUseBlock],
) -> Result<Option<Vec<(String, ApprovalDecision)>>, String> {
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
        let field = |name: &str| entry.get(name).filter(|value| !value.is_null());
        let Some(Value::String(id)) = field("toolCallId") else {
            return Err(format!("Decision {index} has no string `toolCallId`."));
        };
        if !pending.iter().any(|call| call.id == id.as_str()) {
            return Err(format!("Decision {index}: no pending tool call {id:?}."));
        }
        if !seen.insert(id.clone()) {
            return Err(format!("Tool call {id:?} is decided twice."));
        }
        let reason = match field("reason") {
            None => None,
            Some(Value::String(reason)) => Some(reason.trim().to_owned()).filter(|r| !r.is_empty()),
            Some(_) => {
                return Err(format!(
                    "Decision {index} has a `reason` that is not a string."
                ));
            }
        };
        let decision = match (field("approved"), field("arguments")) {
            (Some(Value::Bool(false)), _) => {
                ApprovalDecision::Reject(reason.unwrap_or_else(|| "not approved".to_owned()))
            }
            (Some(Value::Bool(true)), None) => ApprovalDecision::Approve,
            (Some(Value::Bool(true)), Some(arguments @ Value::Object(_))) => {
                ApprovalDecision::Edit(convert::integral_numbers(arguments.clone()))
            }
            (Some(Value::Bool(true)), Some(_)) => {
                return Err(format!(
                    "Decision {index} has `arguments` that are not an object."
                ));
            }
            _ => return Err(format!("Decision {index} has no boolean `approved`.")),
        };
        out.push((id.clone(), decision));
    }
    let missing: Vec<&str> = pending
        .iter()
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use a2a::Role;

    fn message(data: Value) -> Message {
        Message::new(Role::User, vec![Part::text("here"), Part::data(data)])
    }

    fn pending() -> Vec<ToolUseBlock> {
        vec![
            ToolUseBlock::new("c1", "delete", json!({"path": "/a"})),
            ToolUseBlock::new("c2", "delete", json!({"path": "/b"})),
        ]
    }

    #[test]
    fn approve_edit_and_reject_are_read() {
        let got = decisions(
            &message(json!({"decisions": [
                {"toolCallId": "c2", "approved": false, "reason": " no "},
                {"toolCallId": "c1", "approved": true, "arguments": {"path": "/c"}},
            ]})),
            &pending(),
        )
        .unwrap();
        assert_eq!(
            got,
            Some(vec![
                ("c2".to_owned(), ApprovalDecision::Reject("no".into())),
                (
                    "c1".to_owned(),
                    ApprovalDecision::Edit(json!({"path": "/c"}))
                ),
            ])
        );
        let plain = message(json!({"decisions": [
            {"toolCallId": "c1", "approved": true},
            {"toolCallId": "c2", "approved": false},
        ]}));
        assert_eq!(
            decisions(&plain, &pending()).unwrap(),
            Some(vec![
                ("c1".to_owned(), ApprovalDecision::Approve),
                (
                    "c2".to_owned(),
                    ApprovalDecision::Reject("not approved".into())
                ),
            ])
        );
    }

    #[test]
    fn a_message_without_decisions_carries_none() {
        let text = Message::new(Role::User, vec![Part::text("yes please")]);
        assert_eq!(decisions(&text, &pending()).unwrap(), None);
    }

    #[test]
    fn wrong_answers_say_what_is_wrong() {
        let check = |data: Value| decisions(&message(data), &pending()).unwrap_err();
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
        let parts = question(&pending()[..1], None);
        assert_eq!(
            parts,
            vec![
                Part::text(format!(
                    "Approval needed for: delete({{\"path\":\"/a\"}}) [c1]. Answer with {DECISIONS_SHAPE}."
                )),
                Part::data(json!({"pendingToolCalls": [
                    {"id": "c1", "name": "delete", "input": {"path": "/a"}}
                ]})),
            ]
        );
    }
}
