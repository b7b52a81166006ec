//! [`Evaluator`]: runs cases on fresh agents, repeated, concurrently, and scores them.

use std::error::Error;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::{AgentError, ReActAgent, StreamOptions};
use chrono::Utc;
use futures::{FutureExt, StreamExt};
use tracing::Instrument;

use crate::answer::STRUCTURED_OUTPUT_KEY;
use crate::case::Case;
use crate::error::EvalError;
use crate::judge::{Judge, JudgeInput};
use crate::progress::{Bar, Progress};
use crate::record::{Observer, add_usage};
use crate::report::{Report, RunReport};
use crate::score::CriterionResult;
use crate::telemetry;

/// An error a factory returns.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Which run an agent is made for: the case and the repetition (from 0). A factory that
/// binds agents to a session store gives each run its own session id from these.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RunContext<'a> {
    /// The case.
    pub case: &'a Case,
    /// The repetition, from 0.
    pub repetition: u32,
}

type Factory = dyn Fn(&RunContext<'_>) -> Result<ReActAgent, BoxError> + Send + Sync;

/// Runs cases on fresh agents and scores them into a [`Report`].
///
/// Each run (one case, one repetition) gets a new agent from the factory given to
/// [`builder`](Self::builder), so its hooks, tools, memory and store are the application's
/// own, and no run sees another's conversation. A run:
///
/// 1. makes the agent;
/// 2. streams each turn of the case's input through `agent.stream(...)`, reading from the
///    agent's own events the tool calls, the answer, the model calls, the token usage and
///    the latency ([`RunMetrics`](crate::RunMetrics));
/// 3. scores the trajectory, the answer criteria (asking the judge for `judge` criteria)
///    and the budget;
/// 4. records one `gen_ai.evaluation.result` event per criterion on the run's span (see
///    `docs/evaluation.md`, "OpenTelemetry").
///
/// Whatever goes wrong in a run (the factory fails, the agent or its model fails, the
/// time limit passes, something panics, the judge answers garbage) is recorded in that
/// run's report and the evaluation goes on.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope_eval::{AnswerCriterion, Case, Evaluator};
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let model = ScriptedModel::new([ScriptedResponse::text("Hello, Ada!")]);
/// let evaluator = Evaluator::builder(move |_run: &agentscope_eval::RunContext<'_>| {
///     ReActAgent::builder().model(model.fork()).build()
/// })
/// .repetitions(3)
/// .build()?;
/// let cases = [Case::new("greet", "Hi, I'm Ada.").expect_answer(AnswerCriterion::contains("Ada"))];
/// let report = evaluator.run(&cases).await;
/// assert_eq!(report.summary.runs, 3);
/// assert_eq!(report.pass_rate(), 1.0);
/// # Ok::<(), agentscope_eval::EvalError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Evaluator {
    factory: Arc<Factory>,
    repetitions: u32,
    concurrency: usize,
    judge: Option<Judge>,
    timeout: Option<Duration>,
    progress: Progress,
    case_threshold: f64,
}

/// Configures an [`Evaluator`]; a setter that gets an invalid value keeps the first error
/// for [`build`](Self::build).
#[must_use]
pub struct EvaluatorBuilder {
    evaluator: Evaluator,
    error: Option<EvalError>,
}

impl Evaluator {
    /// An evaluator making each run's agent with `factory`.
    ///
    /// Defaults: 1 repetition, 1 run at a time, no judge, no time limit, a progress bar on
    /// a terminal, a case passes when all its runs pass.
    pub fn builder<F, E>(factory: F) -> EvaluatorBuilder
    where
        F: Fn(&RunContext<'_>) -> Result<ReActAgent, E> + Send + Sync + 'static,
        E: Into<BoxError>,
    {
        EvaluatorBuilder {
            evaluator: Evaluator {
                factory: Arc::new(move |run: &RunContext<'_>| factory(run).map_err(Into::into)),
                repetitions: 1,
                concurrency: 1,
                judge: None,
                timeout: None,
                progress: Progress::Auto,
                case_threshold: 1.0,
            },
            error: None,
        }
    }

    /// Runs every case as many times as the repetitions say, at most `concurrency` runs at
    /// once, and reports. Runs are polled on the caller's task (none is spawned), so
    /// concurrency overlaps their waiting on models and tools.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops every run in progress (their agent streams, which cancels
    /// their calls); nothing is reported.
    pub async fn run(&self, cases: &[Case]) -> Report {
        let started_at = Utc::now();
        let started = Instant::now();
        let repetitions = self.repetitions;
        let total = cases.len() * repetitions as usize;
        let mut bar = Bar::new(self.progress, total);
        let mut runs: Vec<Vec<Option<RunReport>>> = cases
            .iter()
            .map(|_| vec![None; repetitions as usize])
            .collect();
        let jobs = cases
            .iter()
            .enumerate()
            .flat_map(|(at, case)| (0..repetitions).map(move |repetition| (at, case, repetition)));
        let mut finished = futures::stream::iter(jobs)
            .map(|(at, case, repetition)| async move {
                (at, repetition, self.run_case(case, repetition).await)
            })
            .buffer_unordered(self.concurrency);
        while let Some((at, repetition, run)) = finished.next().await {
            bar.advance(run.passed, run.error.is_some());
            runs[at][repetition as usize] = Some(run);
        }
        bar.finish();
        let runs = runs
            .into_iter()
            .map(|runs| runs.into_iter().flatten().collect())
            .collect();
        Report::new(
            cases,
            runs,
            repetitions,
            self.case_threshold,
            started_at,
            started.elapsed(),
        )
    }

    /// One run of `case`: a fresh agent, every turn, every criterion.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the agent's stream, which cancels its call.
    pub async fn run_case(&self, case: &Case, repetition: u32) -> RunReport {
        let span = telemetry::case_span(&case.id, repetition);
        let run = AssertUnwindSafe(self.execute(case, repetition))
            .catch_unwind()
            .instrument(span.clone())
            .await;
        let report = match run {
            Ok(report) => report,
            Err(panic) => {
                let message = panic_message(panic.as_ref());
                failed(
                    case,
                    repetition,
                    Failure::new("panic", format!("the run panicked: {message}")),
                    None,
                )
            }
        };
        for result in &report.criteria {
            telemetry::evaluation_result(&span, result, report.response_id.as_deref());
        }
        let error = report.error_type.as_deref().zip(report.error.as_deref());
        telemetry::finish(&span, report.passed, error);
        report
    }

    async fn execute(&self, case: &Case, repetition: u32) -> RunReport {
        let run = RunContext { case, repetition };
        let agent = match (self.factory)(&run) {
            Ok(agent) => agent,
            Err(error) => {
                return failed(
                    case,
                    repetition,
                    Failure::new(
                        "factory_error",
                        format!("the agent factory failed: {}", chain(error.as_ref())),
                    ),
                    None,
                );
            }
        };
        let model = agent.model_name().to_owned();
        let mut observer = Observer::new();
        let turns = self.turns(&agent, case, &mut observer);
        let outcome = match self.timeout {
            None => turns.await,
            Some(limit) => match tokio::time::timeout(limit, turns).await {
                Ok(outcome) => outcome,
                Err(_) => Err(Failure::new(
                    "timeout",
                    format!("the run took longer than its time limit, {limit:?}"),
                )),
            },
        };
        observer.finish();
        if let Err(failure) = outcome {
            return failed(case, repetition, failure, Some((observer, model)));
        }
        self.score(case, repetition, observer, model).await
    }

    /// Streams every turn of the case through the agent.
    async fn turns(
        &self,
        agent: &ReActAgent,
        case: &Case,
        observer: &mut Observer,
    ) -> Result<(), Failure> {
        for (at, turn) in case.input.turns.iter().enumerate() {
            observer.turn(turn);
            let input: Vec<agentscope::Msg> = turn
                .iter()
                .map(|text| agentscope::Msg::user(text.as_str()))
                .collect();
            let mut events = agent.stream(input, StreamOptions::default());
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => observer.event(&event),
                    Err(error) => return Err(agent_failure(at, case, &error)),
                }
            }
        }
        Ok(())
    }

    async fn score(
        &self,
        case: &Case,
        repetition: u32,
        observer: Observer,
        model: String,
    ) -> RunReport {
        let Observer {
            mut metrics,
            calls,
            reply,
            transcript,
            ..
        } = observer;
        let answer = reply
            .as_ref()
            .map(agentscope::Msg::text)
            .unwrap_or_default();
        let structured = reply
            .as_ref()
            .and_then(|reply| reply.metadata.get(STRUCTURED_OUTPUT_KEY));
        let mut criteria = Vec::new();
        if let Some(expected) = &case.tool_calls {
            criteria.push(case.trajectory.score(expected, &calls));
        }
        for criterion in &case.answer {
            let result = match (criterion.rubric(), &self.judge) {
                (Some(rubric), Some(judge)) => {
                    let input = JudgeInput::new(rubric, &case.input.turns, &calls, &answer);
                    let judgement = judge.judge(input).await;
                    metrics.judge_calls += 1;
                    add_usage(&mut metrics.judge_usage, judgement.usage);
                    match judgement.verdict {
                        Ok(verdict) => CriterionResult::new(
                            criterion.name(),
                            verdict.score,
                            verdict.pass,
                            format!("the judge ({}): {}", judge.model_name(), verdict.reason),
                        ),
                        Err(error) => CriterionResult::error(
                            criterion.name(),
                            error.error_type(),
                            error.to_string(),
                        ),
                    }
                }
                _ => criterion.score(&answer, structured),
            };
            criteria.push(result);
        }
        criteria.extend(case.budget.score(&metrics));
        let passed = criteria.iter().all(|c| c.passed);
        RunReport {
            repetition,
            passed,
            error: None,
            error_type: None,
            criteria,
            answer,
            response_id: reply
                .as_ref()
                .and_then(|reply| reply.response_id().map(str::to_owned)),
            tool_calls: calls,
            metrics,
            model: Some(model),
            transcript: if passed {
                Vec::new()
            } else {
                transcript.lines()
            },
        }
    }
}

impl EvaluatorBuilder {
    /// Runs each case `k` times (at least 1): the report gives each case's pass rate and
    /// the evaluation's pass@k and pass^k.
    pub fn repetitions(mut self, k: u32) -> Self {
        if k == 0 {
            self.fail("repetitions must be at least 1");
        }
        self.evaluator.repetitions = k;
        self
    }

    /// Runs at most `n` runs at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        if n == 0 {
            self.fail("concurrency must be at least 1");
        }
        self.evaluator.concurrency = n;
        self
    }

    /// Grades `judge` criteria with this judge (without one they are errors).
    pub fn judge(mut self, judge: Judge) -> Self {
        self.evaluator.judge = Some(judge);
        self
    }

    /// Stops a run that takes longer than `limit` (its agent call is cancelled) and records
    /// it as failed with `error_type` `timeout`. Needs a tokio runtime with time enabled
    /// (without one the run fails with `error_type` `panic`, saying so).
    pub fn timeout(mut self, limit: Duration) -> Self {
        if limit.is_zero() {
            self.fail("the time limit must be more than zero");
        }
        self.evaluator.timeout = Some(limit);
        self
    }

    /// Whether to draw a progress bar (by default on stderr when it is a terminal).
    pub fn progress(mut self, progress: Progress) -> Self {
        self.evaluator.progress = progress;
        self
    }

    /// The share of a case's runs that must pass for the case to pass (from 0 to 1;
    /// default 1: all of them).
    pub fn case_threshold(mut self, share: f64) -> Self {
        if !(0.0..=1.0).contains(&share) {
            self.fail("the case threshold is a share from 0 to 1");
        }
        self.evaluator.case_threshold = share;
        self
    }

    /// The evaluator.
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidConfig`]: the first invalid setting.
    pub fn build(self) -> Result<Evaluator, EvalError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.evaluator),
        }
    }

    fn fail(&mut self, message: &str) {
        if self.error.is_none() {
            self.error = Some(EvalError::InvalidConfig {
                message: message.to_owned(),
            });
        }
    }
}

impl fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Evaluator")
            .field("repetitions", &self.repetitions)
            .field("concurrency", &self.concurrency)
            .field("judge", &self.judge)
            .field("timeout", &self.timeout)
            .field("progress", &self.progress)
            .field("case_threshold", &self.case_threshold)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for EvaluatorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EvaluatorBuilder")
            .field("evaluator", &self.evaluator)
            .field("error", &self.error)
            .finish()
    }
}

/// Why a run did not reach its scoring.
struct Failure {
    error_type: &'static str,
    message: String,
}

impl Failure {
    fn new(error_type: &'static str, message: String) -> Self {
        Self {
            error_type,
            message,
        }
    }
}

fn agent_failure(turn: usize, case: &Case, error: &AgentError) -> Failure {
    let which = if case.input.turns.len() > 1 {
        format!(" in turn {}", turn + 1)
    } else {
        String::new()
    };
    Failure::new(
        "agent_error",
        format!("the agent failed{which}: {}", chain(error)),
    )
}

/// A failed run's report: every criterion of the case not evaluated, with the failure.
fn failed(
    case: &Case,
    repetition: u32,
    failure: Failure,
    observed: Option<(Observer, String)>,
) -> RunReport {
    let criteria = case
        .criterion_names()
        .into_iter()
        .map(|name| {
            CriterionResult::error(
                name,
                failure.error_type,
                format!("not evaluated: {}", failure.message),
            )
        })
        .collect();
    let (metrics, calls, transcript, model) = match observed {
        Some((observer, model)) => {
            let transcript = observer.transcript.lines();
            (observer.metrics, observer.calls, transcript, Some(model))
        }
        None => (Default::default(), Vec::new(), Vec::new(), None),
    };
    let mut transcript = transcript;
    transcript.push(format!("error: {}", failure.message));
    RunReport {
        repetition,
        passed: false,
        error: Some(failure.message),
        error_type: Some(failure.error_type.to_owned()),
        criteria,
        answer: String::new(),
        response_id: None,
        tool_calls: calls,
        metrics,
        model,
        transcript,
    }
}

/// An error and its causes, `: `-separated, each said once (a message that already ends
/// with its cause's text is not repeated).
fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = error.source();
    }
    text
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
