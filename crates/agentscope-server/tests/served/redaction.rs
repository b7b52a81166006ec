//! The hooks guide's redaction hook on a served agent: what a client receives (progress
//! snapshots, results, the thread's snapshot) carries no e-mail address, whether the tool
//! reports progress itself or is an `AgentTool` forwarding its inner agent's text.

use agentscope::multi_agent::AgentTool;
use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

use crate::support::http::{find, post};
use crate::support::redaction;
use crate::support::serve::{input, serve, user};

/// `lookup`: reports an address as progress, and returns it.
fn lookup() -> impl Tool {
    tool_fn(
        "lookup",
        "Finds a customer's contact.",
        json!({"type": "object", "properties": {}}),
        |_input, ctx| async move {
            ctx.emit("found ada@example.com, checking").await;
            Ok("Ada: ada@example.com")
        },
    )
}

#[tokio::test]
async fn a_client_receives_no_address_from_progress_or_results() {
    redaction::assert_the_guide_shows_it();
    let dir = tempfile::tempdir().unwrap();
    let outer = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "lookup", json!({})),
        ScriptedResponse::tool_call("c2", "ask_researcher", json!({"task": "Reach Ada?"})),
        ScriptedResponse::text("Done."),
    ]);
    let inner = ScriptedModel::new([ScriptedResponse::chunks([
        ScriptedChunk::text("Write to "),
        ScriptedChunk::text("ada@example.com"),
        ScriptedChunk::text(" today."),
    ])]);
    let factory = move || {
        let researcher = ReActAgent::builder()
            .name("researcher")
            .model(inner.clone())
            .build()
            .unwrap();
        ReActAgent::builder()
            .model(outer.clone())
            .toolkit(
                Toolkit::new()
                    .tool(lookup())
                    .tool(AgentTool::new(researcher).with_name("ask_researcher")),
            )
            .hook(redaction::hook())
    };
    let agui = AgUi::builder()
        .agent("assistant", AgentSpec::new(factory))
        .store(JsonFileSessionStore::new(dir.path()))
        .build()
        .unwrap();
    let server = serve(agui).await;
    let (status, events) = post(
        &server.base,
        &input("t1", "r1", json!([user("u1", "How do I reach Ada?")])),
    )
    .await;
    assert_eq!(status, 200, "{events:?}");

    let progress: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "ACTIVITY_SNAPSHOT")
        .map(|e| &e["content"])
        .collect();
    let researcher =
        |text: &str| json!({"toolCallId": "c2", "toolName": "ask_researcher", "text": text});
    assert_eq!(
        progress,
        [
            &json!({"toolCallId": "c1", "toolName": "lookup", "text": "found [email], checking"}),
            &researcher("Write to "),
            &researcher("Write to [email]"),
            &researcher("Write to [email] today."),
        ]
    );
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .map(|e| &e["content"])
        .collect();
    assert_eq!(
        results,
        [&json!("Ada: [email]"), &json!("Write to [email] today.")]
    );
    assert_eq!(
        find(&events, "RUN_FINISHED")["outcome"],
        json!({"type": "success"})
    );
    // Nothing the client received holds the address, the thread's snapshot included.
    let received = serde_json::to_string(&events).unwrap();
    assert!(!received.contains("ada@example.com"), "{received}");
}
