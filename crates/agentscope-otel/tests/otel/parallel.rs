//! Parallel tool calls: one `execute_tool` span per call, siblings under the call's span,
//! overlapping in time as the tools did.

use std::time::Duration;

use agentscope::hooks::TracingHook;
use agentscope::prelude::*;
use agentscope_test::tools::SlowTool;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::SpanData;
use serde_json::json;

use crate::golden::export;

fn attribute(span: &SpanData, key: &str) -> String {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn parallel_tools_give_overlapping_sibling_tool_spans() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ("c1", "slow", json!({"ms": 300})),
            ("c2", "slow", json!({"ms": 300})),
        ]),
        ScriptedResponse::text("Both done."),
    ]);
    let agent = ReActAgent::builder()
        .name("assistant")
        .model(model)
        .toolkit(Toolkit::new().tool(SlowTool::new()).parallel(true))
        .hook(TracingHook::new())
        .build()
        .unwrap();
    let spans = export(async {
        assert_eq!(
            agent.call("Sleep twice.").await.unwrap().text(),
            "Both done."
        );
    })
    .await;
    let call = spans
        .iter()
        .find(|span| span.name == "invoke_agent assistant")
        .unwrap();
    let mut tools: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name.starts_with("execute_tool"))
        .collect();
    tools.sort_by_key(|span| attribute(span, "gen_ai.tool.call.id"));
    let names: Vec<(&str, String)> = tools
        .iter()
        .map(|span| (&*span.name, attribute(span, "gen_ai.tool.call.id")))
        .collect();
    assert_eq!(
        names,
        [
            ("execute_tool slow", "c1".to_owned()),
            ("execute_tool slow", "c2".to_owned())
        ]
    );
    let call_id = call.span_context.span_id();
    for tool in &tools {
        // Siblings: both children of the call span, in its trace.
        assert_eq!(tool.parent_span_id, call_id);
        assert_eq!(tool.span_context.trace_id(), call.span_context.trace_id());
        assert_eq!(tool.span_kind, SpanKind::Internal);
        // Each covers its tool's run.
        let length = tool.end_time.duration_since(tool.start_time).unwrap();
        assert!(length >= Duration::from_millis(300), "{length:?}");
    }
    // They overlap: each started before the other ended.
    let (a, b) = (tools[0], tools[1]);
    let overlap = |x: &SpanData, y: &SpanData| x.start_time < y.end_time;
    assert!(overlap(a, b) && overlap(b, a), "{a:?}\n{b:?}");
    // ... by most of their length (run one after another, they would not overlap at all).
    let shared = a
        .end_time
        .min(b.end_time)
        .duration_since(a.start_time.max(b.start_time));
    assert!(
        shared.clone().unwrap_or_default() >= Duration::from_millis(200),
        "{shared:?}"
    );
}
