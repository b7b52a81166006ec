//! [`Case`]: one evaluation case, and the JSONL format of case files.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::answer::AnswerCriterion;
use crate::budget::Budget;
use crate::error::EvalError;
use crate::trajectory::{ExpectedCall, TrajectoryMode};

/// What the agent is given: one or more turns, each one call of the agent with one or more
/// user messages.
///
/// In a case file: a string (one turn of one message), or an array of turns, each a string
/// or an array of strings (several user messages in one call):
///
/// ```json
/// {"input": "What is 6*7?"}
/// {"input": ["Hi, I'm Ada.", "What is 6*7?", ["Thanks.", "And 7*8?"]]}
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Input {
    /// The turns, each the texts of its user messages.
    pub turns: Vec<Vec<String>>,
}

impl Input {
    /// One turn of one user message.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            turns: vec![vec![text.into()]],
        }
    }

    /// Several turns of one user message each.
    pub fn turns<I, S>(turns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            turns: turns.into_iter().map(|t| vec![t.into()]).collect(),
        }
    }

    fn check(&self) -> Result<(), EvalError> {
        if self.turns.is_empty() {
            return Err(EvalError::invalid("\"input\" has no turn"));
        }
        if let Some(at) = self.turns.iter().position(Vec::is_empty) {
            return Err(EvalError::invalid(format!(
                "turn {} of \"input\" has no message",
                at + 1
            )));
        }
        Ok(())
    }
}

impl From<&str> for Input {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<String> for Input {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl Serialize for Input {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let turn = |messages: &Vec<String>| match messages.as_slice() {
            [one] => Value::String(one.clone()),
            many => Value::from(many.to_vec()),
        };
        match self.turns.as_slice() {
            [one] if one.len() == 1 => turn(one).serialize(serializer),
            turns => Value::Array(turns.iter().map(turn).collect()).serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Turn {
            One(String),
            Several(Vec<String>),
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(String),
            Turns(Vec<Turn>),
        }
        let raw = Raw::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "\"input\" is a string, or an array of turns (each a string or an array of strings)",
            )
        })?;
        Ok(match raw {
            Raw::One(text) => Input::text(text),
            Raw::Turns(turns) => Input {
                turns: turns
                    .into_iter()
                    .map(|turn| match turn {
                        Turn::One(text) => vec![text],
                        Turn::Several(texts) => texts,
                    })
                    .collect(),
            },
        })
    }
}

/// One evaluation case: what the agent is given, what it should do, what it may spend.
///
/// Case files are JSON Lines: one case per line (blank lines and lines starting with `#`
/// are skipped). The fields (see `docs/evaluation.md` for the whole schema):
///
/// | field | what | default |
/// |---|---|---|
/// | `id` | a unique name (required) | |
/// | `input` | the user's message, or turns ([`Input`]) (required) | |
/// | `tool_calls` | the expected tool calls ([`ExpectedCall`]); left out, the calls are not checked | not checked |
/// | `trajectory` | how they are compared ([`TrajectoryMode`]) | `strict` |
/// | `answer` | criteria for the final answer ([`AnswerCriterion`]) | none |
/// | `budget` | limits on tokens, model calls, wall time ([`Budget`]) | none |
/// | `tags` | labels for reports and filtering | none |
///
/// ```
/// use agentscope_eval::{AnswerCriterion, Case, ExpectedCall, Matcher, TrajectoryMode};
///
/// let cases = Case::parse_jsonl(r#"
/// ## arithmetic
/// {"id": "multiply", "input": "What is 6*7?", "tool_calls": [{"tool": "calculator", "args": {"expression": {"$regex": "^6\\s*\\*\\s*7$"}}}], "answer": [{"contains": "42"}], "budget": {"model_calls": 4}, "tags": ["math"]}
/// "#)?;
/// let case = &cases[0];
/// assert_eq!(case.id, "multiply");
/// assert_eq!(case.trajectory, TrajectoryMode::Strict);
/// assert_eq!(case.answer, [AnswerCriterion::contains("42")]);
/// assert_eq!(
///     case.tool_calls.as_ref().unwrap()[0],
///     ExpectedCall::new("calculator").arg("expression", Matcher::regex(r"^6\s*\*\s*7$")?)
/// );
/// // Written back as one line, read back the same.
/// assert_eq!(Case::parse_jsonl(&case.to_json_line())?[0], *case);
/// # Ok::<(), agentscope_eval::EvalError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Case {
    /// A unique name.
    pub id: String,
    /// What the agent is given.
    pub input: Input,
    /// The expected tool calls (`None`: not checked; empty: no call expected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ExpectedCall>>,
    /// How the calls made are compared with the expected ones.
    #[serde(default, skip_serializing_if = "is_strict")]
    pub trajectory: TrajectoryMode,
    /// Criteria for the final answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer: Vec<AnswerCriterion>,
    /// Limits on what one run may spend.
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub budget: Budget,
    /// Labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

fn is_strict(mode: &TrajectoryMode) -> bool {
    *mode == TrajectoryMode::Strict
}

impl Case {
    /// A case with no criterion yet.
    pub fn new(id: impl Into<String>, input: impl Into<Input>) -> Self {
        Self {
            id: id.into(),
            input: input.into(),
            tool_calls: None,
            trajectory: TrajectoryMode::Strict,
            answer: Vec::new(),
            budget: Budget::default(),
            tags: Vec::new(),
        }
    }

    /// Expects these tool calls, compared as `mode` says.
    #[must_use]
    pub fn expect_calls(
        mut self,
        mode: TrajectoryMode,
        calls: impl IntoIterator<Item = ExpectedCall>,
    ) -> Self {
        self.trajectory = mode;
        self.tool_calls = Some(calls.into_iter().collect());
        self
    }

    /// Adds a criterion for the final answer.
    #[must_use]
    pub fn expect_answer(mut self, criterion: AnswerCriterion) -> Self {
        self.answer.push(criterion);
        self
    }

    /// Sets the budget.
    #[must_use]
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Adds a tag.
    #[must_use]
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// The names of the criteria a run of this case is scored on, in order: the
    /// trajectory, the answer criteria, the budget's limits.
    pub fn criterion_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        if self.tool_calls.is_some() {
            names.push(self.trajectory.criterion_name());
        }
        names.extend(self.answer.iter().map(AnswerCriterion::name));
        names.extend(self.budget.criterion_names().into_iter().map(str::to_owned));
        names
    }

    /// Reads a case file's text: one case per line; blank lines and lines starting with
    /// `#` are skipped.
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] for the first line that is not a valid case (with its
    /// line number and, when known, its id), or a second case with an id already used.
    pub fn parse_jsonl(text: &str) -> Result<Vec<Case>, EvalError> {
        let mut cases = Vec::new();
        let mut ids = HashSet::new();
        for (at, line) in text.lines().enumerate() {
            let line_number = at + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let id = serde_json::from_str::<Value>(trimmed)
                .ok()
                .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned));
            let case: Case = serde_json::from_str(trimmed)
                .map_err(|e| EvalError::invalid(e.to_string()).at(line_number, id.as_deref()))?;
            case.check()
                .map_err(|e| e.at(line_number, Some(&case.id)))?;
            if !ids.insert(case.id.clone()) {
                return Err(
                    EvalError::invalid("a case with this id comes earlier in the file")
                        .at(line_number, Some(&case.id)),
                );
            }
            cases.push(case);
        }
        Ok(cases)
    }

    /// Reads a case file ([`parse_jsonl`](Self::parse_jsonl)).
    ///
    /// # Errors
    ///
    /// [`EvalError::Io`] when the file cannot be read, else as `parse_jsonl`.
    pub fn load_jsonl(path: impl AsRef<Path>) -> Result<Vec<Case>, EvalError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| EvalError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse_jsonl(&text)
    }

    /// The case as one line of a case file (no newline at the end).
    pub fn to_json_line(&self) -> String {
        // A case is strings, numbers and JSON values: serializing it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Cases as a case file's text, one line each.
    pub fn to_jsonl(cases: &[Case]) -> String {
        let mut text = String::new();
        for case in cases {
            text.push_str(&case.to_json_line());
            text.push('\n');
        }
        text
    }

    /// Checks what serde cannot: a non-empty id, an input with turns.
    pub(crate) fn check(&self) -> Result<(), EvalError> {
        if self.id.trim().is_empty() {
            return Err(EvalError::invalid("\"id\" is empty"));
        }
        self.input.check()
    }
}

impl fmt::Display for Case {
    /// The case's id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}
