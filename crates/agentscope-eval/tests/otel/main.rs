//! The OpenTelemetry side of an evaluation, exported through agentscope-otel's pipeline
//! (`events`). A binary of its own: its scoped `tracing` dispatcher would race with the
//! callsite interest cache of tests running on other threads without one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod events;
#[path = "../../../agentscope-otel/tests/otel/in_memory.rs"]
mod in_memory;
