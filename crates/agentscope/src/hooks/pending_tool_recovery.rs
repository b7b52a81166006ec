//! [`PendingToolRecoveryHook`]: lets the conversation go on when new input arrives while tool
//! calls are pending.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 10 | PreCall | when the new input has content other than tool results while tool calls of the last assistant message have no results, prepends one Tool message per unanswered call (an error result) to the input |
//!
//! See [`PendingToolRecoveryHook`].

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use agentscope_core::{ContentBlock, Hook, HookError, HookEvent, Msg, ToolResultBlock};

use agentscope_core::pending_tool_uses;

/// Writes error results for pending tool calls when the conversation moves on without them.
///
/// Priority 10; handles PreCall only. Opt-in: register it with
/// `.hook(PendingToolRecoveryHook::new())`.
///
/// Without it, such input fails the call with
/// [`ConversationError::PendingToolCalls`](agentscope_core::ConversationError::PendingToolCalls) (calls
/// left pending by a `stop_agent()`, a suspended tool, or an approval that never came). With
/// it, each unanswered call gets the error result
/// [`DEFAULT_RESULT`](PendingToolRecoveryHook::DEFAULT_RESULT) (or the text given to
/// [`with_result_text`](PendingToolRecoveryHook::with_result_text)), stored before the new
/// messages, so the model learns that those calls never ran.
///
/// It is opt-in, and it looks only at the new input and at which calls are pending (the tool
/// calls of the last assistant message without a result after it); older history is never
/// touched. Input that carries only tool results (a resume with results, or `()`) is left
/// alone: the engine resumes as usual. Results the input already carries are kept; only the
/// calls they don't answer get error results.
///
/// Its priority (10) puts it before other PreCall hooks, so they see the repaired input.
///
/// ```
/// use agentscope::hooks::PendingToolRecoveryHook;
/// use agentscope::prelude::*;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
/// use serde_json::json;
///
/// # futures::executor::block_on(async {
/// let model = ScriptedModel::new([ScriptedResponse::text("Sure, let's talk about that.")]);
/// let agent = ReActAgent::builder()
///     .model(model)
///     .hook(PendingToolRecoveryHook::new())
///     .build()?;
/// // A previous call stopped with a tool call left pending.
/// agent.memory().add(Msg::user("What is 6*7?"));
/// agent.memory().add(Msg::builder().role(Role::Assistant)
///     .block(ToolUseBlock::new("c1", "calculator", json!({"expression": "6*7"})))
///     .build());
///
/// let reply = agent.call("Never mind, something else.").await?;
/// assert_eq!(reply.text(), "Sure, let's talk about that.");
/// let memory = agent.memory().messages();
/// assert_eq!(memory[2].tool_results()[0].id, "c1");
/// assert!(memory[2].tool_results()[0].is_error);
/// assert_eq!(memory[3].text(), "Never mind, something else.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct PendingToolRecoveryHook {
    result_text: Arc<str>,
}

impl Default for PendingToolRecoveryHook {
    fn default() -> Self {
        Self::new()
    }
}

impl PendingToolRecoveryHook {
    /// The hook's name in the chain.
    pub const NAME: &'static str = "pending_tool_recovery";
    /// The hook's priority.
    pub const PRIORITY: i32 = 10;
    /// The error result given to each unanswered call.
    pub const DEFAULT_RESULT: &'static str =
        "Error: Tool call was not completed: the conversation moved on before it ran.";

    /// The hook, with [`DEFAULT_RESULT`](Self::DEFAULT_RESULT) as the error result.
    pub fn new() -> Self {
        Self {
            result_text: Arc::from(Self::DEFAULT_RESULT),
        }
    }

    /// Uses `text` as the error result given to unanswered calls.
    pub fn with_result_text(mut self, text: impl Into<String>) -> Self {
        self.result_text = Arc::from(text.into());
        self
    }

    /// The error result given to unanswered calls.
    pub fn result_text(&self) -> &str {
        &self.result_text
    }

    fn handle(&self, event: &mut HookEvent) {
        if let HookEvent::PreCall(e) = event
            && let Some(input) = recover(e.history(), e.input_messages(), &self.result_text)
        {
            e.set_input_messages(input);
        }
    }
}

/// The repaired input, when `input` moves on while calls of `history` are unanswered.
fn recover(history: &[Msg], input: &[Msg], text: &str) -> Option<Vec<Msg>> {
    let moves_on = input.iter().any(|msg| {
        msg.content
            .iter()
            .any(|block| !matches!(block, ContentBlock::ToolResult(_)))
    });
    if !moves_on {
        return None;
    }
    let answered: HashSet<&str> = input
        .iter()
        .flat_map(Msg::tool_results)
        .map(|result| result.id.as_str())
        .collect();
    let mut repaired: Vec<Msg> = pending_tool_uses(history)
        .into_iter()
        .filter(|call| !answered.contains(call.id.as_str()))
        .map(|call| Msg::tool_result(ToolResultBlock::error(call.id, call.name, text)))
        .collect();
    if repaired.is_empty() {
        return None;
    }
    repaired.extend(input.iter().cloned());
    Some(repaired)
}

impl Hook for PendingToolRecoveryHook {
    fn on_event(
        &self,
        event: &mut HookEvent,
    ) -> impl Future<Output = Result<(), HookError>> + Send {
        self.handle(event);
        std::future::ready(Ok(()))
    }

    builtin_hook_meta!(PreCall);
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::{Role, ToolUseBlock};
    use serde_json::json;

    fn calls(ids: &[&str]) -> Msg {
        Msg::new(
            Role::Assistant,
            "a",
            ids.iter()
                .map(|id| ToolUseBlock::new(*id, "t", json!({})).into())
                .collect(),
        )
    }

    fn ids(messages: &[Msg]) -> Vec<String> {
        messages
            .iter()
            .flat_map(Msg::tool_results)
            .map(|r| r.id.to_string())
            .collect()
    }

    #[test]
    fn prepends_error_results_for_unanswered_calls() {
        let history = vec![Msg::user("q"), calls(&["c1", "c2"])];
        let input = vec![Msg::user("moving on")];
        let repaired = recover(&history, &input, "gone").unwrap();
        assert_eq!(repaired.len(), 3);
        assert_eq!(ids(&repaired), ["c1", "c2"]);
        assert!(repaired[0].tool_results()[0].is_error);
        assert_eq!(repaired[1].tool_results()[0].text_output(), "gone");
        assert_eq!(repaired[2], input[0]);
    }

    #[test]
    fn keeps_given_results_and_answers_only_the_rest() {
        let history = vec![calls(&["c1", "c2"])];
        let given = Msg::tool_result(ToolResultBlock::text("c2", "t", "ok"));
        let input = vec![given.clone(), Msg::user("and then")];
        let repaired = recover(&history, &input, "gone").unwrap();
        assert_eq!(ids(&repaired), ["c1", "c2"]);
        assert_eq!(repaired[1], given);
    }

    #[test]
    fn leaves_resumes_and_settled_history_alone() {
        let history = vec![calls(&["c1"])];
        assert_eq!(recover(&history, &[], "gone"), None);
        let result_only = vec![Msg::tool_result(ToolResultBlock::text("c1", "t", "ok"))];
        assert_eq!(recover(&history, &result_only, "gone"), None);
        let settled = vec![
            calls(&["c1"]),
            Msg::tool_result(ToolResultBlock::text("c1", "t", "ok")),
        ];
        assert_eq!(recover(&settled, &[Msg::user("next")], "gone"), None);
    }
}
