//! [`Report`]: an evaluation's results, per run, per case and in all; written as JSON,
//! JUnit XML or Markdown, and compared with a baseline.

mod compare;
mod junit;
mod markdown;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use agentscope::ChatUsage;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use compare::{CaseChange, ChangeKind, Comparison};

use crate::case::Case;
use crate::error::EvalError;
use crate::record::{RunMetrics, add_usage, millis};
use crate::score::CriterionResult;
use crate::trajectory::ToolCall;

/// One run of one case: its criteria, its answer, its tool calls, what it cost, and (when
/// it failed) its transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunReport {
    /// The repetition, from 0.
    pub repetition: u32,
    /// Whether every criterion passed (and the run did not fail).
    pub passed: bool,
    /// Why the run failed before it could be scored (the agent's error, the time limit,
    /// the factory's error, a panic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The kind of that failure: `agent_error`, `timeout`, `factory_error` or `panic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Each criterion's result, in the case's order (trajectory, answer, budget).
    pub criteria: Vec<CriterionResult>,
    /// The final answer's text (empty when the run failed).
    pub answer: String,
    /// The provider's id of the final answer's response, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The tool calls the agent made, with their results.
    pub tool_calls: Vec<ToolCall>,
    /// Usage and latency.
    pub metrics: RunMetrics,
    /// The agent's model (`None` when no agent was made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What happened, one line per step, for a run that did not pass (empty for one that
    /// did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcript: Vec<String>,
}

/// One case's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CaseReport {
    /// The case's id.
    pub id: String,
    /// The case's tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Whether the case passed: its pass rate reached the report's case threshold.
    pub passed: bool,
    /// How many runs passed.
    pub runs_passed: usize,
    /// The share of runs that passed.
    pub pass_rate: f64,
    /// The runs, by repetition.
    pub runs: Vec<RunReport>,
}

impl CaseReport {
    /// The runs that failed before they could be scored.
    pub fn errors(&self) -> usize {
        self.runs.iter().filter(|run| run.error.is_some()).count()
    }
}

/// One criterion over every run that has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CriterionSummary {
    /// Runs that have the criterion.
    pub runs: usize,
    /// Runs where it passed.
    pub passed: usize,
    /// Runs where it could not be evaluated.
    pub errors: usize,
    /// The mean score over the runs where it was evaluated (0 when there are none).
    pub mean_score: f64,
}

/// The evaluation in numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Summary {
    /// Cases.
    pub cases: usize,
    /// Cases that passed (their pass rate reached the case threshold).
    pub cases_passed: usize,
    /// Runs (cases times repetitions).
    pub runs: usize,
    /// Runs that passed.
    pub runs_passed: usize,
    /// Runs that failed before they could be scored.
    pub runs_errored: usize,
    /// The share of runs that passed (pass@1, estimated over every run).
    pub pass_rate: f64,
    /// The share of cases with at least one passing run among their k (pass@k).
    pub pass_at_k: f64,
    /// The share of cases all of whose k runs passed (pass^k).
    pub pass_all_k: f64,
    /// Each criterion, by name.
    pub criteria: BTreeMap<String, CriterionSummary>,
    /// The agents' models.
    pub models: Vec<String>,
    /// The agents' model calls.
    pub model_calls: u64,
    /// The agents' tool calls.
    pub tool_calls: u64,
    /// The agents' token usage (`None`: no model reported any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
    /// The judge's calls.
    pub judge_calls: u64,
    /// The judge's token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_usage: Option<ChatUsage>,
    /// The runs' wall times added up.
    #[serde(rename = "run_time_ms", with = "millis")]
    pub run_time: Duration,
    /// The evaluation's own wall time (less than `run_time` with concurrency).
    #[serde(rename = "elapsed_ms", with = "millis")]
    pub elapsed: Duration,
}

/// An evaluation's results: each case with its runs, and the summary.
///
/// - [`to_json`](Self::to_json) / [`from_json`](Self::from_json): for programs, and for
///   keeping a baseline to [`compare`](Self::compare_to) the next run with;
/// - [`to_junit`](Self::to_junit): JUnit XML, one test case per case, for CI systems;
/// - [`to_markdown`](Self::to_markdown): for people (a job summary, a pull request).
///
/// Each has every criterion's score, and the transcripts of the runs that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// When the evaluation started.
    pub started_at: DateTime<Utc>,
    /// The runs per case (k).
    pub repetitions: u32,
    /// The share of a case's runs that must pass for the case to pass.
    pub case_threshold: f64,
    /// The evaluation in numbers.
    pub summary: Summary,
    /// Each case, in the order given.
    pub cases: Vec<CaseReport>,
}

impl Report {
    pub(crate) fn new(
        cases: &[Case],
        runs: Vec<Vec<RunReport>>,
        repetitions: u32,
        case_threshold: f64,
        started_at: DateTime<Utc>,
        elapsed: Duration,
    ) -> Self {
        let cases: Vec<CaseReport> = cases
            .iter()
            .zip(runs)
            .map(|(case, runs)| {
                let runs_passed = runs.iter().filter(|run| run.passed).count();
                let pass_rate = share(runs_passed, runs.len());
                CaseReport {
                    id: case.id.clone(),
                    tags: case.tags.clone(),
                    // Counted, not compared as shares: 2 of 3 runs against a threshold of
                    // 2/3 passes whatever the rounding.
                    passed: runs_passed as f64 >= case_threshold * runs.len() as f64 - 1e-9,
                    runs_passed,
                    pass_rate,
                    runs,
                }
            })
            .collect();
        let summary = Summary::of(&cases, elapsed);
        Report {
            started_at,
            repetitions,
            case_threshold,
            summary,
            cases,
        }
    }

    /// The share of runs that passed.
    pub fn pass_rate(&self) -> f64 {
        self.summary.pass_rate
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        // Strings, numbers and JSON values only: serializing cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads a report written by [`to_json`](Self::to_json).
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidReport`] with serde's message.
    pub fn from_json(json: &str) -> Result<Self, EvalError> {
        serde_json::from_str(json).map_err(|e| EvalError::InvalidReport {
            message: e.to_string(),
        })
    }

    /// The report as JUnit XML: a `<testsuite>` with one `<testcase>` per case (a
    /// `<failure>` for a case that did not pass, an `<error>` when its failing runs all
    /// failed before scoring), each criterion's mean score as a property, and the failing
    /// runs' reasons and transcripts in `<system-out>`.
    pub fn to_junit(&self) -> String {
        junit::write(self)
    }

    /// The report as Markdown: the summary, each criterion, each case, then every failing
    /// run with its reasons and transcript.
    pub fn to_markdown(&self) -> String {
        markdown::write(self)
    }

    /// How this report (the candidate) differs from `baseline`.
    pub fn compare_to(&self, baseline: &Report) -> Comparison {
        Comparison::new(baseline, self)
    }
}

impl Summary {
    fn of(cases: &[CaseReport], elapsed: Duration) -> Self {
        let runs: Vec<&RunReport> = cases.iter().flat_map(|case| &case.runs).collect();
        let runs_passed = runs.iter().filter(|run| run.passed).count();
        let mut criteria: BTreeMap<String, (CriterionSummary, f64)> = BTreeMap::new();
        let mut models = BTreeSet::new();
        let (mut usage, mut judge_usage) = (None, None);
        let (mut model_calls, mut tool_calls, mut judge_calls) = (0, 0, 0);
        let mut run_time = Duration::ZERO;
        for run in &runs {
            for result in &run.criteria {
                let (summary, sum) = criteria.entry(result.name.clone()).or_insert((
                    CriterionSummary {
                        runs: 0,
                        passed: 0,
                        errors: 0,
                        mean_score: 0.0,
                    },
                    0.0,
                ));
                summary.runs += 1;
                summary.passed += usize::from(result.passed);
                if result.is_error() {
                    summary.errors += 1;
                } else {
                    *sum += result.score;
                }
            }
            if let Some(model) = &run.model {
                models.insert(model.clone());
            }
            add_usage(&mut usage, run.metrics.usage);
            add_usage(&mut judge_usage, run.metrics.judge_usage);
            model_calls += u64::from(run.metrics.model_calls);
            tool_calls += u64::from(run.metrics.tool_calls);
            judge_calls += u64::from(run.metrics.judge_calls);
            run_time += run.metrics.wall;
        }
        let criteria = criteria
            .into_iter()
            .map(|(name, (mut summary, sum))| {
                let evaluated = summary.runs - summary.errors;
                summary.mean_score = if evaluated == 0 {
                    0.0
                } else {
                    sum / evaluated as f64
                };
                (name, summary)
            })
            .collect();
        let with_runs = cases.iter().filter(|case| !case.runs.is_empty()).count();
        let any = cases.iter().filter(|case| case.runs_passed > 0).count();
        let all = cases
            .iter()
            .filter(|case| !case.runs.is_empty() && case.runs_passed == case.runs.len())
            .count();
        Summary {
            cases: cases.len(),
            cases_passed: cases.iter().filter(|case| case.passed).count(),
            runs: runs.len(),
            runs_passed,
            runs_errored: runs.iter().filter(|run| run.error.is_some()).count(),
            pass_rate: share(runs_passed, runs.len()),
            pass_at_k: share(any, with_runs),
            pass_all_k: share(all, with_runs),
            criteria,
            models: models.into_iter().collect(),
            model_calls,
            tool_calls,
            usage,
            judge_calls,
            judge_usage,
            run_time,
            elapsed,
        }
    }
}

/// `count` over `of`, 0 when there is nothing (no run passed when none ran).
fn share(count: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        count as f64 / of as f64
    }
}
