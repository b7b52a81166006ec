//! Long conversations (`agentscope::context`): token counting and context windows
//! (`counting`), the sliding window and the hard limit (`sliding`), tool results sent as
//! previews with the stash and its retrieval tool (`stash`), summaries of the oldest turns,
//! sessions and forced compaction (`summary`), reports, tracing and the hook's place in the
//! chain (`reports`), and the invariants of every compaction as a property test (`props`).
//!
//! Every test asserts the exact messages the model received, in order.
#![cfg(feature = "context")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod counting;
mod props;
mod reports;
mod sliding;
mod stash;
mod summary;

use agentscope::context::{ContextWindowHook, EstimatedTokens};
use agentscope::prelude::*;
use agentscope::{InMemoryMemory, ReActAgentBuilder};
use agentscope_test::ScriptedModel;
use serde_json::Value;

use crate::support::describe::brief;

/// An agent playing `model` over a memory holding `history`, compacted by `hook` counting
/// with `EstimatedTokens` (6 tokens a message of [`exchanges`]).
pub(crate) fn compacted(
    model: &ScriptedModel,
    history: Vec<Msg>,
    hook: ContextWindowHook,
) -> ReActAgentBuilder {
    ReActAgent::builder()
        .model(model.clone())
        .memory(InMemoryMemory::with_messages(history))
        .hook(hook.with_counter(EstimatedTokens::new()))
}

/// Request `n` of `model` (0-based), one line per message (`role: blocks`).
pub(crate) fn sent(model: &ScriptedModel, n: usize) -> Vec<String> {
    model.requests()[n]
        .messages
        .iter()
        .map(brief::describe)
        .collect()
}

pub(crate) fn user(text: &str) -> String {
    format!("user: text {text:?}")
}

pub(crate) fn assistant(text: &str) -> String {
    format!("assistant: text {text:?}")
}

pub(crate) fn calls(calls: &[(&str, &str, Value)]) -> String {
    let blocks: Vec<String> = calls
        .iter()
        .map(|(id, name, input)| format!("tool_use {id} {name} {input}"))
        .collect();
    format!("assistant: {}", blocks.join(" | "))
}

pub(crate) fn result(id: &str, name: &str, text: &str) -> String {
    format!("tool: tool_result {id} {name} {text:?}")
}

/// `n` exchanges of 8-character texts (`ask 0000`, `say 0000`, ...): 6 tokens per message
/// with `EstimatedTokens` (2 for the text, 4 of overhead).
pub(crate) fn exchanges(n: usize) -> Vec<Msg> {
    (0..n)
        .flat_map(|i| [Msg::user(ask(i)), Msg::assistant(say(i))])
        .collect()
}

pub(crate) fn ask(i: usize) -> String {
    format!("ask {i:04}")
}

pub(crate) fn say(i: usize) -> String {
    format!("say {i:04}")
}

/// An assistant message with these tool calls.
pub(crate) fn tool_calls(calls: &[(&str, &str, Value)]) -> Msg {
    let mut builder = Msg::builder().role(Role::Assistant).name("assistant");
    for (id, name, input) in calls {
        builder = builder.block(ToolUseBlock::new(*id, *name, input.clone()));
    }
    builder.build()
}

/// A tool message with one result.
pub(crate) fn tool_result(id: &str, name: &str, text: &str) -> Msg {
    Msg::tool_result(ToolResultBlock::text(id, name, text))
}
