//! Progress: server-everything's long-running tool reports progress; each notification is
//! one ActingChunk event and one streamed tool-result chunk, in order, before the result.

use agentscope::ToolResultBlock;
use agentscope::prelude::*;
use agentscope_mcp::McpServerConfig;
use agentscope_test::RecordingHook;
use futures::StreamExt;
use serde_json::json;

use crate::support::{
    self, HttpEverything, acting_chunks, agent_on, assert_read, calls_then_answers, connect,
    tools_of, within,
};

const DONE: &str = "Long running operation completed. Duration: 1 seconds, Steps: 4.";
const PROGRESS: [&str; 4] = [
    "progress 1/4",
    "progress 2/4",
    "progress 3/4",
    "progress 4/4",
];

async fn progress_in_order(config: McpServerConfig) {
    let client = connect(config).await;
    let model = calls_then_answers(
        "c1",
        "trigger-long-running-operation",
        json!({"duration": 1, "steps": 4}),
        "finished",
    );
    let hook = RecordingHook::new(0)
        .with_interests(HookEventType::ActingChunk | HookEventType::PostActing);
    let agent = agent_on(&model, tools_of(&client))
        .hook(hook.clone())
        .build()
        .unwrap();
    let events: Vec<Event> = within(
        60,
        agent
            .stream(
                "go",
                StreamOptions::default().event_types([EventType::ToolResult]),
            )
            .map(|event| event.unwrap())
            .collect(),
    )
    .await;
    // The stream: four progress chunks, then the result.
    let streamed: Vec<(String, bool)> = events
        .iter()
        .map(|event| {
            let text = match event.message.content.as_slice() {
                [ContentBlock::ToolResult(result)] => result.text_output(),
                other => panic!("unexpected content {other:?}"),
            };
            (text, event.is_last)
        })
        .collect();
    let mut expected: Vec<(String, bool)> = PROGRESS
        .iter()
        .map(|text| ((*text).to_owned(), false))
        .collect();
    expected.push((DONE.to_owned(), true));
    assert_eq!(streamed, expected);
    // The hooks: four ActingChunk events in order, then PostActing.
    assert_eq!(acting_chunks(&hook), PROGRESS);
    assert_eq!(
        hook.types(),
        [
            HookEventType::ActingChunk,
            HookEventType::ActingChunk,
            HookEventType::ActingChunk,
            HookEventType::ActingChunk,
            HookEventType::PostActing
        ]
    );
    // The model reads the result only.
    assert_read(
        &model,
        1,
        &[ToolResultBlock::text(
            "c1",
            "trigger-long-running-operation",
            DONE,
        )],
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn progress_becomes_acting_chunks_in_order_over_stdio() {
    let Some(config) = support::everything_stdio() else {
        return;
    };
    progress_in_order(config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn progress_becomes_acting_chunks_in_order_over_http() {
    let Some(server) = HttpEverything::start().await else {
        return;
    };
    progress_in_order(server.config()).await;
}

#[tokio::test(flavor = "current_thread")]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn progress_in_order_on_a_current_thread_runtime() {
    let Some(config) = support::everything_stdio() else {
        return;
    };
    progress_in_order(config).await;
}
