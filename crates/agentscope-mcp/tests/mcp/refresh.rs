//! Refresh: when the server's tool list changes it sends `notifications/tools/list_changed`;
//! the client lists the tools again; agents built afterwards with a copy of the list have the
//! new tool, and a running agent with the client as a live source has it from its next call.

use agentscope::ToolResultBlock;
use agentscope::hooks::ApprovalPolicy;
use agentscope::prelude::*;
use agentscope_mcp::McpClient;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Map, json};

use crate::support::{self, last_results, within};

const FIXTURE_TOOLS: [&str; 5] = [
    "add-tool",
    "wait-for-cancel",
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
    let Some(config) = support::fixture_stdio() else {
        return;
    };
    let client = within(60, McpClient::connect(config.prefix("fx_")))
        .await
        .unwrap();
    let expected: Vec<String> = FIXTURE_TOOLS
        .iter()
        .map(|name| format!("fx_{name}"))
        .collect();
    assert_eq!(client.tool_names(), expected);
    let generation = client.tools_generation();
    let policy = ApprovalPolicy::when({
        let client = client.clone();
        move |call| client.has_tool(&call.name)
    });

    // An agent (built before the change) asks the server to add a tool.
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "fx_add-tool", json!({"name": "greet"})),
        ScriptedResponse::text("added"),
    ]);
    let before = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tools(client.tools()))
        .build()
        .unwrap();
    assert_eq!(
        within(60, before.call("add greet")).await.unwrap().text(),
        "added"
    );

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
    assert_eq!(before.toolkit().len(), 5);
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "fx_greet", json!({"who": "Ada"})),
        ScriptedResponse::text("greeted"),
    ]);
    let after = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tools(client.tools()))
        .build()
        .unwrap();
    assert_eq!(
        within(60, after.call("greet Ada")).await.unwrap().text(),
        "greeted"
    );
    assert_eq!(
        last_results(&model.requests()[1]),
        [ToolResultBlock::text("c1", "fx_greet", "Hello, Ada!")]
    );
    // An explicit refresh of an unchanged list changes nothing.
    within(30, client.refresh_tools()).await.unwrap();
    assert_eq!(client.tools_generation(), now);
    let unchanged = within(30, client.call_tool("cancellations", Map::new()))
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
    let Some(config) = support::fixture_stdio() else {
        return;
    };
    let client = within(60, McpClient::connect(config.prefix("fx_")))
        .await
        .unwrap();
    let before: Vec<String> = FIXTURE_TOOLS
        .iter()
        .map(|name| format!("fx_{name}"))
        .collect();
    let generation = client.tools_generation();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "fx_add-tool", json!({"name": "greet"})),
        ScriptedResponse::text("added"),
        ScriptedResponse::tool_call("c2", "fx_greet", json!({"who": "Ada"})),
        ScriptedResponse::text("greeted"),
    ]);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().source(client.clone()))
        .build()
        .unwrap();
    assert_eq!(
        within(60, agent.call("add greet")).await.unwrap().text(),
        "added"
    );
    assert_eq!(
        within(30, client.tools_changed(generation)).await,
        generation + 1
    );
    // The same agent, not rebuilt: its next call offers and runs the new tool.
    assert_eq!(
        within(60, agent.call("greet Ada")).await.unwrap().text(),
        "greeted"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let offered =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    // The first call keeps the list it started with, though the tool was added mid-call.
    assert_eq!(offered(0), before);
    assert_eq!(offered(1), before);
    let mut after = before.clone();
    after.push("fx_greet".to_owned());
    assert_eq!(offered(2), after);
    assert_eq!(offered(3), after);
    let greet = requests[2]
        .tools
        .iter()
        .find(|t| t.name == "fx_greet")
        .unwrap();
    assert_eq!(greet.description, "Greets (added at run time as greet).");
    assert_eq!(
        last_results(&requests[3]),
        [ToolResultBlock::text("c2", "fx_greet", "Hello, Ada!")]
    );
    client.close().await;
}
