//! What the server's test binaries share. Each binary uses a part of it.
#![allow(dead_code, clippy::panic, clippy::expect_used, clippy::unwrap_used)]

pub(crate) mod components;
pub(crate) mod events;
pub(crate) mod expected;
pub(crate) mod http;
// One copy of the guide's hook, with `agentscope`'s tests.
#[path = "../../../agentscope/tests/support/redaction.rs"]
pub(crate) mod redaction;
pub(crate) mod serve;
