//! `tasks_memory`: a served agent's memory while tasks pile up (issue 42, point 3). One
//! server on SQLite, 10,000 tasks left `input-required` (a call that needs approval, never
//! answered: an abandoned question) and then 10,000 finished ones, each in a context of its
//! own, sent over JSON-RPC by 8 clients at a time; the process's resident memory is read
//! after each 2,500. Before the serving core, the task store kept every task that was not
//! finished in a map for good; now an instance keeps only the tasks it runs, so memory
//! should stay flat after the first few thousand (the allocator's and SQLite's caches).
//!
//! Run: `cargo bench -p agentscope-a2a --bench tasks_memory` (`TASKS=n` each kind, default
//! 10,000). Prints a table; not a criterion bench (it measures memory, not time).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentscope::prelude::*;
use agentscope_a2a::A2a;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use http::json_of;
use serde_json::{Value, json};

#[path = "../tests/a2a/http.rs"]
#[allow(dead_code)] // the SDK's client is the tests' and the other bench's
mod http;

/// This process's resident memory, in MiB.
fn resident_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

/// A model that answers "delete" questions with a `delete` call (which needs approval) and
/// anything else with text.
#[derive(Clone)]
struct Model;

impl agentscope::Model for Model {
    fn model_name(&self) -> &str {
        "bench"
    }

    async fn stream(
        &self,
        request: agentscope::ModelRequest,
    ) -> Result<agentscope::ChatStream, agentscope::ModelError> {
        let asks = request
            .messages
            .last()
            .is_some_and(|m| m.text().starts_with("Delete"));
        let response = if asks {
            ScriptedResponse::tool_call("d1", "delete", json!({"path": "/tmp/x"}))
        } else {
            ScriptedResponse::text("Done.")
        };
        ScriptedModel::new([response])
            .without_recording()
            .stream(request)
            .await
    }
}

async fn send(client: &reqwest::Client, url: &str, context: &str, text: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": format!("{context}-m"),
                    "contextId": context, "parts": [{"text": text}]}}});
    let answer = json_of(client.post(url).header("A2A-Version", "1.0").json(&body)).await;
    answer["result"]["task"]["status"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn main() {
    let each: usize = std::env::var("TASKS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/a2a", listener.local_addr().unwrap());
        let toolkit = Toolkit::new().tool(tool_fn(
            "delete",
            "Deletes a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            |_input: Value, _ctx: ToolContext| async { Ok::<_, ToolError>("deleted".to_owned()) },
        ));
        let a2a = A2a::builder()
            .agent(move || {
                ReActAgent::builder()
                    .name("assistant")
                    .model(Model)
                    .toolkit(toolkit.clone())
            })
            .url(&url)
            .store(SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap())
            .approval(ApprovalPolicy::tools(["delete"]))
            .build()
            .unwrap();
        let served = a2a.clone();
        tokio::spawn(async move {
            axum::serve(listener, axum::Router::new().nest("/a2a", served.router()))
                .await
                .unwrap();
        });
        let client = reqwest::Client::new();
        println!(
            "| tasks sent | of them waiting for input | resident memory | running on the instance |"
        );
        println!("|---|---|---|---|");
        let sent = Arc::new(AtomicUsize::new(0));
        for (kind, text, expected) in [
            ("waiting", "Delete /tmp/x", "TASK_STATE_INPUT_REQUIRED"),
            ("finished", "Hello", "TASK_STATE_COMPLETED"),
        ] {
            for chunk in 0..each.div_ceil(2_500) {
                let from = chunk * 2_500;
                let to = (from + 2_500).min(each);
                let next = Arc::new(AtomicUsize::new(from));
                let workers: Vec<_> = (0..8)
                    .map(|_| {
                        let (client, url, next, sent) = (
                            client.clone(),
                            url.clone(),
                            Arc::clone(&next),
                            Arc::clone(&sent),
                        );
                        tokio::spawn(async move {
                            loop {
                                let n = next.fetch_add(1, Ordering::SeqCst);
                                if n >= to {
                                    return;
                                }
                                let state = send(&client, &url, &format!("{kind}-{n}"), text).await;
                                assert_eq!(state, expected, "{kind} {n}");
                                sent.fetch_add(1, Ordering::SeqCst);
                            }
                        })
                    })
                    .collect();
                for worker in workers {
                    worker.await.unwrap();
                }
                let total = sent.load(Ordering::SeqCst);
                let waiting = total.min(each);
                println!(
                    "| {total} | {waiting} | {:.1} MiB | {} |",
                    resident_mib(),
                    a2a.running()
                );
            }
        }
    });
}
