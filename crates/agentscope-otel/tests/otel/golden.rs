//! The exported span trees, checked against golden files (`tests/golden/*.json`), with the
//! SDK's in-memory exporter: no backend needed. Ids, times and call ids are normalised.
//! `UPDATE_GOLDEN=1` rewrites the files. The scenarios are shared with the Phoenix test
//! (`phoenix.rs`), which checks that the same trees arrive in a real backend.

use std::collections::BTreeMap;
use std::path::Path;

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook, TracingHook};
use agentscope::prelude::*;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value, json};

use crate::in_memory;

/// Runs `scenario` with a pipeline exporting to memory; returns the finished spans.
pub(crate) async fn export<F: Future<Output = ()>>(scenario: F) -> Vec<SpanData> {
    in_memory::export("golden", scenario).await
}

/// An attribute value as JSON, of its type (an array as an array, not the text of one).
pub(crate) fn value(value: &OtelValue) -> Value {
    use opentelemetry::Array;
    match value {
        OtelValue::Bool(b) => json!(b),
        OtelValue::I64(i) => json!(i),
        OtelValue::F64(f) => json!(f),
        OtelValue::String(s) => json!(s.as_str()),
        OtelValue::Array(Array::String(items)) => {
            json!(items.iter().map(|s| s.as_str()).collect::<Vec<_>>())
        }
        OtelValue::Array(Array::I64(items)) => json!(items),
        OtelValue::Array(Array::F64(items)) => json!(items),
        OtelValue::Array(Array::Bool(items)) => json!(items),
        _ => json!({"unknown type": value.to_string()}),
    }
}

/// One finished span, wherever it was read from (the in-memory exporter, a backend's API).
pub(crate) struct Flat {
    /// The span id, and its parent's (none for a root).
    pub(crate) id: String,
    pub(crate) parent: Option<String>,
    /// Sorts as the start time does.
    pub(crate) start: String,
    pub(crate) name: String,
    pub(crate) kind: String,
    /// `Unset`, `Ok`, or `Error { description: "..." }`.
    pub(crate) status: String,
    pub(crate) attributes: Vec<(String, Value)>,
    pub(crate) events: Vec<(String, Vec<(String, Value)>)>,
}

impl Flat {
    pub(crate) fn of(span: &SpanData) -> Self {
        let nanos = |time: std::time::SystemTime| {
            let since = time.duration_since(std::time::UNIX_EPOCH).unwrap();
            format!("{:020}", since.as_nanos())
        };
        let parent = span.parent_span_id;
        Self {
            id: span.span_context.span_id().to_string(),
            parent: (parent != opentelemetry::trace::SpanId::INVALID).then(|| parent.to_string()),
            start: nanos(span.start_time),
            name: span.name.to_string(),
            kind: format!("{:?}", span.span_kind),
            status: format!("{:?}", span.status),
            attributes: span
                .attributes
                .iter()
                .map(|kv| (kv.key.to_string(), value(&kv.value)))
                .collect(),
            events: span
                .events
                .iter()
                .map(|event| {
                    let attributes = event
                        .attributes
                        .iter()
                        .map(|kv| (kv.key.to_string(), value(&kv.value)))
                        .collect();
                    (event.name.to_string(), attributes)
                })
                .collect(),
        }
    }
}

/// What `tracing-opentelemetry` adds about the code and thread: not part of the trees.
fn incidental(key: &str) -> bool {
    matches!(
        key,
        "code.file.path"
            | "code.line.number"
            | "code.module.name"
            | "thread.id"
            | "thread.name"
            | "busy_ns"
            | "idle_ns"
            | "target"
    )
}

/// The spans as a tree: names, kinds, status, attributes and events, children by start,
/// with ids replaced by stable names.
pub(crate) fn tree(spans: &[SpanData]) -> Value {
    let flat: Vec<Flat> = spans.iter().map(Flat::of).collect();
    tree_of(flat)
}

/// [`tree`] of spans read from anywhere.
pub(crate) fn tree_of(mut spans: Vec<Flat>) -> Value {
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
    spans.sort_by(|a, b| a.start.cmp(&b.start));
    // Ids are named in the order they are met: keys in order, whatever order a source gives.
    for span in &mut spans {
        span.attributes.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let mut nodes: Vec<(Option<usize>, Value)> = Vec::new();
    for span in &spans {
        let attributes: BTreeMap<String, Value> = span
            .attributes
            .iter()
            .filter(|(key, _)| !incidental(key))
            .map(|(key, v)| (key.clone(), normal(key, v.clone())))
            .collect();
        let events: Vec<Value> = span
            .events
            .iter()
            .map(|(name, attributes)| {
                let attributes: BTreeMap<&String, &Value> = attributes
                    .iter()
                    .filter(|(key, _)| !incidental(key))
                    .map(|(key, v)| (key, v))
                    .collect();
                json!({"name": name, "attributes": attributes})
            })
            .collect();
        let parent = spans
            .iter()
            .position(|other| Some(&other.id) == span.parent.as_ref());
        nodes.push((
            parent,
            json!({
                "name": span.name,
                "kind": span.kind,
                "status": span.status,
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

/// The golden tree of `name`.
pub(crate) fn golden(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", path.display()));
    serde_json::from_str(&text).unwrap()
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

/// The scenarios of the golden files, by file name: each builds its agents and runs them.
pub(crate) const SCENARIOS: [(&str, MakeScenario); 3] = [
    ("react_with_tool", react_with_tool),
    ("approval_and_resume", approval_and_resume),
    ("failed_call", failed_call),
];

pub(crate) type Scenario = std::pin::Pin<Box<dyn Future<Output = ()>>>;
pub(crate) type MakeScenario = fn() -> Scenario;

/// A ReAct call with a tool: the model calls the calculator, then answers.
fn react_with_tool() -> Scenario {
    Box::pin(async {
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
        assert_eq!(agent.call("What is 6*7?").await.unwrap().text(), "42");
    })
}

/// A call that stops for a person's approval, and the call that resumes it once approved.
fn approval_and_resume() -> Scenario {
    Box::pin(async {
        let approval = ToolApprovalHook::new(ApprovalPolicy::all());
        let model = ScriptedModel::new([
            ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "2+2"})),
            ScriptedResponse::text("4"),
        ]);
        let hook = approval.clone();
        let agent = calculator_agent(model, vec![Box::new(move |b| b.hook(hook))]);
        let stopped = agent.call("2+2?").await.unwrap();
        assert_eq!(
            stopped.generate_reason(),
            Some(GenerateReason::ReasoningStopRequested)
        );
        approval.approve("c1").unwrap();
        assert_eq!(agent.call(()).await.unwrap().text(), "4");
    })
}

/// A call whose model fails (HTTP 503).
fn failed_call() -> Scenario {
    Box::pin(async {
        let model =
            ScriptedModel::new([ScriptedResponse::failure(agentscope::ModelError::Status {
                status: 503,
                message: "overloaded".into(),
                retry_after: None,
            })]);
        let agent = calculator_agent(model, vec![]);
        agent.call("hi").await.unwrap_err();
    })
}

#[tokio::test]
async fn a_react_call_with_a_tool() {
    check("react_with_tool", &tree(&export(react_with_tool()).await));
}

#[tokio::test]
async fn a_stop_for_approval_and_its_resume() {
    check(
        "approval_and_resume",
        &tree(&export(approval_and_resume()).await),
    );
}

#[tokio::test]
async fn a_failed_call() {
    check("failed_call", &tree(&export(failed_call()).await));
}
