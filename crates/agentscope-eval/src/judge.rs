//! [`Judge`]: a model that grades an answer against a rubric, with a validated verdict.

use std::fmt;

use agentscope::{
    BoxedModel, ChatAccumulator, ChatUsage, GenerateOptions, Model, ModelError, ModelRequest, Msg,
    ResponseFormat, Role,
};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::matcher::clip;
use crate::trajectory::ToolCall;

/// What a judge must answer: a score from 0 to 1, whether the answer passes, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Verdict {
    /// From 0 to 1.
    pub score: f64,
    /// Whether the answer meets the rubric.
    pub pass: bool,
    /// Why, in a sentence or two.
    pub reason: String,
}

/// A judge call that did not give a verdict.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// The judge model failed (HTTP error, timeout, an error mid-stream).
    #[error("the judge model failed: {0}")]
    Model(#[from] ModelError),
    /// The judge answered something that is not a valid verdict.
    #[error("the judge's answer is not a valid verdict ({problem}): {answer:?}")]
    InvalidVerdict {
        /// The judge's answer (cut to 200 characters).
        answer: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl JudgeError {
    /// Whether the judge answered something that is not a verdict.
    pub fn is_invalid_verdict(&self) -> bool {
        matches!(self, JudgeError::InvalidVerdict { .. })
    }

    /// Whether the judge model failed.
    pub fn is_model(&self) -> bool {
        matches!(self, JudgeError::Model(_))
    }

    /// The criterion's `error_type`: `invalid_verdict` or `judge_model_error`.
    pub fn error_type(&self) -> &'static str {
        match self {
            JudgeError::Model(_) => "judge_model_error",
            JudgeError::InvalidVerdict { .. } => "invalid_verdict",
        }
    }
}

/// One judge call: the verdict (or why there is none) and what the call cost.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Judgement {
    /// The verdict, validated.
    pub verdict: Result<Verdict, JudgeError>,
    /// The judge's token usage (`None`: none reported, or the call failed before output).
    pub usage: Option<ChatUsage>,
}

/// What a judge reads: the rubric and the run it grades.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct JudgeInput<'a> {
    /// What a good answer is.
    pub rubric: &'a str,
    /// The user's messages, turn by turn.
    pub turns: &'a [Vec<String>],
    /// The tool calls the agent made.
    pub tool_calls: &'a [ToolCall],
    /// The agent's final answer.
    pub answer: &'a str,
}

impl<'a> JudgeInput<'a> {
    /// What to judge.
    pub fn new(
        rubric: &'a str,
        turns: &'a [Vec<String>],
        tool_calls: &'a [ToolCall],
        answer: &'a str,
    ) -> Self {
        Self {
            rubric,
            turns,
            tool_calls,
            answer,
        }
    }
}

/// A model that grades answers against rubrics (the `judge` answer criterion), on any
/// [`Model`].
///
/// Each judgement is one model call without tools: a system message telling the model to
/// answer with one JSON object `{"score": 0..1, "pass": true|false, "reason": "..."}`, and a
/// user message with the rubric, the user's turns, the tool calls the agent made and its
/// final answer. The request asks for that JSON through
/// [`ResponseFormat::JsonSchema`] (providers that support it constrain the output) at
/// temperature 0. The answer is then validated: JSON (a code fence or text around the
/// object is tolerated), `score` a number from 0 to 1, `pass` a boolean, `reason` a
/// non-empty string; anything else is [`JudgeError::InvalidVerdict`], which the
/// [`Evaluator`](crate::Evaluator) records as that criterion's error while the evaluation
/// goes on.
///
/// The judge's calls and tokens are counted apart from the agent's
/// ([`RunMetrics::judge_calls`](crate::RunMetrics::judge_calls)).
///
/// ```
/// use agentscope_eval::{Judge, JudgeInput};
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let judge = Judge::new(ScriptedModel::new([ScriptedResponse::text(
///     r#"{"score": 0.9, "pass": true, "reason": "It says 42."}"#,
/// )]));
/// let turns = vec![vec!["What is 6*7?".to_owned()]];
/// let judgement = judge
///     .judge(JudgeInput::new("The answer is 42.", &turns, &[], "It is 42."))
///     .await;
/// let verdict = judgement.verdict.unwrap();
/// assert_eq!((verdict.score, verdict.pass), (0.9, true));
/// # });
/// ```
#[derive(Clone)]
pub struct Judge {
    model: BoxedModel,
    options: GenerateOptions,
}

impl Judge {
    /// A judge on `model`, at temperature 0, asking for the verdict's JSON schema.
    pub fn new(model: impl Model) -> Self {
        let mut options = GenerateOptions::default().temperature(0.0);
        options.response_format = Some(ResponseFormat::JsonSchema {
            name: "verdict".to_owned(),
            schema: verdict_schema(),
            strict: true,
        });
        Self {
            model: BoxedModel::new(model),
            options,
        }
    }

    /// Replaces the generation options (temperature, token limit, response format).
    #[must_use]
    pub fn with_options(mut self, options: GenerateOptions) -> Self {
        self.options = options;
        self
    }

    /// The judge model's name.
    pub fn model_name(&self) -> &str {
        self.model.model_name()
    }

    /// Grades one answer.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the model call.
    pub async fn judge(&self, input: JudgeInput<'_>) -> Judgement {
        let request = ModelRequest::new(
            vec![Msg::system(SYSTEM), Msg::user(prompt(&input))],
            Vec::new().into(),
            self.options.clone(),
        );
        let mut stream = match self.model.stream(request).await {
            Ok(stream) => stream,
            Err(error) => {
                return Judgement {
                    verdict: Err(error.into()),
                    usage: None,
                };
            }
        };
        let mut answer = ChatAccumulator::with_role(Role::Assistant, "judge");
        let mut failure = None;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => answer.push_owned(chunk),
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        let usage = answer.usage();
        let verdict = match failure {
            Some(error) => Err(error.into()),
            None => parse_verdict(&answer.finish().text()),
        };
        Judgement { verdict, usage }
    }
}

impl fmt::Debug for Judge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Judge")
            .field("model", &self.model.model_name())
            .finish_non_exhaustive()
    }
}

const SYSTEM: &str = "You grade an AI assistant's final answer against a rubric. Read the \
user's messages, the tool calls the assistant made and its final answer, and decide how well \
the answer meets the rubric. Reply with one JSON object and nothing else: \
{\"score\": <a number from 0 to 1>, \"pass\": <true or false>, \"reason\": \"<one or two sentences>\"}";

fn prompt(input: &JudgeInput<'_>) -> String {
    let mut text = format!("Rubric:\n{}\n\nThe user's messages:\n", input.rubric);
    for (at, turn) in input.turns.iter().enumerate() {
        for message in turn {
            text.push_str(&format!("- (turn {}) {}\n", at + 1, message));
        }
    }
    text.push_str("\nThe tool calls the assistant made:\n");
    if input.tool_calls.is_empty() {
        text.push_str("(none)\n");
    }
    for call in input.tool_calls {
        match &call.result {
            Some(result) => text.push_str(&format!("- {call} -> {}\n", clip(result, 400))),
            None => text.push_str(&format!("- {call}\n")),
        }
    }
    text.push_str(&format!(
        "\nThe assistant's final answer:\n{}\n\nYour verdict, as one JSON object:",
        input.answer
    ));
    text
}

/// The verdict's JSON schema, sent as the request's response format.
fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "pass": {"type": "boolean"},
            "reason": {"type": "string", "minLength": 1}
        },
        "required": ["score", "pass", "reason"],
        "additionalProperties": false
    })
}

/// Reads and validates a verdict from a judge's answer.
pub(crate) fn parse_verdict(answer: &str) -> Result<Verdict, JudgeError> {
    let invalid = |problem: &str| JudgeError::InvalidVerdict {
        answer: clip(answer, 200),
        problem: problem.to_owned(),
    };
    let (Some(start), Some(end)) = (answer.find('{'), answer.rfind('}')) else {
        return Err(invalid("no JSON object"));
    };
    if end < start {
        return Err(invalid("no JSON object"));
    }
    let value: Value = serde_json::from_str(&answer[start..=end])
        .map_err(|e| invalid(&format!("not JSON: {e}")))?;
    let score = match value.get("score") {
        Some(score) => score
            .as_f64()
            .ok_or_else(|| invalid(&format!("\"score\" is {score}, not a number")))?,
        None => return Err(invalid("no \"score\"")),
    };
    if !(0.0..=1.0).contains(&score) {
        return Err(invalid(&format!("\"score\" is {score}, not from 0 to 1")));
    }
    let pass = match value.get("pass") {
        Some(Value::Bool(pass)) => *pass,
        Some(other) => return Err(invalid(&format!("\"pass\" is {other}, not true or false"))),
        None => return Err(invalid("no \"pass\"")),
    };
    let reason = match value.get("reason") {
        Some(Value::String(reason)) if !reason.trim().is_empty() => reason.trim().to_owned(),
        Some(Value::String(_)) => return Err(invalid("\"reason\" is empty")),
        Some(other) => return Err(invalid(&format!("\"reason\" is {other}, not a string"))),
        None => return Err(invalid("no \"reason\"")),
    };
    Ok(Verdict {
        score,
        pass,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(answer: &str) -> String {
        match parse_verdict(answer) {
            Err(JudgeError::InvalidVerdict { problem, .. }) => problem,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn verdicts_are_validated_field_by_field() {
        assert_eq!(
            parse_verdict("```json\n{\"score\": 1, \"pass\": true, \"reason\": \"ok\"}\n```")
                .unwrap(),
            Verdict {
                score: 1.0,
                pass: true,
                reason: "ok".into()
            }
        );
        assert_eq!(problem("I think it is fine."), "no JSON object");
        assert_eq!(problem("} {"), "no JSON object");
        assert!(problem("{score: 1}").starts_with("not JSON: "));
        assert_eq!(
            problem("{\"pass\": true, \"reason\": \"x\"}"),
            "no \"score\""
        );
        assert_eq!(
            problem("{\"score\": \"high\", \"pass\": true, \"reason\": \"x\"}"),
            "\"score\" is \"high\", not a number"
        );
        assert_eq!(
            problem("{\"score\": 7, \"pass\": true, \"reason\": \"x\"}"),
            "\"score\" is 7, not from 0 to 1"
        );
        assert_eq!(
            problem("{\"score\": 0.5, \"pass\": \"yes\", \"reason\": \"x\"}"),
            "\"pass\" is \"yes\", not true or false"
        );
        assert_eq!(
            problem("{\"score\": 0.5, \"pass\": false, \"reason\": \" \"}"),
            "\"reason\" is empty"
        );
        assert_eq!(
            problem("{\"score\": 0.5, \"pass\": false}"),
            "no \"reason\""
        );
    }
}
