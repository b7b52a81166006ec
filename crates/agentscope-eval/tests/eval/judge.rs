//! The LLM judge on a scripted model: what it is asked, its validated verdict, its calls
//! counted apart, and a judge that answers garbage or fails (a clear error in that run's
//! criterion, and the evaluation goes on).

use agentscope::prelude::*;
use agentscope::{ChatUsage, ResponseFormat};
use agentscope_eval::{
    AnswerCriterion, Case, CriterionResult, Evaluator, Judge, Progress, RunContext,
};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

fn evaluator(agent: &ScriptedModel, judge: Option<&ScriptedModel>) -> Evaluator {
    let agent = agent.clone();
    let mut builder = Evaluator::builder(move |_run: &RunContext<'_>| {
        ReActAgent::builder()
            .model(agent.fork())
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .build()
    })
    .progress(Progress::Off);
    if let Some(judge) = judge {
        builder = builder.judge(Judge::new(judge.clone()));
    }
    builder.build().unwrap()
}

const RUBRIC: &str = "Gives 42 and shows the multiplication.";

#[tokio::test]
async fn the_judge_grades_against_the_rubric_and_its_calls_are_counted_apart() {
    let agent = ScriptedModel::new([
        ScriptedResponse::tool_call("call_1", "calculator", json!({"expression": "6*7"}))
            .with_usage(30, 6),
        ScriptedResponse::text("6 times 7 is 42.").with_usage(40, 7),
    ]);
    let judge = ScriptedModel::new([ScriptedResponse::text(
        "{\"score\": 0.75, \"pass\": true, \"reason\": \"It gives 42 but shows little working.\"}",
    )
    .with_usage(200, 20)])
    .with_name("judge-model");
    let case = Case::new("judged", "What is 6*7?")
        .expect_answer(AnswerCriterion::judge(RUBRIC))
        .expect_answer(AnswerCriterion::contains("42"));
    let report = evaluator(&agent, Some(&judge)).run(&[case]).await;

    let run = &report.cases[0].runs[0];
    assert_eq!(
        run.criteria,
        [
            CriterionResult::new(
                "answer.judge",
                0.75,
                true,
                "the judge (judge-model): It gives 42 but shows little working."
            ),
            CriterionResult::new("answer.contains", 1.0, true, "the answer contains \"42\""),
        ]
    );
    // The agent's usage and the judge's, apart.
    assert_eq!(run.metrics.usage, Some(ChatUsage::new(70, 13)));
    assert_eq!(run.metrics.model_calls, 2);
    assert_eq!(
        (run.metrics.judge_calls, run.metrics.judge_usage),
        (1, Some(ChatUsage::new(200, 20)))
    );
    assert_eq!(report.summary.judge_calls, 1);
    assert_eq!(report.summary.judge_usage, Some(ChatUsage::new(200, 20)));
    assert_eq!(report.summary.usage, Some(ChatUsage::new(70, 13)));

    // What the judge was asked: no tools, temperature 0, the verdict's schema, and the run.
    let requests = judge.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert!(request.tools.is_empty());
    assert_eq!(request.options.temperature, Some(0.0));
    let Some(ResponseFormat::JsonSchema {
        name,
        schema,
        strict,
    }) = &request.options.response_format
    else {
        panic!("{:?}", request.options.response_format);
    };
    assert_eq!((name.as_str(), *strict), ("verdict", true));
    assert_eq!(schema["required"], json!(["score", "pass", "reason"]));
    assert_eq!(request.messages.len(), 2);
    assert_eq!(request.messages[0].role, Role::System);
    assert!(
        request.messages[0]
            .text()
            .starts_with("You grade an AI assistant's final answer against a rubric.")
    );
    assert_eq!(request.messages[1].role, Role::User);
    assert_eq!(
        request.messages[1].text(),
        "Rubric:\nGives 42 and shows the multiplication.\n\n\
         The user's messages:\n- (turn 1) What is 6*7?\n\n\
         The tool calls the assistant made:\n- calculator({\"expression\":\"6*7\"}) -> 42\n\n\
         The assistant's final answer:\n6 times 7 is 42.\n\n\
         Your verdict, as one JSON object:"
    );
}

#[tokio::test]
async fn a_judge_answering_garbage_is_an_error_of_that_run_and_the_evaluation_goes_on() {
    let agent = ScriptedModel::new([ScriptedResponse::text("42")]);
    let judge = ScriptedModel::new([
        ScriptedResponse::text("I think it's great!").with_usage(100, 5),
        ScriptedResponse::text("{\"score\": 1.4, \"pass\": true, \"reason\": \"Great.\"}"),
        ScriptedResponse::error("judge overloaded"),
        ScriptedResponse::text(
            "```json\n{\"score\": 0.5, \"pass\": false, \"reason\": \"No working shown.\"}\n```",
        ),
    ])
    .with_name("judge-model");
    let cases: Vec<Case> = ["garbage", "out-of-range", "failing", "fine"]
        .iter()
        .map(|id| {
            Case::new(*id, "What is 6*7?")
                .expect_answer(AnswerCriterion::judge(RUBRIC))
                .expect_answer(AnswerCriterion::contains("42"))
        })
        .collect();
    let report = evaluator(&agent, Some(&judge)).run(&cases).await;

    let judged = |at: usize| report.cases[at].runs[0].criteria[0].clone();
    assert_eq!(
        judged(0),
        CriterionResult::error(
            "answer.judge",
            "invalid_verdict",
            "the judge's answer is not a valid verdict (no JSON object): \"I think it's great!\""
        )
    );
    assert_eq!(
        judged(1),
        CriterionResult::error(
            "answer.judge",
            "invalid_verdict",
            "the judge's answer is not a valid verdict (\"score\" is 1.4, not from 0 to 1): \"{\\\"score\\\": 1.4, \\\"pass\\\": true, \\\"reason\\\": \\\"Great.\\\"}\""
        )
    );
    let failing = judged(2);
    assert_eq!(failing.error_type.as_deref(), Some("judge_model_error"));
    assert!(
        failing.reason.starts_with("the judge model failed: ")
            && failing.reason.contains("judge overloaded"),
        "{}",
        failing.reason
    );
    assert_eq!(
        judged(3),
        CriterionResult::new(
            "answer.judge",
            0.5,
            false,
            "the judge (judge-model): No working shown."
        )
    );
    for case in &report.cases {
        let run = &case.runs[0];
        // The agent ran fine: the run is not an error, its other criteria were scored.
        assert_eq!(run.error, None);
        assert!(!run.passed);
        assert_eq!(
            run.criteria[1],
            CriterionResult::new("answer.contains", 1.0, true, "the answer contains \"42\"")
        );
        assert_eq!(run.metrics.judge_calls, 1);
    }
    // The garbage answer's tokens were spent all the same.
    assert_eq!(
        report.cases[0].runs[0].metrics.judge_usage,
        Some(ChatUsage::new(100, 5))
    );
    let judge_summary = &report.summary.criteria["answer.judge"];
    assert_eq!(
        (
            judge_summary.runs,
            judge_summary.passed,
            judge_summary.errors,
            judge_summary.mean_score
        ),
        (4, 0, 3, 0.5)
    );
    assert_eq!(report.summary.runs_errored, 0);
}

#[tokio::test]
async fn without_a_judge_a_judge_criterion_is_an_error() {
    let agent = ScriptedModel::new([ScriptedResponse::text("42")]);
    let case = Case::new("judged", "What is 6*7?").expect_answer(AnswerCriterion::judge(RUBRIC));
    let report = evaluator(&agent, None).run(&[case]).await;
    assert_eq!(
        report.cases[0].runs[0].criteria,
        [CriterionResult::error(
            "answer.judge",
            "no_judge",
            "a judge criterion needs a judge model (EvaluatorBuilder::judge)"
        )]
    );
}
