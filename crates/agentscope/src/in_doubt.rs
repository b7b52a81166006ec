//! [`InDoubtResolution`]: how an application resolves a tool call in doubt, read from the
//! JSON answer the servers take (AG-UI's `resume`, A2A's decisions), and given to the
//! next call with [`CallInput::resolve`].

use agentscope_core::{Msg, ToolResultBlock, ToolUseBlock};
use serde_json::Value;

use crate::agent::CallInput;

/// How the application resolves a tool call **in doubt** (recorded as started, its result
/// never stored: see [`InDoubt`](crate::InDoubt)): it checked, and the call happened or did
/// not, or it runs the call again with the same idempotency key, or it moves on unchecked.
///
/// ```
/// use agentscope::{CallInput, InDoubtResolution, ToolUseBlock};
/// use serde_json::json;
///
/// let pay = ToolUseBlock::new("c1", "pay", json!({"amount": 30}));
/// let checked = InDoubtResolution::from_json(&json!({"action": "done", "result": "receipt 42"}))?;
/// let input = CallInput::default().resolve(&pay, checked);
/// let messages = input.into_messages();
/// assert_eq!(messages[0].tool_results()[0].text_output(), "receipt 42");
///
/// let again = CallInput::default().resolve(&pay, InDoubtResolution::Retry);
/// assert_eq!(again.retried(), ["c1"]);
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InDoubtResolution {
    /// The call happened: this (checked) text is its result.
    Done(String),
    /// Run the call again, with the same idempotency key as its first attempt.
    Retry,
    /// The call did not happen (checked), for this reason if given: its result is an error
    /// saying so.
    Failed(Option<String>),
    /// Moved on without checking: its result is an error saying its effects may or may not
    /// have happened.
    Dismissed,
}

impl InDoubtResolution {
    /// Reads `{"action": "done", "result": "..."}` (a non-empty result),
    /// `{"action": "retry"}` or `{"action": "fail", "reason"?: "..."}`, each with exactly
    /// its fields (and `toolCallId`, which names the call where several are answered
    /// together). Texts are trimmed; an empty reason is none.
    ///
    /// # Errors
    ///
    /// What is wrong, as a phrase that completes "the answer ..." (e.g. `has no
    /// `action``), never echoing a value longer than 64 characters.
    pub fn from_json(answer: &Value) -> Result<Self, String> {
        let Value::Object(answer) = answer else {
            return Err("is not an object".to_owned());
        };
        let text = |name: &str| match answer.get(name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.trim().to_owned())),
            Some(_) => Err(format!("has a `{name}` that is not a string")),
        };
        let action = match answer.get("action") {
            Some(Value::String(action)) => action.as_str(),
            Some(_) => return Err("has an `action` that is not a string".to_owned()),
            None => return Err("has no `action`".to_owned()),
        };
        let allowed: &[&str] = match action {
            "done" => &["action", "result", "toolCallId"],
            "retry" => &["action", "toolCallId"],
            "fail" => &["action", "reason", "toolCallId"],
            other => return Err(format!("has the unknown action {:?}", shorten(other))),
        };
        if let Some(extra) = answer.keys().find(|key| !allowed.contains(&key.as_str())) {
            return Err(format!(
                "has `{}`, which the action {action:?} does not take",
                shorten(extra)
            ));
        }
        Ok(match action {
            "done" => match text("result")? {
                Some(result) if !result.is_empty() => InDoubtResolution::Done(result),
                _ => return Err("marks the call done without a `result`".to_owned()),
            },
            "retry" => InDoubtResolution::Retry,
            _ => InDoubtResolution::Failed(text("reason")?.filter(|reason| !reason.is_empty())),
        })
    }

    /// The resolution's name in the trace (`agentscope.in_doubt.action`).
    pub(crate) fn action(&self) -> &'static str {
        match self {
            InDoubtResolution::Done(_) => "done",
            InDoubtResolution::Retry => "retry",
            InDoubtResolution::Failed(_) => "fail",
            InDoubtResolution::Dismissed => "dismissed",
        }
    }

    /// The result the model reads for `call`; `None` for [`Retry`](Self::Retry), whose
    /// result is the one the call gets when it runs again.
    pub fn result(&self, call: &ToolUseBlock) -> Option<ToolResultBlock> {
        let (id, name) = (call.id.as_str(), call.name.as_str());
        match self {
            InDoubtResolution::Done(text) => Some(ToolResultBlock::text(id, name, text.as_str())),
            InDoubtResolution::Retry => None,
            InDoubtResolution::Failed(Some(reason)) => Some(ToolResultBlock::error(
                id,
                name,
                format!("Error: the call failed (checked by the user): {reason}"),
            )),
            InDoubtResolution::Failed(None) => Some(ToolResultBlock::error(
                id,
                name,
                "Error: the call failed (checked by the user).",
            )),
            InDoubtResolution::Dismissed => Some(ToolResultBlock::error(
                id,
                name,
                "Error: the call was interrupted while running and the user dismissed it \
                 without checking: its effects may or may not have happened.",
            )),
        }
    }
}

impl CallInput {
    /// Resolves tool call `call`, in doubt, in this call: its result (a message after the
    /// input's others), or, for [`InDoubtResolution::Retry`], a run again with the same
    /// idempotency key ([`retry`](Self::retry)).
    #[must_use]
    pub fn resolve(self, call: &ToolUseBlock, resolution: InDoubtResolution) -> Self {
        let action = resolution.action();
        let resolved = match resolution.result(call) {
            Some(result) => self.with_message(Msg::tool_result(result)),
            None => self.retry([call.id.to_string()]),
        };
        resolved.resolved_as(&call.id, action)
    }
}

/// At most 64 characters of `text`, for error messages.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_three_actions_are_read_with_exactly_their_fields() {
        let read = |value: Value| InDoubtResolution::from_json(&value);
        assert_eq!(
            read(json!({"action": "done", "result": " paid, receipt 42 "})),
            Ok(InDoubtResolution::Done("paid, receipt 42".into()))
        );
        assert_eq!(
            read(json!({"action": "retry", "toolCallId": "c1"})),
            Ok(InDoubtResolution::Retry)
        );
        assert_eq!(
            read(json!({"action": "fail", "reason": "card declined"})),
            Ok(InDoubtResolution::Failed(Some("card declined".into())))
        );
        assert_eq!(
            read(json!({"action": "fail", "reason": " "})),
            Ok(InDoubtResolution::Failed(None))
        );
        let wrong = [
            (Value::Null, "is not an object"),
            (json!("retry"), "is not an object"),
            (json!({}), "has no `action`"),
            (json!({"action": 1}), "has an `action` that is not a string"),
            (json!({"action": "undo"}), "has the unknown action \"undo\""),
            (
                json!({"action": "done"}),
                "marks the call done without a `result`",
            ),
            (
                json!({"action": "done", "result": "  "}),
                "marks the call done without a `result`",
            ),
            (
                json!({"action": "done", "result": 42}),
                "has a `result` that is not a string",
            ),
            (
                json!({"action": "retry", "result": "paid"}),
                "has `result`, which the action \"retry\" does not take",
            ),
            (
                json!({"action": "fail", "reason": false}),
                "has a `reason` that is not a string",
            ),
        ];
        for (value, problem) in wrong {
            assert_eq!(read(value.clone()), Err(problem.to_owned()), "{value}");
        }
    }

    #[test]
    fn each_resolution_is_a_result_or_a_retry_after_the_other_input() {
        let pay = ToolUseBlock::new("c1", "pay", json!({}));
        let book = ToolUseBlock::new("c2", "book", json!({}));
        let input = CallInput::from(Msg::user("and then?"))
            .resolve(&pay, InDoubtResolution::Failed(Some("declined".into())))
            .resolve(&book, InDoubtResolution::Retry);
        assert_eq!(input.retried(), ["c2"]);
        let messages = input.into_messages();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].text(), "and then?");
        let result = &messages[1].tool_results()[0];
        assert_eq!(result.id, "c1");
        assert!(result.is_error);
        assert_eq!(
            result.text_output(),
            "Error: the call failed (checked by the user): declined"
        );
        let dismissed = InDoubtResolution::Dismissed.result(&pay).unwrap();
        assert_eq!(
            dismissed.text_output(),
            "Error: the call was interrupted while running and the user dismissed it without \
             checking: its effects may or may not have happened."
        );
    }
}
