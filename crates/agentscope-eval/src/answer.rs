//! [`AnswerCriterion`]: what the agent's final answer must be.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::error::EvalError;
use crate::matcher::{compile_regex, compile_schema, one_line};
use crate::score::{CriterionResult, ratio};

/// The metadata key of a reply's structured value (`StructuredOutputHook::VALUE_KEY` in
/// `agentscope`'s `schema` feature, which this crate does not turn on).
pub(crate) const STRUCTURED_OUTPUT_KEY: &str = "structured_output";

/// The bar of `rouge1` when a case names none (ADK's default for `response_match_score`).
pub const DEFAULT_ROUGE1_THRESHOLD: f64 = 0.8;

/// What the agent's final answer (the reply of the last turn) must be.
///
/// In a case file, an object with one of these keys (and the options that go with it):
///
/// | JSON | score | passes |
/// |---|---|---|
/// | `{"exact": "The answer is 42."}` (`"ignore_case": true`) | 1 when the answer, trimmed, is the text; else 0 | at 1 |
/// | `{"contains": "42"}`, `{"contains": ["42", "six"]}` (`"ignore_case": true`) | the share of the texts the answer contains | at 1 |
/// | `{"regex": "\\b42\\b"}` | 1 when the regular expression matches somewhere in the answer; else 0 | at 1 |
/// | `{"rouge1": "The answer is 42.", "threshold": 0.5}` | ROUGE-1 F1 against the reference: unigram overlap of lower-cased alphanumeric words | at the threshold (default 0.8) |
/// | `{"json_schema": {"type": "object", ...}}` | 1 when the answer is JSON valid against the schema (the reply's structured value when it has one, else its text, a code fence allowed); else 0 | at 1 |
/// | `{"judge": "The answer gives 42 and shows the multiplication."}` | the judge model's score for this rubric ([`Judge`](crate::Judge)) | when the judge says it passes |
///
/// ```
/// use agentscope_eval::AnswerCriterion;
/// use serde_json::json;
///
/// let contains = AnswerCriterion::from_json(json!({"contains": ["42", "forty-two"]}))?;
/// let result = contains.score("The answer is 42.", None);
/// assert_eq!((result.score, result.passed), (0.5, false));
/// assert_eq!(result.reason, "the answer contains \"42\" but not \"forty-two\"");
///
/// let rouge = AnswerCriterion::rouge1("the cat sat on the mat").with_threshold(0.5)?;
/// let result = rouge.score("the cat lay on a mat", None);
/// assert_eq!(result.score, 4.0 / 6.0);
/// assert!(result.passed);
/// # Ok::<(), agentscope_eval::EvalError>(())
/// ```
#[derive(Clone)]
pub struct AnswerCriterion {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Exact {
        text: String,
        ignore_case: bool,
    },
    Contains {
        texts: Vec<String>,
        ignore_case: bool,
    },
    Regex(Regex),
    Rouge1 {
        reference: String,
        threshold: f64,
    },
    JsonSchema {
        schema: Value,
        validator: Arc<jsonschema::Validator>,
    },
    Judge {
        rubric: String,
    },
}

/// The keys a criterion may have, as the error for an unknown one lists them.
const KINDS: &str = "exact, contains, regex, rouge1, json_schema, judge";

impl AnswerCriterion {
    /// The answer, trimmed, is `text`.
    pub fn exact(text: impl Into<String>) -> Self {
        Self {
            kind: Kind::Exact {
                text: text.into(),
                ignore_case: false,
            },
        }
    }

    /// The answer contains `text`.
    pub fn contains(text: impl Into<String>) -> Self {
        Self::contains_all([text])
    }

    /// The answer contains every one of `texts` (the score is the share it contains).
    pub fn contains_all<I, S>(texts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            kind: Kind::Contains {
                texts: texts.into_iter().map(Into::into).collect(),
                ignore_case: false,
            },
        }
    }

    /// Compares `exact` and `contains` texts without regard to case (no effect on the other
    /// criteria).
    #[must_use]
    pub fn ignoring_case(mut self) -> Self {
        match &mut self.kind {
            Kind::Exact { ignore_case, .. } | Kind::Contains { ignore_case, .. } => {
                *ignore_case = true;
            }
            _ => {}
        }
        self
    }

    /// The regular expression matches somewhere in the answer.
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] when the pattern does not compile.
    pub fn regex(pattern: &str) -> Result<Self, EvalError> {
        Ok(Self {
            kind: Kind::Regex(compile_regex(pattern)?),
        })
    }

    /// ROUGE-1 F1 against `reference` reaches [`DEFAULT_ROUGE1_THRESHOLD`] (0.8).
    pub fn rouge1(reference: impl Into<String>) -> Self {
        Self {
            kind: Kind::Rouge1 {
                reference: reference.into(),
                threshold: DEFAULT_ROUGE1_THRESHOLD,
            },
        }
    }

    /// Sets the bar of a `rouge1` criterion.
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] when `threshold` is not within 0..=1, or the criterion is
    /// not `rouge1`.
    pub fn with_threshold(mut self, threshold: f64) -> Result<Self, EvalError> {
        let Kind::Rouge1 { threshold: bar, .. } = &mut self.kind else {
            return Err(EvalError::invalid(format!(
                "\"threshold\" goes with rouge1, not {}",
                self.key()
            )));
        };
        if !(0.0..=1.0).contains(&threshold) {
            return Err(EvalError::invalid(format!(
                "\"threshold\" is a number from 0 to 1, not {threshold}"
            )));
        }
        *bar = threshold;
        Ok(self)
    }

    /// The answer is JSON valid against `schema`.
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] when `schema` is not a valid JSON Schema.
    pub fn json_schema(schema: Value) -> Result<Self, EvalError> {
        let validator = compile_schema(&schema)?;
        Ok(Self {
            kind: Kind::JsonSchema { schema, validator },
        })
    }

    /// A judge model grades the answer against `rubric` (see [`Judge`](crate::Judge)).
    pub fn judge(rubric: impl Into<String>) -> Self {
        Self {
            kind: Kind::Judge {
                rubric: rubric.into(),
            },
        }
    }

    /// The criterion a case file's JSON describes (see the table above).
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] for no kind or two, an unknown key, an option that does
    /// not go with the kind, or a value that does not compile.
    pub fn from_json(value: Value) -> Result<Self, EvalError> {
        let Value::Object(mut object) = value else {
            return Err(EvalError::invalid(format!(
                "an answer criterion is an object with one of {KINDS}, not {value}"
            )));
        };
        let ignore_case = match object.remove("ignore_case") {
            None => None,
            Some(Value::Bool(flag)) => Some(flag),
            Some(other) => {
                return Err(EvalError::invalid(format!(
                    "\"ignore_case\" takes true or false, not {other}"
                )));
            }
        };
        let threshold = match object.remove("threshold") {
            None => None,
            Some(value) => Some(value.as_f64().ok_or_else(|| {
                EvalError::invalid(format!("\"threshold\" takes a number, not {value}"))
            })?),
        };
        let mut keys = object.keys();
        let (Some(key), None) = (keys.next().cloned(), keys.next()) else {
            let found: Vec<&String> = object.keys().collect();
            return Err(EvalError::invalid(format!(
                "an answer criterion has exactly one of {KINDS}; this one has {found:?}"
            )));
        };
        let value = object.remove(&key).unwrap_or(Value::Null);
        let text = |value: Value| match value {
            Value::String(text) => Ok(text),
            other => Err(EvalError::invalid(format!(
                "\"{key}\" takes a string, not {other}"
            ))),
        };
        let criterion = match key.as_str() {
            "exact" => Self::exact(text(value)?),
            "contains" => match value {
                Value::Array(items) => {
                    let texts = items.into_iter().map(text).collect::<Result<Vec<_>, _>>()?;
                    if texts.is_empty() {
                        return Err(EvalError::invalid("\"contains\" needs at least one text"));
                    }
                    Self::contains_all(texts)
                }
                other => Self::contains(text(other)?),
            },
            "regex" => Self::regex(&text(value)?)?,
            "rouge1" => Self::rouge1(text(value)?),
            "json_schema" => Self::json_schema(value)?,
            "judge" => Self::judge(text(value)?),
            other => {
                return Err(EvalError::invalid(format!(
                    "unknown answer criterion \"{other}\" (the criteria: {KINDS})"
                )));
            }
        };
        let criterion = match ignore_case {
            Some(_) if !matches!(criterion.kind, Kind::Exact { .. } | Kind::Contains { .. }) => {
                return Err(EvalError::invalid(format!(
                    "\"ignore_case\" goes with exact and contains, not {key}"
                )));
            }
            Some(true) => criterion.ignoring_case(),
            _ => criterion,
        };
        match threshold {
            Some(threshold) => criterion.with_threshold(threshold),
            None => Ok(criterion),
        }
    }

    /// The JSON a case file writes for this criterion (the inverse of
    /// [`from_json`](Self::from_json)).
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        match &self.kind {
            Kind::Exact { text, ignore_case } => {
                object.insert("exact".into(), json!(text));
                if *ignore_case {
                    object.insert("ignore_case".into(), json!(true));
                }
            }
            Kind::Contains { texts, ignore_case } => {
                let value = match texts.as_slice() {
                    [one] => json!(one),
                    many => json!(many),
                };
                object.insert("contains".into(), value);
                if *ignore_case {
                    object.insert("ignore_case".into(), json!(true));
                }
            }
            Kind::Regex(regex) => {
                object.insert("regex".into(), json!(regex.as_str()));
            }
            Kind::Rouge1 {
                reference,
                threshold,
            } => {
                object.insert("rouge1".into(), json!(reference));
                if *threshold != DEFAULT_ROUGE1_THRESHOLD {
                    object.insert("threshold".into(), json!(threshold));
                }
            }
            Kind::JsonSchema { schema, .. } => {
                object.insert("json_schema".into(), schema.clone());
            }
            Kind::Judge { rubric } => {
                object.insert("judge".into(), json!(rubric));
            }
        }
        Value::Object(object)
    }

    /// The criterion's name: `answer.exact`, `answer.contains`, `answer.regex`,
    /// `answer.rouge1`, `answer.json_schema` or `answer.judge`.
    pub fn name(&self) -> String {
        format!("answer.{}", self.key())
    }

    fn key(&self) -> &'static str {
        match self.kind {
            Kind::Exact { .. } => "exact",
            Kind::Contains { .. } => "contains",
            Kind::Regex(_) => "regex",
            Kind::Rouge1 { .. } => "rouge1",
            Kind::JsonSchema { .. } => "json_schema",
            Kind::Judge { .. } => "judge",
        }
    }

    /// The rubric of a `judge` criterion (`None` for the others).
    pub fn rubric(&self) -> Option<&str> {
        match &self.kind {
            Kind::Judge { rubric } => Some(rubric),
            _ => None,
        }
    }

    /// Scores `answer` (the reply's text) and, for `json_schema`, `structured` (the
    /// reply's structured value, when it has one). A `judge` criterion needs a judge: here
    /// it is an error result (the [`Evaluator`](crate::Evaluator) asks its judge).
    pub fn score(&self, answer: &str, structured: Option<&Value>) -> CriterionResult {
        let name = self.name();
        match &self.kind {
            Kind::Exact { text, ignore_case } => {
                let passed = same_text(answer.trim(), text.trim(), *ignore_case);
                let reason = if passed {
                    format!("the answer is {}", quote(text))
                } else {
                    format!(
                        "the answer is {}, not {}",
                        quote(answer.trim()),
                        quote(text)
                    )
                };
                CriterionResult::binary(name, passed, reason)
            }
            Kind::Contains { texts, ignore_case } => {
                let (found, missing): (Vec<&String>, Vec<&String>) = texts
                    .iter()
                    .partition(|text| contains(answer, text, *ignore_case));
                let quoted = |texts: &[&String]| {
                    texts
                        .iter()
                        .map(|t| quote(t))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let reason = match (found.is_empty(), missing.is_empty()) {
                    (_, true) => format!("the answer contains {}", quoted(&found)),
                    (true, false) => format!(
                        "the answer {} does not contain {}",
                        quote(answer.trim()),
                        quoted(&missing)
                    ),
                    (false, false) => format!(
                        "the answer contains {} but not {}",
                        quoted(&found),
                        quoted(&missing)
                    ),
                };
                CriterionResult::new(
                    name,
                    ratio(found.len(), texts.len()),
                    missing.is_empty(),
                    reason,
                )
            }
            Kind::Regex(regex) => {
                let passed = regex.is_match(answer);
                let reason = if passed {
                    format!("the answer matches /{}/", regex.as_str())
                } else {
                    format!(
                        "the answer {} does not match /{}/",
                        quote(answer.trim()),
                        regex.as_str()
                    )
                };
                CriterionResult::binary(name, passed, reason)
            }
            Kind::Rouge1 {
                reference,
                threshold,
            } => {
                let rouge = Rouge1::of(answer, reference);
                let passed = rouge.f1 >= *threshold;
                let reason = format!(
                    "ROUGE-1 F1 {} (precision {}, recall {}) against {}, {} the threshold {}",
                    three_places(rouge.f1),
                    three_places(rouge.precision),
                    three_places(rouge.recall),
                    quote(reference),
                    if passed { "at or above" } else { "below" },
                    threshold
                );
                CriterionResult::new(name, rouge.f1, passed, reason)
            }
            Kind::JsonSchema { validator, .. } => {
                let parsed;
                let value = match structured {
                    Some(value) => value,
                    None => match parse_json_answer(answer) {
                        Ok(value) => {
                            parsed = value;
                            &parsed
                        }
                        Err(error) => {
                            return CriterionResult::binary(
                                name,
                                false,
                                format!("the answer {} is not JSON: {error}", quote(answer.trim())),
                            );
                        }
                    },
                };
                match validator.iter_errors(value).next() {
                    None => CriterionResult::binary(
                        name,
                        true,
                        "the answer is valid against the schema",
                    ),
                    Some(error) => {
                        let path = error.instance_path().to_string();
                        let at = if path.is_empty() {
                            String::new()
                        } else {
                            format!(" at {path}")
                        };
                        CriterionResult::binary(
                            name,
                            false,
                            format!("the schema rejects the answer{at}: {error}"),
                        )
                    }
                }
            }
            Kind::Judge { .. } => CriterionResult::error(
                name,
                "no_judge",
                "a judge criterion needs a judge model (EvaluatorBuilder::judge)",
            ),
        }
    }
}

/// The JSON of an answer: its text, or the inside of a fenced code block.
fn parse_json_answer(answer: &str) -> Result<Value, serde_json::Error> {
    let trimmed = answer.trim();
    let inner = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|rest| {
            rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric())
                .trim()
        })
        .unwrap_or(trimmed);
    serde_json::from_str(inner)
}

fn same_text(a: &str, b: &str, ignore_case: bool) -> bool {
    if ignore_case {
        a.to_lowercase() == b.to_lowercase()
    } else {
        a == b
    }
}

fn contains(answer: &str, text: &str, ignore_case: bool) -> bool {
    if ignore_case {
        answer.to_lowercase().contains(&text.to_lowercase())
    } else {
        answer.contains(text)
    }
}

/// A share from 0 to 1 with three decimals (`0.667`), as `{:.3}` writes it, without the
/// float formatter's slow exact path.
fn three_places(share: f64) -> String {
    let thousandths = (share.clamp(0.0, 1.0) * 1000.0).round() as u32;
    format!("{}.{:03}", thousandths / 1000, thousandths % 1000)
}

/// Text in quotes, on one line, cut to 80 characters.
fn quote(text: &str) -> String {
    format!("\"{}\"", one_line(text, 80))
}

/// ROUGE-1: precision, recall and F1 of the unigrams of a candidate against a reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rouge1 {
    pub(crate) precision: f64,
    pub(crate) recall: f64,
    pub(crate) f1: f64,
}

impl Rouge1 {
    /// Words are runs of alphanumeric characters, lower-cased; overlapping counts are
    /// clipped (a word counts as often as it appears in both).
    pub(crate) fn of(candidate: &str, reference: &str) -> Self {
        // Lower-cased once; words are slices of that text (no allocation per word).
        let (candidate, reference) = (candidate.to_lowercase(), reference.to_lowercase());
        let mut counts: HashMap<&str, usize> = HashMap::new();
        let mut reference_words = 0usize;
        for word in words(&reference) {
            *counts.entry(word).or_default() += 1;
            reference_words += 1;
        }
        let (mut candidate_words, mut overlap) = (0usize, 0usize);
        for word in words(&candidate) {
            candidate_words += 1;
            if let Some(left) = counts.get_mut(word)
                && *left > 0
            {
                *left -= 1;
                overlap += 1;
            }
        }
        if candidate_words == 0 && reference_words == 0 {
            return Self {
                precision: 1.0,
                recall: 1.0,
                f1: 1.0,
            };
        }
        let share = |count: usize, of: usize| {
            if of == 0 {
                0.0
            } else {
                count as f64 / of as f64
            }
        };
        let (precision, recall) = (
            share(overlap, candidate_words),
            share(overlap, reference_words),
        );
        let f1 = if overlap == 0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        Self {
            precision,
            recall,
            f1,
        }
    }
}

/// The words of a lower-cased text: its runs of alphanumeric characters.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
}

impl fmt::Debug for AnswerCriterion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnswerCriterion({})", self.to_json())
    }
}

impl PartialEq for AnswerCriterion {
    fn eq(&self, other: &Self) -> bool {
        self.to_json() == other.to_json()
    }
}

impl Serialize for AnswerCriterion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for AnswerCriterion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        AnswerCriterion::from_json(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rouge1_counts_clipped_unigrams() {
        // "the" twice in the candidate, once in the reference: one overlap for it.
        let r = Rouge1::of("the the cat", "the cat sat");
        assert_eq!(r.precision, 2.0 / 3.0);
        assert_eq!(r.recall, 2.0 / 3.0);
        assert!((r.f1 - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(Rouge1::of("", "").f1, 1.0);
        assert_eq!(Rouge1::of("", "x").f1, 0.0);
        assert_eq!(Rouge1::of("Hello, WORLD!", "hello world").f1, 1.0);
    }

    #[test]
    fn three_places_writes_what_the_formatter_writes() {
        for share in [
            0.0,
            1.0,
            2.0 / 3.0,
            0.4,
            0.8571428571428571,
            0.0005,
            0.9995,
            0.123_456,
        ] {
            assert_eq!(three_places(share), format!("{share:.3}"), "{share}");
        }
    }

    #[test]
    fn json_answers_may_be_fenced() {
        assert_eq!(
            parse_json_answer("```json\n{\"a\": 1}\n```").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(parse_json_answer(" [1, 2] ").unwrap(), json!([1, 2]));
        assert!(parse_json_answer("not json").is_err());
    }
}
