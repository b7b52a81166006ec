//! Evaluates the quickstart agent (a ReAct agent with a calculator) on a case file, and
//! exits non-zero when the pass rate is below a threshold.
//!
//! ```sh
//! cargo run -p agentscope-example-eval --example eval -- examples/cases/quickstart.jsonl          # offline demo model
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run -p agentscope-example-eval --example eval -- examples/cases/quickstart.jsonl
//! # five runs per case, two at a time; every report; compared with yesterday's
//! cargo run -p agentscope-example-eval --example eval -- examples/cases/quickstart.jsonl --repeat 5 --concurrency 2 \
//!     --json today.json --junit junit.xml --markdown report.md --baseline yesterday.json
//! ```
//!
//! Options:
//!
//! | option | what | default |
//! |---|---|---|
//! | `--repeat K` | runs per case | 1 |
//! | `--concurrency N` | runs at once | 1 |
//! | `--threshold SHARE` | the lowest pass rate (0 to 1) that exits 0 | 1 |
//! | `--timeout SECONDS` | the longest a run may take | 300 |
//! | `--json PATH`, `--junit PATH`, `--markdown PATH` | write the report | |
//! | `--baseline PATH` | a JSON report to compare with (which cases changed, and whether the pass rate moved beyond noise) | |
//!
//! The model is the one the environment names, as for every example (see
//! `examples/support/mod.rs`); the same model judges `judge` criteria. Offline, the agent
//! runs on a stand-in that is not a language model: it finds the arithmetic in the question,
//! asks the calculator, and answers with the results (and there is no judge).
//!
//! Exit codes: 0 when the pass rate reaches the threshold, 1 when it does not or when the
//! evaluation cannot run (an unreadable case file, a bad option: `error:` lines on stderr).
//! Runs that fail (the model's error, a time limit) are failed runs in the report, never a
//! crash.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::error::Error;
use std::process::ExitCode;
use std::time::Duration;

use agentscope::prelude::*;
use agentscope::{ChatStream, ModelError, ModelRequest};
use agentscope_eval::{Case, Evaluator, Judge, Report, RunContext};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::json;

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

/// The command line.
struct Options {
    cases: String,
    repeat: u32,
    concurrency: usize,
    threshold: f64,
    timeout: Duration,
    json: Option<String>,
    junit: Option<String>,
    markdown: Option<String>,
    baseline: Option<String>,
}

fn options() -> Result<Options, Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        cases: String::new(),
        repeat: 1,
        concurrency: 1,
        threshold: 1.0,
        timeout: Duration::from_secs(300),
        json: None,
        junit: None,
        markdown: None,
        baseline: None,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--repeat" => options.repeat = value("--repeat")?.parse()?,
            "--concurrency" => options.concurrency = value("--concurrency")?.parse()?,
            "--threshold" => options.threshold = value("--threshold")?.parse()?,
            "--timeout" => {
                let seconds: f64 = value("--timeout")?.parse()?;
                options.timeout = Duration::try_from_secs_f64(seconds)
                    .ok()
                    .filter(|limit| !limit.is_zero())
                    .ok_or_else(|| {
                        format!("--timeout is a positive number of seconds, not {seconds}")
                    })?;
            }
            "--json" => options.json = Some(value("--json")?),
            "--junit" => options.junit = Some(value("--junit")?),
            "--markdown" => options.markdown = Some(value("--markdown")?),
            "--baseline" => options.baseline = Some(value("--baseline")?),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}").into()),
            path if options.cases.is_empty() => options.cases = path.to_owned(),
            extra => return Err(format!("one case file only (got {extra:?} too)").into()),
        }
    }
    if options.cases.is_empty() {
        return Err(
            "usage: cargo run -p agentscope-example-eval --example eval -- CASES.jsonl [--repeat K] [--concurrency N] \
                    [--threshold SHARE] [--timeout SECONDS] [--json PATH] [--junit PATH] \
                    [--markdown PATH] [--baseline PATH]"
                .into(),
        );
    }
    if !(0.0..=1.0).contains(&options.threshold) {
        return Err(format!(
            "--threshold is a share from 0 to 1, not {}",
            options.threshold
        )
        .into());
    }
    Ok(options)
}

async fn example() -> Result<(), Box<dyn Error>> {
    let options = options()?;
    let cases = Case::load_jsonl(&options.cases)?;
    let baseline = match &options.baseline {
        Some(path) => Some(Report::from_json(
            &std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?,
        )?),
        None => None,
    };
    let model = support::model_or(OfflineCalculator)?;
    let offline = !support::environment_names_a_model();

    // The quickstart's agent, fresh for every run.
    let agent_model = model.clone();
    let mut evaluator = Evaluator::builder(move |_run: &RunContext<'_>| {
        ReActAgent::builder()
            .name("assistant")
            .sys_prompt("You are a helpful assistant. Use the calculator for arithmetic.")
            .model(agent_model.clone())
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .max_iters(10)
            .build()
    })
    .repetitions(options.repeat)
    .concurrency(options.concurrency)
    .timeout(options.timeout);
    if !offline {
        evaluator = evaluator.judge(Judge::new(model));
    }
    let evaluator = evaluator.build()?;

    println!(
        "cases: {} ({} cases, {} run{} each)\n",
        options.cases,
        cases.len(),
        options.repeat,
        if options.repeat == 1 { "" } else { "s" }
    );
    let report = evaluator.run(&cases).await;

    for case in &report.cases {
        let verdict = if case.passed { "PASS" } else { "FAIL" };
        let mut line = format!(
            "{verdict} {:<16} {} of {} runs",
            case.id,
            case.runs_passed,
            case.runs.len()
        );
        // Why the first failing run failed.
        if let Some(run) = case.runs.iter().find(|run| !run.passed) {
            let why = match &run.error {
                Some(error) => error.clone(),
                None => run
                    .criteria
                    .iter()
                    .find(|c| !c.passed)
                    .map(|c| format!("{} {:.2}: {}", c.name, c.score, c.reason))
                    .unwrap_or_default(),
            };
            line.push_str(&format!(": {}", clip(&why, 240)));
        }
        println!("{line}");
    }
    let s = &report.summary;
    println!(
        "\npass rate: {:.1}% ({} of {} runs), pass@{k} {:.1}%, pass^{k} {:.1}%; {} of {} cases passed",
        s.pass_rate * 100.0,
        s.runs_passed,
        s.runs,
        s.pass_at_k * 100.0,
        s.pass_all_k * 100.0,
        s.cases_passed,
        s.cases,
        k = report.repetitions
    );
    let tokens = s.usage.map_or_else(
        || "no token usage reported".to_owned(),
        |u| format!("{} tokens in, {} out", u.input_tokens, u.output_tokens),
    );
    println!(
        "agent: {} model calls, {} tool calls, {tokens}; {} runs failed before scoring; {:.1} s",
        s.model_calls,
        s.tool_calls,
        s.runs_errored,
        s.elapsed.as_secs_f64()
    );
    if s.judge_calls > 0 {
        println!("judge: {} calls", s.judge_calls);
    }

    for (path, text) in [
        (&options.json, report.to_json()),
        (&options.junit, report.to_junit()),
        (&options.markdown, report.to_markdown()),
    ] {
        if let Some(path) = path {
            std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
            println!("wrote {path}");
        }
    }
    if let Some(baseline) = &baseline {
        let comparison = report.compare_to(baseline);
        println!("\nagainst the baseline: {}", comparison.verdict());
        for change in &comparison.changes {
            println!("  {:?}: {}", change.kind, change.id);
        }
    }

    if report.pass_rate() < options.threshold {
        return Err(format!(
            "the pass rate {:.1}% is below the threshold {:.1}%",
            report.pass_rate() * 100.0,
            options.threshold * 100.0
        )
        .into());
    }
    Ok(())
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}...", &text[..at]),
    }
}

/// The offline stand-in (clearly not a language model): it finds the arithmetic in the
/// user's last message and asks the calculator for each expression, all at once; once the
/// calculator has answered, it answers with the results; a message without arithmetic gets
/// a greeting. It reports token usage as a quarter of the characters read and written.
struct OfflineCalculator;

const NAME: &str = "demo-model (offline, scripted)";

impl Model for OfflineCalculator {
    fn model_name(&self) -> &str {
        NAME
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let last_user = request
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        let since = &request.messages[last_user..];
        let results: Vec<(String, String)> = since
            .iter()
            .flat_map(|m| m.tool_results())
            .map(|result| {
                let expression = since
                    .iter()
                    .flat_map(|m| m.tool_uses())
                    .find(|call| call.id == result.id)
                    .and_then(|call| call.input.get("expression").and_then(|e| e.as_str()))
                    .unwrap_or_default()
                    .to_owned();
                (expression, result.text_output())
            })
            .collect();
        let question = request.messages[last_user].text();
        let chunks = if let [(_, result)] = results.as_slice() {
            words(&format!("The answer is {result}."))
        } else if !results.is_empty() {
            let parts: Vec<String> = results.iter().map(|(e, r)| format!("{e} = {r}")).collect();
            words(&format!("{}.", parts.join(" and ")))
        } else {
            let expressions = arithmetic(&question);
            if expressions.is_empty() {
                words("Hello! I am a demo assistant: ask me some arithmetic.")
            } else {
                expressions
                    .iter()
                    .enumerate()
                    .map(|(at, e)| {
                        ScriptedChunk::tool_call(
                            format!("call_{}", at + 1),
                            "calculator",
                            json!({"expression": e}),
                        )
                    })
                    .collect()
            }
        };
        let read: usize = request.messages.iter().map(|m| m.text().len()).sum();
        let written: usize = chunks
            .iter()
            .map(|c| match c {
                ScriptedChunk::Text(text) => text.len(),
                _ => 24,
            })
            .sum();
        let response = ScriptedResponse::chunks(chunks)
            .with_usage((read / 4) as u64, (written / 4).max(1) as u64);
        ScriptedModel::new([response])
            .with_name(NAME)
            .stream(request)
            .await
    }
}

fn words(text: &str) -> Vec<ScriptedChunk> {
    text.split_inclusive(' ').map(ScriptedChunk::text).collect()
}

/// The arithmetic expressions in `text`: runs of digits, operators, parentheses, dots and
/// spaces that hold a digit and an operator.
fn arithmetic(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current = String::new();
    for c in text.chars().chain(std::iter::once('\n')) {
        if c.is_ascii_digit() || "+-*/().^% ".contains(c) {
            current.push(c);
            continue;
        }
        let candidate = current.trim().trim_end_matches('.').trim();
        let has_digit = candidate.chars().any(|c| c.is_ascii_digit());
        let has_operator = candidate.chars().skip(1).any(|c| "+-*/^%".contains(c));
        if has_digit && has_operator {
            found.push(candidate.to_owned());
        }
        current.clear();
    }
    found
}
