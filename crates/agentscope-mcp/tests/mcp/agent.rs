//! MCP tools in a ReAct agent: a full run where a scripted model calls an MCP tool and
//! answers from its result, PreActing hooks that edit and deny MCP calls, and the
//! `ToolApprovalHook` holding MCP calls by tool name and by server.

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::{ModelRequest, ToolResultBlock};
use agentscope_mcp::McpClient;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::support::{self, last_results, within};

async fn everything() -> Option<McpClient> {
    let config = support::everything_stdio()?;
    Some(
        within(60, McpClient::connect(config.prefix("everything_")))
            .await
            .unwrap(),
    )
}

fn tool_use_ids(calls: &[ToolUseBlock]) -> Vec<&str> {
    calls.iter().map(|call| call.id.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn a_react_run_calls_an_mcp_tool_and_answers_from_its_result() {
    let Some(client) = everything().await else {
        return;
    };
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("call_1", "everything_get-sum", json!({"a": 6, "b": 7})),
        ScriptedResponse::text("6 + 7 = 13."),
    ]);
    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You add numbers with tools.")
        .model(model.clone())
        .toolkit(Toolkit::new().tools(client.tools()))
        .build()
        .unwrap();
    let reply = within(60, agent.call("What is 6 + 7?")).await.unwrap();
    assert_eq!(reply.text(), "6 + 7 = 13.");

    let requests: Vec<ModelRequest> = model.requests();
    assert_eq!(requests.len(), 2);
    // The model was offered the server's tools, as declared.
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, client.tool_names());
    let sum = requests[0]
        .tools
        .iter()
        .find(|t| t.name == "everything_get-sum")
        .unwrap();
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
    let Some(client) = everything().await else {
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
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tools(client.tools()))
        .hook(gate)
        .build()
        .unwrap();
    assert_eq!(within(60, agent.call("go")).await.unwrap().text(), "done");
    assert_eq!(
        last_results(&model.requests()[1]),
        [
            ToolResultBlock::text("c1", "everything_echo", "Echo: edited by a hook"),
            ToolResultBlock::error("c2", "everything_get-env", "Denied: no environment dumps."),
        ]
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn approval_by_tool_name_holds_an_mcp_call_until_approved() {
    let Some(client) = everything().await else {
        return;
    };
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["everything_get-sum"]));
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "everything_get-sum", json!({"a": 2, "b": 2})),
        ScriptedResponse::text("2 + 2 = 4."),
    ]);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tools(client.tools()))
        .hook(approvals.clone())
        .build()
        .unwrap();
    let stopped = within(60, agent.call("What is 2 + 2?")).await.unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(tool_use_ids(&approvals.pending()), ["c1"]);
    assert_eq!(model.request_count(), 1);
    approvals.approve("c1").unwrap();
    let reply = within(60, agent.call(())).await.unwrap();
    assert_eq!(reply.text(), "2 + 2 = 4.");
    assert_eq!(
        last_results(&model.requests()[1]),
        [ToolResultBlock::text(
            "c1",
            "everything_get-sum",
            "The sum of 2 and 2 is 4."
        )]
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn approval_by_server_holds_every_tool_of_that_server_only() {
    let Some(client) = everything().await else {
        return;
    };
    let Some(fixture) = support::fixture_stdio() else {
        return;
    };
    let fixture = within(60, McpClient::connect(fixture.prefix("fx_")))
        .await
        .unwrap();
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
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tools(client.tools()).tools(fixture.tools()))
        .hook(approvals.clone())
        .build()
        .unwrap();
    within(60, agent.call("go")).await.unwrap();
    // Both of everything's calls wait; the fixture's does not need approval.
    assert_eq!(tool_use_ids(&approvals.pending()), ["c1", "c3"]);
    approvals.reject("c1", "not now").unwrap();
    approvals.approve("c3").unwrap();
    assert_eq!(within(60, agent.call(())).await.unwrap().text(), "done");
    assert_eq!(
        last_results(&model.requests()[1]),
        [
            ToolResultBlock::error("c1", "everything_echo", "Rejected by the user: not now"),
            ToolResultBlock::text("c2", "fx_cancellations", "[]"),
            ToolResultBlock::text("c3", "everything_get-sum", "The sum of 1 and 1 is 2."),
        ]
    );
    client.close().await;
    fixture.close().await;
}
