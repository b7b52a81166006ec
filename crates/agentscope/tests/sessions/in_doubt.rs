//! Tool calls in doubt (recorded as running, their result never stored): each policy
//! (`Tell`, `Stop`, `RunAgain`), who chooses it (the tool, a hook at PreCall, the caller's
//! retry), the application's two resolutions of a stopped call, and the idempotency key a
//! retried call runs with.

use std::sync::{Arc, Mutex};

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::interrupt::INTERRUPTED_WHILE_RUNNING;
use agentscope::prelude::*;
use agentscope::session::{JsonFileSessionStore, SessionStore};
use agentscope::{BoxedHook, CallInput, InDoubt, ToolContext};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::store::temp_store;

/// The idempotency keys of the `pay` tool's runs, in order; its first run never finishes.
type Keys = Arc<Mutex<Vec<String>>>;

/// The `pay` tool: records each run's idempotency key; the first run hangs (its call is
/// dropped meanwhile: the process "dies"), later runs answer "paid".
fn pay(
    policy: Option<InDoubt>,
    keys: &Keys,
    started: &Arc<tokio::sync::Notify>,
) -> impl Tool + use<> {
    let (keys, started) = (keys.clone(), started.clone());
    let tool = tool_fn(
        "pay",
        "Pays.",
        json!({"type": "object"}),
        move |_input, ctx: ToolContext| {
            let (keys, started) = (keys.clone(), started.clone());
            async move {
                let first = {
                    let mut keys = keys.lock().unwrap();
                    keys.push(ctx.idempotency_key());
                    keys.len() == 1
                };
                if first {
                    started.notify_one();
                    std::future::pending::<()>().await;
                }
                Ok("paid")
            }
        },
    );
    match policy {
        Some(policy) => tool.in_doubt(policy),
        None => tool,
    }
}

fn agent_on(
    store: &JsonFileSessionStore,
    tool: impl Tool,
    model: ScriptedModel,
    hooks: Vec<BoxedHook>,
) -> ReActAgent {
    let mut builder = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(tool))
        .session(store.clone(), "s");
    for hook in hooks {
        builder = builder.hook(hook);
    }
    builder.build().unwrap()
}

/// Leaves session "s" with the `pay` call `p1` recorded as running and no result: the call
/// is dropped while the tool runs.
async fn leave_in_doubt(store: &JsonFileSessionStore, policy: Option<InDoubt>, keys: &Keys) {
    let started = Arc::new(tokio::sync::Notify::new());
    let model = ScriptedModel::new([ScriptedResponse::tool_call("p1", "pay", json!({}))]);
    let agent = agent_on(store, pay(policy, keys, &started), model, Vec::new());
    tokio::select! {
        _ = agent.call("Pay the invoice.") => panic!("the call cannot finish"),
        () = started.notified() => {}
    }
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.running_tools, ["p1"]);
}

/// A fresh agent ("after the restart") on session "s" with the `pay` tool of `policy`.
fn fresh(
    store: &JsonFileSessionStore,
    policy: Option<InDoubt>,
    keys: &Keys,
    model: &ScriptedModel,
    hooks: Vec<BoxedHook>,
) -> ReActAgent {
    agent_on(
        store,
        pay(policy, keys, &Arc::new(tokio::sync::Notify::new())),
        model.clone(),
        hooks,
    )
}

/// `Stop`: the resume ends at once with the call in doubt, nothing runs, nothing is stored,
/// the model is not asked; resuming again stops again.
#[tokio::test]
async fn a_stop_policy_ends_the_call_with_the_calls_in_doubt_and_changes_nothing() {
    let (_dir, store) = temp_store();
    let keys = Keys::default();
    leave_in_doubt(&store, Some(InDoubt::Stop), &keys).await;
    let before = store.load("s").await.unwrap().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Paid.")]);
    let agent = fresh(&store, Some(InDoubt::Stop), &keys, &model, Vec::new());

    for _ in 0..2 {
        let reply = agent.call(()).await.unwrap();
        assert_eq!(reply.generate_reason(), Some(GenerateReason::ToolInDoubt));
        let ids: Vec<&str> = reply
            .tool_uses()
            .iter()
            .map(|call| call.id.as_str())
            .collect();
        assert_eq!(ids, ["p1"]);
    }
    assert_eq!(keys.lock().unwrap().len(), 1, "the tool did not run again");
    assert!(model.requests().is_empty(), "the model was not asked");
    let after = store.load("s").await.unwrap().unwrap();
    assert_eq!(after.messages, before.messages);
    assert_eq!(after.running_tools, ["p1"]);
}

/// A stopped call resolved with a result the application verified: the model reads that
/// result, the tool does not run again, the call is no longer running.
#[tokio::test]
async fn a_call_in_doubt_resolved_with_a_verified_result_continues_with_it() {
    let (_dir, store) = temp_store();
    let keys = Keys::default();
    leave_in_doubt(&store, Some(InDoubt::Stop), &keys).await;
    let model = ScriptedModel::new([ScriptedResponse::text("Paid.")]);
    let agent = fresh(&store, Some(InDoubt::Stop), &keys, &model, Vec::new());
    assert_eq!(
        agent.call(()).await.unwrap().generate_reason(),
        Some(GenerateReason::ToolInDoubt)
    );

    let verified = ToolResultBlock::text("p1", "pay", "paid (receipt 42, checked by the app)");
    let reply = agent.call(Msg::tool_result(verified)).await.unwrap();
    assert_eq!(reply.text(), "Paid.");
    assert_eq!(keys.lock().unwrap().len(), 1);
    let sent = &model.requests()[0].messages;
    let last = sent.last().unwrap().tool_results()[0].text_output();
    assert_eq!(last, "paid (receipt 42, checked by the app)");
    let stored = store.load("s").await.unwrap().unwrap();
    assert!(stored.running_tools.is_empty());
}

/// A stopped call the application retries runs again with the idempotency key of its first
/// attempt; the key is the one a context for that call in that session gives.
#[tokio::test]
async fn a_retried_call_runs_again_with_the_key_of_its_first_attempt() {
    let (_dir, store) = temp_store();
    let keys = Keys::default();
    leave_in_doubt(&store, Some(InDoubt::Stop), &keys).await;
    let model = ScriptedModel::new([ScriptedResponse::text("Paid.")]);
    let agent = fresh(&store, Some(InDoubt::Stop), &keys, &model, Vec::new());

    let reply = agent
        .call(CallInput::default().retry(["p1"]))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Paid.");
    let keys = keys.lock().unwrap().clone();
    let expected = ToolContext::new(ToolUseBlock::new("p1", "pay", json!({})))
        .with_scope("s")
        .idempotency_key();
    assert_eq!(keys, [expected.clone(), expected]);
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.messages[2].tool_results()[0].text_output(), "paid");
    assert!(stored.running_tools.is_empty());
}

/// A retry of a call that is not in doubt fails before anything runs or is stored.
#[tokio::test]
async fn retrying_a_call_that_is_not_in_doubt_is_invalid_input() {
    let (_dir, store) = temp_store();
    let keys = Keys::default();
    leave_in_doubt(&store, Some(InDoubt::Stop), &keys).await;
    let before = store.load("s").await.unwrap().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Paid.")]);
    let agent = fresh(&store, Some(InDoubt::Stop), &keys, &model, Vec::new());

    let error = agent
        .call(CallInput::default().retry(["p9"]))
        .await
        .unwrap_err();
    assert!(
        matches!(error, AgentError::InvalidInput { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "tool call 'p9' cannot be retried: it is not in doubt (in doubt: [p1])"
    );
    assert!(model.requests().is_empty());
    assert_eq!(keys.lock().unwrap().len(), 1);
    assert_eq!(
        store.load("s").await.unwrap().unwrap().revision,
        before.revision
    );
}

/// `Tell` (the default of a tool that declares nothing) and `RunAgain`.
#[tokio::test]
async fn tell_answers_the_call_and_run_again_runs_it_with_the_same_key() {
    for policy in [None, Some(InDoubt::Tell), Some(InDoubt::RunAgain)] {
        let (_dir, store) = temp_store();
        let keys = Keys::default();
        leave_in_doubt(&store, policy, &keys).await;
        let model = ScriptedModel::new([ScriptedResponse::text("Done.")]);
        let agent = fresh(&store, policy, &keys, &model, Vec::new());
        assert_eq!(agent.call(()).await.unwrap().text(), "Done.");
        let stored = store.load("s").await.unwrap().unwrap();
        let result = stored.messages[2].tool_results()[0].text_output();
        let keys = keys.lock().unwrap().clone();
        if policy == Some(InDoubt::RunAgain) {
            assert_eq!(result, "paid", "{policy:?}");
            assert_eq!(keys.len(), 2);
            assert_eq!(keys[0], keys[1]);
        } else {
            assert_eq!(result, INTERRUPTED_WHILE_RUNNING, "{policy:?}");
            assert_eq!(keys.len(), 1);
        }
    }
}

/// A hook's choice at PreCall applies to a tool that declares nothing; a tool's own policy
/// wins over it.
#[tokio::test]
async fn a_hook_chooses_for_tools_that_declare_nothing() {
    let stop_all = || {
        vec![BoxedHook::new(hook_fn(|event: &mut HookEvent| {
            if let HookEvent::PreCall(e) = event {
                e.set_in_doubt("p1", InDoubt::Stop);
            }
            Ok(())
        }))]
    };
    for (declared, stops) in [(None, true), (Some(InDoubt::Tell), false)] {
        let (_dir, store) = temp_store();
        let keys = Keys::default();
        leave_in_doubt(&store, declared, &keys).await;
        let model = ScriptedModel::new([ScriptedResponse::text("Done.")]);
        let agent = fresh(&store, declared, &keys, &model, stop_all());
        let reason = agent.call(()).await.unwrap().generate_reason();
        let expected = if stops {
            GenerateReason::ToolInDoubt
        } else {
            GenerateReason::ModelStop
        };
        assert_eq!(reason, Some(expected), "{declared:?}");
    }
}

/// The approval hook stops for an approved call in doubt (its tool declares nothing); the
/// application resolves it without being asked to approve again.
#[tokio::test]
async fn an_approved_call_in_doubt_stops_for_the_application() {
    let (_dir, store) = temp_store();
    let keys = Keys::default();
    let started = Arc::new(tokio::sync::Notify::new());
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["pay"]));
    let model = ScriptedModel::new([ScriptedResponse::tool_call("p1", "pay", json!({}))]);
    let agent = agent_on(
        &store,
        pay(None, &keys, &started),
        model,
        vec![BoxedHook::new(approvals.clone())],
    );
    let stopped = agent.call("Pay the invoice.").await.unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    approvals.approve("p1").unwrap();
    tokio::select! {
        _ = agent.call(()) => panic!("the call cannot finish"),
        () = started.notified() => {}
    }
    drop(agent);

    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["pay"]));
    let model = ScriptedModel::new([ScriptedResponse::text("Paid.")]);
    let agent = fresh(
        &store,
        None,
        &keys,
        &model,
        vec![BoxedHook::new(approvals.clone())],
    );
    let reply = agent.call(()).await.unwrap();
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ToolInDoubt));
    assert!(approvals.pending().is_empty(), "no approval asked again");
    let reply = agent
        .call(CallInput::default().retry(["p1"]))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Paid.");
    let keys = keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
}

/// A parallel batch stores each result as soon as it and the results before it are in: a
/// crash while the slower call runs keeps the faster one's result, and leaves only the
/// slower call in doubt.
#[tokio::test]
async fn a_parallel_batch_stores_each_result_as_it_settles() {
    let (_dir, store) = temp_store();
    let started = Arc::new(tokio::sync::Notify::new());
    let quick = tool_fn(
        "quick",
        "Answers at once.",
        json!({"type": "object"}),
        |_input, _ctx| async { Ok("quick done") },
    );
    let slow = {
        let started = started.clone();
        tool_fn(
            "slow",
            "Never answers.",
            json!({"type": "object"}),
            move |_input, _ctx| {
                let started = started.clone();
                async move {
                    started.notify_one();
                    std::future::pending::<()>().await;
                    Ok("never")
                }
            },
        )
    };
    let model = ScriptedModel::new([ScriptedResponse::tool_calls([
        ("q1", "quick", json!({})),
        ("s1", "slow", json!({})),
    ])]);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(quick).tool(slow).parallel(true))
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let mut call = Box::pin(agent.call("Do both."));
    // Both started together; the quick one's result is stored while the slow one runs.
    tokio::select! {
        _ = &mut call => panic!("the call cannot finish"),
        () = started.notified() => {}
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let stored = loop {
        tokio::select! {
            _ = &mut call => panic!("the call cannot finish"),
            () = tokio::time::sleep(std::time::Duration::from_millis(5)) => {}
        }
        let stored = store.load("s").await.unwrap().unwrap();
        if stored.messages.len() == 3 || std::time::Instant::now() > deadline {
            break stored;
        }
    };
    assert_eq!(
        stored.messages[2].tool_results()[0].text_output(),
        "quick done"
    );
    assert_eq!(stored.running_tools, ["s1"]);
    drop(call);

    let model = ScriptedModel::new([ScriptedResponse::text("Done.")]);
    let fresh = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().parallel(true))
        .session(store.clone(), "s")
        .build()
        .unwrap();
    assert_eq!(fresh.call(()).await.unwrap().text(), "Done.");
    let stored = store.load("s").await.unwrap().unwrap();
    let results: Vec<(String, String)> = stored
        .messages
        .iter()
        .flat_map(Msg::tool_results)
        .map(|result| (result.id.to_string(), result.text_output()))
        .collect();
    assert_eq!(
        results,
        [
            ("q1".to_owned(), "quick done".to_owned()),
            ("s1".to_owned(), INTERRUPTED_WHILE_RUNNING.to_owned())
        ]
    );
}

/// Two approved calls in a sequential batch; the process dies while the first runs. The
/// second one's decision is still stored: a new process does not ask for it again, and once
/// the first is resolved, the second runs.
#[tokio::test]
async fn a_crash_in_an_approved_batch_keeps_the_decisions_of_the_calls_not_started() {
    let (_dir, store) = temp_store();
    let keys = Keys::default();
    let started = Arc::new(tokio::sync::Notify::new());
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["pay"]));
    let model = ScriptedModel::new([ScriptedResponse::tool_calls([
        ("p1", "pay", json!({})),
        ("p2", "pay", json!({})),
    ])]);
    let agent = agent_on(
        &store,
        pay(None, &keys, &started),
        model,
        vec![BoxedHook::new(approvals.clone())],
    );
    agent.call("Pay both invoices.").await.unwrap();
    approvals.approve("p1").unwrap();
    approvals.approve("p2").unwrap();
    tokio::select! {
        _ = agent.call(()) => panic!("the call cannot finish"),
        () = started.notified() => {}
    }
    drop(agent);

    // A new process: nothing awaits a person.
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.running_tools, ["p1"]);
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["pay"]));
    approvals.restore_state(&stored).unwrap();
    assert!(approvals.pending().is_empty(), "{:?}", approvals.pending());
    let model = ScriptedModel::new([ScriptedResponse::text("Both paid.")]);
    let agent = fresh(
        &store,
        None,
        &keys,
        &model,
        vec![BoxedHook::new(approvals.clone())],
    );
    let reply = agent.call(()).await.unwrap();
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ToolInDoubt));
    let ids: Vec<&str> = reply
        .tool_uses()
        .iter()
        .map(|call| call.id.as_str())
        .collect();
    assert_eq!(ids, ["p1"]);

    let verified = ToolResultBlock::text("p1", "pay", "paid (receipt 1)");
    let reply = agent.call(Msg::tool_result(verified)).await.unwrap();
    assert_eq!(reply.text(), "Both paid.");
    assert_eq!(
        keys.lock().unwrap().len(),
        2,
        "p1 once (before the crash), p2 once"
    );
    let stored = store.load("s").await.unwrap().unwrap();
    let results: Vec<String> = stored
        .messages
        .iter()
        .flat_map(Msg::tool_results)
        .map(ToolResultBlock::text_output)
        .collect();
    assert_eq!(results, ["paid (receipt 1)", "paid"]);
    assert!(
        stored.hooks.get(ToolApprovalHook::NAME).is_none(),
        "every decision spent"
    );
}
