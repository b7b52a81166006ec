//! `eval_cost`: what the harness adds to an agent call. One run is the quickstart's call
//! (an instant scripted model asks the calculator, then answers) on a fresh agent; the
//! evaluation runs 50 cases x 5 repetitions of it, each scored on a strict trajectory with
//! a regex matcher, `contains`, ROUGE-1 and a model-call budget, and builds the report.
//! In the same run: the bare call (a fresh agent and `call`, what the harness cannot do
//! without) and the bare stream (the same, through `stream`, which the harness reads).
//!
//! ```sh
//! cargo bench -p agentscope-eval --bench eval_cost
//! ```
//!
//! The time per run of the evaluation is its time over 250 (criterion's `thrpt` line gives
//! runs per second). Last, `eval_cost/ratio` prints the ratio from rounds that alternate
//! 250 bare calls and one evaluation, so that a busy machine slows both sides alike.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope_eval::{
    AnswerCriterion, Budget, Case, Evaluator, ExpectedCall, Matcher, Progress, RunContext,
    TrajectoryMode,
};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use criterion::{Criterion, Throughput, criterion_group};
use futures::StreamExt;
use serde_json::json;

const CASES: usize = 50;
const REPETITIONS: u32 = 5;

fn script() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("call_1", "calculator", json!({"expression": "6*7"}))
            .with_usage(50, 10),
        ScriptedResponse::text("The answer is 42.").with_usage(70, 8),
    ])
    .without_recording()
}

fn agent(model: &ScriptedModel) -> ReActAgent {
    ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are a helpful assistant. Use the calculator for arithmetic.")
        .model(model.fork())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .build()
        .unwrap()
}

fn cases() -> Vec<Case> {
    (0..CASES)
        .map(|i| {
            Case::new(format!("multiply-{i}"), "What is 6*7?")
                .expect_calls(
                    TrajectoryMode::Strict,
                    [ExpectedCall::new("calculator")
                        .arg("expression", Matcher::regex(r"^\s*6\s*\*\s*7\s*$").unwrap())],
                )
                .expect_answer(AnswerCriterion::contains("42"))
                .expect_answer(AnswerCriterion::rouge1("The answer is 42."))
                .budget(Budget::new().model_calls(4))
        })
        .collect()
}

/// The evaluation of the benches: `REPETITIONS` runs of each case, each on a new agent on
/// `model`.
fn evaluator(model: &ScriptedModel) -> Evaluator {
    let model = model.clone();
    Evaluator::builder(move |_run: &RunContext<'_>| Ok::<_, BuildError>(agent(&model)))
        .repetitions(REPETITIONS)
        .progress(Progress::Off)
        .build()
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let model = script();
    let mut group = c.benchmark_group("eval_cost");
    group.measurement_time(Duration::from_secs(5));

    group.throughput(Throughput::Elements(1));
    group.bench_function("bare_call", |b| {
        b.iter_custom(|iters| {
            futures::executor::block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let reply = agent(&model).call(Msg::user("What is 6*7?")).await.unwrap();
                    assert_eq!(reply.text(), "The answer is 42.");
                }
                start.elapsed()
            })
        });
    });
    group.bench_function("bare_stream", |b| {
        b.iter_custom(|iters| {
            futures::executor::block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let agent = agent(&model);
                    let mut events =
                        agent.stream(Msg::user("What is 6*7?"), StreamOptions::default());
                    let mut last = None;
                    while let Some(event) = events.next().await {
                        last = Some(event.unwrap());
                    }
                    assert_eq!(last.unwrap().message.text(), "The answer is 42.");
                }
                start.elapsed()
            })
        });
    });

    let cases = cases();
    let evaluator = evaluator(&model);
    group.throughput(Throughput::Elements(CASES as u64 * u64::from(REPETITIONS)));
    group.sample_size(20);
    group.bench_function("evaluation_50x5", |b| {
        b.iter_custom(|iters| {
            futures::executor::block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let report = evaluator.run(&cases).await;
                    assert_eq!(report.summary.runs_passed, CASES * REPETITIONS as usize);
                }
                start.elapsed()
            })
        });
    });
    group.finish();
}

/// The ratio, measured so that the machine's load falls on both sides alike: rounds that
/// alternate 250 bare calls and one evaluation of 250 runs; the medians of each.
fn ratio() {
    let model = script();
    let cases = cases();
    let evaluator = evaluator(&model);
    let runs = CASES * REPETITIONS as usize;
    let (mut bare, mut evaluated) = (Vec::new(), Vec::new());
    futures::executor::block_on(async {
        for round in 0..ROUNDS + 3 {
            let start = Instant::now();
            for _ in 0..runs {
                agent(&model).call(Msg::user("What is 6*7?")).await.unwrap();
            }
            let bare_round = start.elapsed();
            let start = Instant::now();
            let report = evaluator.run(&cases).await;
            let evaluated_round = start.elapsed();
            assert_eq!(report.summary.runs_passed, runs);
            // The first rounds warm up.
            if round >= 3 {
                bare.push(bare_round / runs as u32);
                evaluated.push(evaluated_round / runs as u32);
            }
        }
    });
    bare.sort();
    evaluated.sort();
    let (bare, evaluated) = (bare[ROUNDS / 2], evaluated[ROUNDS / 2]);
    println!(
        "eval_cost/ratio: {evaluated:.2?} per run of the evaluation / {bare:.2?} per bare call = {:.2}x \
         (medians of {ROUNDS} alternating rounds of {runs})",
        evaluated.as_secs_f64() / bare.as_secs_f64()
    );
}

const ROUNDS: usize = 30;

criterion_group!(benches, bench);

/// `EVAL_COST_COUNT=bare|evaluation EVAL_COST_ROUNDS=n`: only the workload (n rounds of
/// 250 bare calls, or n evaluations of 250 runs), for counting instructions under
/// `valgrind --tool=callgrind`, which the machine's load does not change: the difference
/// between two round counts is the rounds' own cost, without the program's setup.
fn count(what: &str, rounds: usize) {
    let model = script();
    let cases = cases();
    let evaluator = evaluator(&model);
    let runs = CASES * REPETITIONS as usize;
    futures::executor::block_on(async {
        for _ in 0..rounds {
            if what == "bare" {
                for _ in 0..runs {
                    agent(&model).call(Msg::user("What is 6*7?")).await.unwrap();
                }
            } else {
                assert_eq!(evaluator.run(&cases).await.summary.runs_passed, runs);
            }
        }
    });
}

fn main() {
    if let Ok(what) = std::env::var("EVAL_COST_COUNT") {
        let rounds = std::env::var("EVAL_COST_ROUNDS").map_or(1, |n| n.parse().unwrap());
        count(&what, rounds);
        return;
    }
    benches();
    // Only when benchmarking (`cargo bench`), not when `cargo test` runs the bench once.
    if std::env::args().any(|arg| arg == "--bench") {
        ratio();
    }
    Criterion::default().configure_from_args().final_summary();
}
