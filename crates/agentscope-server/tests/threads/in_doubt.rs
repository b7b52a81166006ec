//! A call in doubt over AG-UI: listed, re-announced by the next run, resolved by each
//! answer; answers that do not fit are refused with nothing run, decided or stored.

use serde_json::{Value, json};

use crate::support::events::{TOOL_RESULT_STEP, run_of, text_step, types};
use crate::support::http::{assert_refused, find, post, thread};
use crate::support::serve::user;
use crate::{
    Payments, answer, asks_to_pay, guarded, in_doubt_interrupt, input, leave_in_doubt, resume,
    server, stored,
};
use agentscope::Msg;
use agentscope::hooks::ApprovalPolicy;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};

#[tokio::test]
async fn a_call_in_doubt_is_listed_and_the_next_run_ends_with_its_interrupt() {
    let dir = tempfile::tempdir().unwrap();
    let payments = Payments::default();
    let model = ScriptedModel::new([asks_to_pay()]);
    let server = server(dir.path(), &model, &payments, guarded(), Vec::new()).await;
    leave_in_doubt(&server, &payments, "t1").await;
    let interrupt = in_doubt_interrupt("t1");
    assert_eq!(
        payments.keys(),
        [interrupt["metadata"]["idempotencyKey"].as_str().unwrap()],
        "the tool got the key the interrupt names"
    );

    let history = thread(&server.base, "t1").await;
    assert_eq!(history["interrupts"], json!([interrupt]));
    assert_eq!(history["awaits"], "resume");
    let before = stored(dir.path(), "t1").await;
    assert_eq!(before.running_tools, ["p1"]);

    // The next run without new messages (a client that reloaded) gets the interrupt again;
    // nothing runs, and the conversation stays as it is (only the runs' records change: the
    // run the client left is settled, and this one asks).
    let (status, events) = post(&server.base, &input("t1", json!([]))).await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(types(&events), run_of(&[]));
    let finished = find(&events, "RUN_FINISHED");
    assert_eq!(
        finished["outcome"],
        json!({"type": "interrupt", "interrupts": [interrupt]})
    );
    assert!(finished.get("result").is_none(), "{finished}");
    assert_eq!(
        find(&events, "MESSAGES_SNAPSHOT")["messages"],
        history["messages"]
    );
    // A new message must wait for the answer.
    assert_refused(
        &server.base,
        &input("t1", json!([user("u2", "Did it work?")])),
        409,
        "interrupts_pending",
    )
    .await;
    assert_eq!(payments.keys().len(), 1, "the tool did not run again");
    assert_eq!(model.request_count(), 1, "the model was not asked again");
    let after = stored(dir.path(), "t1").await;
    assert_eq!(
        (&after.messages, &after.running_tools),
        (&before.messages, &before.running_tools)
    );
    assert_eq!(
        thread(&server.base, "t1").await["runs"],
        json!([{"runId": "run-t1", "state": "input-required"}])
    );
}

/// One way to answer a call in doubt, and what follows.
struct Case {
    thread: &'static str,
    entry: Value,
    /// The tool message the thread stores for the call.
    content: &'static str,
    is_error: bool,
    /// The tool ran again (a retry).
    ran_again: bool,
}

#[tokio::test]
async fn done_retry_fail_and_cancel_resolve_a_call_in_doubt() {
    let cases = [
        Case {
            thread: "done",
            entry: answer(
                "p1",
                json!({"action": "done", "result": "paid invoice 7 (receipt 42, checked)"}),
            ),
            content: "paid invoice 7 (receipt 42, checked)",
            is_error: false,
            ran_again: false,
        },
        Case {
            thread: "retry",
            entry: answer("p1", json!({"action": "retry"})),
            content: "paid invoice 7",
            is_error: false,
            ran_again: true,
        },
        Case {
            thread: "fail",
            entry: answer(
                "p1",
                json!({"action": "fail", "reason": "the bank has no record of it"}),
            ),
            content: "Error: the call failed (checked by the user): the bank has no record of it",
            is_error: true,
            ran_again: false,
        },
        Case {
            thread: "cancel",
            entry: json!([{"interruptId": "p1", "status": "cancelled"}]),
            content: "Error: the call was interrupted while running and the user dismissed it \
                      without checking: its effects may or may not have happened.",
            is_error: true,
            ran_again: false,
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let payments = Payments::default();
    // Per case: the call, then (once resolved) the answer.
    let model = ScriptedModel::new(cases.iter().flat_map(|case| {
        [
            asks_to_pay(),
            ScriptedResponse::text(format!("Answer on {}.", case.thread)),
        ]
    }));
    let server = server(dir.path(), &model, &payments, guarded(), Vec::new()).await;
    for case in &cases {
        let thread_id = case.thread;
        leave_in_doubt(&server, &payments, thread_id).await;
        let runs = payments.keys().len();
        let (status, events) = post(&server.base, &resume(thread_id, case.entry.clone())).await;
        assert_eq!(status, 200, "{thread_id}: {events:?}");
        // A retry shows the tool step; a result given in the answer is input, shown in the
        // snapshot.
        let answer_step = text_step(1);
        let steps: Vec<&[&str]> = if case.ran_again {
            vec![TOOL_RESULT_STEP, &answer_step]
        } else {
            vec![&answer_step]
        };
        assert_eq!(types(&events), run_of(&steps), "{thread_id}");
        assert_eq!(
            find(&events, "RUN_FINISHED")["result"]["text"],
            format!("Answer on {thread_id}."),
        );
        let keys = payments.keys();
        if case.ran_again {
            assert_eq!(keys.len(), runs + 1, "{thread_id}");
            assert_eq!(keys[runs], keys[runs - 1], "{thread_id}: the same key");
        } else {
            assert_eq!(keys.len(), runs, "{thread_id}: the tool did not run again");
        }
        // The model read the answer as the call's result.
        let request = model.requests().last().unwrap().clone();
        let result = request.messages.last().unwrap().tool_results()[0].clone();
        assert_eq!(
            (
                result.id.as_str(),
                result.text_output().as_str(),
                result.is_error
            ),
            ("p1", case.content, case.is_error),
            "{thread_id}"
        );
        let history = thread(&server.base, thread_id).await;
        assert_eq!(
            (&history["interrupts"], &history["awaits"]),
            (&json!([]), &json!("message")),
            "{thread_id}"
        );
        let tool = history["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap();
        assert_eq!(tool["content"], case.content, "{thread_id}");
        assert!(
            stored(dir.path(), thread_id).await.running_tools.is_empty(),
            "{thread_id}"
        );
    }
}

#[tokio::test]
async fn answers_that_do_not_fit_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let payments = Payments::default();
    let model = ScriptedModel::new([asks_to_pay()]);
    let server = server(dir.path(), &model, &payments, guarded(), Vec::new()).await;
    leave_in_doubt(&server, &payments, "t1").await;
    let before = stored(dir.path(), "t1").await;
    let retry = json!({"interruptId": "p1", "status": "resolved", "payload": {"action": "retry"}});
    let cases = [
        (answer("p1", json!({"action": "undo"})), "invalid_payload"),
        (answer("p1", json!({"approved": true})), "invalid_payload"),
        (answer("p1", json!({"action": "done"})), "invalid_payload"),
        (
            answer("p1", json!({"action": "done", "result": "  "})),
            "invalid_payload",
        ),
        (
            answer("p1", json!({"action": "retry", "result": "paid"})),
            "invalid_payload",
        ),
        (
            answer("p1", json!({"action": "fail", "reason": 7})),
            "invalid_payload",
        ),
        (answer("p1", json!("retry")), "invalid_payload"),
        (json!([retry, retry]), "duplicate_answer"),
        (
            json!([retry, {"interruptId": "p9", "status": "resolved",
                           "payload": {"action": "retry"}}]),
            "unknown_interrupt",
        ),
        (
            answer("p9", json!({"action": "retry"})),
            "unanswered_interrupts",
        ),
    ];
    for (answers, code) in cases {
        let (status, body) = post(&server.base, &resume("t1", answers.clone())).await;
        assert_eq!(
            (status, body[0]["error"]["code"].as_str()),
            (400, Some(code)),
            "{answers}: {body:?}"
        );
    }
    // Answers cannot come with a new message either.
    let mut both = resume("t1", json!([retry]));
    both["messages"] = json!([user("u2", "And?")]);
    assert_refused(&server.base, &both, 400, "invalid_input").await;

    assert_eq!(payments.keys().len(), 1, "nothing ran");
    assert_eq!(model.request_count(), 1, "the model was not asked");
    let after = stored(dir.path(), "t1").await;
    // The conversation is as it was; the run the client left was settled by the first
    // refused run (it held the thread: no call served that run any more).
    assert_eq!(
        (&after.messages, &after.running_tools),
        (&before.messages, &before.running_tools),
        "nothing was stored"
    );
    let runs = &after.hooks["served_runs"]["runs"];
    assert_eq!(runs[0]["state"]["state"], "failed", "{runs}");
    assert_eq!(
        thread(&server.base, "t1").await["interrupts"],
        json!([in_doubt_interrupt("t1")])
    );
}

#[tokio::test]
async fn an_approval_answer_without_a_boolean_approved_is_refused_and_not_taken_as_a_no() {
    let dir = tempfile::tempdir().unwrap();
    let payments = Payments::default();
    let model = ScriptedModel::new([asks_to_pay(), ScriptedResponse::text("Paid.")]);
    let server = server(dir.path(), &model, &payments, guarded(), Vec::new()).await;
    let (_, events) = post(
        &server.base,
        &input("t1", json!([user("u1", "Pay invoice 7.")])),
    )
    .await;
    assert_eq!(
        find(&events, "RUN_FINISHED")["outcome"]["interrupts"][0]["reason"],
        "tool_approval"
    );
    for payload in [
        json!({"approved": "yes"}),
        json!({"approved": 1}),
        json!({}),
        json!({"approved": true, "arguments": "invoice 8"}),
    ] {
        assert_refused(
            &server.base,
            &resume("t1", answer("p1", payload)),
            400,
            "invalid_payload",
        )
        .await;
    }
    // Nothing was decided: the call still awaits approval, and approving runs it.
    let history = thread(&server.base, "t1").await;
    assert_eq!(history["interrupts"][0]["reason"], "tool_approval");
    assert_eq!(history["awaits"], "resume");
    let (status, events) = post(
        &server.base,
        &resume("t1", answer("p1", json!({"approved": true}))),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        find(&events, "TOOL_CALL_RESULT")["content"],
        "paid invoice 7"
    );
    assert_eq!(payments.keys().len(), 1);
}

#[tokio::test]
async fn one_resume_answers_a_call_in_doubt_and_an_approval_together() {
    let dir = tempfile::tempdir().unwrap();
    let payments = Payments::default();
    // A batch: `pay` (guarded), then `notify` (not guarded yet).
    let model = ScriptedModel::new([ScriptedResponse::chunks([
        ScriptedChunk::tool_call("p1", "pay", json!({"invoice": 7})),
        ScriptedChunk::tool_call("n1", "notify", json!({"invoice": 7})),
    ])]);
    let before = server(dir.path(), &model, &payments, guarded(), Vec::new()).await;
    leave_in_doubt(&before, &payments, "t1").await;
    drop(before);
    // Restarted with `notify` guarded too: the thread awaits an approval and an answer.
    let model = ScriptedModel::new([ScriptedResponse::text("Invoice 7: not paid, notified.")]);
    let policy = Some(ApprovalPolicy::tools(["pay", "notify"]));
    let after = server(dir.path(), &model, &payments, policy, Vec::new()).await;
    let history = thread(&after.base, "t1").await;
    let reasons: Vec<(&Value, &Value)> = history["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (&i["id"], &i["reason"]))
        .collect();
    assert_eq!(
        reasons,
        [
            (&json!("n1"), &json!("tool_approval")),
            (&json!("p1"), &json!("tool_in_doubt"))
        ]
    );
    let fail = json!({"interruptId": "p1", "status": "resolved",
                      "payload": {"action": "fail", "reason": "declined"}});
    assert_refused(
        &after.base,
        &resume("t1", json!([fail])),
        400,
        "unanswered_interrupts",
    )
    .await;
    let approve = json!({"interruptId": "n1", "status": "resolved", "payload": {"approved": true}});
    let (status, events) = post(&after.base, &resume("t1", json!([fail, approve]))).await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(types(&events), run_of(&[TOOL_RESULT_STEP, &text_step(1)]));
    assert_eq!(
        find(&events, "TOOL_CALL_RESULT")["content"],
        "notified about invoice 7"
    );
    let sent = &model.requests()[0].messages;
    let results: Vec<(String, String)> = sent[sent.len() - 2..]
        .iter()
        .flat_map(Msg::tool_results)
        .map(|r| (r.id.to_string(), r.text_output()))
        .collect();
    assert_eq!(
        results,
        [
            (
                "p1".to_owned(),
                "Error: the call failed (checked by the user): declined".to_owned()
            ),
            ("n1".to_owned(), "notified about invoice 7".to_owned()),
        ]
    );
    assert_eq!(payments.keys().len(), 1, "pay did not run again");
    assert_eq!(
        payments.notified.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert_eq!(thread(&after.base, "t1").await["awaits"], "message");
}
