//! One trace across a client and the server: a run request's W3C trace context
//! (`traceparent`, `tracestate`) becomes the parent of the run's span, so the agent's
//! `invoke_agent` span and its children are in the caller's trace. The spans are read back
//! from the SDK's in-memory exporter of `agentscope-otel`'s pipeline (whose build installs
//! the propagator).

use agentscope::hooks::TracingHook;
use agentscope::prelude::*;
use agentscope_otel::Otel;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value, json};

use crate::in_memory::{in_memory, span};
use crate::support::serve::{input, serve, user};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN_ID: &str = "00f067aa0ba902b7";

/// Runs `assistant` once with `headers`; returns the run's events and the exported spans.
async fn traced_run(headers: &[(&str, &str)]) -> (Vec<Value>, Vec<SpanData>) {
    let traced = in_memory(Otel::builder());
    let dir = tempfile::tempdir().unwrap();
    let spec = AgentSpec::new(|| {
        ReActAgent::builder()
            .model(ScriptedModel::new([ScriptedResponse::text("Hi!")]))
            .hook(TracingHook::new())
    });
    let agui = AgUi::builder()
        .agent("assistant", spec)
        .store(agentscope::session::JsonFileSessionStore::new(dir.path()))
        .build()
        .unwrap();
    let served = serve(agui).await;
    let mut request = reqwest::Client::new()
        .post(format!("{}/agents/assistant", served.base))
        .json(&input("t1", "r1", json!([user("u1", "Hello")])));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    drop(served);
    (events, traced.finish())
}

// One thread: the test's subscriber (thread-local) sees the server's tasks.
#[tokio::test]
async fn a_run_request_with_a_traceparent_continues_the_callers_trace() {
    let (events, spans) = traced_run(&[
        ("traceparent", &format!("00-{TRACE_ID}-{CALLER_SPAN_ID}-01")),
        ("tracestate", "congo=t61rcWkgMzE"),
    ])
    .await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");

    let run = span(&spans, "agui_run");
    let call = span(&spans, "invoke_agent assistant");
    let chat = span(&spans, "chat scripted-model");
    // The run's span is the caller's child, a SERVER span marked as having a remote parent.
    assert_eq!(run.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(run.parent_span_id.to_string(), CALLER_SPAN_ID);
    assert!(run.parent_span_is_remote);
    assert_eq!(run.span_kind, opentelemetry::trace::SpanKind::Server);
    // The agent's spans are in the caller's trace, under the run's span, with its trace state.
    assert_eq!(call.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(call.parent_span_id, run.span_context.span_id());
    assert_eq!(
        call.span_context.trace_state().header(),
        "congo=t61rcWkgMzE"
    );
    assert_eq!(chat.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(chat.parent_span_id, call.span_context.span_id());
}

#[tokio::test]
async fn a_run_request_without_one_starts_a_trace() {
    let (_, spans) = traced_run(&[]).await;
    let run = span(&spans, "agui_run");
    let call = span(&spans, "invoke_agent assistant");
    assert_ne!(run.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(run.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    assert_eq!(call.span_context.trace_id(), run.span_context.trace_id());
    assert_eq!(call.parent_span_id, run.span_context.span_id());
}
