//! The engine: hook order and dispatch, event modifications, acting, goto, the summary,
//! stop/resume, the system message, the call context, interrupts, streaming, runtime hook
//! management,
//! properties of the hook chain, failure paths, auto traits, and what hooks do to tool
//! progress. One test binary (one
//! module per area) so that the suite links a few binaries instead of one per file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod acting;
mod async_send_sync;
mod call_context;
mod chain_props;
mod context_exceeded;
mod custom_reply;
mod errors;
mod goto;
mod hook_management;
mod interrupt;
mod model_layers;
mod modification;
mod ordering;
mod outcomes;
mod scripted_clones;
mod stop_resume;
mod streaming;
mod summary;
mod system_message;
mod tool_progress;
