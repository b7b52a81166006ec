//! Served agents over real HTTP on 127.0.0.1: as their builders configure them, and as the
//! serving guide shows them.
//!
//! - `own_approval`: an agent whose builder has its own `ToolApprovalHook` is served with
//!   its policy honoured: its stops are AG-UI interrupts that `resume` answers; a setup
//!   with two approval policies is refused by `AgUi::build()`.
//! - `redaction`: the hooks guide's redaction hook keeps e-mail addresses out of what a
//!   client receives, from a tool's progress and results and from an `AgentTool`'s inner
//!   agent.
//! - `walkthrough`: the curl walkthrough of `docs/serving.md`, its requests sent and its
//!   responses checked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod own_approval;
mod redaction;
mod walkthrough;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentscope::prelude::*;
use serde_json::json;

/// A `delete_files` tool that counts its runs.
fn delete_files(runs: &Arc<AtomicUsize>) -> impl Tool + use<> {
    let runs = Arc::clone(runs);
    tool_fn(
        "delete_files",
        "Deletes files matching a glob.",
        json!({"type": "object", "properties": {"glob": {"type": "string"}}, "required": ["glob"]}),
        move |input, _ctx| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(format!("deleted {}", input["glob"].as_str().unwrap_or("?")))
            }
        },
    )
}
