//! `round_trip`: what serving an agent over A2A adds to a call. One `SendMessage` round trip
//! on 127.0.0.1 (the SDK's client, JSON-RPC, a new context each time) against the same
//! agent called in process (a fresh agent on a new session each time, as the server builds
//! one per turn), and against a bare axum JSON handler on the same loopback (the floor of
//! any HTTP round trip). The model is instant (a scripted one-chunk reply), and sessions and
//! tasks are JSON files in a temporary directory, for the call and the server alike.
//!
//! Run: `cargo bench -p agentscope-a2a --bench round_trip`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use a2a::{Message, Part, Role, SendMessageRequest};
use agentscope::prelude::*;
use agentscope_a2a::A2a;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use criterion::{Criterion, criterion_group, criterion_main};
use http::{client_at, json_of};

#[path = "../tests/a2a/http.rs"]
mod http;

fn model() -> ScriptedModel {
    ScriptedModel::new([ScriptedResponse::text("Hello!")])
        .cycling()
        .without_recording()
}

fn request(context: u64) -> SendMessageRequest {
    let mut message = Message::new(Role::User, vec![Part::text("Hi")]);
    message.context_id = Some(format!("bench-{context}"));
    SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let counter = AtomicU64::new(0);

    // The A2A server, and a bare JSON handler, on loopback.
    let (a2a_url, bare_url) = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let served = model();
        let a2a = A2a::builder()
            .agent(move || {
                ReActAgent::builder()
                    .name("assistant")
                    .model(served.clone())
            })
            .url(format!("{base}/a2a"))
            .store(JsonFileSessionStore::new(dir.path().join("served")))
            .build()
            .unwrap();
        let app = axum::Router::new().nest("/a2a", a2a.router()).route(
            "/echo",
            axum::routing::post(
                |axum::Json(body): axum::Json<serde_json::Value>| async move { axum::Json(body) },
            ),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("{base}/a2a"), format!("{base}/echo"))
    });
    let client = runtime.block_on(client_at(&a2a_url));
    let http = reqwest::Client::new();
    let local_model = model();
    let local_store: Arc<dyn agentscope::session::SessionStore> =
        Arc::new(JsonFileSessionStore::new(dir.path().join("local")));

    let mut group = c.benchmark_group("round_trip");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("in_process_call", |b| {
        b.iter(|| {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            runtime.block_on(async {
                let agent = ReActAgent::builder()
                    .name("assistant")
                    .model(local_model.clone())
                    .session(Arc::clone(&local_store), format!("assistant.bench-{n}"))
                    .build()
                    .unwrap();
                let reply = agent.call(Msg::user("Hi")).await.unwrap();
                assert_eq!(reply.text(), "Hello!");
            });
        });
    });
    group.bench_function("a2a_send_message", |b| {
        b.iter(|| {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            runtime.block_on(async {
                let response = client.send_message(&request(n)).await.unwrap();
                assert!(matches!(response, a2a::SendMessageResponse::Task(_)));
            });
        });
    });
    group.bench_function("bare_axum_json", |b| {
        let body = serde_json::json!({"message": "Hi"});
        b.iter(|| {
            runtime.block_on(async {
                let echoed = json_of(http.post(&bare_url).json(&body)).await;
                assert_eq!(echoed, body);
            });
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
