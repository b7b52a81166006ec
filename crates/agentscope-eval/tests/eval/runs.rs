//! Runs on real agents (the engine, the calculator) and scripted models: what a run reads
//! from the agent's events, failures that never stop the evaluation, repetitions and
//! pass@k, turns, concurrency, time limits and budgets.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentscope::hooks::StructuredOutputHook;
use agentscope::prelude::*;
use agentscope::{BuildError, ChatStream, ChatUsage, ModelError, ModelRequest};
use agentscope_eval::{
    AnswerCriterion, Budget, Case, CriterionResult, Evaluator, ExpectedCall, Matcher, Progress,
    RunContext, RunMetrics, ToolCall, TrajectoryMode,
};
use agentscope_test::messages::turns;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

use crate::support::calculator_evaluator;

fn multiply() -> Case {
    Case::new("multiply", "What is 6*7?")
        .expect_calls(
            TrajectoryMode::Strict,
            [ExpectedCall::new("calculator")
                .arg("expression", Matcher::regex(r"^6\s*\*\s*7$").unwrap())],
        )
        .expect_answer(AnswerCriterion::contains("42"))
        .budget(Budget::new().tokens(200).model_calls(2))
}

fn result(name: &str, score: f64, passed: bool, reason: &str) -> CriterionResult {
    CriterionResult::new(name, score, passed, reason)
}

#[tokio::test]
async fn a_passing_run_reports_every_criterion_and_what_it_cost() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("call_1", "calculator", json!({"expression": "6 * 7"}))
            .with_usage(50, 10),
        ScriptedResponse::chunks([
            ScriptedChunk::text("The answer "),
            ScriptedChunk::text("is 42."),
        ])
        .with_usage(70, 8)
        .with_response("chatcmpl-2", "scripted-model-2025"),
    ]);
    let report = calculator_evaluator(&model)
        .build()
        .unwrap()
        .run(&[multiply()])
        .await;

    assert_eq!(report.repetitions, 1);
    assert_eq!(report.cases.len(), 1);
    let case = &report.cases[0];
    assert_eq!(
        (
            case.id.as_str(),
            case.passed,
            case.runs_passed,
            case.pass_rate
        ),
        ("multiply", true, 1, 1.0)
    );
    let run = &case.runs[0];
    assert_eq!(
        run.criteria,
        [
            result(
                "trajectory.strict",
                1.0,
                true,
                "made exactly the 1 expected call, in order"
            ),
            result("answer.contains", 1.0, true, "the answer contains \"42\""),
            result(
                "budget.tokens",
                1.0,
                true,
                "138 tokens (120 in, 18 out) within the budget of 200"
            ),
            result(
                "budget.model_calls",
                1.0,
                true,
                "2 model calls, within the budget of 2"
            ),
        ]
    );
    assert!(run.passed);
    assert_eq!(
        (run.error.as_deref(), run.error_type.as_deref()),
        (None, None)
    );
    assert_eq!(run.answer, "The answer is 42.");
    assert_eq!(run.response_id.as_deref(), Some("chatcmpl-2"));
    let mut call = ToolCall::new("call_1", "calculator", json!({"expression": "6 * 7"}));
    call.result = Some("42".into());
    assert_eq!(run.tool_calls, [call]);
    assert_eq!(run.model.as_deref(), Some("scripted-model"));
    let m = &run.metrics;
    assert_eq!(
        (m.model_calls, m.tool_calls, m.usage),
        (2, 1, Some(ChatUsage::new(120, 18)))
    );
    assert_eq!((m.judge_calls, m.judge_usage), (0, None));
    // The first chunk comes before the first complete message, which comes before the end.
    let first = m.first_chunk.unwrap();
    assert!(first <= m.model_time && m.model_time <= m.wall, "{m:?}");
    // A passing run keeps no transcript.
    assert!(run.transcript.is_empty());

    let s = &report.summary;
    assert_eq!(
        (
            s.cases,
            s.cases_passed,
            s.runs,
            s.runs_passed,
            s.runs_errored
        ),
        (1, 1, 1, 1, 0)
    );
    assert_eq!((s.pass_rate, s.pass_at_k, s.pass_all_k), (1.0, 1.0, 1.0));
    assert_eq!(
        (s.model_calls, s.tool_calls, s.usage),
        (2, 1, Some(ChatUsage::new(120, 18)))
    );
    assert_eq!(s.models, ["scripted-model"]);
    assert_eq!(s.criteria.len(), 4);
    assert_eq!(s.criteria["answer.contains"].mean_score, 1.0);
    assert_eq!(s.run_time, m.wall);
}

#[tokio::test]
async fn a_failing_run_keeps_its_transcript_and_says_why() {
    let model = ScriptedModel::new([
        ScriptedResponse::chunks([
            ScriptedChunk::thinking("Multiply."),
            ScriptedChunk::text("Let me\ncompute."),
            ScriptedChunk::tool_call("call_1", "calculator", json!({"expression": "6*8"})),
        ]),
        ScriptedResponse::text("The answer is 48."),
    ]);
    let report = calculator_evaluator(&model)
        .build()
        .unwrap()
        .run(&[multiply()])
        .await;
    let run = &report.cases[0].runs[0];
    assert!(!run.passed);
    assert_eq!(
        run.criteria,
        [
            result(
                "trajectory.strict",
                0.0,
                false,
                "0 of 1 call in place; call 1: expected calculator(expression=/^6\\s*\\*\\s*7$/), made calculator({\"expression\":\"6*8\"}): argument \"expression\" is \"6*8\", which does not match /^6\\s*\\*\\s*7$/"
            ),
            result(
                "answer.contains",
                0.0,
                false,
                "the answer \"The answer is 48.\" does not contain \"42\""
            ),
            result(
                "budget.tokens",
                0.0,
                false,
                "the model reported no token usage, so the budget of 200 tokens cannot be checked"
            ),
            result(
                "budget.model_calls",
                1.0,
                true,
                "2 model calls, within the budget of 2"
            ),
        ]
    );
    assert_eq!(
        run.transcript,
        [
            "user: What is 6*7?",
            "assistant: Let me\\ncompute.",
            "assistant calls calculator({\"expression\":\"6*8\"})",
            "calculator returned 48",
            "assistant: The answer is 48.",
        ]
    );
    assert_eq!(report.summary.criteria["budget.model_calls"].passed, 1);
    assert_eq!(report.summary.criteria["trajectory.strict"].passed, 0);
}

#[tokio::test]
async fn failures_of_the_agent_and_the_factory_and_panics_fail_only_their_run() {
    let evaluator = Evaluator::builder(|run: &RunContext<'_>| -> Result<ReActAgent, BuildError> {
        let model = match run.case.id.as_str() {
            "model-fails" => ScriptedModel::new([ScriptedResponse::error("model overloaded")]),
            "no-agent" => return ReActAgent::builder().build(),
            "panics" => panic!("a bug in the factory"),
            _ => ScriptedModel::new([ScriptedResponse::text("42")]),
        };
        ReActAgent::builder().model(model).build()
    })
    .progress(Progress::Off)
    .build()
    .unwrap();
    let contains = AnswerCriterion::contains("42");
    let cases = [
        Case::new("model-fails", "6*7?")
            .expect_answer(contains.clone())
            .budget(Budget::new().model_calls(1)),
        Case::new("no-agent", "6*7?").expect_answer(contains.clone()),
        Case::new("panics", "6*7?").expect_answer(contains.clone()),
        Case::new("fine", "6*7?").expect_answer(contains),
    ];
    let report = evaluator.run(&cases).await;

    let run = |at: usize| &report.cases[at].runs[0];
    let model_fails = run(0);
    assert_eq!(model_fails.error_type.as_deref(), Some("agent_error"));
    let error = model_fails.error.clone().unwrap();
    assert!(
        error.starts_with("the agent failed: ") && error.contains("model overloaded"),
        "{error}"
    );
    assert_eq!(
        model_fails.criteria,
        [
            CriterionResult::error(
                "answer.contains",
                "agent_error",
                format!("not evaluated: {error}")
            ),
            CriterionResult::error(
                "budget.model_calls",
                "agent_error",
                format!("not evaluated: {error}")
            ),
        ]
    );
    assert_eq!(
        model_fails.transcript,
        ["user: 6*7?".to_owned(), format!("error: {error}")]
    );
    assert_eq!(model_fails.model.as_deref(), Some("scripted-model"));

    assert_eq!(run(1).error_type.as_deref(), Some("factory_error"));
    assert_eq!(
        run(1).error.as_deref(),
        Some("the agent factory failed: a model is required: call .model(...) on the builder")
    );
    assert_eq!(run(1).model, None);
    assert_eq!(run(2).error_type.as_deref(), Some("panic"));
    assert_eq!(
        run(2).error.as_deref(),
        Some("the run panicked: a bug in the factory")
    );
    assert!(run(3).passed);

    let s = &report.summary;
    assert_eq!(
        (s.runs, s.runs_passed, s.runs_errored, s.pass_rate),
        (4, 1, 3, 0.25)
    );
    let contains = &s.criteria["answer.contains"];
    assert_eq!(
        (
            contains.runs,
            contains.passed,
            contains.errors,
            contains.mean_score
        ),
        (4, 1, 3, 1.0)
    );
}

#[tokio::test]
async fn a_run_over_its_time_limit_is_cancelled_and_reported() {
    let model =
        ScriptedModel::new([ScriptedResponse::text("late").with_delay(Duration::from_secs(30))]);
    let evaluator = calculator_evaluator(&model)
        .timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let report = evaluator
        .run(&[Case::new("slow", "hi").expect_answer(AnswerCriterion::contains("late"))])
        .await;
    let run = &report.cases[0].runs[0];
    assert_eq!(run.error_type.as_deref(), Some("timeout"));
    assert_eq!(
        run.error.as_deref(),
        Some("the run took longer than its time limit, 50ms")
    );
    assert!(report.summary.elapsed < Duration::from_secs(30));
}

#[tokio::test]
async fn repetitions_give_each_case_a_pass_rate_and_the_evaluation_pass_at_k() {
    let factory = |run: &RunContext<'_>| {
        // The flaky case answers wrong on its second repetition.
        let answer = if run.case.id == "flaky" && run.repetition == 1 {
            "41"
        } else {
            "42"
        };
        ReActAgent::builder()
            .model(ScriptedModel::new([ScriptedResponse::text(answer)]))
            .build()
    };
    let cases = [
        Case::new("flaky", "6*7?").expect_answer(AnswerCriterion::contains("42")),
        Case::new("steady", "6*7?").expect_answer(AnswerCriterion::contains("42")),
    ];
    let strict = Evaluator::builder(factory)
        .repetitions(3)
        .progress(Progress::Off)
        .build()
        .unwrap();
    let report = strict.run(&cases).await;
    let flaky = &report.cases[0];
    assert_eq!(
        flaky
            .runs
            .iter()
            .map(|r| (r.repetition, r.passed))
            .collect::<Vec<_>>(),
        [(0, true), (1, false), (2, true)]
    );
    assert_eq!(
        (flaky.runs_passed, flaky.pass_rate, flaky.passed),
        (2, 2.0 / 3.0, false)
    );
    let s = &report.summary;
    assert_eq!((s.runs, s.runs_passed, s.cases_passed), (6, 5, 1));
    assert_eq!(
        (s.pass_rate, s.pass_at_k, s.pass_all_k),
        (5.0 / 6.0, 1.0, 0.5)
    );

    // With a case threshold of 2/3, two of three is enough.
    let lenient = Evaluator::builder(factory)
        .repetitions(3)
        .case_threshold(2.0 / 3.0)
        .progress(Progress::Off)
        .build()
        .unwrap();
    let report = lenient.run(&cases).await;
    assert!(report.cases[0].passed);
    assert_eq!(report.summary.cases_passed, 2);
}

#[tokio::test]
async fn turns_are_calls_on_one_agent_and_the_last_reply_is_the_answer() {
    let forks: Arc<Mutex<Vec<ScriptedModel>>> = Arc::default();
    let script = ScriptedModel::new([
        ScriptedResponse::text("Hello Ada!").with_usage(10, 3),
        ScriptedResponse::text("Your name is Ada.").with_usage(20, 5),
    ]);
    let kept = Arc::clone(&forks);
    let evaluator = Evaluator::builder(move |_run: &RunContext<'_>| {
        let model = script.fork();
        kept.lock().unwrap().push(model.clone());
        ReActAgent::builder().name("assistant").model(model).build()
    })
    .progress(Progress::Off)
    .build()
    .unwrap();
    let case = Case::parse_jsonl(
        r#"{"id": "name", "input": ["Hi, I'm Ada.", "What's my name?"], "answer": [{"exact": "Your name is Ada."}], "budget": {"model_calls": 2, "tokens": 38}}"#,
    )
    .unwrap();
    let report = evaluator.run(&case).await;
    let run = &report.cases[0].runs[0];
    assert!(run.passed, "{run:#?}");
    assert_eq!(run.answer, "Your name is Ada.");
    assert_eq!(run.metrics.usage, Some(ChatUsage::new(30, 8)));
    // The second call saw the first turn.
    let requests = forks.lock().unwrap()[0].requests();
    let texts = turns(&requests[1].messages);
    assert_eq!(
        texts,
        [
            (Role::User, "Hi, I'm Ada.".to_owned()),
            (Role::Assistant, "Hello Ada!".to_owned()),
            (Role::User, "What's my name?".to_owned()),
        ]
    );
}

/// A model that counts the requests streaming at once.
struct Gauge {
    inner: ScriptedModel,
    now: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
}

struct Leaving(Arc<AtomicUsize>);

impl Drop for Leaving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Model for Gauge {
    fn model_name(&self) -> &str {
        "gauge"
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        let leaving = Leaving(Arc::clone(&self.now));
        let stream = self.inner.stream(request).await?;
        Ok(stream
            .map(move |item| {
                let _ = &leaving;
                item
            })
            .boxed())
    }
}

async fn most_at_once(concurrency: usize) -> usize {
    let max = Arc::new(AtomicUsize::new(0));
    let now = Arc::new(AtomicUsize::new(0));
    let script =
        ScriptedModel::new([ScriptedResponse::text("ok").with_delay(Duration::from_millis(30))]);
    let gauge_max = Arc::clone(&max);
    let evaluator = Evaluator::builder(move |_run: &RunContext<'_>| {
        ReActAgent::builder()
            .model(Gauge {
                inner: script.fork(),
                now: Arc::clone(&now),
                max: Arc::clone(&gauge_max),
            })
            .build()
    })
    .concurrency(concurrency)
    .progress(Progress::Off)
    .build()
    .unwrap();
    let cases: Vec<Case> = (0..6).map(|i| Case::new(format!("c{i}"), "hi")).collect();
    let report = evaluator.run(&cases).await;
    assert_eq!(report.summary.runs_passed, 6);
    max.load(Ordering::SeqCst)
}

#[tokio::test]
async fn concurrency_limits_the_runs_in_flight() {
    assert_eq!(most_at_once(1).await, 1);
    assert_eq!(most_at_once(3).await, 3);
}

#[test]
fn budgets_score_tokens_model_calls_and_wall_time() {
    let mut metrics = RunMetrics::default();
    metrics.usage = Some(ChatUsage::new(150, 60));
    metrics.model_calls = 3;
    metrics.wall = Duration::from_millis(1500);
    let budget = Budget::new().tokens(200).model_calls(3).wall_ms(1000);
    assert_eq!(
        budget.score(&metrics),
        [
            result(
                "budget.tokens",
                0.0,
                false,
                "210 tokens (150 in, 60 out) over the budget of 200"
            ),
            result(
                "budget.model_calls",
                1.0,
                true,
                "3 model calls, within the budget of 3"
            ),
            result(
                "budget.wall_time",
                0.0,
                false,
                "1500 ms, over the budget of 1000 ms"
            ),
        ]
    );
    assert!(Budget::new().score(&metrics).is_empty());
}

#[tokio::test]
async fn a_structured_reply_is_what_json_schema_checks() {
    assert_eq!(StructuredOutputHook::VALUE_KEY, "structured_output");
    let put_value = hook_fn(|event| {
        if let HookEvent::PostCall(e) = event {
            let mut reply = e.final_message().clone();
            reply
                .metadata
                .insert(StructuredOutputHook::VALUE_KEY.into(), json!({"total": 42}));
            e.set_final_message(reply);
        }
        Ok(())
    })
    .with_interests(HookEventType::PostCall);
    let hook = Arc::new(Mutex::new(Some(put_value)));
    let evaluator = Evaluator::builder(move |_run: &RunContext<'_>| {
        let mut builder = ReActAgent::builder()
            .model(ScriptedModel::new([ScriptedResponse::text(
                "Here is the total.",
            )]))
            .toolkit(Toolkit::new().tool(Calculator::new()));
        if let Some(hook) = hook.lock().unwrap().take() {
            builder = builder.hook(hook);
        }
        builder.build()
    })
    .progress(Progress::Off)
    .build()
    .unwrap();
    let case = Case::new("total", "Total?").expect_answer(
        AnswerCriterion::json_schema(json!({"type": "object", "required": ["total"]})).unwrap(),
    );
    let run = &evaluator.run(&[case]).await.cases[0].runs[0];
    assert_eq!(
        run.criteria,
        [result(
            "answer.json_schema",
            1.0,
            true,
            "the answer is valid against the schema"
        )]
    );
}

#[test]
fn the_builder_keeps_the_first_error() {
    let factory = |_: &RunContext<'_>| ReActAgent::builder().build();
    let error = Evaluator::builder(factory)
        .repetitions(0)
        .concurrency(0)
        .build()
        .unwrap_err();
    assert!(error.is_invalid_config());
    assert_eq!(
        error.to_string(),
        "invalid evaluator configuration: repetitions must be at least 1"
    );
    for (builder, message) in [
        (
            Evaluator::builder(factory).concurrency(0),
            "concurrency must be at least 1",
        ),
        (
            Evaluator::builder(factory).case_threshold(1.5),
            "the case threshold is a share from 0 to 1",
        ),
        (
            Evaluator::builder(factory).timeout(Duration::ZERO),
            "the time limit must be more than zero",
        ),
    ] {
        assert_eq!(
            builder.build().unwrap_err().to_string(),
            format!("invalid evaluator configuration: {message}")
        );
    }
}
