//! agentscope-mcp against real MCP servers: `@modelcontextprotocol/server-everything` over
//! stdio and streamable HTTP, `@modelcontextprotocol/server-filesystem` (whose results repeat
//! their text as structured content), and a small fixture server on the official TypeScript SDK for
//! what server-everything cannot show on demand (a changing tool list, a tool that reports
//! cancellation). Grouped by behaviour: listing, calls and content, progress, cancellation,
//! failures and reconnection, refresh, agents and hooks (trace context: `tests/trace.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agent;
mod calls;
mod cancel;
mod failures;
mod listing;
mod progress;
mod refresh;
mod support;
