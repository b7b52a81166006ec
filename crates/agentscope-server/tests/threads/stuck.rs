//! The ways a thread used to get stuck for good (every request refused: `resume` with
//! `unknown_interrupt`, a new message with `PendingToolCalls`, a run without messages with
//! `no_new_message`), each reproduced, then continued.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentscope::hooks::ApprovalPolicy;
use agentscope::prelude::*;
use agentscope::{BoxedHook, ContentBlock};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;
use tokio::sync::Notify;

use crate::support::events::{TOOL_RESULT_STEP, run_of, text_step, types};
use crate::support::http::{assert_refused, eventually, find, post, run_until, thread};
use crate::support::serve::user;
use crate::{
    Payments, answer, asks_to_pay, guarded, in_doubt_interrupt, input, leave_in_doubt, resume,
    server, stored,
};

/// Stops the first tool call it sees at PreActing for good: the process "dies" after the
/// call's decision was stored and before its tool was recorded as running.
#[derive(Clone, Default)]
struct DiesBeforeTheTool {
    done: Arc<AtomicBool>,
    reached: Arc<Notify>,
}

impl Hook for DiesBeforeTheTool {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        if matches!(event, HookEvent::PreActing(_)) && !self.done.swap(true, Ordering::SeqCst) {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

/// Checks that the thread awaits a run without new messages and nothing else, then runs it:
/// `pay` runs once, and the model answers `answer`.
async fn continues_with_a_run(base: &str, thread_id: &str, payments: &Payments, answer: &str) {
    // A new message would leave the calls pending: it is refused before anything runs.
    assert_refused(
        base,
        &input(thread_id, json!([user("u2", "Hello?")])),
        409,
        "calls_pending",
    )
    .await;
    let history = thread(base, thread_id).await;
    assert_eq!(
        (&history["interrupts"], &history["awaits"]),
        (&json!([]), &json!("run")),
        "{history}"
    );
    let runs = payments.keys().len();
    let (status, events) = post(base, &input(thread_id, json!([]))).await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(types(&events), run_of(&[TOOL_RESULT_STEP, &text_step(1)]));
    assert_eq!(
        find(&events, "TOOL_CALL_RESULT")["content"],
        "paid invoice 7"
    );
    assert_eq!(find(&events, "RUN_FINISHED")["result"]["text"], answer);
    assert_eq!(payments.keys().len(), runs + 1, "pay ran once");
    assert_eq!(thread(base, thread_id).await["awaits"], "message");
}

#[tokio::test]
async fn a_decision_stored_before_its_call_started_continues_with_a_run_without_messages() {
    let dir = tempfile::tempdir().unwrap();
    let payments = Payments::default();
    let model = ScriptedModel::new([asks_to_pay(), ScriptedResponse::text("Paid.")]);
    let dies = DiesBeforeTheTool::default();
    let hooks = vec![BoxedHook::new(dies.clone())];
    let server = server(dir.path(), &model, &payments, guarded(), hooks).await;
    post(
        &server.base,
        &input("t1", json!([user("u1", "Pay invoice 7.")])),
    )
    .await;
    let reached = dies.reached.notified();
    let running = run_until(
        &server.base,
        &resume("t1", answer("p1", json!({"approved": true}))),
        "RUN_STARTED",
    )
    .await;
    reached.await;
    drop(running);
    eventually("the run was not cancelled", || server.agui.running() == 0).await;

    // The stuck state: the decision is stored, the call is pending and not running.
    let state = stored(dir.path(), "t1").await;
    assert!(state.running_tools.is_empty());
    assert!(
        state.hooks.contains_key("tool_approval"),
        "{:?}",
        state.hooks
    );
    let asked = state.messages.last().unwrap();
    assert!(matches!(&asked.content[..], [ContentBlock::ToolUse(call)] if call.id == "p1"));
    assert!(payments.keys().is_empty());
    // There is nothing to answer any more.
    assert_refused(
        &server.base,
        &resume("t1", answer("p1", json!({"approved": true}))),
        400,
        "unknown_interrupt",
    )
    .await;

    continues_with_a_run(&server.base, "t1", &payments, "Paid.").await;
}

#[tokio::test]
async fn a_call_the_approval_policy_no_longer_guards_continues_with_a_run_without_messages() {
    for (case, policy) in [
        ("another", Some(ApprovalPolicy::tools(["refund"]))),
        ("none", None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let payments = Payments::default();
        // The call awaits approval ...
        let before = server(
            dir.path(),
            &ScriptedModel::new([asks_to_pay()]),
            &payments,
            guarded(),
            Vec::new(),
        )
        .await;
        post(
            &before.base,
            &input("t1", json!([user("u1", "Pay invoice 7.")])),
        )
        .await;
        let asked = thread(&before.base, "t1").await;
        assert_eq!(asked["interrupts"][0]["reason"], "tool_approval");
        // ... when the server restarts with a policy that does not guard `pay`.
        drop(before);
        let model =
            ScriptedModel::new([ScriptedResponse::text(format!("Paid ({case}).").as_str())]);
        let after = server(dir.path(), &model, &payments, policy, Vec::new()).await;
        continues_with_a_run(&after.base, "t1", &payments, &format!("Paid ({case}).")).await;
    }
}

#[tokio::test]
async fn a_call_in_doubt_stays_answerable_when_its_tool_is_no_longer_guarded() {
    let dir = tempfile::tempdir().unwrap();
    let payments = Payments::default();
    let before = server(
        dir.path(),
        &ScriptedModel::new([asks_to_pay()]),
        &payments,
        guarded(),
        Vec::new(),
    )
    .await;
    leave_in_doubt(&before, &payments, "t1").await;
    drop(before);
    // The restarted server asks for no approvals at all.
    let model = ScriptedModel::new([ScriptedResponse::text("Paid.")]);
    let after = server(dir.path(), &model, &payments, None, Vec::new()).await;
    let history = thread(&after.base, "t1").await;
    assert_eq!(history["interrupts"], json!([in_doubt_interrupt("t1")]));
    assert_eq!(history["awaits"], "resume");
    let (status, events) = post(
        &after.base,
        &resume("t1", answer("p1", json!({"action": "retry"}))),
    )
    .await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(types(&events), run_of(&[TOOL_RESULT_STEP, &text_step(1)]));
    let keys = payments.keys();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
    assert_eq!(thread(&after.base, "t1").await["awaits"], "message");
}

#[tokio::test]
async fn a_conversation_cut_after_a_tool_result_continues_with_a_run_without_messages() {
    let dir = tempfile::tempdir().unwrap();
    let payments = Payments::default();
    // The model takes its time after the tool: the client goes away before it answers.
    let slow = ScriptedModel::new([
        asks_to_pay(),
        ScriptedResponse::text("Too late.").with_delay(std::time::Duration::from_secs(30)),
    ]);
    let before = server(dir.path(), &slow, &payments, None, Vec::new()).await;
    let model = ScriptedModel::new([ScriptedResponse::text("Paid.")]);
    let after = server(dir.path(), &model, &payments, None, Vec::new()).await;
    let running = run_until(
        &before.base,
        &input("t1", json!([user("u1", "Pay invoice 7.")])),
        "TOOL_CALL_RESULT",
    )
    .await;
    // While the model answers on the first server, the other one sees a busy thread (the
    // session's lease is held), not one to continue.
    assert_eq!(thread(&after.base, "t1").await["awaits"], "busy");
    drop(running);
    eventually("the run was not cancelled", || before.agui.running() == 0).await;
    drop(before);

    let history = thread(&after.base, "t1").await;
    let (status, events) = post(&after.base, &input("t1", json!([]))).await;
    assert_eq!(status, 200, "{events:?}");
    // What the thread said it awaited before that run.
    assert_eq!(
        (&history["interrupts"], &history["awaits"]),
        (&json!([]), &json!("run"))
    );
    assert_eq!(types(&events), run_of(&[&text_step(1)]));
    assert_eq!(find(&events, "RUN_FINISHED")["result"]["text"], "Paid.");
    assert_eq!(payments.keys().len(), 1, "pay ran once");
    let sent = &model.requests()[0].messages;
    assert_eq!(
        sent.last().unwrap().tool_results()[0].text_output(),
        "paid invoice 7"
    );
}
