//! An agent whose builder registers its own `ToolApprovalHook`: the server takes the hook
//! over (its policy decides, its stops become interrupts), and refuses a second policy.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::delete_files;
use crate::support::events::{TOOL_CALL_STEP, TOOL_RESULT_STEP, run_of, text_step, types};
use crate::support::http::{find, post, thread};
use crate::support::serve::{input, serve, user};

fn model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_files", json!({"glob": "*.log"})),
        ScriptedResponse::text("Deleted the logs."),
    ])
}

/// The hook made inside the factory, or one made outside and cloned into every builder (a
/// handle the application keeps): either way the server honours its policy, with a hook of
/// its own per run, so threads never share approval state.
#[tokio::test]
async fn the_agents_own_approval_hook_stops_the_run_with_an_interrupt() {
    for shared in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let model = model();
        let kept = ToolApprovalHook::new(ApprovalPolicy::tools(["delete_files"]));
        let factory = {
            let (runs, kept) = (Arc::clone(&runs), kept.clone());
            move || {
                let approvals = match shared {
                    true => kept.clone(),
                    false => ToolApprovalHook::new(ApprovalPolicy::tools(["delete_files"])),
                };
                ReActAgent::builder()
                    .model(model.clone())
                    .toolkit(Toolkit::new().tool(delete_files(&runs)))
                    .hook(approvals)
            }
        };
        let agui = AgUi::builder()
            .agent("assistant", AgentSpec::new(factory))
            .store(JsonFileSessionStore::new(dir.path()))
            .build()
            .unwrap();
        let server = serve(agui).await;

        let (status, events) = post(
            &server.base,
            &input("t1", "r1", json!([user("u1", "Delete the logs.")])),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            types(&events),
            run_of(&[TOOL_CALL_STEP]),
            "shared: {shared}"
        );
        let outcome = &find(&events, "RUN_FINISHED")["outcome"];
        assert_eq!(outcome["type"], "interrupt", "shared: {shared}: {outcome}");
        let interrupts = outcome["interrupts"].as_array().unwrap();
        assert_eq!(interrupts.len(), 1);
        assert_eq!(
            (
                &interrupts[0]["id"],
                &interrupts[0]["reason"],
                &interrupts[0]["message"]
            ),
            (
                &json!("c1"),
                &json!("tool_approval"),
                &json!("Approve calling delete_files with {\"glob\":\"*.log\"}?")
            )
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        let history = thread(&server.base, "t1").await;
        assert_eq!(history["awaits"], "resume");
        assert_eq!(history["interrupts"][0]["id"], "c1");
        // The application's handle saw nothing: the server's hook of the run stopped it.
        assert!(kept.pending().is_empty());

        let mut resume = input("t1", "r2", json!([]));
        resume["resume"] =
            json!([{"interruptId": "c1", "status": "resolved", "payload": {"approved": true}}]);
        let (status, events) = post(&server.base, &resume).await;
        assert_eq!(status, 200, "{events:?}");
        assert_eq!(
            types(&events),
            run_of(&[TOOL_RESULT_STEP, &text_step(1)]),
            "shared: {shared}"
        );
        assert_eq!(
            find(&events, "TOOL_CALL_RESULT")["content"],
            "deleted *.log"
        );
        let finished = find(&events, "RUN_FINISHED");
        assert_eq!(finished["outcome"], json!({"type": "success"}));
        assert_eq!(finished["result"]["text"], "Deleted the logs.");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

/// Two approval policies for one agent (the builder's hook and `AgentSpec::approval`, or
/// two hooks) are refused when the server is built, with what to do.
#[test]
fn two_approval_policies_are_refused_at_build() {
    let model = ScriptedModel::new([]);
    let with_hooks = move |count: usize| {
        let model = model.clone();
        move || {
            (0..count).fold(ReActAgent::builder().model(model.clone()), |builder, _| {
                builder.hook(ToolApprovalHook::new(ApprovalPolicy::all()))
            })
        }
    };
    let both = AgentSpec::new(with_hooks(1)).approval(ApprovalPolicy::tools(["delete_files"]));
    let err = AgUi::builder()
        .agent("assistant", both)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent 'assistant' has two approval policies: its builder registers a \
         ToolApprovalHook and its AgentSpec sets .approval(..); keep one (the server turns \
         the stops of either into AG-UI interrupts)"
    );
    let err = AgUi::builder()
        .agent("assistant", AgentSpec::new(with_hooks(2)))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent 'assistant' has two approval policies: its builder registers 2 \
         ToolApprovalHooks; keep one (or none, and set AgentSpec::approval)"
    );
    // A wrapped hook keeps its name but cannot be taken over.
    let model = ScriptedModel::new([]);
    let wrapped = AgentSpec::new(move || {
        ReActAgent::builder()
            .model(model.clone())
            .hook(Arc::new(ToolApprovalHook::new(ApprovalPolicy::all())))
    });
    let err = AgUi::builder()
        .agent("assistant", wrapped)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent 'assistant': its builder registers a hook named 'tool_approval' that is not \
         a ToolApprovalHook itself (a wrapper, an Arc), which the server cannot take over; \
         register the ToolApprovalHook itself, or give its policy to AgentSpec::approval"
    );
}

/// A factory that registers an approval hook only after the server was built (so the
/// server has no policy to answer it with) fails each run before it starts, rather than
/// reporting success while a call is pending.
#[tokio::test]
async fn a_hook_that_appears_after_build_fails_the_run_instead_of_succeeding() {
    let dir = tempfile::tempdir().unwrap();
    let built = Arc::new(AtomicUsize::new(0));
    let model = model();
    let factory = {
        let built = Arc::clone(&built);
        move || {
            let builder = ReActAgent::builder().model(model.clone());
            match built.fetch_add(1, Ordering::SeqCst) {
                0 => builder,
                _ => builder.hook(ToolApprovalHook::new(ApprovalPolicy::all())),
            }
        }
    };
    let agui = AgUi::builder()
        .agent("assistant", AgentSpec::new(factory))
        .store(JsonFileSessionStore::new(dir.path()))
        .build()
        .unwrap();
    let server = serve(agui).await;
    let (status, body) = post(
        &server.base,
        &input("t1", "r1", json!([user("u1", "Delete the logs.")])),
    )
    .await;
    assert_eq!(status, 500);
    // The client reads what failed and a correlation id; why (the hook the builder
    // registers) is in the server's log under that id.
    assert_eq!(body[0]["error"]["code"], "agent_build");
    let message = body[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("The agent cannot be built (error id ")
            && !message.contains("ToolApprovalHook"),
        "{message}"
    );
}
