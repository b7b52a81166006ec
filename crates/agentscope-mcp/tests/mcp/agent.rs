//! MCP tools in a ReAct agent: a full run where a scripted model calls an MCP tool and
//! answers from its result, PreActing hooks that edit and deny MCP calls, and the
//! `ToolApprovalHook` holding MCP calls by tool name and by server, and the call's
//! idempotency key reaching the server in the request's `_meta`.

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::{ModelRequest, ToolResultBlock};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::support::{
    self, agent_on, assert_read, calls_then_answers, last_results, offered, offered_names, reply,
    tools_of,
};

fn tool_use_ids(calls: &[ToolUseBlock]) -> Vec<&str> {
    calls.iter().map(|call| call.id.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn a_react_run_calls_an_mcp_tool_and_answers_from_its_result() {
    let Some(client) = support::everything("everything_").await else {
        return;
    };
    let model = calls_then_answers(
        "call_1",
        "everything_get-sum",
        json!({"a": 6, "b": 7}),
        "6 + 7 = 13.",
    );
    let agent = agent_on(&model, tools_of(&client))
        .name("assistant")
        .sys_prompt("You add numbers with tools.")
        .build()
        .unwrap();
    assert_eq!(reply(&agent, "What is 6 + 7?").await.text(), "6 + 7 = 13.");

    let requests: Vec<ModelRequest> = model.requests();
    assert_eq!(requests.len(), 2);
    // The model was offered the server's tools, as declared.
    assert_eq!(offered_names(&requests[0]), client.tool_names());
    let sum = offered(&requests[0], "everything_get-sum");
    assert_eq!(sum.description, "Returns the sum of two numbers");
    assert_eq!(sum.parameters["required"], json!(["a", "b"]));
    // Its second input: system, question, its own call, the server's result.
    let second = &requests[1].messages;
    assert_eq!(second.len(), 4);
    assert_eq!(second[0].role, Role::System);
    assert_eq!(second[0].text(), "You add numbers with tools.");
    assert_eq!(second[1].role, Role::User);
    assert_eq!(second[1].text(), "What is 6 + 7?");
    assert_eq!(second[2].role, Role::Assistant);
    assert_eq!(
        second[2].tool_uses(),
        [&ToolUseBlock::new(
            "call_1",
            "everything_get-sum",
            json!({"a": 6, "b": 7})
        )]
    );
    assert_eq!(
        last_results(&requests[1]),
        [ToolResultBlock::text(
            "call_1",
            "everything_get-sum",
            "The sum of 6 and 7 is 13."
        )]
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn pre_acting_hooks_edit_and_deny_mcp_calls() {
    let Some(client) = support::everything("everything_").await else {
        return;
    };
    let gate = hook_fn(|event: &mut HookEvent| {
        if let HookEvent::PreActing(pre) = event {
            match pre.tool_use().name.as_str() {
                "everything_echo" => {
                    let mut edited = pre.tool_use().clone();
                    edited.input = json!({"message": "edited by a hook"}).into();
                    pre.set_tool_use(edited)?;
                }
                "everything_get-env" => {
                    pre.skip_with(ToolResultBlock::error(
                        "",
                        "",
                        "Denied: no environment dumps.",
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    })
    .with_interests(HookEventType::PreActing);
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ("c1", "everything_echo", json!({"message": "original"})),
            ("c2", "everything_get-env", json!({})),
        ]),
        ScriptedResponse::text("done"),
    ]);
    let agent = agent_on(&model, tools_of(&client))
        .hook(gate)
        .build()
        .unwrap();
    assert_eq!(reply(&agent, "go").await.text(), "done");
    assert_read(
        &model,
        1,
        &[
            ToolResultBlock::text("c1", "everything_echo", "Echo: edited by a hook"),
            ToolResultBlock::error("c2", "everything_get-env", "Denied: no environment dumps."),
        ],
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn approval_by_tool_name_holds_an_mcp_call_until_approved() {
    let Some(client) = support::everything("everything_").await else {
        return;
    };
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["everything_get-sum"]));
    let model = calls_then_answers(
        "c1",
        "everything_get-sum",
        json!({"a": 2, "b": 2}),
        "2 + 2 = 4.",
    );
    let agent = agent_on(&model, tools_of(&client))
        .hook(approvals.clone())
        .build()
        .unwrap();
    let stopped = reply(&agent, "What is 2 + 2?").await;
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(tool_use_ids(&approvals.pending()), ["c1"]);
    assert_eq!(model.request_count(), 1);
    approvals.approve("c1").unwrap();
    assert_eq!(reply(&agent, ()).await.text(), "2 + 2 = 4.");
    assert_read(
        &model,
        1,
        &[ToolResultBlock::text(
            "c1",
            "everything_get-sum",
            "The sum of 2 and 2 is 4.",
        )],
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn approval_by_server_holds_every_tool_of_that_server_only() {
    let Some(client) = support::everything("everything_").await else {
        return;
    };
    let Some(fixture) = support::fixture("fx_").await else {
        return;
    };
    let approvals = ToolApprovalHook::new(ApprovalPolicy::when({
        let client = client.clone();
        move |call| client.has_tool(&call.name)
    }));
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ("c1", "everything_echo", json!({"message": "hi"})),
            ("c2", "fx_cancellations", json!({})),
            ("c3", "everything_get-sum", json!({"a": 1, "b": 1})),
        ]),
        ScriptedResponse::text("done"),
    ]);
    let agent = agent_on(&model, tools_of(&client).tools(fixture.tools()))
        .hook(approvals.clone())
        .build()
        .unwrap();
    reply(&agent, "go").await;
    // Both of everything's calls wait; the fixture's does not need approval.
    assert_eq!(tool_use_ids(&approvals.pending()), ["c1", "c3"]);
    approvals.reject("c1", "not now").unwrap();
    approvals.approve("c3").unwrap();
    assert_eq!(reply(&agent, ()).await.text(), "done");
    assert_read(
        &model,
        1,
        &[
            ToolResultBlock::error("c1", "everything_echo", "Rejected by the user: not now"),
            ToolResultBlock::text("c2", "fx_cancellations", "[]"),
            ToolResultBlock::text("c3", "everything_get-sum", "The sum of 1 and 1 is 2."),
        ],
    );
    client.close().await;
    fixture.close().await;
}

/// The server receives the tool call's idempotency key in `_meta`
/// (`io.agentscope/idempotency-key`): the key the agent's tool context gives that call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn the_server_receives_the_calls_idempotency_key() {
    let Some(fixture) = support::fixture("fx_").await else {
        return;
    };
    let model = calls_then_answers("k1", "fx_idempotency-key", json!({}), "ok");
    let agent = agent_on(&model, tools_of(&fixture))
        .id("agent-7")
        .build()
        .unwrap();
    assert_eq!(reply(&agent, "go").await.text(), "ok");
    let call = ToolUseBlock::new("k1", "fx_idempotency-key", json!({}));
    let key = agentscope::ToolContext::new(call)
        .with_scope("agent-7")
        .idempotency_key();
    assert_eq!(
        agentscope_mcp::IDEMPOTENCY_KEY_META,
        "io.agentscope/idempotency-key"
    );
    assert_read(
        &model,
        1,
        &[ToolResultBlock::text("k1", "fx_idempotency-key", key)],
    );
    fixture.close().await;
}
