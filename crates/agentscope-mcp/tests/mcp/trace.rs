//! One trace across an agent and a real MCP server: with `agentscope-otel`'s pipeline built
//! (it installs the propagator), a tool call carries its `execute_tool` span's W3C trace
//! context in the request's `params._meta`, as OpenTelemetry's MCP conventions say. The
//! fixture server (the official TypeScript SDK, over streamable HTTP) returns the
//! `traceparent` / `tracestate` it received; the agent's spans are read back from the SDK's
//! in-memory exporter.

use agentscope::hooks::TracingHook;
use agentscope_otel::Otel;
use opentelemetry_sdk::metrics::InMemoryMetricExporter;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{self, agent_on, calls_then_answers, last_results, reply, tools_of};

fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|span| span.name == name)
        .unwrap_or_else(|| panic!("no span {name}"))
}

// One thread: the test's subscriber (thread-local) sees the agent's and the client's tasks.
#[tokio::test]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn a_tool_call_carries_its_execute_tool_spans_trace_context_to_the_server() {
    let Some(server) = support::HttpFixture::start().await else {
        return;
    };
    let exporter = InMemorySpanExporter::default();
    let otel = Otel::builder()
        .span_exporter(exporter.clone())
        .metric_exporter(InMemoryMetricExporter::default())
        .build()
        .unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(otel.layer()));
    let _default = tracing::dispatcher::set_default(&dispatch);

    let client = support::connect(server.config().prefix("fx_")).await;
    let model = calls_then_answers("t1", "fx_trace-context", json!({}), "traced");
    let agent = agent_on(&model, tools_of(&client))
        .name("assistant")
        .hook(TracingHook::new())
        .build()
        .unwrap();
    assert_eq!(reply(&agent, "Trace it.").await.text(), "traced");
    client.close().await;
    let guard = otel.into_guard();
    guard.flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();

    let tool = span(&spans, "execute_tool fx_trace-context");
    let call = span(&spans, "invoke_agent assistant");
    assert_eq!(tool.parent_span_id, call.span_context.span_id());
    assert_eq!(tool.span_context.trace_id(), call.span_context.trace_id());
    // What the server received: the tool span's trace and span id, sampled; no trace state.
    let results = last_results(&model.requests()[1]);
    let received: Value = serde_json::from_str(&results[0].text_output()).unwrap();
    assert_eq!(
        received,
        json!({
            "traceparent": format!(
                "00-{}-{}-01",
                tool.span_context.trace_id(),
                tool.span_context.span_id()
            ),
            "tracestate": null,
        })
    );
}
