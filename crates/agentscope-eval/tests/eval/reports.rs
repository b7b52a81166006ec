//! The three reports of one evaluation (a passing case, a case with a failing run and a
//! failed run, two repetitions), with the times fixed: JSON read back as written, JUnit XML
//! and Markdown exactly.

use std::time::Duration;

use agentscope::prelude::*;
use agentscope_eval::{
    AnswerCriterion, Case, Evaluator, ExpectedCall, Progress, Report, RunContext, TrajectoryMode,
};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

pub(crate) async fn evaluation() -> Report {
    let evaluator = Evaluator::builder(|run: &RunContext<'_>| {
        let script = match (run.case.id.as_str(), run.repetition) {
            ("multiply", _) => vec![
                ScriptedResponse::tool_call("call_1", "calculator", json!({"expression": "6*7"}))
                    .with_usage(40, 8),
                ScriptedResponse::text("The answer is 42.").with_usage(60, 6),
            ],
            (_, 0) => vec![ScriptedResponse::text("It is 3 & a bit <roughly>.").with_usage(20, 9)],
            _ => vec![ScriptedResponse::error("model overloaded")],
        };
        ReActAgent::builder()
            .model(ScriptedModel::new(script))
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .build()
    })
    .repetitions(2)
    .progress(Progress::Off)
    .build()
    .unwrap();
    let cases = [
        Case::new("multiply", "What is 6*7?")
            .expect_calls(TrajectoryMode::Strict, [ExpectedCall::new("calculator")])
            .expect_answer(AnswerCriterion::contains("42"))
            .tag("math"),
        Case::new("divide", "What is 7/2?").expect_answer(AnswerCriterion::contains("3.5")),
    ];
    let mut report = evaluator.run(&cases).await;
    // Fixed times, so that the reports can be compared whole.
    report.started_at = "2026-01-02T03:04:05Z".parse().unwrap();
    report.summary.elapsed = Duration::from_millis(250);
    report.summary.run_time = Duration::from_millis(400);
    for case in &mut report.cases {
        for run in &mut case.runs {
            run.metrics.wall = Duration::from_millis(100);
            run.metrics.model_time = Duration::from_millis(80);
            run.metrics.first_chunk = run.metrics.first_chunk.map(|_| Duration::from_millis(10));
        }
    }
    report
}

#[tokio::test]
async fn json_reads_back_as_written() {
    let report = evaluation().await;
    let json = report.to_json();
    assert_eq!(Report::from_json(&json).unwrap(), report);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let failed = &value["cases"][1]["runs"][0];
    assert_eq!(failed["passed"], json!(false));
    assert_eq!(
        failed["criteria"][0],
        json!({"name": "answer.contains", "score": 0.0, "passed": false,
               "reason": "the answer \"It is 3 & a bit <roughly>.\" does not contain \"3.5\""})
    );
    assert_eq!(
        failed["transcript"],
        json!([
            "user: What is 7/2?",
            "assistant: It is 3 & a bit <roughly>."
        ])
    );
    assert_eq!(
        failed["metrics"],
        json!({"model_calls": 1, "tool_calls": 0, "usage": {"input_tokens": 20, "output_tokens": 9},
               "wall_ms": 100.0, "model_ms": 80.0, "first_chunk_ms": 10.0, "judge_calls": 0})
    );
    // A passing run keeps no transcript.
    assert_eq!(value["cases"][0]["runs"][0].get("transcript"), None);
    assert_eq!(value["summary"]["pass_rate"], json!(0.5));
    assert_eq!(value["summary"]["run_time_ms"], json!(400.0));
    let error = Report::from_json("{\"cases\": []}").unwrap_err();
    assert!(error.is_invalid_report());
    assert!(
        error
            .to_string()
            .starts_with("invalid report: missing field `started_at`"),
        "{error}"
    );
}

#[tokio::test]
async fn junit_has_a_test_case_per_case_with_failures_and_transcripts() {
    let report = evaluation().await;
    let error = report.cases[1].runs[1].error.clone().unwrap();
    let expected = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="agentscope-eval" tests="2" failures="1" errors="0" time="0.400">
  <testsuite name="agentscope-eval" tests="2" failures="1" errors="0" skipped="0" time="0.400" timestamp="2026-01-02T03:04:05">
    <properties>
      <property name="repetitions" value="2"/>
      <property name="pass_rate" value="0.5000"/>
      <property name="pass_at_k" value="0.5000"/>
      <property name="pass_all_k" value="0.5000"/>
      <property name="models" value="scripted-model"/>
    </properties>
    <testcase classname="agentscope-eval" name="multiply" time="0.200">
      <properties>
        <property name="trajectory.strict" value="1.0000"/>
        <property name="answer.contains" value="1.0000"/>
        <property name="tags" value="math"/>
      </properties>
    </testcase>
    <testcase classname="agentscope-eval" name="divide" time="0.200">
      <properties>
        <property name="answer.contains" value="0.0000"/>
      </properties>
      <failure message="0 of 2 runs passed (0.0%; the case needs 100.0%)" type="criteria">run 1:
  answer.contains 0.00: the answer &quot;It is 3 &amp; a bit &lt;roughly&gt;.&quot; does not contain &quot;3.5&quot;
run 2:
  error: {error}
</failure>
      <system-out>--- run 1 transcript ---
user: What is 7/2?
assistant: It is 3 &amp; a bit &lt;roughly&gt;.
--- run 2 transcript ---
user: What is 7/2?
error: {error}
</system-out>
    </testcase>
  </testsuite>
</testsuites>
"#
    );
    assert_eq!(report.to_junit(), expected);
}

#[tokio::test]
async fn markdown_has_the_summary_criteria_cases_and_failing_runs() {
    let report = evaluation().await;
    let error = report.cases[1].runs[1].error.clone().unwrap();
    let expected = format!(
        "# Evaluation: 1 of 2 cases passed, 50.0% of runs

| | |
|---|---|
| started | 2026-01-02 03:04:05 UTC |
| model | scripted-model |
| runs | 4 (2 cases x 2), 2 passed, 1 failed before scoring |
| pass rate (runs) | 50.0% |
| pass@2 (a case passed at least once) | 50.0% |
| pass^2 (a case passed every time) | 50.0% |
| cases passed (each needs 100.0% of its runs) | 1 of 2 |
| agent | 5 model calls, 2 tool calls, 220 tokens in, 37 out |
| time | 0.25 s elapsed, 0.100 s per run |

## Criteria

| criterion | runs | passed | not evaluated | mean score |
|---|---|---|---|---|
| answer.contains | 4 | 2 | 1 | 0.667 |
| trajectory.strict | 2 | 2 | 0 | 1.000 |

## Cases

| case | result | runs passed | pass rate | mean time | tokens | tags |
|---|---|---|---|---|---|---|
| multiply | pass | 2 of 2 | 100.0% | 0.100 s | 228 | math |
| divide | FAIL | 0 of 2 | 0.0% | 0.100 s | 29 |  |

## Failing runs

### divide, run 1

- answer.contains 0.000: the answer \"It is 3 & a bit <roughly>.\" does not contain \"3.5\"

```text
user: What is 7/2?
assistant: It is 3 & a bit <roughly>.
```

### divide, run 2

- error (agent_error): {error}

```text
user: What is 7/2?
error: {error}
```
"
    );
    assert_eq!(report.to_markdown(), expected);
}
