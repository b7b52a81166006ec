//! One trace across an agent and a real MCP server: with `agentscope-otel`'s pipeline built
//! (it installs the propagator), a tool call carries its `execute_tool` span's W3C trace
//! context in the request's `params._meta`, as OpenTelemetry's MCP conventions say. The
//! fixture server (the official TypeScript SDK, over streamable HTTP) returns the
//! `traceparent` / `tracestate` it received; the agent's spans are read back from the SDK's
//! in-memory exporter.

use agentscope::hooks::TracingHook;
use agentscope_otel::Otel;
use serde_json::{Value, json};

use crate::in_memory::{in_memory, span};
use crate::support::{self, agent_on, calls_then_answers, last_results, reply, tools_of};

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
    let traced = in_memory(Otel::builder());

    let client = support::connect(server.config().prefix("fx_")).await;
    let model = calls_then_answers("t1", "fx_trace-context", json!({}), "traced");
    let agent = agent_on(&model, tools_of(&client))
        .name("assistant")
        .hook(TracingHook::new())
        .build()
        .unwrap();
    assert_eq!(reply(&agent, "Trace it.").await.text(), "traced");
    client.close().await;
    let spans = traced.finish();

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
