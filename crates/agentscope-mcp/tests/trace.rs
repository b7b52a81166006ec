//! The MCP client carries the trace context, in a test binary of its own: the test reads
//! spans through a subscriber of its own (`tracing`'s per-thread default), and tracing's
//! per-callsite interest is process-wide, so the other MCP tests, calling tools without a
//! subscriber on other threads at the same moment, could leave a span's callsite marked
//! uninteresting (as seen once in the AG-UI server's tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

#[path = "../../agentscope-otel/tests/otel/in_memory.rs"]
mod in_memory;
#[path = "mcp/support.rs"]
mod support;
#[path = "mcp/trace.rs"]
mod trace;
