use std::collections::BTreeMap;
use std::path::Path;

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook, TracingHook};
use agentscope::prelude::*;
use agentscope_otel::Otel;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use serde_json::{Value, json};

/// Runs `scenario` with a pipeline exporting to memory; returns the finished spans.
async fn export<F: Future<Output = ()>>(scenario: F) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let otel = Otel::builder()
        .service_name("golden")
        .span_exporter(exporter.clone())
        .metric_exporter(opentelemetry_sdk::metrics::InMemoryMetricExporter::default())
        .build()
        .unwrap();
    let subscriber = {
        use tracing_subscriber::layer::SubscriberExt;
        tracing_subscriber::registry().with(otel.layer())
    };
    let dispatch = tracing::Dispatch::new(subscriber);
    let _default = tracing::dispatcher::set_default(&dispatch);
    scenario.await;
    let guard = otel.into_guard();
    guard.flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

fn value(value: &OtelValue) -> Value {
    match value {
        OtelValue::Bool(b) => json!(b),
        OtelValue::I64(i) => json!(i),
        OtelValue::F64(f) => json!(f),
        OtelValue::String(s) => json!(s.as_str()),
        OtelValue::Array(array) => json!(array.to_string()),
        _ => json!(value.to_string()),
    }
}

/// The spans as a tree: names, kinds, status, attributes and events, children by start,
/// with ids replaced by stable names.
fn tree(spans: &[SpanData]) -> Value {
    let mut call_ids: Vec<String> = Vec::new();
    let mut normal = |key: &str, v: Value| -> Value {
        match key {
            "agentscope.call.id" | "agentscope.call.resumed_from" | "gen_ai.agent.id" => {
                let text = v.as_str().unwrap_or_default().to_owned();
                let at = call_ids
                    .iter()
                    .position(|id| *id == text)
                    .unwrap_or_else(|| {
                        call_ids.push(text);
                        call_ids.len() - 1
                    });
                json!(format!("<id {at}>"))
            }
            _ => v,
        }
    };
    let mut ordered: Vec<&SpanData> = spans.iter().collect();
    ordered.sort_by_key(|span| span.start_time);
    let mut nodes: Vec<(Option<usize>, Value)> = Vec::new();
    for span in &ordered {
        let attributes: BTreeMap<String, Value> = span
            .attributes
            .iter()
            .filter(|kv| {
                !matches!(
                    kv.key.as_str(),
                    "code.file.path"
                        | "code.line.number"
                        | "code.module.name"
                        | "thread.id"
                        | "thread.name"
                        | "busy_ns"
                        | "idle_ns"
                        | "target"
                )
            })
            .map(|kv| {
                (
                    kv.key.to_string(),
                    normal(kv.key.as_str(), value(&kv.value)),
                )
            })
            .collect();
        let events: Vec<Value> = span
            .events
            .iter()
            .map(|event| {
                let attributes: BTreeMap<String, Value> = event
                    .attributes
                    .iter()
                    .filter(|kv| {
                        !matches!(
                            kv.key.as_str(),
                            "code.file.path" | "code.line.number" | "code.module.name" | "target"
                        )
                    })
                    .map(|kv| (kv.key.to_string(), value(&kv.value)))
                    .collect();
                json!({"name": event.name, "attributes": attributes})
            })
            .collect();
        let parent = ordered
            .iter()
            .position(|other| other.span_context.span_id() == span.parent_span_id);
        nodes.push((
            parent,
            json!({
                "name": span.name,
                "kind": format!("{:?}", span.span_kind),
                "status": format!("{:?}", span.status),
                "attributes": attributes,
                "events": events,
            }),
        ));
    }
    fn build(nodes: &[(Option<usize>, Value)], parent: Option<usize>) -> Vec<Value> {
        nodes
            .iter()
            .enumerate()
            .filter(|(_, (p, _))| *p == parent)
            .map(|(index, (_, node))| {
                let mut node = node.clone();
                node["children"] = json!(build(nodes, Some(index)));
                node
            })
            .collect()
    }
    json!(build(&nodes, None))
}

fn check(name: &str, actual: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", path.display()));
    assert_eq!(
        text,
        expected,
        "{name}: the exported spans differ from {}",
        path.display()
    );
}

fn calculator_agent(
    model: ScriptedModel,
    hooks: Vec<Box<dyn FnOnce(ReActAgentBuilder) -> ReActAgentBuilder>>,
) -> ReActAgent {
    let mut builder = ReActAgent::builder()
        .name("assistant")
        .id("agent-1")
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(TracingHook::new().with_content(true));
    for hook in hooks {
        builder = hook(builder);
    }
    builder.build().unwrap()
}

#[tokio::test]
async fn a_react_call_with_a_tool() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"}))
            .with_usage(10, 5)
            .with_finish_reason("tool_calls")
            .with_response("chatcmpl-1", "scripted-model-2026"),
        ScriptedResponse::text("42")
            .with_usage(20, 3)
            .with_finish_reason("stop")
            .with_response("chatcmpl-2", "scripted-model-2026"),
    ]);
    let agent = calculator_agent(model, vec![]);
    let spans = export(async {
        assert_eq!(agent.call("What is 6*7?").await.unwrap().text(), "42");
    })
    .await;
    check("react_with_tool", &tree(&spans));
}

#[tokio::test]
async fn a_stop_for_approval_and_its_resume() {
    let approval = ToolApprovalHook::new(ApprovalPolicy::all());
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "2+2"})),
        ScriptedResponse::text("4"),
    ]);
    let hook = approval.clone();
    let agent = calculator_agent(model, vec![Box::new(move |b| b.hook(hook))]);
    let spans = export(async {
        let stopped = agent.call("2+2?").await.unwrap();
        assert_eq!(
            stopped.generate_reason(),
            Some(GenerateReason::ReasoningStopRequested)
        );
        approval.approve("c1").unwrap();
        assert_eq!(agent.call(()).await.unwrap().text(), "4");
    })
    .await;
    check("approval_and_resume", &tree(&spans));
}

#[tokio::test]
async fn a_failed_call() {
    let model = ScriptedModel::new([ScriptedResponse::failure(agentscope::ModelError::Status {
        status: 503,
        message: "overloaded".into(),
        retry_after: None,
    })]);
    let agent = calculator_agent(model, vec![]);
    let spans = export(async {
        agent.call("hi").await.unwrap_err();
    })
    .await;
    check("failed_call", &tree(&spans));
}
