//! MCP tools: an agent uses the tools of a local Model Context Protocol server, printed as
//! the run goes: the tools the server offers, each call, the server's progress, each result
//! and the answer.
//!
//! ```sh
//! cargo run -p agentscope-example-mcp --example mcp                                          # offline, scripted model
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run -p agentscope-example-mcp --example mcp   # a real model
//! ```
//!
//! The model is the one the environment names (see `examples/support/mod.rs`), or offline a
//! built-in demo model (a `ScriptedModel`, clearly labelled) that calls two of the tools; the
//! first line says which. The tools are real, served by `@modelcontextprotocol/server-everything`
//! running under Node.js over stdio (pinned by
//! `crates/agentscope-mcp/tests/servers/package-lock.json`; installed with `npm ci` when
//! missing). Without Node.js the example says so and exits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use agentscope::prelude::*;
use agentscope_mcp::{McpClient, McpServerConfig};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

/// The folder holding the pinned server packages (this example's package is
/// `examples/packages/mcp/`).
fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../crates/agentscope-mcp/tests/servers")
}

/// server-everything's entry point, installed when npm can; `None` (with the reason
/// printed) when Node.js or the package cannot be had.
fn server_everything() -> Option<PathBuf> {
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|output| output.status.success()) {
        println!("This example runs an MCP server on Node.js, and `node` is not installed.");
        println!("Install Node.js 20+ (e.g. `apt-get install nodejs npm`) and run it again.");
        return None;
    }
    let dir = servers_dir();
    let js = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !js.is_file() {
        println!(
            "Installing the pinned MCP server packages (`npm ci` in {})...",
            dir.display()
        );
        let installed = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .is_ok_and(|status| status.success());
        if !installed || !js.is_file() {
            println!("Could not install them (is npm installed and the registry reachable?).");
            return None;
        }
    }
    Some(js)
}

/// Prints one finished step of the run, and tool progress as it comes.
fn show(event: &Event) {
    for block in &event.message.content {
        match (event.event_type, block) {
            (EventType::Reasoning, ContentBlock::ToolUse(call)) if event.is_last => {
                println!("  model calls {}({})", call.name, call.input);
            }
            (EventType::ToolResult, ContentBlock::ToolResult(result)) if !event.is_last => {
                println!("    ... {}", result.text_output());
            }
            (EventType::ToolResult, ContentBlock::ToolResult(result)) => {
                let marker = if result.is_error { "error" } else { "result" };
                println!("  {} {marker}: {}", result.name, result.text_output());
            }
            (EventType::AgentResult, ContentBlock::Text(text)) => {
                println!("answer: {}", text.text);
            }
            _ => {}
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    // The model, chosen (and named on the first line) before anything else runs.
    let model = support::model_or(
        ScriptedModel::new([
            ScriptedResponse::tool_call(
                "call_1",
                "everything_trigger-long-running-operation",
                json!({"duration": 1.5, "steps": 3}),
            ),
            ScriptedResponse::tool_call("call_2", "everything_get-sum", json!({"a": 19, "b": 23})),
            ScriptedResponse::text("The operation finished, and 19 + 23 is 42."),
        ])
        .with_name("demo-model"),
    )?;
    let Some(js) = server_everything() else {
        return Ok(());
    };
    let everything = McpClient::connect(
        McpServerConfig::stdio("node")
            .arg(js.to_string_lossy())
            .arg("stdio")
            .name("everything")
            .prefix("everything_"),
    )
    .await?;
    println!("MCP server '{}' offers:", everything.name());
    for tool in everything.tools() {
        let summary = tool.description().split(". ").next().unwrap_or_default();
        println!("  {:<42} {summary}", tool.name());
    }

    println!();
    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You use the tools of MCP servers.")
        .model(model)
        .toolkit(Toolkit::new().tools(everything.tools()))
        .build()?;

    println!("user: Run the long operation, then add 19 and 23.");
    let mut events = agent.stream(
        "Run the long operation, then add 19 and 23.",
        StreamOptions::default(),
    );
    while let Some(event) = events.next().await {
        show(&event?);
    }
    everything.close().await;
    Ok(())
}
