//! The rules of a conversation's shape, in one place, with one error type
//! ([`ConversationError`] documents the rules); the engine runs the checks through
//! `engine::conversation`.

use std::collections::HashSet;

use crate::block::{ContentBlock, ToolUseBlock};

use crate::message::{Msg, Role};

/// A message list breaks a rule of the conversation's shape.
///
/// An agent's memory is a conversation that a model provider must accept, so it keeps these
/// rules whoever changes it (the engine, a hook, a caller resuming a call, a session being
/// loaded):
///
/// - **No SYSTEM messages** in memory or in message lists that hooks and callers can change:
///   the system message is kept apart (`sys_prompt`, `set_system_message`).
/// - **Tool calls are answered exactly once.** The tool calls of the last assistant message
///   that have no result after it are *pending* ([`pending_tool_uses`]). A tool result must
///   answer a pending call (or a call earlier in the same batch of messages), and no call is
///   answered twice (`check_tool_results`).
/// - **Nothing comes between tool calls and their results**: new input while calls are
///   pending must answer some of them, and may carry other content only when it answers
///   all of them (`check_input`); a `goto_reasoning` after a message with tool calls must
///   answer every one of them (`check_goto`).
/// - **The agent's own messages have the assistant role** (`check_reply`).
///
/// Every violation is a `ConversationError`; the engine reports it as
/// [`AgentError::Conversation`](crate::AgentError::Conversation), `goto_reasoning` as
/// [`HookError::InvalidGoto`](crate::HookError::InvalidGoto).
///
/// [`pending_tool_uses`]: crate::pending_tool_uses
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConversationError {
    /// A SYSTEM message in a message list that hooks or callers can change.
    #[error(
        "Hooks must not inject SYSTEM messages into {place}. Use set_system_message() or append_system_content() instead."
    )]
    SystemMessage {
        /// The list, e.g. `"PreCallEvent input messages"`.
        place: String,
    },
    /// A SYSTEM message in a stored conversation (memory, a saved state).
    #[error("message {index} has the system role; agent memory never holds system messages")]
    SystemInMemory {
        /// Its position.
        index: usize,
    },
    /// A tool result answers no pending tool call.
    #[error(
        "Tool result id '{id}' does not match any pending tool call. Pending tool call ids: [{}]",
        pending.join(", ")
    )]
    UnmatchedToolResult {
        /// The result's id.
        id: String,
        /// The ids of the pending calls (boxed to keep the error, and every `Result` that
        /// carries it, small).
        pending: Box<[String]>,
    },
    /// Two results answer the same tool call.
    #[error("Duplicate tool result for tool call id '{id}'")]
    DuplicateToolResult {
        /// The call's id.
        id: String,
    },
    /// New input arrived while tool calls have no results, and it answers none of them.
    #[error(
        "Cannot accept new input while tool calls are pending. Pending tool call ids: [{}]. \
         Resume with their results (Msg::tool_result) or with no input.",
        ids.join(", ")
    )]
    PendingToolCalls {
        /// The ids of the pending tool calls, in call order.
        ids: Vec<String>,
    },
    /// A call without input (a resume) while no tool call is pending and the conversation
    /// is empty or ends with an assistant message (nothing the model has not answered):
    /// there is nothing to resume, and a model turn without new input is never what the
    /// caller meant.
    #[error(
        "Nothing to resume: the call has no input and no tool call is pending. Call with a message, or resume only after a stop left tool calls pending."
    )]
    NothingToResume,
    /// New input answers some pending tool calls and also carries other content.
    #[error(
        "Partial tool results cannot be mixed with new content: results are missing for pending tool call ids [{}]",
        missing.join(", ")
    )]
    PartialToolResults {
        /// The ids of the calls still without a result.
        missing: Vec<String>,
    },
    /// `goto_reasoning` without messages after a message with tool calls.
    #[error(
        "Cannot proceed without ToolResult when there are pending ToolUse. Pending tools: [{}]",
        tools.join(", ")
    )]
    GotoWithoutToolResults {
        /// The names of the pending tools.
        tools: Vec<String>,
    },
    /// `goto_reasoning` messages that leave some tool calls without a result.
    #[error("Missing ToolResult for pending ToolUse. Missing IDs: [{}]", ids.join(", "))]
    GotoMissingToolResults {
        /// The ids of the calls without a result.
        ids: Vec<String>,
    },
    /// A message stored as the agent's own does not have the assistant role.
    #[error("The {place} must have the assistant role, not {role}")]
    NotAssistant {
        /// The message, e.g. `"PostReasoningEvent reasoning message"`.
        place: String,
        /// Its role.
        role: Role,
    },
    /// A summary with tool calls: the summary offers no tools, so nothing would answer them.
    #[error(
        "The PostSummaryEvent summary message must not contain tool calls: the summary offers no tools, so nothing would answer them"
    )]
    ToolCallsInSummary,
}

/// The tool calls of the last assistant message that have no result after it, in call
/// order.
///
/// ```
/// use agentscope_core::pending_tool_uses;
/// use agentscope_core::{Msg, Role, ToolResultBlock, ToolUseBlock};
/// use serde_json::json;
///
/// let asked = Msg::builder()
///     .role(Role::Assistant)
///     .block(ToolUseBlock::new("c1", "calc", json!({})))
///     .block(ToolUseBlock::new("c2", "search", json!({})))
///     .build();
/// let answered = Msg::tool_result(ToolResultBlock::text("c1", "calc", "2"));
/// let pending = pending_tool_uses(&[Msg::user("q"), asked, answered]);
/// assert_eq!(pending.len(), 1);
/// assert_eq!(pending[0].id, "c2");
/// ```
pub fn pending_tool_uses(messages: &[Msg]) -> Vec<ToolUseBlock> {
    let Some(at) = messages.iter().rposition(|msg| msg.role == Role::Assistant) else {
        return Vec::new();
    };
    let answered: HashSet<&str> = messages[at + 1..]
        .iter()
        .flat_map(|msg| msg.tool_results())
        .map(|result| result.id.as_str())
        .collect();
    messages[at]
        .tool_uses()
        .into_iter()
        .filter(|call| !answered.contains(call.id.as_str()))
        .cloned()
        .collect()
}

/// Checks the tool results carried by `messages`: each must answer one of the `pending` tool
/// calls (or a tool call earlier in `messages`), and no call may be answered twice. Returns
/// the ids of the `pending` calls that `messages` answer, in call order.
///
/// ```
/// use agentscope_core::engine::conversation::check_tool_results;
/// use agentscope_core::ConversationError;
/// use agentscope_core::{Msg, ToolResultBlock, ToolUseBlock};
/// use serde_json::json;
///
/// let call = ToolUseBlock::new("c1", "calc", json!({}));
/// let answer = [Msg::tool_result(ToolResultBlock::text("c1", "calc", "2"))];
/// assert_eq!(check_tool_results(&[&call], &answer).unwrap(), ["c1"]);
///
/// let stray = [Msg::tool_result(ToolResultBlock::text("zz", "calc", "2"))];
/// assert!(matches!(
///     check_tool_results(&[&call], &stray),
///     Err(ConversationError::UnmatchedToolResult { id, .. }) if id == "zz"
/// ));
/// ```
///
/// # Errors
///
/// [`ConversationError::UnmatchedToolResult`] or [`ConversationError::DuplicateToolResult`].
pub fn check_tool_results(
    pending: &[&ToolUseBlock],
    messages: &[Msg],
) -> Result<Vec<String>, ConversationError> {
    let mut callable: Vec<&str> = pending.iter().map(|call| call.id.as_str()).collect();
    let mut answered: Vec<&str> = Vec::new();
    for msg in messages {
        for block in &msg.content {
            match block {
                ContentBlock::ToolUse(call) => callable.push(&call.id),
                ContentBlock::ToolResult(result) => {
                    if answered.contains(&result.id.as_str()) {
                        return Err(ConversationError::DuplicateToolResult {
                            id: result.id.to_string(),
                        });
                    }
                    if !callable.contains(&result.id.as_str()) {
                        return Err(ConversationError::UnmatchedToolResult {
                            id: result.id.to_string(),
                            pending: pending.iter().map(|call| call.id.to_string()).collect(),
                        });
                    }
                    answered.push(&result.id);
                }
                _ => {}
            }
        }
    }
    Ok(pending
        .iter()
        .filter(|call| answered.contains(&call.id.as_str()))
        .map(|call| call.id.to_string())
        .collect())
}

/// Checks new input against the `pending` tool calls: every tool result must answer a call
/// (no duplicates, no unknown ids, also when nothing is pending); with calls pending the
/// input must answer some of them, and may carry other content only when it answers all;
/// empty input is a resume and needs pending calls. Returns the calls still pending after
/// it.
///
/// The engine applies it to a call's input and to observed messages.
///
/// # Errors
///
/// As [`check_tool_results`]; [`ConversationError::NothingToResume`] for empty input with
/// nothing pending; [`ConversationError::PendingToolCalls`] when the input answers none of
/// the pending calls; [`ConversationError::PartialToolResults`] when it
/// answers some and carries other content.
pub fn check_input(
    pending: Vec<ToolUseBlock>,
    input: &[Msg],
) -> Result<Vec<ToolUseBlock>, ConversationError> {
    if pending.is_empty() && input.is_empty() {
        return Err(ConversationError::NothingToResume);
    }
    let answered = check_tool_results(&pending.iter().collect::<Vec<_>>(), input)?;
    if pending.is_empty() {
        return Ok(pending);
    }
    if answered.is_empty() {
        return Err(ConversationError::PendingToolCalls {
            ids: pending.iter().map(|call| call.id.to_string()).collect(),
        });
    }
    let still_pending: Vec<ToolUseBlock> = pending
        .into_iter()
        .filter(|call| !answered.iter().any(|id| call.id == *id))
        .collect();
    let has_other_content = input.iter().any(|msg| {
        msg.content
            .iter()
            .any(|block| !matches!(block, ContentBlock::ToolResult(_)))
    });
    if !still_pending.is_empty() && has_other_content {
        return Err(ConversationError::PartialToolResults {
            missing: still_pending
                .iter()
                .map(|call| call.id.to_string())
                .collect(),
        });
    }
    Ok(still_pending)
}

/// Checks that `messages` can follow `reasoning_message` in a `goto_reasoning`: no SYSTEM
/// message, and when the reasoning message has tool calls, a result for every one of them
/// (and no result that answers nothing).
///
/// # Errors
///
/// [`ConversationError::SystemMessage`], [`ConversationError::GotoWithoutToolResults`],
/// [`ConversationError::GotoMissingToolResults`], or an error of [`check_tool_results`].
pub fn check_goto(reasoning_message: &Msg, messages: &[Msg]) -> Result<(), ConversationError> {
    check_no_system(messages, "goto_reasoning messages")?;
    let pending = reasoning_message.tool_uses();
    if !pending.is_empty() && messages.is_empty() {
        return Err(ConversationError::GotoWithoutToolResults {
            tools: pending.iter().map(|call| call.name.to_string()).collect(),
        });
    }
    let missing: Vec<String> = pending
        .iter()
        .filter(|tool_use| {
            !messages
                .iter()
                .flat_map(|msg| msg.tool_results())
                .any(|result| result.id == tool_use.id)
        })
        .map(|tool_use| tool_use.id.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(ConversationError::GotoMissingToolResults { ids: missing });
    }
    // Every call is answered; results that answer nothing (or answer twice) are rejected too.
    check_tool_results(&pending, messages).map(drop)
}

/// Checks that a message list hooks or callers can change holds no SYSTEM message; `place`
/// names the list in the error.
///
/// # Errors
///
/// [`ConversationError::SystemMessage`].
pub fn check_no_system(messages: &[Msg], place: &str) -> Result<(), ConversationError> {
    if messages.iter().any(|msg| msg.role == Role::System) {
        return Err(ConversationError::SystemMessage {
            place: place.to_owned(),
        });
    }
    Ok(())
}

/// Checks that a stored conversation (memory, a saved state) holds no SYSTEM message.
///
/// # Errors
///
/// [`ConversationError::SystemInMemory`] naming the first one.
pub fn check_memory(messages: &[Msg]) -> Result<(), ConversationError> {
    match messages.iter().position(|msg| msg.role == Role::System) {
        Some(index) => Err(ConversationError::SystemInMemory { index }),
        None => Ok(()),
    }
}

/// Checks that a message stored as the agent's own has the assistant role; `place` names it
/// in the error.
///
/// # Errors
///
/// [`ConversationError::SystemMessage`] for a SYSTEM message,
/// [`ConversationError::NotAssistant`] for any other role.
pub fn check_reply(message: &Msg, place: &str) -> Result<(), ConversationError> {
    match message.role {
        Role::Assistant => Ok(()),
        Role::System => Err(ConversationError::SystemMessage {
            place: place.to_owned(),
        }),
        role => Err(ConversationError::NotAssistant {
            place: place.to_owned(),
            role,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::ToolResultBlock;
    use serde_json::json;

    fn two_calls() -> Msg {
        let mut reasoning = Msg::assistant("");
        reasoning
            .content
            .push(ToolUseBlock::new("c1", "calc", json!({})).into());
        reasoning
            .content
            .push(ToolUseBlock::new("c2", "search", json!({})).into());
        reasoning
    }

    fn result(id: &str) -> Msg {
        Msg::tool_result(ToolResultBlock::text(id, "t", "1"))
    }

    #[test]
    fn goto_messages() {
        let reasoning = two_calls();
        assert_eq!(
            check_goto(&reasoning, &[]).unwrap_err().to_string(),
            "Cannot proceed without ToolResult when there are pending ToolUse. Pending tools: [calc, search]"
        );
        assert_eq!(
            check_goto(&reasoning, &[result("c1")])
                .unwrap_err()
                .to_string(),
            "Missing ToolResult for pending ToolUse. Missing IDs: [c2]"
        );
        assert!(
            check_goto(&reasoning, &[Msg::system("x")])
                .unwrap_err()
                .to_string()
                .starts_with("Hooks must not inject SYSTEM messages into goto_reasoning messages")
        );
        assert_eq!(
            check_goto(&reasoning, &[result("c1"), result("c2")]),
            Ok(())
        );
        assert!(matches!(
            check_goto(&Msg::assistant("done"), &[result("zz")]),
            Err(ConversationError::UnmatchedToolResult { .. })
        ));
    }

    #[test]
    fn input_rules() {
        let pending = || pending_tool_uses(&[Msg::user("q"), two_calls()]);
        assert_eq!(
            check_input(pending(), &[Msg::user("moving on")]),
            Err(ConversationError::PendingToolCalls {
                ids: vec!["c1".into(), "c2".into()]
            })
        );
        assert_eq!(
            check_input(pending(), &[result("c1"), Msg::user("and more")]),
            Err(ConversationError::PartialToolResults {
                missing: vec!["c2".into()]
            })
        );
        let still = check_input(pending(), &[result("c1")]).unwrap();
        assert_eq!(still.len(), 1);
        assert_eq!(
            check_input(pending(), &[result("c1"), result("c1")]),
            Err(ConversationError::DuplicateToolResult { id: "c1".into() })
        );
    }

    #[test]
    fn memory_and_reply_roles() {
        assert_eq!(
            check_memory(&[Msg::user("a"), Msg::system("b")])
                .unwrap_err()
                .to_string(),
            "message 1 has the system role; agent memory never holds system messages"
        );
        assert_eq!(
            check_reply(&Msg::user("x"), "PostSummaryEvent summary message")
                .unwrap_err()
                .to_string(),
            "The PostSummaryEvent summary message must have the assistant role, not user"
        );
    }
}
