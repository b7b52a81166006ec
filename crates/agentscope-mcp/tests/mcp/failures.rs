//! Failures: a server killed mid-call gives the model a clear error result and the next
//! call reconnects (stdio: a new process; HTTP: a new session with the restarted server);
//! the reconnect policy; servers that cannot be reached; no secret in any error.

use std::time::Duration;

use agentscope::ToolResultBlock;
use agentscope::prelude::*;
use agentscope_mcp::{McpClient, McpError, McpServerConfig, McpToolResult, ReconnectPolicy};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

use crate::support::{
    self, HttpEverything, KillableEverything, agent_with_tools, assert_read, calls_then_answers,
    connect, within,
};

const LOST: &str = "Error: Tool execution failed: the connection to the MCP server 'everything' \
                    was lost before it answered (did the server exit?); whether the call ran is unknown";

/// Asks the server to add 1 and 2, directly.
async fn sum(client: &McpClient) -> Result<McpToolResult, McpError> {
    support::call_tool(client, "get-sum", json!({"a": 1, "b": 2})).await
}

/// Kills the server and waits until the client has seen it go.
async fn kill_and_wait_until_lost(server: &KillableEverything, client: &McpClient) {
    server.kill();
    within(30, async {
        while client.is_connected().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// A model that starts a long operation (c1), then adds 1 and 2 (c2), then answers.
fn long_then_sum() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call(
            "c1",
            "trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
        ),
        ScriptedResponse::tool_call("c2", "get-sum", json!({"a": 1, "b": 2})),
        ScriptedResponse::text("recovered"),
    ])
}

/// Runs the agent's call, running `at_first_progress` once at the first progress chunk.
async fn run_killing_at_first_progress<F, Fut>(agent: &ReActAgent, at_first_progress: F) -> Msg
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut kill = Some(at_first_progress);
    let mut stream = agent.stream("go", StreamOptions::default());
    let mut reply = None;
    while let Some(event) = within(90, stream.next()).await {
        let event = event.unwrap();
        if event.event_type == EventType::ToolResult
            && !event.is_last
            && let Some(kill) = kill.take()
        {
            kill().await;
        }
        if event.event_type == EventType::AgentResult {
            reply = Some(event.message);
        }
    }
    reply.unwrap()
}

fn assert_lost_then_recovered(model: &ScriptedModel, reply: &Msg) {
    assert_eq!(reply.text(), "recovered");
    assert_eq!(model.request_count(), 3);
    assert_read(
        model,
        1,
        &[ToolResultBlock::error(
            "c1",
            "trigger-long-running-operation",
            LOST,
        )],
    );
    assert_read(
        model,
        2,
        &[ToolResultBlock::text(
            "c2",
            "get-sum",
            "The sum of 1 and 2 is 3.",
        )],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn a_stdio_server_killed_mid_call_gives_an_error_result_then_is_restarted() {
    let Some(server) = KillableEverything::new() else {
        return;
    };
    let client = connect(server.config()).await;
    let model = long_then_sum();
    let agent = agent_with_tools(&model, &client);
    let first_pid = server.pid();
    let reply = run_killing_at_first_progress(&agent, || async { server.kill() }).await;
    assert_lost_then_recovered(&model, &reply);
    // A new process answered the second call.
    assert_ne!(server.pid(), first_pid);
    assert!(client.is_connected().await);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn an_http_server_killed_mid_call_gives_an_error_result_then_a_new_session() {
    let Some(mut server) = HttpEverything::start().await else {
        return;
    };
    let client = connect(server.config()).await;
    let model = long_then_sum();
    let agent = agent_with_tools(&model, &client);
    let reply = run_killing_at_first_progress(&agent, || server.restart()).await;
    assert_lost_then_recovered(&model, &reply);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn without_reconnecting_a_lost_server_stays_lost() {
    let Some(server) = KillableEverything::new() else {
        return;
    };
    let client = connect(server.config().reconnect(ReconnectPolicy::never())).await;
    assert!(!sum(&client).await.unwrap().is_error);
    kill_and_wait_until_lost(&server, &client).await;
    let error = sum(&client).await.unwrap_err();
    assert_eq!(
        error,
        McpError::Disconnected {
            server: "everything".into(),
            message: "the connection to the MCP server 'everything' was lost and reconnecting is disabled".into(),
        }
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn reconnecting_gives_up_after_the_policy_s_attempts() {
    let Some(server) = KillableEverything::new() else {
        return;
    };
    let workdir = server.dir().join("work");
    std::fs::create_dir(&workdir).unwrap();
    let policy =
        ReconnectPolicy::attempts(2).backoff(Duration::from_millis(10), Duration::from_millis(10));
    let client = connect(server.config().current_dir(&workdir).reconnect(policy)).await;
    // The server dies and cannot be started again (its working directory is gone).
    std::fs::remove_dir(&workdir).unwrap();
    kill_and_wait_until_lost(&server, &client).await;
    let error = sum(&client).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the connection to the MCP server 'everything' was lost and 2 reconnect attempt(s) failed; \
         the last: cannot start the MCP server 'everything' (`sh`): No such file or directory (os error 2)"
    );
    assert!(error.is_disconnected());
    // The toolkit's tools report it to the model the same way.
    let model = calls_then_answers("c1", "get-sum", json!({"a": 1, "b": 2}), "sorry");
    let agent = agent_with_tools(&model, &client);
    assert_eq!(within(30, agent.call("go")).await.unwrap().text(), "sorry");
    assert_read(
        &model,
        1,
        &[ToolResultBlock::error(
            "c1",
            "get-sum",
            format!("Error: Tool execution failed: {error}"),
        )],
    );
    client.close().await;
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_connect_error() {
    let error = McpClient::connect(McpServerConfig::stdio("/nonexistent/mcp-server"))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        McpError::Connect {
            server: "mcp-server".into(),
            message: "cannot start the MCP server 'mcp-server' (`/nonexistent/mcp-server`): No such file or directory (os error 2)".into(),
        }
    );
}

#[tokio::test]
async fn invalid_configurations_are_reported_by_connect() {
    let error = McpClient::connect(McpServerConfig::http("not a url?token=abc123").name("remote"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid MCP server configuration: the URL of the MCP server 'remote' is not a valid URL"
    );
    let error = McpClient::connect(McpServerConfig::stdio("node").header("x-api-key", "k"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid MCP server configuration: header() applies to HTTP servers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_errors_or_debug_output() {
    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = McpServerConfig::http(format!(
        "http://user:pa55-word@127.0.0.1:{port}/mcp?api_key=query-secret-1"
    ))
    .bearer_token("bearer-secret-2")
    .header("x-api-key", "header-secret-3")
    .connect_timeout(Duration::from_secs(10));
    let shown_config = format!("{config:?}");
    let error = within(30, McpClient::connect(config)).await.unwrap_err();
    assert!(error.is_connect(), "{error:?}");
    let shown = format!("{error} {error:?} {shown_config}");
    for secret in [
        "pa55-word",
        "query-secret-1",
        "bearer-secret-2",
        "header-secret-3",
    ] {
        assert!(!shown.contains(secret), "{secret} shown in: {shown}");
    }
    assert!(
        error
            .to_string()
            .starts_with("cannot connect to the MCP server '127.0.0.1': "),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn environment_values_stay_out_of_debug_output() {
    let Some(config) = support::everything_stdio() else {
        return;
    };
    let client = connect(config.env("SERVICE_TOKEN", "env-secret-4")).await;
    // The server got it ...
    let env = support::call_tool(&client, "get-env", json!({}))
        .await
        .unwrap();
    assert!(
        env.content[0]
            .as_text()
            .unwrap()
            .contains("\"SERVICE_TOKEN\": \"env-secret-4\"")
    );
    // ... and nothing of ours shows it.
    let shown = format!("{client:?} {:?}", client.tools());
    assert!(shown.contains("SERVICE_TOKEN"), "{shown}");
    assert!(!shown.contains("env-secret-4"), "{shown}");
    client.close().await;
}
