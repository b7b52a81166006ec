//! One trace across agents: the server's turn continues the W3C trace context of the
//! request (`traceparent`, `tracestate`), and `RemoteAgent` sends its current span's, so a
//! local agent's `execute_tool` span is the parent of the remote agent's turn. The spans are
//! read back from the SDK's in-memory exporter of `agentscope-otel`'s pipeline (whose build
//! installs the propagator).

use agentscope::hooks::TracingHook;
use agentscope::prelude::*;
use agentscope_a2a::{A2a, RemoteAgent};
use agentscope_otel::{Otel, OtelGuard};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use opentelemetry::trace::{SpanId, SpanKind};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use serde_json::json;

use crate::http::json_of;
use crate::in_memory::{in_memory, span};
use crate::support::Server;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN_ID: &str = "00f067aa0ba902b7";

/// The pipeline, with its subscriber the default of this (single-threaded) test.
fn traced() -> (
    InMemorySpanExporter,
    Otel,
    tracing::dispatcher::DefaultGuard,
) {
    let traced = in_memory(Otel::builder());
    (traced.exporter, traced.otel, traced.default)
}

fn finished(exporter: &InMemorySpanExporter, guard: OtelGuard) -> Vec<SpanData> {
    guard.flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

/// `remote` on a scripted model, with the tracing hook, served on 127.0.0.1.
async fn serve_traced(model: ScriptedModel, dir: &std::path::Path) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/a2a", listener.local_addr().unwrap());
    let a2a = A2a::builder()
        .agent(move || {
            ReActAgent::builder()
                .name("remote")
                .model(model.clone())
                .hook(TracingHook::new())
        })
        .url(&url)
        .store(JsonFileSessionStore::new(dir))
        .build()
        .unwrap();
    crate::support::spawn(
        listener,
        url,
        axum::Router::new().nest("/a2a", a2a.router()),
    )
}

#[tokio::test]
async fn a_task_continues_the_trace_of_the_request() {
    let (exporter, otel, _default) = traced();
    let dir = tempfile::tempdir().unwrap();
    let server = serve_traced(
        ScriptedModel::new([ScriptedResponse::text("Hi!")]),
        dir.path(),
    )
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": "m1", "contextId": "c1",
                    "parts": [{"text": "Hello"}]}}});
    let answer = json_of(
        reqwest::Client::new()
            .post(&server.url)
            .header("A2A-Version", "1.0")
            .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN_ID}-01"))
            .header("tracestate", "congo=t61rcWkgMzE")
            .json(&body),
    )
    .await;
    assert_eq!(
        answer["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    drop(server);
    let spans = finished(&exporter, otel.into_guard());

    let task = span(&spans, "a2a_task");
    let call = span(&spans, "invoke_agent remote");
    // The turn's span is the caller's child, a SERVER span with a remote parent.
    assert_eq!(task.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(task.parent_span_id.to_string(), CALLER_SPAN_ID);
    assert!(task.parent_span_is_remote);
    assert_eq!(task.span_kind, SpanKind::Server);
    // The agent's call is in the caller's trace, under the turn, with its trace state.
    assert_eq!(call.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(call.parent_span_id, task.span_context.span_id());
    assert_eq!(
        call.span_context.trace_state().header(),
        "congo=t61rcWkgMzE"
    );
}

#[tokio::test]
async fn a_remote_agent_called_as_a_tool_is_a_child_of_the_tool_call() {
    let (exporter, otel, _default) = traced();
    let dir = tempfile::tempdir().unwrap();
    let server = serve_traced(
        ScriptedModel::new([ScriptedResponse::text("42.")]),
        dir.path(),
    )
    .await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();
    let lead = ReActAgent::builder()
        .name("lead")
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("l1", "remote", json!({"task": "6*7?"})),
            ScriptedResponse::text("It is 42."),
        ]))
        .toolkit(Toolkit::new().tool(remote.into_tool()))
        .hook(TracingHook::new())
        .build()
        .unwrap();
    assert_eq!(lead.call("Ask remote.").await.unwrap().text(), "It is 42.");
    drop(server);
    let spans = finished(&exporter, otel.into_guard());

    let lead_call = span(&spans, "invoke_agent lead");
    let tool = span(&spans, "execute_tool remote");
    let task = span(&spans, "a2a_task");
    let remote_call = span(&spans, "invoke_agent remote");
    let trace = lead_call.span_context.trace_id();
    assert_eq!(lead_call.parent_span_id, SpanId::INVALID);
    assert_eq!(tool.span_context.trace_id(), trace);
    // The remote turn continues the trace of the tool call that sent it.
    assert_eq!(task.span_context.trace_id(), trace);
    assert_eq!(task.parent_span_id, tool.span_context.span_id());
    assert!(task.parent_span_is_remote);
    assert_eq!(remote_call.span_context.trace_id(), trace);
    assert_eq!(remote_call.parent_span_id, task.span_context.span_id());
}

/// Finding 17 of issue 42: with `TracingHook` on the `RemoteAgent` itself (no caller span
/// around it), the client's call and the served task were two traces. The task is the
/// child of the client's call span, in its trace, and the remote agent's call below it.
#[tokio::test]
async fn a_remote_agents_call_span_is_the_parent_of_the_served_task() {
    let (exporter, otel, _default) = traced();
    let dir = tempfile::tempdir().unwrap();
    let server = serve_traced(
        ScriptedModel::new([ScriptedResponse::text("Hi!")]),
        dir.path(),
    )
    .await;
    let remote = RemoteAgent::builder(&server.url)
        .name("caller")
        .configure(|agent| agent.hook(TracingHook::new()))
        .connect()
        .await
        .unwrap();
    assert_eq!(remote.call("Hello").await.unwrap().text(), "Hi!");
    drop(server);
    let spans = finished(&exporter, otel.into_guard());

    let call = span(&spans, "invoke_agent caller");
    let task = span(&spans, "a2a_task");
    let served = span(&spans, "invoke_agent remote");
    assert_eq!(call.parent_span_id, SpanId::INVALID);
    let trace = call.span_context.trace_id();
    assert_eq!(task.span_context.trace_id(), trace);
    assert_eq!(task.parent_span_id, call.span_context.span_id());
    assert!(task.parent_span_is_remote);
    assert_eq!(served.span_context.trace_id(), trace);
    assert_eq!(served.parent_span_id, task.span_context.span_id());
}

/// Finding 12 of issue 42: `SendStreamingMessage` over JSON-RPC, which this crate writes
/// itself (not the SDK's binding), continues the request's trace as `SendMessage` does; the
/// served task's span has the namespaced attributes (`gen_ai.agent.name`, `a2a.task.id`,
/// `a2a.context.id`).
#[tokio::test]
async fn a_streamed_task_continues_the_trace_of_the_request_with_namespaced_attributes() {
    let (exporter, otel, _default) = traced();
    let dir = tempfile::tempdir().unwrap();
    let server = serve_traced(
        ScriptedModel::new([ScriptedResponse::text("Hi!")]),
        dir.path(),
    )
    .await;
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1,
        "method": "SendStreamingMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": "m1", "contextId": "c1",
                    "parts": [{"text": "Hello"}]}}}))
    .unwrap();
    let response = reqwest::Client::new()
        .post(&server.url)
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN_ID}-01"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    assert!(text.contains("TASK_STATE_COMPLETED"), "{text}");
    drop(server);
    let spans = finished(&exporter, otel.into_guard());

    let task = span(&spans, "a2a_task");
    assert_eq!(task.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(task.parent_span_id.to_string(), CALLER_SPAN_ID);
    assert!(task.parent_span_is_remote);
    let attribute = |key: &str| {
        task.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(attribute("gen_ai.agent.name").as_deref(), Some("remote"));
    assert_eq!(attribute("a2a.context.id").as_deref(), Some("c1"));
    assert!(
        attribute("a2a.task.id").is_some_and(|id| id.starts_with("c1~")),
        "{:?}",
        task.attributes
    );
    for unnamespaced in ["task_id", "context_id", "agent"] {
        assert_eq!(attribute(unnamespaced), None, "{unnamespaced}");
    }
    let call = span(&spans, "invoke_agent remote");
    assert_eq!(call.parent_span_id, task.span_context.span_id());
}
