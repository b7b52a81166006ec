//! The server under test on 127.0.0.1, and the AG-UI input the tests send it.

use std::path::Path;

use agentscope::ReActAgentBuilder;
use agentscope::hooks::ApprovalPolicy;
use agentscope::session::{JsonFileSessionStore, SessionStore};
use agentscope_server::{AgUi, AgUiBuilder, AgentSpec};
use serde_json::{Value, json};

/// A server for `assistant`, made by `agent`, whose `delete_files` calls wait for approval,
/// with its threads in JSON files under `dir`; configure it further, then build it.
pub(crate) fn guarded_assistant(
    dir: &Path,
    agent: impl Fn() -> ReActAgentBuilder + Send + Sync + 'static,
) -> AgUiBuilder {
    let spec = AgentSpec::new(agent).approval(ApprovalPolicy::tools(["delete_files"]));
    AgUi::builder()
        .agent("assistant", spec)
        .store(JsonFileSessionStore::new(dir))
}

/// The server of a worker process (a copy of the test binary that a test starts and may
/// kill): `assistant` made by `agent`, whose `pay` calls wait for approval, on `store`,
/// without the chat page; prints `LISTENING <base url>` and serves until the process is
/// killed.
pub(crate) async fn serve_worker(
    agent: impl Fn() -> ReActAgentBuilder + Send + Sync + 'static,
    store: impl SessionStore,
) {
    let spec = AgentSpec::new(agent).approval(ApprovalPolicy::tools(["pay"]));
    let agui = AgUi::builder()
        .agent("assistant", spec)
        .store(store)
        .chat_page(false)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("LISTENING http://{}", listener.local_addr().unwrap());
    axum::serve(listener, agui.router()).await.unwrap();
}

/// An [`AgUi`] served on a free port of 127.0.0.1, until this is dropped.
pub(crate) struct Served {
    /// `http://127.0.0.1:<port>`.
    pub(crate) base: String,
    pub(crate) agui: AgUi,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `agui`'s router.
pub(crate) async fn serve(agui: AgUi) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = agui.router();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Served { base, agui, task }
}

/// A `RunAgentInput` of `messages` for run `run` on `thread`.
pub(crate) fn input(thread: &str, run: &str, messages: Value) -> Value {
    json!({"threadId": thread, "runId": run, "messages": messages,
           "tools": [], "context": [], "state": {}, "forwardedProps": {}})
}

/// A user message of `input`.
pub(crate) fn user(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "content": text})
}
