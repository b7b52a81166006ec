//! The system under test for the A2A conformance kit (a2aproject/a2a-tck, 1.0): an
//! agentscope-rs agent served by `agentscope-a2a`, whose offline model answers the kit's
//! scenarios (`scenarios/*.feature` in the kit: what to do for a message whose id starts
//! with a given prefix), so the kit's checks of answers and states can pass. Everything
//! but the model is the real server: the SDK's handler, the task store over JSON-file
//! sessions, approvals.
//!
//! ```sh
//! PORT=9999 cargo run -p agentscope-a2a --example tck_sut   # serves http://127.0.0.1:9999
//! ```
//!
//! `scripts/a2a-tck.sh` starts it and runs the kit. The router is mounted at the root: the
//! kit posts JSON-RPC to `<interface url>/` (its HTTP client joins `/` to the URL), which
//! for a URL with a path is not the URL the card declares.
//!
//! What an agent's call can give, it gives: a reply text (the `reply` artifact and the
//! terminal status message), streamed pieces, a stop for approval (`input-required`), a
//! model error (`failed`), a slow reply (for the kit's re-subscribe test). What a call
//! cannot give (a message instead of a task, file or data artifacts) the model answers with
//! `Unhandled messageId prefix: <id>`, as the kit's own Python SUT does for unknown ids.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agentscope::prelude::*;
use agentscope::{ChatStream, ModelError, ModelRequest, Role};
use agentscope_a2a::A2a;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::json;

/// The kit's streaming timeout is 2 s; its re-subscribe scenario waits twice that.
const SLOW_REPLY: Duration = Duration::from_secs(4);

/// A message id prefix of the kit's scenarios, and the model's answer to it.
type Scenario = (&'static str, fn() -> ScriptedResponse);

/// Answers by the id of the conversation's last user message (the A2A message id).
#[derive(Clone)]
struct ScenarioModel;

impl ScenarioModel {
    fn answer(request: &ModelRequest) -> ScriptedResponse {
        let last = request.messages.last();
        // After a tool ran (an approved `confirm`), the call ends with a short reply.
        if last.is_some_and(|msg| msg.role == Role::Tool || msg.has_tool_results()) {
            return ScriptedResponse::text("Confirmed.");
        }
        let id = request
            .messages
            .iter()
            .rev()
            .find(|msg| msg.role == Role::User)
            .map(|msg| msg.id.to_string())
            .unwrap_or_default();
        let text = |text: &str| ScriptedResponse::text(text.to_owned());
        let scenarios: [Scenario; 11] = [
            ("tck-complete-task", || {
                ScriptedResponse::text("Hello from TCK")
            }),
            ("tck-artifact-text", || {
                ScriptedResponse::text("Generated text content")
            }),
            ("tck-input-required", || {
                ScriptedResponse::tool_call("confirm-1", "confirm", json!({}))
            }),
            ("tck-reject-task", || ScriptedResponse::error("rejected")),
            ("tck-stream-001", || {
                ScriptedResponse::text("Stream hello from TCK")
            }),
            ("tck-stream-003", || {
                ScriptedResponse::text("Stream task lifecycle")
            }),
            ("tck-stream-ordering-001", || {
                ScriptedResponse::text("Ordered output")
            }),
            ("tck-stream-artifact-text", || {
                ScriptedResponse::text("Streamed text content")
            }),
            ("tck-stream-artifact-chunked", || {
                ScriptedResponse::chunks([
                    ScriptedChunk::text("chunk-1 "),
                    ScriptedChunk::text("chunk-2"),
                ])
            }),
            ("test-resubscribe-message-id", || {
                ScriptedResponse::text("Done.").with_delay(SLOW_REPLY)
            }),
            ("tck-stream-002", || ScriptedResponse::text("")),
        ];
        // Longest prefix first: `tck-artifact-file-url` is not `tck-artifact-file`.
        scenarios
            .iter()
            .filter(|(prefix, _)| id.starts_with(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, answer)| answer())
            .unwrap_or_else(|| text(&format!("Unhandled messageId prefix: {id}")))
    }
}

impl Model for ScenarioModel {
    fn model_name(&self) -> &str {
        "a2a-tck-scenarios"
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let answer = Self::answer(&request);
        ScriptedModel::new([answer]).stream(request).await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port.parse()?,
        Err(_) => 9999,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let base = format!("http://{}", listener.local_addr()?);
    let sessions = tempfile::tempdir()?;
    let toolkit = Toolkit::new().tool(tool_fn(
        "confirm",
        "Asks the user to confirm (the kit's input-required scenario).",
        json!({"type": "object"}),
        |_input: serde_json::Value, _ctx| async move { Ok::<_, ToolError>("confirmed".to_owned()) },
    ));
    let a2a = A2a::builder()
        .agent(move || {
            ReActAgent::builder()
                .name("tck")
                .model(ScenarioModel)
                .toolkit(toolkit.clone())
        })
        .url(&base)
        .description("The A2A conformance kit's system under test, on agentscope-rs.")
        .approval(ApprovalPolicy::tools(["confirm"]))
        .store(JsonFileSessionStore::new(sessions.path()))
        .build()?;
    println!("A2A TCK SUT: {base}");
    axum::serve(listener, a2a.router())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
