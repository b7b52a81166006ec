//! Cancellation: interrupting the agent call, or dropping the tool's future (here: the
//! toolkit's time limit), sends `notifications/cancelled`, and the server sees it.

use std::time::{Duration, Instant};

use agentscope::ToolResultBlock;
use agentscope::prelude::*;
use agentscope_mcp::McpClient;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{
    self, HttpEverything, agent_on, agent_with_tools, assert_read, call_tool, calls_then_answers,
    connect, reply, within,
};

/// The reasons of the cancellations the fixture server saw.
async fn cancellations_seen(fixture: &McpClient) -> Vec<String> {
    let result = call_tool(fixture, "cancellations", json!({}))
        .await
        .unwrap();
    let text = result.content[0].as_text().unwrap().to_owned();
    let seen: Vec<Value> = serde_json::from_str(&text).unwrap();
    seen.iter()
        .map(|entry| entry["reason"].as_str().unwrap().to_owned())
        .collect()
}

/// The reasons the fixture server saw, once it saw at least one (rmcp writes messages on
/// concurrent tasks, so a request sent right after the notification may overtake it).
async fn cancellations_eventually_seen(fixture: &McpClient) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..50 {
        seen = cancellations_seen(fixture).await;
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen
}

/// Streams `agent`'s call and interrupts it at the first tool progress chunk; returns the
/// reply and the progress texts seen.
async fn interrupt_at_first_progress(agent: &ReActAgent) -> (Msg, Vec<String>) {
    let mut stream = agent.stream("go", StreamOptions::default());
    let mut progress = Vec::new();
    let mut reply = None;
    while let Some(event) = within(60, stream.next()).await {
        let event = event.unwrap();
        match event.event_type {
            EventType::ToolResult if !event.is_last => {
                if let [ContentBlock::ToolResult(chunk)] = event.message.content.as_slice() {
                    progress.push(chunk.text_output());
                }
                agent.interrupt();
            }
            EventType::AgentResult => reply = Some(event.message),
            _ => {}
        }
    }
    (reply.unwrap(), progress)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn interrupting_the_agent_call_cancels_the_request_on_the_server() {
    let Some(fixture) = support::fixture("").await else {
        return;
    };
    let model = ScriptedModel::new([ScriptedResponse::tool_call(
        "c1",
        "wait-for-cancel",
        json!({}),
    )]);
    let agent = agent_with_tools(&model, &fixture);
    let (reply, progress) = interrupt_at_first_progress(&agent).await;
    assert_eq!(progress, ["progress 1: waiting"]);
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert_eq!(
        cancellations_eventually_seen(&fixture).await,
        ["the agent call was interrupted"]
    );
    fixture.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn a_dropped_call_is_cancelled_on_the_server() {
    let Some(fixture) = support::fixture("").await else {
        return;
    };
    let wait = fixture
        .tools()
        .into_iter()
        .find(|tool| tool.remote_name() == "wait-for-cancel")
        .unwrap();
    let model = calls_then_answers("c1", "wait-for-cancel", json!({}), "gave up");
    let agent = agent_on(
        &model,
        Toolkit::new().tool_with_timeout(wait, Duration::from_millis(500)),
    )
    .build()
    .unwrap();
    assert_eq!(reply(&agent, "go").await.text(), "gave up");
    assert_read(
        &model,
        1,
        &[ToolResultBlock::error(
            "c1",
            "wait-for-cancel",
            "Error: Tool execution failed: tool timed out after 500ms",
        )],
    );
    // The notification is sent from Drop, on a task.
    assert_eq!(
        cancellations_eventually_seen(&fixture).await,
        ["the tool call was abandoned by the client"]
    );
    fixture.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn interrupting_a_call_over_http_ends_it_and_the_client_stays_usable() {
    let Some(server) = HttpEverything::start().await else {
        return;
    };
    let client = connect(server.config()).await;
    let model = ScriptedModel::new([ScriptedResponse::tool_call(
        "c1",
        "trigger-long-running-operation",
        json!({"duration": 20, "steps": 20}),
    )]);
    let agent = agent_with_tools(&model, &client);
    let started = Instant::now();
    let (reply, progress) = interrupt_at_first_progress(&agent).await;
    assert_eq!(progress, ["progress 1/20"]);
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let sum = call_tool(&client, "get-sum", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(
        sum.content,
        [ContentBlock::text("The sum of 1 and 2 is 3.")]
    );
    client.close().await;
}
