//! `RUN_STARTED` reaches the client before the run's first step is done: the connection
//! sends it before the agent starts working, not with the events of the first burst of work
//! (which under load is what a client waits for).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use agentscope::prelude::*;
use agentscope::{ChatStream, ModelError, ModelRequest};
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::Value;

use crate::support::serve::{input, user};

/// A model whose first step is work that never lets the task wait: before it answers, it
/// blocks (up to 3 s) until the client says it has seen `RUN_STARTED`, and records whether
/// it heard that.
#[derive(Clone)]
struct BusyFirstStep {
    seen: Arc<Mutex<Option<mpsc::Receiver<()>>>>,
    heard: Arc<AtomicBool>,
    inner: ScriptedModel,
}

impl Model for BusyFirstStep {
    fn model_name(&self) -> &str {
        "busy-first-step"
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let seen = self.seen.lock().unwrap().take();
        if let Some(seen) = seen {
            let heard = seen.recv_timeout(Duration::from_secs(3)).is_ok();
            self.heard.store(heard, Ordering::SeqCst);
        }
        self.inner.stream(request).await
    }
}

#[tokio::test]
async fn run_started_is_sent_before_the_first_step_works() {
    let dir = tempfile::tempdir().unwrap();
    let (tell, seen) = mpsc::channel();
    let model = BusyFirstStep {
        seen: Arc::new(Mutex::new(Some(seen))),
        heard: Arc::new(AtomicBool::new(false)),
        inner: ScriptedModel::new([ScriptedResponse::text("Hello!")]),
    };
    let served = model.clone();
    let agui = AgUi::builder()
        .agent(
            "assistant",
            AgentSpec::new(move || ReActAgent::builder().model(served.clone())),
        )
        .store(JsonFileSessionStore::new(dir.path()))
        .build()
        .unwrap();
    // The server on a runtime of its own, one worker: the model blocks that worker, and the
    // client (on the test's runtime) goes on.
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            // Served until the test's client has its answer (then the thread is left).
            let _ = tokio::time::timeout(
                Duration::from_secs(20),
                axum::serve(listener, agui.router()).into_future(),
            )
            .await;
        });
    });
    let addr = addr_rx.recv().unwrap();
    let body = input("t-1", "run-1", serde_json::json!([user("m1", "Hi")]));
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/agents/assistant"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut bytes = Vec::new();
    let mut told = false;
    while let Some(chunk) = stream.next().await {
        bytes.extend_from_slice(&chunk.unwrap());
        if !told && bytes.windows(2).any(|w| w == b"\n\n") {
            told = true;
            let _ = tell.send(());
        }
    }
    let events: Vec<Value> = String::from_utf8(bytes)
        .unwrap()
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "RUN_STARTED");
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(events.last().unwrap()["result"]["text"], "Hello!");
    // The model's step began only after the client had `RUN_STARTED`.
    assert!(
        model.heard.load(Ordering::SeqCst),
        "RUN_STARTED reached the client only after the first step's work"
    );
    drop(server);
}
