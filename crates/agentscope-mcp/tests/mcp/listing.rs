//! Listing: every tool server-everything declares, with its description and input schema
//! unchanged, over stdio and streamable HTTP; prefixes.

use agentscope::{Tool, Toolkit};
use agentscope_mcp::McpClient;
use serde_json::json;

use crate::support::{self, HttpEverything, connect, prefixed};

/// server-everything's tools for a client that declares no capabilities (the last one is
/// registered once the session is initialized).
const EVERYTHING_TOOLS: [&str; 13] = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
    "simulate-research-query",
];

fn assert_get_sum_as_declared(client: &McpClient, name: &str) {
    let tool = client
        .tools()
        .into_iter()
        .find(|tool| tool.name() == name)
        .unwrap();
    assert_eq!(tool.remote_name(), "get-sum");
    assert_eq!(tool.description(), "Returns the sum of two numbers");
    assert_eq!(
        tool.parameters(),
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "a": {"type": "number", "description": "First number"},
                "b": {"type": "number", "description": "Second number"}
            },
            "required": ["a", "b"]
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn lists_every_tool_as_declared_over_stdio() {
    let Some(client) = support::everything("").await else {
        return;
    };
    assert_eq!(client.name(), "everything");
    assert_eq!(client.tool_names(), EVERYTHING_TOOLS);
    assert_get_sum_as_declared(&client, "get-sum");
    let toolkit = Toolkit::new().tools(client.tools());
    assert_eq!(toolkit.names(), EVERYTHING_TOOLS);
    assert!(toolkit.error().is_none(), "{:?}", toolkit.error());
    // The model sees exactly the server's declarations.
    let schema = toolkit.schemas().iter().find(|s| s.name == "echo").unwrap();
    assert_eq!(schema.description, "Echoes back the input string");
    assert_eq!(
        *schema.parameters,
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"message": {"type": "string", "description": "Message to echo"}},
            "required": ["message"]
        })
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn lists_every_tool_as_declared_over_http() {
    let Some(server) = HttpEverything::start().await else {
        return;
    };
    let client = connect(server.config()).await;
    assert_eq!(client.tool_names(), EVERYTHING_TOOLS);
    assert_get_sum_as_declared(&client, "get-sum");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn a_prefix_renames_the_tools_for_the_model_only() {
    let Some(client) = support::everything("everything_").await else {
        return;
    };
    assert_eq!(
        client.tool_names(),
        prefixed("everything_", &EVERYTHING_TOOLS)
    );
    assert!(client.has_tool("everything_get-sum"));
    assert!(!client.has_tool("get-sum"));
    assert_get_sum_as_declared(&client, "everything_get-sum");
    // Two servers with different prefixes share one toolkit.
    let Some(other) = support::everything("other_").await else {
        return;
    };
    let toolkit = Toolkit::new().tools(client.tools()).tools(other.tools());
    assert!(toolkit.error().is_none(), "{:?}", toolkit.error());
    assert_eq!(toolkit.len(), 26);
    // Without prefixes the names clash, and the toolkit says so.
    let clash = Toolkit::new().tools(client.tools()).tools(client.tools());
    assert_eq!(
        clash.error().map(ToString::to_string).as_deref(),
        Some("duplicate tool name 'everything_echo'")
    );
    client.close().await;
    other.close().await;
}
