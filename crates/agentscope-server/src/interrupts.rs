//! The interrupts a run ends with and a thread lists, one per tool call: a call that awaits
//! approval, or a call in doubt; what each asks a person, and the JSON schema of its answer.

use agentscope::ToolUseBlock;
use agentscope_serving::idempotency_key;
use serde_json::{Value, json};

use crate::mapping::arguments_text;
use crate::protocol::Interrupt;

/// The interrupt of `call`, which awaits approval.
pub(crate) fn approval(call: &ToolUseBlock) -> Interrupt {
    Interrupt {
        message: format!(
            "Approve calling {} with {}?",
            call.name,
            arguments_text(call)
        ),
        id: call.id.to_string(),
        reason: Interrupt::TOOL_APPROVAL,
        tool_call_id: call.id.to_string(),
        response_schema: json!({
            "type": "object",
            "properties": {
                "approved": {"type": "boolean"},
                "arguments": {"type": "object",
                              "description": "new arguments (approve with edits)"},
                "reason": {"type": "string", "description": "why it is rejected"}
            },
            "required": ["approved"]
        }),
        metadata: None,
    }
}

/// The interrupt of `call`, in doubt in `session`: it was recorded as running and its
/// result was never stored. Its metadata carries the call's idempotency key (the one its
/// tool got, and gets again on a retry), which is what the service the tool called knows the
/// call by.
pub(crate) fn in_doubt(call: &ToolUseBlock, session: &str) -> Interrupt {
    let key = idempotency_key(session, call);
    Interrupt {
        message: format!(
            "{} with {} was running when the agent stopped, and its result was never stored: \
             it may or may not have happened. Check, then mark it done with its result, retry \
             it (with the same idempotency key), or fail it.",
            call.name,
            arguments_text(call)
        ),
        id: call.id.to_string(),
        reason: Interrupt::TOOL_IN_DOUBT,
        tool_call_id: call.id.to_string(),
        response_schema: json!({
            "oneOf": [
                {
                    "type": "object",
                    "description": "it happened: the model reads `result` as the call's result",
                    "properties": {
                        "action": {"const": "done"},
                        "result": {"type": "string", "minLength": 1,
                                   "description": "what the call did, as checked"}
                    },
                    "required": ["action", "result"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "run the call again, with the same idempotency key",
                    "properties": {"action": {"const": "retry"}},
                    "required": ["action"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "it did not happen: the model reads an error result",
                    "properties": {
                        "action": {"const": "fail"},
                        "reason": {"type": "string", "description": "why it failed"}
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }
            ]
        }),
        metadata: Some(json!({
            "toolName": call.name,
            "arguments": arguments_value(call),
            "idempotencyKey": key,
        })),
    }
}

/// A call's arguments as JSON: the parsed arguments, or the raw text when they did not
/// parse.
fn arguments_value(call: &ToolUseBlock) -> Value {
    match (&*call.input, &call.raw_input) {
        (Value::Null, Some(raw)) => Value::String(raw.clone()),
        (input, _) => input.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupt_in_doubt_names_the_call_and_its_key() {
        let call = ToolUseBlock::new("p1", "pay", json!({"cents": 500}));
        let interrupt = in_doubt(&call, "assistant.t1");
        let key = idempotency_key("assistant.t1", &call);
        assert_eq!(
            (
                interrupt.id.as_str(),
                interrupt.reason,
                interrupt.tool_call_id.as_str()
            ),
            ("p1", "tool_in_doubt", "p1")
        );
        assert_eq!(
            interrupt.metadata,
            Some(json!({"toolName": "pay", "arguments": {"cents": 500}, "idempotencyKey": key}))
        );
        assert!(
            interrupt
                .message
                .starts_with("pay with {\"cents\":500} was running when the agent stopped"),
            "{}",
            interrupt.message
        );
        let branches = interrupt.response_schema["oneOf"].as_array().unwrap();
        let actions: Vec<&Value> = branches
            .iter()
            .map(|b| &b["properties"]["action"]["const"])
            .collect();
        assert_eq!(actions, [&json!("done"), &json!("retry"), &json!("fail")]);
    }
}
