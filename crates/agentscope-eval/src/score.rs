//! [`CriterionResult`]: one criterion's score, verdict and reason.

use serde::{Deserialize, Serialize};

/// One criterion's result for one run: a score from 0 to 1, whether it passed, and why, in
/// words a person reads.
///
/// A criterion that could not be evaluated (a judge that answered something that is not a
/// verdict, a run that failed before there was an answer) has score 0, has not passed, and
/// says what went wrong in `reason`, with a short kind in `error_type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CriterionResult {
    /// The criterion: `trajectory.strict`, `answer.contains`, `budget.tokens`, ... (the
    /// OpenTelemetry event's `gen_ai.evaluation.name`).
    pub name: String,
    /// From 0 (not met at all) to 1 (fully met).
    pub score: f64,
    /// Whether the criterion is met.
    pub passed: bool,
    /// Why, in words a person reads.
    pub reason: String,
    /// Why the criterion could not be evaluated, as a short low-cardinality kind
    /// (`invalid_verdict`, `judge_model_error`, `no_judge`, `agent_error`, `timeout`,
    /// `factory_error`, `panic`); `None` when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
}

impl CriterionResult {
    /// A criterion that was evaluated: `passed` iff `score` reached the criterion's bar.
    pub fn new(
        name: impl Into<String>,
        score: f64,
        passed: bool,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            score: score.clamp(0.0, 1.0),
            passed,
            reason: reason.into(),
            error_type: None,
        }
    }

    /// A pass/fail criterion: score 1 when passed, 0 otherwise.
    pub(crate) fn binary(name: impl Into<String>, passed: bool, reason: impl Into<String>) -> Self {
        Self::new(name, if passed { 1.0 } else { 0.0 }, passed, reason)
    }

    /// A criterion that could not be evaluated.
    pub fn error(
        name: impl Into<String>,
        error_type: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            score: 0.0,
            passed: false,
            reason: reason.into(),
            error_type: Some(error_type.into()),
        }
    }

    /// Whether the criterion could not be evaluated.
    pub fn is_error(&self) -> bool {
        self.error_type.is_some()
    }
}

/// A share (0..1) as a percentage with one decimal: `83.3%`.
pub(crate) fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// `count` over `of`, 1 when `of` is 0 (nothing was asked, nothing is missing).
pub(crate) fn ratio(count: usize, of: usize) -> f64 {
    if of == 0 {
        1.0
    } else {
        count as f64 / of as f64
    }
}
