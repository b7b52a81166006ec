//! [`Budget`]: the most a run of a case may spend.

use serde::{Deserialize, Serialize};

use crate::record::RunMetrics;
use crate::score::CriterionResult;

/// The most one run of a case may spend, each limit a criterion of its own (score 1 within
/// the limit, 0 over it):
///
/// ```json
/// {"budget": {"tokens": 2000, "model_calls": 4, "wall_ms": 30000}}
/// ```
///
/// - `tokens`: the agent's input and output tokens over the whole run, as its model
///   reported them (a model that reports no usage fails the criterion: it cannot be
///   checked). A judge's tokens are counted apart and never here.
/// - `model_calls`: reasoning steps and the summary, over all turns.
/// - `wall_ms`: the run's time from its first turn to its last answer, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Budget {
    /// The most input plus output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// The most model calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_calls: Option<u64>,
    /// The most wall time, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
}

impl Budget {
    /// No limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `tokens` input plus output tokens.
    #[must_use]
    pub fn tokens(mut self, tokens: u64) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// At most `calls` model calls.
    #[must_use]
    pub fn model_calls(mut self, calls: u64) -> Self {
        self.model_calls = Some(calls);
        self
    }

    /// At most `ms` milliseconds.
    #[must_use]
    pub fn wall_ms(mut self, ms: u64) -> Self {
        self.wall_ms = Some(ms);
        self
    }

    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The names of the criteria this budget adds, in the order [`score`](Self::score)
    /// gives them.
    pub(crate) fn criterion_names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.tokens.is_some() {
            names.push("budget.tokens");
        }
        if self.model_calls.is_some() {
            names.push("budget.model_calls");
        }
        if self.wall_ms.is_some() {
            names.push("budget.wall_time");
        }
        names
    }

    /// One criterion per limit set: `budget.tokens`, `budget.model_calls`,
    /// `budget.wall_time`.
    pub fn score(&self, metrics: &RunMetrics) -> Vec<CriterionResult> {
        let mut results = Vec::new();
        if let Some(limit) = self.tokens {
            results.push(match metrics.usage {
                Some(usage) => {
                    let used = usage.input_tokens + usage.output_tokens;
                    CriterionResult::binary(
                        "budget.tokens",
                        used <= limit,
                        format!(
                            "{used} tokens ({} in, {} out) {} the budget of {limit}",
                            usage.input_tokens,
                            usage.output_tokens,
                            if used <= limit { "within" } else { "over" }
                        ),
                    )
                }
                None => CriterionResult::binary(
                    "budget.tokens",
                    false,
                    format!(
                        "the model reported no token usage, so the budget of {limit} tokens cannot be checked"
                    ),
                ),
            });
        }
        if let Some(limit) = self.model_calls {
            let used = u64::from(metrics.model_calls);
            results.push(CriterionResult::binary(
                "budget.model_calls",
                used <= limit,
                format!(
                    "{used} model calls, {} the budget of {limit}",
                    if used <= limit { "within" } else { "over" }
                ),
            ));
        }
        if let Some(limit) = self.wall_ms {
            let used = metrics.wall.as_secs_f64() * 1000.0;
            let within = used <= limit as f64;
            results.push(CriterionResult::binary(
                "budget.wall_time",
                within,
                format!(
                    "{used:.0} ms, {} the budget of {limit} ms",
                    if within { "within" } else { "over" }
                ),
            ));
        }
        results
    }
}
