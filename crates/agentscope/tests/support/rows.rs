//! Messages as rows `(role, name, content, generate reason)`, to compare whole memories and
//! model inputs exactly, and builders for the rows tests expect.

use agentscope::prelude::*;
use serde_json::Value;

/// A message as `(role, name, content, generate reason)`.
pub(crate) type Row = agentscope_test::messages::Row;

/// The [`Row`] of every message.
pub(crate) fn rows(messages: &[Msg]) -> Vec<Row> {
    agentscope_test::messages::rows(messages)
}

/// A [`Row`] of the given parts.
pub(crate) fn row(
    role: Role,
    name: &str,
    content: Vec<ContentBlock>,
    reason: Option<GenerateReason>,
) -> Row {
    (role, name.to_owned(), content, reason)
}

/// A text block.
pub(crate) fn text(t: &str) -> ContentBlock {
    ContentBlock::text(t)
}

/// A user message named "user" with the text `t`.
pub(crate) fn user(t: &str) -> Row {
    row(Role::User, "user", vec![text(t)], None)
}

/// A final answer `t` of the assistant named "assistant" (the model stopped).
pub(crate) fn answer_row(t: &str) -> Row {
    row(
        Role::Assistant,
        "assistant",
        vec![text(t)],
        Some(GenerateReason::ModelStop),
    )
}

/// The assistant's message (named "assistant") calling `calls`, each `(id, tool, input)`,
/// with the generate reason `reason`.
pub(crate) fn calls_row(calls: &[(&str, &str, Value)], reason: Option<GenerateReason>) -> Row {
    let blocks = calls
        .iter()
        .map(|(id, name, input)| ToolUseBlock::new(*id, *name, input.clone()).into())
        .collect();
    row(Role::Assistant, "assistant", blocks, reason)
}

/// The tool message carrying `result` (a tool message is named after its tool).
pub(crate) fn result_row(result: ToolResultBlock) -> Row {
    let name = result.name.clone();
    row(Role::Tool, &name, vec![result.into()], None)
}
