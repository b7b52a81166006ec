//! Refresh: when the server's tool list changes it sends `notifications/tools/list_changed`;
//! the client lists the tools again; agents built afterwards with a copy of the list have the
//! new tool, and a running agent with the client as a live source has it from its next call.

use agentscope::ToolResultBlock;
use agentscope::hooks::ApprovalPolicy;
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::support::{
    self, agent_on, agent_with_tools, assert_read, call_tool, calls_then_answers, last_results,
    offered, offered_names, prefixed, reply, within,
};

const FIXTURE_TOOLS: [&str; 7] = [
    "add-tool",
    "wait-for-cancel",
    "idempotency-key",
    "trace-context",
    "cancellations",
    "mixed-content",
    "fail",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn the_tool_list_refreshes_when_the_server_says_it_changed() {
    let Some(client) = support::fixture("fx_").await else {
        return;
    };
    let expected = prefixed("fx_", &FIXTURE_TOOLS);
    assert_eq!(client.tool_names(), expected);
    let generation = client.tools_generation();
    let policy = ApprovalPolicy::when({
        let client = client.clone();
        move |call| client.has_tool(&call.name)
    });

    // An agent (built before the change) asks the server to add a tool.
    let model = calls_then_answers("c1", "fx_add-tool", json!({"name": "greet"}), "added");
    let before = agent_with_tools(&model, &client);
    assert_eq!(reply(&before, "add greet").await.text(), "added");

    let now = within(30, client.tools_changed(generation)).await;
    assert_eq!(now, generation + 1);
    let mut expected = expected;
    expected.push("fx_greet".to_owned());
    assert_eq!(client.tool_names(), expected);
    let greet = client.tools().pop().unwrap();
    assert_eq!(greet.remote_name(), "greet");
    assert_eq!(greet.description(), "Greets (added at run time as greet).");
    // The approval policy made before the change covers the new tool too.
    assert!(policy.requires_approval(&ToolUseBlock::new("x", "fx_greet", json!({}))));
    // The agent built before keeps its toolkit; a new one has the tool.
    assert_eq!(before.toolkit().len(), FIXTURE_TOOLS.len());
    let model = calls_then_answers("c1", "fx_greet", json!({"who": "Ada"}), "greeted");
    let after = agent_with_tools(&model, &client);
    assert_eq!(reply(&after, "greet Ada").await.text(), "greeted");
    assert_read(
        &model,
        1,
        &[ToolResultBlock::text("c1", "fx_greet", "Hello, Ada!")],
    );
    // An explicit refresh of an unchanged list changes nothing.
    within(30, client.refresh_tools()).await.unwrap();
    assert_eq!(client.tools_generation(), now);
    let unchanged = call_tool(&client, "cancellations", json!({}))
        .await
        .unwrap();
    assert_eq!(unchanged.content, [ContentBlock::text("[]")]);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn a_running_agent_with_the_client_as_a_source_sees_the_new_tool_in_its_next_call() {
    let Some(client) = support::fixture("fx_").await else {
        return;
    };
    let before = prefixed("fx_", &FIXTURE_TOOLS);
    let generation = client.tools_generation();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "fx_add-tool", json!({"name": "greet"})),
        ScriptedResponse::text("added"),
        ScriptedResponse::tool_call("c2", "fx_greet", json!({"who": "Ada"})),
        ScriptedResponse::text("greeted"),
    ]);
    let agent = agent_on(&model, Toolkit::new().source(client.clone()))
        .build()
        .unwrap();
    assert_eq!(reply(&agent, "add greet").await.text(), "added");
    assert_eq!(
        within(30, client.tools_changed(generation)).await,
        generation + 1
    );
    // The same agent, not rebuilt: its next call offers and runs the new tool.
    assert_eq!(reply(&agent, "greet Ada").await.text(), "greeted");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    // The first call keeps the list it started with, though the tool was added mid-call.
    assert_eq!(offered_names(&requests[0]), before);
    assert_eq!(offered_names(&requests[1]), before);
    let mut after = before.clone();
    after.push("fx_greet".to_owned());
    assert_eq!(offered_names(&requests[2]), after);
    assert_eq!(offered_names(&requests[3]), after);
    assert_eq!(
        offered(&requests[2], "fx_greet").description,
        "Greets (added at run time as greet)."
    );
    assert_eq!(
        last_results(&requests[3]),
        [ToolResultBlock::text("c2", "fx_greet", "Hello, Ada!")]
    );
    client.close().await;
}
