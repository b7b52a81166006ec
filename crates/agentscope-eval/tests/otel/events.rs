//! The case's span and its `gen_ai.evaluation.result` events, exported through
//! agentscope-otel's pipeline to the SDK's in-memory exporter: names, attribute types and
//! values as the GenAI conventions define the event, the agent's spans under the case's.

use agentscope_eval::{
    AnswerCriterion, Case, Evaluator, ExpectedCall, Judge, Progress, RunContext, TrajectoryMode,
};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value, json};

use crate::in_memory::{self, traced_calculator};

/// Runs `scenario` with the pipeline exporting to memory; returns the finished spans.
async fn export<F: Future<Output = ()>>(scenario: F) -> Vec<SpanData> {
    in_memory::export("eval", scenario).await
}

fn value(value: &OtelValue) -> Value {
    match value {
        OtelValue::Bool(b) => json!({"bool": b}),
        OtelValue::I64(i) => json!({"int": i}),
        OtelValue::F64(f) => json!({"double": f}),
        OtelValue::String(s) => json!(s.as_str()),
        other => json!({"other": other.to_string()}),
    }
}

/// What `tracing-opentelemetry` adds about the code and thread.
fn incidental(key: &str) -> bool {
    key.starts_with("code.")
        || key.starts_with("thread.")
        || matches!(key, "level" | "target" | "busy_ns" | "idle_ns")
}

fn attributes<'a>(pairs: impl Iterator<Item = &'a opentelemetry::KeyValue>) -> Value {
    Value::Object(
        pairs
            .filter(|kv| !incidental(kv.key.as_str()))
            .map(|kv| (kv.key.to_string(), value(&kv.value)))
            .collect(),
    )
}

fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        panic!(
            "no span {name}: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

#[tokio::test(flavor = "current_thread")]
async fn each_criterion_is_a_gen_ai_evaluation_result_event_on_the_case_span() {
    let agent = ScriptedModel::new([
        ScriptedResponse::tool_call("call_1", "calculator", json!({"expression": "6*7"})),
        ScriptedResponse::text("The answer is 42.").with_response("chatcmpl-2", "m"),
    ]);
    let judge = ScriptedModel::new([ScriptedResponse::text("Looks right to me!")]);
    let evaluator = Evaluator::builder(move |run: &RunContext<'_>| {
        let model = if run.case.id == "broken" {
            ScriptedModel::new([ScriptedResponse::error("model overloaded")])
        } else {
            agent.fork()
        };
        traced_calculator(model).build()
    })
    .judge(Judge::new(judge))
    .progress(Progress::Off)
    .build()
    .unwrap();
    let cases = [
        Case::new("multiply", "What is 6*7?")
            .expect_calls(TrajectoryMode::Strict, [ExpectedCall::new("calculator")])
            .expect_answer(AnswerCriterion::contains("41"))
            .expect_answer(AnswerCriterion::judge("Says 42.")),
        Case::new("broken", "What is 6*7?").expect_answer(AnswerCriterion::contains("42")),
    ];
    let spans = export(async {
        evaluator.run(&cases).await;
    })
    .await;

    let case = span(&spans, "eval_case multiply");
    assert_eq!(format!("{:?}", case.span_kind), "Internal");
    assert_eq!(
        attributes(case.attributes.iter()),
        json!({
            "agentscope.eval.case.id": "multiply",
            "agentscope.eval.repetition": {"int": 0},
            "agentscope.eval.passed": {"bool": false}
        })
    );
    let events: Vec<(String, Value)> = case
        .events
        .iter()
        .map(|e| (e.name.to_string(), attributes(e.attributes.iter())))
        .collect();
    assert_eq!(
        events,
        [
            (
                "gen_ai.evaluation.result".to_owned(),
                json!({
                    "gen_ai.evaluation.name": "trajectory.strict",
                    "gen_ai.evaluation.score.value": {"double": 1.0},
                    "gen_ai.evaluation.score.label": "pass",
                    "gen_ai.evaluation.explanation": "made exactly the 1 expected call, in order",
                    "gen_ai.response.id": "chatcmpl-2"
                })
            ),
            (
                "gen_ai.evaluation.result".to_owned(),
                json!({
                    "gen_ai.evaluation.name": "answer.contains",
                    "gen_ai.evaluation.score.value": {"double": 0.0},
                    "gen_ai.evaluation.score.label": "fail",
                    "gen_ai.evaluation.explanation": "the answer \"The answer is 42.\" does not contain \"41\"",
                    "gen_ai.response.id": "chatcmpl-2"
                })
            ),
            (
                "gen_ai.evaluation.result".to_owned(),
                json!({
                    "gen_ai.evaluation.name": "answer.judge",
                    "gen_ai.evaluation.explanation": "the judge's answer is not a valid verdict (no JSON object): \"Looks right to me!\"",
                    "gen_ai.response.id": "chatcmpl-2",
                    "error.type": "invalid_verdict"
                })
            ),
        ]
    );
    // The agent's call is inside the case's span.
    let call = span(&spans, "invoke_agent assistant");
    assert_eq!(call.parent_span_id, case.span_context.span_id());
    assert_eq!(call.span_context.trace_id(), case.span_context.trace_id());

    // A run that failed: its span says so, and each criterion is an event with the error.
    let broken = span(&spans, "eval_case broken");
    let attrs = attributes(broken.attributes.iter());
    assert_eq!(attrs["agentscope.eval.passed"], json!({"bool": false}));
    assert_eq!(attrs["error.type"], json!("agent_error"));
    assert!(
        format!("{:?}", broken.status).starts_with("Error"),
        "{:?}",
        broken.status
    );
    assert_eq!(broken.events.len(), 1);
    let event = attributes(broken.events[0].attributes.iter());
    assert_eq!(event["gen_ai.evaluation.name"], json!("answer.contains"));
    assert_eq!(event["error.type"], json!("agent_error"));
    assert_eq!(event.get("gen_ai.evaluation.score.value"), None);
    assert_eq!(event.get("gen_ai.evaluation.score.label"), None);
    assert!(
        event["gen_ai.evaluation.explanation"]
            .as_str()
            .unwrap()
            .starts_with("not evaluated: the agent failed: ")
    );
}
