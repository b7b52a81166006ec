//! Use the tools of [Model Context Protocol](https://modelcontextprotocol.io) servers from
//! agentscope-rs agents, on the official Rust MCP SDK (`rmcp`).
//!
//! - [`McpServerConfig`] says how to reach a server: a command started as a child process
//!   and spoken to over stdio ([`McpServerConfig::stdio`], with arguments and environment),
//!   or a streamable HTTP endpoint ([`McpServerConfig::http`], with headers or a bearer
//!   token for auth), plus a tool-name prefix and a [`ReconnectPolicy`].
//! - [`McpClient::connect`] connects and lists the server's tools; [`McpClient::tools`]
//!   turns them into [`McpTool`]s for an agent's toolkit, with the name, description and
//!   input schema the server declares, so arguments are validated against the server's own
//!   schema. The client is also a [`ToolSource`](agentscope_core::ToolSource): with
//!   `Toolkit::source` a running agent offers the server's current tools from its next call
//!   on, following `notifications/tools/list_changed`.
//! - A call maps the result's content blocks to ours ([`McpToolResult`]), turns `isError`
//!   into an error result the model reads, keeps structured content, turns progress
//!   notifications into progress chunks (`ActingChunk` events), and sends
//!   `notifications/cancelled` when the agent call is interrupted or the call dropped. A
//!   server that dies mid-call gives an error result; the next call reconnects.
//! - MCP tools are tools like any other for the hooks: PreActing can inspect, edit, skip or
//!   deny a call, and `ToolApprovalHook` can hold every call of one server
//!   (`ApprovalPolicy::when(move |call| client.has_tool(&call.name))`).
//!
//! The crate depends on `agentscope-core` only: the agent, its toolkit and the approval hook
//! come from `agentscope`.
//!
//! The guide is `docs/mcp.md`.
//!
//! ```no_run
//! use agentscope::prelude::*;
//! use agentscope_mcp::{McpClient, McpServerConfig};
//!
//! # async fn demo(model: impl Model) -> Result<(), Box<dyn std::error::Error>> {
//! let everything = McpClient::connect(
//!     McpServerConfig::stdio("npx")
//!         .args(["-y", "@modelcontextprotocol/server-everything"])
//!         .prefix("everything_"),
//! )
//! .await?;
//! let agent = ReActAgent::builder()
//!     .model(model)
//!     .toolkit(Toolkit::new().source(everything.clone()))
//!     .hook(ToolApprovalHook::new({
//!         let everything = everything.clone();
//!         ApprovalPolicy::when(move |call| everything.has_tool(&call.name))
//!     }))
//!     .build()?;
//! let reply = agent.call(Msg::user("What is 2 + 3? Use everything_get-sum.")).await?;
//! println!("{}", reply.text());
//! # Ok(())
//! # }
//! ```
//!
//! rmcp needs a tokio runtime (with time and I/O enabled): connect and call from one.
#![warn(missing_docs, missing_debug_implementations)]

// One job per module; `use crate::` edges only point down (no cycles):
//   tool      -> client, defs        McpTool, McpClient::tools, the ToolSource impl
//   client    -> config, content, defs, error, transport   McpClient: connection, refresh, calls
//   transport -> config              opening transports, the progress tap
//   content                          MCP results and progress in our terms
//   defs                             a tool as the server declared it
//   config    -> error               McpServerConfig, ReconnectPolicy, secrets
//   error                            McpError
mod client;
mod config;
mod content;
mod defs;
mod error;
mod tool;
mod transport;

pub use client::{IDEMPOTENCY_KEY_META, McpClient};
pub use config::{DEFAULT_CONNECT_TIMEOUT, McpServerConfig, ReconnectPolicy};
pub use content::McpToolResult;
pub use error::McpError;
pub use tool::McpTool;

/// The MCP guide's code blocks, compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/mcp.md")]
struct McpGuide;
