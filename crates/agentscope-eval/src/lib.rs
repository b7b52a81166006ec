//! Evaluate agentscope-rs agents: does the agent still do the right thing with the real
//! model, how often, at what cost?
//!
//! - **Cases** ([`Case`]) in JSON Lines files: the input (one message or several turns),
//!   the expected tool calls ([`ExpectedCall`], with per-argument [`Matcher`]s so a
//!   generated id does not fail a case), criteria for the answer ([`AnswerCriterion`]),
//!   budgets ([`Budget`]) and tags. A stored session becomes a case in one call
//!   ([`Case::from_session`]).
//! - **Criteria**, each scoring 0 to 1 with a reason a person reads ([`CriterionResult`]):
//!   the trajectory in strict, in-order, any-order, subset and superset modes
//!   ([`TrajectoryMode`]); the answer exact, contained, matched by a regex, ROUGE-1 against
//!   a reference, valid against a JSON Schema, or graded by an LLM [`Judge`] on any model
//!   against a rubric (a validated verdict; the judge's calls counted apart).
//! - **Runs** ([`Evaluator`]): each on a fresh agent from your factory (your hooks, tools
//!   and stores), repeated k times (pass rate, pass@k, pass^k), concurrently with a limit,
//!   with a progress bar on a terminal; usage and latency from the agent's own stream
//!   events ([`RunMetrics`]).
//! - **Reports** ([`Report`]): JSON, JUnit XML and Markdown with every criterion's score and
//!   the failing runs' transcripts; a baseline comparison ([`Comparison`]) that says which
//!   cases changed and whether the pass rate moved beyond noise; one
//!   `gen_ai.evaluation.result` OpenTelemetry event per criterion on the case's span, as
//!   `tracing` data that `agentscope-otel` exports.
//!
//! ```
//! use agentscope::prelude::*;
//! use agentscope_eval::{Case, Evaluator, RunContext};
//! use agentscope_test::tools::Calculator;
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//! use serde_json::json;
//!
//! # futures::executor::block_on(async {
//! let cases = Case::parse_jsonl(r#"
//! {"id": "multiply", "input": "What is 6*7?", "tool_calls": [{"tool": "calculator", "args": {"expression": {"$regex": "^6\\s*\\*\\s*7$"}}}], "answer": [{"contains": "42"}], "budget": {"model_calls": 3}}
//! "#)?;
//! let model = ScriptedModel::new([
//!     ScriptedResponse::tool_call("call_1", "calculator", json!({"expression": "6 * 7"})),
//!     ScriptedResponse::text("The answer is 42."),
//! ]);
//! let evaluator = Evaluator::builder(move |_run: &RunContext<'_>| {
//!     ReActAgent::builder()
//!         .model(model.fork())
//!         .toolkit(Toolkit::new().tool(Calculator::new()))
//!         .build()
//! })
//! .build()?;
//! let report = evaluator.run(&cases).await;
//! assert_eq!(report.pass_rate(), 1.0);
//! let run = &report.cases[0].runs[0];
//! assert_eq!(run.criteria[0].name, "trajectory.strict");
//! assert_eq!(run.criteria[0].reason, "made exactly the 1 expected call, in order");
//! assert_eq!(run.metrics.model_calls, 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! The guide is `docs/evaluation.md`; `cargo run -p agentscope-example-eval --example eval -- examples/cases/quickstart.jsonl`
//! runs a case file against the model the environment names.

mod answer;
mod budget;
mod case;
mod error;
mod judge;
mod matcher;
mod progress;
mod record;
mod report;
mod run;
mod score;
mod session;
mod telemetry;
mod trajectory;

pub use answer::{AnswerCriterion, DEFAULT_ROUGE1_THRESHOLD};
pub use budget::Budget;
pub use case::{Case, Input};
pub use error::EvalError;
pub use judge::{Judge, JudgeError, JudgeInput, Judgement, Verdict};
pub use matcher::Matcher;
pub use progress::Progress;
pub use record::RunMetrics;
pub use report::{
    CaseChange, CaseReport, ChangeKind, Comparison, CriterionSummary, Report, RunReport, Summary,
};
pub use run::{BoxError, Evaluator, EvaluatorBuilder, RunContext};
pub use score::CriterionResult;
pub use trajectory::{ExpectedCall, ToolCall, TrajectoryMode};

#[cfg(doctest)]
#[doc = include_str!("../../../docs/evaluation.md")]
mod guide {}
