//! A remote agent's question, typed: the calls an agentscope-rs server asks about in the
//! data part of an `input-required` status (`{"pendingToolCalls": [{"id", "name",
//! "input"}], "inDoubtToolCalls": [{"id", "name", "input", "idempotencyKey"}]}`), read into
//! tool-use blocks, and [`InDoubtCall`].

use a2a::{Part, PartContent};
use agentscope::{GenerateReason, ToolUseBlock};
use serde_json::{Map, Value};

use crate::convert::integral_numbers;

/// The field of a question's data part listing the calls awaiting approval.
pub(crate) const PENDING: &str = "pendingToolCalls";

/// The field of a question's data part listing the calls in doubt.
pub(crate) const IN_DOUBT: &str = "inDoubtToolCalls";

/// A tool call of a remote agent that is **in doubt** (it started before the agent stopped
/// and its result was never stored: it may or may not have had its effect), as the remote
/// agent's question names it: the call, and the idempotency key it ran with, to ask the
/// service it called whether it happened.
///
/// Answer it with a decision `{"toolCallId": <id>, "action": "done", "result": "..."}` (it
/// happened: its verified result), `{"action": "retry"}` (run it again with the same key)
/// or `{"action": "fail", "reason"?: "..."}` (it did not happen), sent with
/// [`RemoteAgent::data_message`](crate::RemoteAgent::data_message) (see
/// [`RemoteAgent::in_doubt_calls`](crate::RemoteAgent::in_doubt_calls)).
#[derive(Debug, Clone, PartialEq)]
pub struct InDoubtCall {
    call: ToolUseBlock,
    idempotency_key: String,
}

impl InDoubtCall {
    /// The tool call: its id (the `toolCallId` of the answer), tool name and input.
    pub fn call(&self) -> &ToolUseBlock {
        &self.call
    }

    /// The idempotency key the call ran with (what its tool gave the service it called).
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// The tool call.
    pub fn into_call(self) -> ToolUseBlock {
        self.call
    }
}

/// What a question's data parts list, as they are recorded in the reply's metadata: the
/// calls awaiting approval and the calls in doubt, each `{"id", "name", "input"}` (with
/// `"idempotencyKey"` for the calls in doubt), integral numbers as integers.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Asked {
    pub(crate) pending: Vec<Value>,
    pub(crate) in_doubt: Vec<Value>,
}

impl Asked {
    /// Why the agent stopped, as a local agent stopping for the same reason says it: calls
    /// in doubt first (they must be resolved before anything runs), then approvals.
    pub(crate) fn reason(&self) -> GenerateReason {
        if !self.in_doubt.is_empty() {
            GenerateReason::ToolInDoubt
        } else if !self.pending.is_empty() {
            GenerateReason::ReasoningStopRequested
        } else {
            GenerateReason::ModelStop
        }
    }

    /// Records the lists in `into` (the reply's `"a2a"` metadata).
    pub(crate) fn record(self, into: &mut Map<String, Value>) {
        if !self.pending.is_empty() {
            into.insert(PENDING.to_owned(), Value::Array(self.pending));
        }
        if !self.in_doubt.is_empty() {
            into.insert(IN_DOUBT.to_owned(), Value::Array(self.in_doubt));
        }
    }
}

/// Splits a question's parts: the calls its data parts list, and the other parts (its
/// text, and data parts that list no call).
pub(crate) fn split(parts: &[Part]) -> (Asked, Vec<Part>) {
    let mut asked = Asked::default();
    let mut rest = Vec::with_capacity(parts.len());
    for part in parts {
        let PartContent::Data(Value::Object(data)) = &part.content else {
            rest.push(part.clone());
            continue;
        };
        let calls = |field: &str| match data.get(field) {
            Some(Value::Array(calls)) => calls
                .iter()
                .filter(|call| call.get("id").and_then(Value::as_str).is_some())
                .cloned()
                .map(integral_numbers)
                .collect(),
            _ => Vec::new(),
        };
        let (pending, in_doubt): (Vec<Value>, Vec<Value>) = (calls(PENDING), calls(IN_DOUBT));
        if pending.is_empty() && in_doubt.is_empty() {
            rest.push(part.clone());
            continue;
        }
        asked.pending.extend(pending);
        asked.in_doubt.extend(in_doubt);
    }
    (asked, rest)
}

/// A listed call as a tool-use block.
fn call(value: &Value) -> Option<ToolUseBlock> {
    Some(ToolUseBlock::new(
        value.get("id")?.as_str()?,
        value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        value.get("input").cloned().unwrap_or(Value::Null),
    ))
}

/// The calls awaiting approval recorded in a reply's `"a2a"` metadata.
pub(crate) fn pending(recorded: &Value) -> Vec<ToolUseBlock> {
    recorded
        .get(PENDING)
        .and_then(Value::as_array)
        .map(|calls| calls.iter().filter_map(call).collect())
        .unwrap_or_default()
}

/// The calls in doubt recorded in a reply's `"a2a"` metadata.
pub(crate) fn in_doubt(recorded: &Value) -> Vec<InDoubtCall> {
    recorded
        .get(IN_DOUBT)
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|value| {
                    Some(InDoubtCall {
                        call: call(value)?,
                        idempotency_key: value
                            .get("idempotencyKey")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_question_is_its_text_and_its_calls_typed_with_integers() {
        let parts = [
            Part::text("Approval needed for: pay."),
            Part::data(json!({
                "pendingToolCalls": [{"id": "c1", "name": "pay", "input": {"invoice": 42.0}}],
                "inDoubtToolCalls": [{"id": "p1", "name": "pay", "input": {"amount": 7.5},
                                      "idempotencyKey": "k-1"}],
            })),
            Part::data(json!({"note": 1})),
        ];
        let (asked, rest) = split(&parts);
        assert_eq!(rest, vec![parts[0].clone(), parts[2].clone()]);
        assert_eq!(asked.reason(), GenerateReason::ToolInDoubt);
        let mut recorded = Map::new();
        asked.record(&mut recorded);
        let recorded = Value::Object(recorded);
        assert_eq!(
            serde_json::to_string(&recorded[PENDING]).unwrap(),
            r#"[{"id":"c1","input":{"invoice":42},"name":"pay"}]"#
        );
        assert_eq!(
            pending(&recorded),
            vec![ToolUseBlock::new("c1", "pay", json!({"invoice": 42}))]
        );
        let doubt = in_doubt(&recorded);
        assert_eq!(
            doubt[0].call(),
            &ToolUseBlock::new("p1", "pay", json!({"amount": 7.5}))
        );
        assert_eq!(doubt[0].idempotency_key(), "k-1");

        let (approvals, _) = split(&[Part::data(json!({
            "pendingToolCalls": [{"id": "c1", "name": "pay", "input": {}}],
        }))]);
        assert_eq!(approvals.reason(), GenerateReason::ReasoningStopRequested);
        assert_eq!(split(&parts[..1]).0.reason(), GenerateReason::ModelStop);
    }
}
