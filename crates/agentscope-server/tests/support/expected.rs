//! What the server is expected to send, spelled out once for the tests that check it.

use agentscope::{ToolContext, ToolUseBlock};
use serde_json::{Value, json};

/// The interrupt of `call` (its arguments given as JSON) in doubt in `session`.
pub(crate) fn in_doubt_interrupt(call: &ToolUseBlock, session: &str) -> Value {
    let key = ToolContext::new(call.clone())
        .with_scope(session)
        .idempotency_key();
    let arguments = call.input.to_string();
    json!({
        "id": call.id,
        "reason": "tool_in_doubt",
        "message": format!(
            "{} with {arguments} was running when the agent stopped, and its result was never \
             stored: it may or may not have happened. Check, then mark it done with its \
             result, retry it (with the same idempotency key), or fail it.",
            call.name
        ),
        "toolCallId": call.id,
        "responseSchema": {"oneOf": [
            {"type": "object",
             "description": "it happened: the model reads `result` as the call's result",
             "properties": {"action": {"const": "done"},
                            "result": {"type": "string", "minLength": 1,
                                       "description": "what the call did, as checked"}},
             "required": ["action", "result"], "additionalProperties": false},
            {"type": "object",
             "description": "run the call again, with the same idempotency key",
             "properties": {"action": {"const": "retry"}},
             "required": ["action"], "additionalProperties": false},
            {"type": "object",
             "description": "it did not happen: the model reads an error result",
             "properties": {"action": {"const": "fail"},
                            "reason": {"type": "string", "description": "why it failed"}},
             "required": ["action"], "additionalProperties": false}
        ]},
        "metadata": {"toolName": call.name, "arguments": *call.input, "idempotencyKey": key},
    })
}
