//! One trace across a client and the server, in a test binary of its own: its tests read
//! spans through a subscriber of their own (`tracing`'s per-thread default), and tracing's
//! per-callsite interest is process-wide, so tests of other binaries' kind, making runs
//! without a subscriber on other threads at the same moment, could leave a span's callsite
//! marked uninteresting (seen once in the `server` binary: "no span agui_run").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../agentscope-otel/tests/otel/in_memory.rs"]
mod in_memory;
mod support;
#[path = "server/trace_context.rs"]
mod trace_context;
