//! A stored conversation as a case: [`Case::from_state`] and [`Case::from_session`].

use std::collections::BTreeMap;

use agentscope::session::{AgentState, SessionStore};
use agentscope::{ContentBlock, Msg, Role};
use serde_json::Value;

use crate::answer::AnswerCriterion;
use crate::case::{Case, Input};
use crate::error::EvalError;
use crate::matcher::Matcher;
use crate::trajectory::{ExpectedCall, TrajectoryMode};

impl Case {
    /// The conversation of a saved agent state as a case named `id`, so that yesterday's
    /// good conversation is today's regression test:
    ///
    /// - **input**: the user messages, one turn per run of consecutive user messages (what
    ///   came between two of the agent's answers);
    /// - **tool calls**: every call the agent made, in order, each argument expected equal,
    ///   compared `strict`;
    /// - **answer**: `rouge1` against the conversation's last answer, at the default
    ///   threshold (0.8).
    ///
    /// Change the case before saving it to loosen it: another
    /// [`trajectory`](Case::trajectory), [`Matcher`]s for generated values, other answer
    /// criteria.
    ///
    /// ```
    /// use agentscope::session::{AgentIdentity, AgentState};
    /// use agentscope::{Msg, ToolResultBlock, ToolUseBlock};
    /// use agentscope_eval::{AnswerCriterion, Case, ExpectedCall};
    /// use serde_json::json;
    ///
    /// let state = AgentState::new(AgentIdentity::new("assistant", "a1"), vec![
    ///     Msg::user("What is 6*7?"),
    ///     Msg::builder().role(agentscope::Role::Assistant).name("assistant")
    ///         .block(ToolUseBlock::new("call_1", "calculator", json!({"expression": "6*7"})))
    ///         .build(),
    ///     Msg::tool_result(ToolResultBlock::text("call_1", "calculator", "42")),
    ///     Msg::assistant("The answer is 42."),
    /// ]);
    /// let case = Case::from_state("yesterday", &state)?;
    /// assert_eq!(case.input.turns, [["What is 6*7?"]]);
    /// assert_eq!(
    ///     case.tool_calls.unwrap(),
    ///     [ExpectedCall::new("calculator").arg("expression", json!("6*7"))]
    /// );
    /// assert_eq!(case.answer, [AnswerCriterion::rouge1("The answer is 42.")]);
    /// # Ok::<(), agentscope_eval::EvalError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`EvalError::NotACase`] when the conversation has no user message, a user message
    /// with content other than text, or does not end with an answer (it ends with tool
    /// calls that have no answer, or with the user's message).
    pub fn from_state(id: impl Into<String>, state: &AgentState) -> Result<Case, EvalError> {
        let id = id.into();
        let not_a_case = |message: String| EvalError::NotACase {
            session: id.clone(),
            message,
        };
        let mut turns: Vec<Vec<String>> = Vec::new();
        let mut open_turn = false;
        let mut calls = Vec::new();
        for (at, message) in state.messages.iter().enumerate() {
            match message.role {
                Role::User => {
                    let text = user_text(message).ok_or_else(|| {
                        not_a_case(format!(
                            "message {} (the user's) holds content other than text",
                            at + 1
                        ))
                    })?;
                    if open_turn {
                        if let Some(turn) = turns.last_mut() {
                            turn.push(text);
                        }
                    } else {
                        turns.push(vec![text]);
                        open_turn = true;
                    }
                }
                Role::Assistant => {
                    open_turn = false;
                    calls.extend(message.tool_uses().into_iter().map(|call| {
                        let args = match &*call.input {
                            Value::Object(args) => args
                                .iter()
                                .map(|(name, value)| (name.clone(), Matcher::equal(value.clone())))
                                .collect(),
                            _ => BTreeMap::new(),
                        };
                        ExpectedCall {
                            tool: call.name.to_string(),
                            args: Some(args),
                            partial_args: false,
                        }
                    }));
                }
                Role::Tool | Role::System => {}
            }
        }
        if turns.is_empty() {
            return Err(not_a_case(
                "the conversation has no user message".to_owned(),
            ));
        }
        let answer = match state.messages.last() {
            Some(last) if last.role == Role::Assistant && !last.has_tool_uses() => last.text(),
            Some(last) if last.has_tool_uses() => {
                return Err(not_a_case(
                    "it ends with tool calls that have no answer".to_owned(),
                ));
            }
            _ => {
                return Err(not_a_case(
                    "it does not end with the agent's answer".to_owned(),
                ));
            }
        };
        Ok(Case {
            id,
            input: Input { turns },
            tool_calls: Some(calls),
            trajectory: TrajectoryMode::Strict,
            answer: vec![AnswerCriterion::rouge1(answer)],
            budget: Default::default(),
            tags: Vec::new(),
        })
    }

    /// The stored session `session` as a case named after it ([`from_state`](Self::from_state)),
    /// from any [`SessionStore`]: the JSON-file store, SQLite, Redis, PostgreSQL, yours.
    ///
    /// # Errors
    ///
    /// [`EvalError::Session`] when the store fails, [`EvalError::NoSession`] when it holds
    /// no such session, else as `from_state`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the store's load; nothing is written.
    pub async fn from_session<S>(store: &S, session: &str) -> Result<Case, EvalError>
    where
        S: SessionStore + ?Sized,
    {
        match store.load(session).await? {
            Some(state) => Self::from_state(session, &state),
            None => Err(EvalError::NoSession {
                session: session.to_owned(),
            }),
        }
    }
}

/// A user message's text, `None` when it holds anything else.
fn user_text(message: &Msg) -> Option<String> {
    message
        .content
        .iter()
        .all(|block| matches!(block, ContentBlock::Text(_)))
        .then(|| message.text())
}
