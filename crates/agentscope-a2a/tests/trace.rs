//! One trace across agents, in a test binary of its own: its tests read spans through a
//! subscriber of their own (`tracing`'s per-thread default), and tracing's per-callsite
//! interest is process-wide, so the other A2A tests, serving without a subscriber on other
//! threads at the same moment, could leave a span's callsite marked uninteresting (as seen
//! once in the AG-UI server's tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

#[path = "a2a/http.rs"]
mod http;
#[path = "../../agentscope-otel/tests/otel/in_memory.rs"]
mod in_memory;
#[path = "a2a/support.rs"]
mod support;
#[path = "a2a/trace.rs"]
mod trace;
