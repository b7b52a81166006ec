//! Large tool results: sent as a preview naming the stash id, read back with the
//! `retrieve_stashed` tool, the full text kept in memory; and the stash after a session is
//! loaded by another agent (another process) that never saw the result.

use std::sync::Arc;

use agentscope::context::{ContextWindowHook, EstimatedTokens, ToolResultLimit};
use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use agentscope::{AgentInfo, HookChain};
use agentscope_core::engine::{self, CallContext, events};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::{calls, result, sent, user};

/// 20,000 characters: `0123456789` 2,000 times.
fn page() -> String {
    "0123456789".repeat(2_000)
}

fn fetch() -> impl Tool {
    tool_fn(
        "fetch",
        "Fetches the page.",
        json!({"type": "object"}),
        |_input, _ctx| async { Ok(page()) },
    )
}

fn hook() -> ContextWindowHook {
    ContextWindowHook::new()
        .with_counter(EstimatedTokens::new())
        .with_tool_result_limit(ToolResultLimit::new(100, 20))
}

const PREVIEW: &str = "01234567890123456789\n[Truncated: the first 20 of 20000 characters are shown. The full result is stashed as \"c1\": call retrieve_stashed with {\"id\": \"c1\", \"offset\": 20} to read on.]";

#[tokio::test]
async fn large_results_become_previews_and_can_be_read_back() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "fetch", json!({})),
        ScriptedResponse::tool_call(
            "r1",
            "retrieve_stashed",
            json!({"id": "c1", "offset": 20, "length": 30}),
        ),
        ScriptedResponse::text("done"),
    ]);
    let context = hook();
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(fetch()).tool(context.retrieve_tool()))
        .hook(context.clone())
        .build()
        .unwrap();
    assert_eq!(agent.call("read the page").await.unwrap().text(), "done");

    let fetched = calls(&[("c1", "fetch", json!({}))]);
    assert_eq!(
        sent(&model, 1),
        [
            user("read the page"),
            fetched.clone(),
            result("c1", "fetch", PREVIEW)
        ]
    );
    let retrieved = "012345678901234567890123456789\n[Characters 20..50 of 20000 of the stashed result \"c1\". Call retrieve_stashed with {\"id\": \"c1\", \"offset\": 50} to read on.]";
    assert_eq!(
        sent(&model, 2),
        [
            user("read the page"),
            fetched,
            result("c1", "fetch", PREVIEW),
            calls(&[(
                "r1",
                "retrieve_stashed",
                json!({"id": "c1", "length": 30, "offset": 20})
            )]),
            // The retrieval tool's own results are never cut.
            result("r1", "retrieve_stashed", retrieved),
        ]
    );
    // Memory keeps the full result; the stash shares it.
    let memory = agent.memory().messages();
    assert_eq!(memory[2].tool_results()[0].text_output(), page());
    assert_eq!(context.stash().ids(), ["c1"]);
    assert_eq!(context.stash().get("c1").unwrap().chars, 20_000);
}

/// A second agent (a new process: new hook, new stash) loads the session: it sends the same
/// preview and its model can read the result it never saw.
#[tokio::test]
async fn the_stash_survives_a_session_reload() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonFileSessionStore::new(dir.path());
    let first_model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "fetch", json!({})),
        ScriptedResponse::text("fetched"),
    ]);
    let first = hook();
    let agent = ReActAgent::builder()
        .model(first_model.clone())
        .toolkit(Toolkit::new().tool(fetch()).tool(first.retrieve_tool()))
        .hook(first)
        .session(store.clone(), "s1")
        .build()
        .unwrap();
    agent.call("read the page").await.unwrap();

    let second_model = ScriptedModel::new([
        ScriptedResponse::tool_call(
            "r1",
            "retrieve_stashed",
            json!({"id": "c1", "offset": 19990}),
        ),
        ScriptedResponse::text("the end"),
    ]);
    let second = hook();
    assert!(second.stash().is_empty());
    let reloaded = ReActAgent::builder()
        .model(second_model.clone())
        .toolkit(Toolkit::new().tool(fetch()).tool(second.retrieve_tool()))
        .hook(second)
        .session(store, "s1")
        .build()
        .unwrap();
    reloaded.call("show the end").await.unwrap();
    let before = sent(&first_model, 1);
    let after = sent(&second_model, 0);
    assert_eq!(after[..3], before[..]);
    assert_eq!(
        sent(&second_model, 1).last().unwrap(),
        &result(
            "r1",
            "retrieve_stashed",
            "0123456789\n[Characters 19990..20000 of 20000 of the stashed result \"c1\": the end.]"
        )
    );
}

/// A call that resumes tool calls runs them before any model call: PreCall fills the stash
/// from the conversation, so a pending `retrieve_stashed` call finds its result.
#[tokio::test]
async fn pre_call_fills_the_stash_from_the_history() {
    let context = hook();
    let mut chain = HookChain::new();
    chain.push(context.clone());
    let mut call = CallContext::new(Arc::new(AgentInfo::new("assistant", "a1")));
    let history = vec![
        Msg::user("read the page"),
        crate::tool_calls(&[("c1", "fetch", json!({}))]),
        crate::tool_result("c1", "fetch", &page()),
        crate::tool_result("c9", "fetch", "short"),
    ];
    engine::chain(
        &chain,
        events::pre_call(call.info(), vec![], history, None),
        &mut call,
    )
    .await
    .unwrap();
    assert_eq!(context.stash().ids(), ["c1"]);
    let tool = context.retrieve_tool();
    let args = json!({"id": "c1", "length": 5});
    let ctx = ToolContext::new(ToolUseBlock::new("r1", "retrieve_stashed", args.clone()));
    let output = tool.call(args, ctx).await.unwrap();
    assert_eq!(
        output,
        ToolOutput::text(
            "01234\n[Characters 0..5 of 20000 of the stashed result \"c1\". Call retrieve_stashed with {\"id\": \"c1\", \"offset\": 5} to read on.]"
        )
    );
    let args = json!({"id": "c9"});
    let ctx = ToolContext::new(ToolUseBlock::new("r2", "retrieve_stashed", args.clone()));
    assert_eq!(
        tool.call(args, ctx).await.unwrap_err().to_string(),
        "no stashed result with id \"c9\" (stashed: [c1])"
    );
}
