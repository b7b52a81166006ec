//! What the benches share: the no-op async hook, and the agent of the ReAct-call benches.
#![allow(dead_code)]

use agentscope::ReActAgentBuilder;
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

/// An async hook that does nothing, interested in every event.
pub(crate) struct AsyncNoop;

impl Hook for AsyncNoop {
    async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
        Ok(())
    }
}

/// The agent of a ReAct call: an instant scripted model (one `echo` tool call, then the
/// answer `done`, cycling, requests not recorded) and an instant `echo` tool, with a
/// system prompt; `hooks` adds hooks before it is built.
pub(crate) fn react_agent(
    hooks: impl FnOnce(ReActAgentBuilder) -> ReActAgentBuilder,
) -> ReActAgent {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "echo", json!({"text": "pong"})),
        ScriptedResponse::text("done"),
    ])
    .cycling()
    .without_recording();
    let echo = tool_fn(
        "echo",
        "Echoes text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |input, _ctx| async move { Ok(input["text"].as_str().unwrap_or_default().to_owned()) },
    );
    let builder = ReActAgent::builder()
        .sys_prompt("You are a benchmark.")
        .model(model)
        .toolkit(Toolkit::new().tool(echo));
    hooks(builder).build().unwrap()
}
