//! Calls in doubt over A2A, in one process: a context whose session records a call as
//! started without a result (as a crash leaves it; `killed.rs` makes one with a real
//! SIGKILL) asks about it on the next task, and the answer retries it with the same
//! idempotency key or fails it.

use std::sync::{Arc, Mutex};

use a2a::Part;
use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore, StateChange};
use agentscope::{Role, ToolContext, ToolUseBlock};
use agentscope_test::{ScriptedModel, ScriptedResponse, tools};
use serde_json::json;

use crate::support::{answer, client, line, request, serve_on, state};
use crate::task_of;

/// Stores context `c1`'s session as a crash during `pay` leaves it.
async fn left_in_doubt(store: &JsonFileSessionStore) {
    let call = Msg::new(
        Role::Assistant,
        "assistant",
        vec![ContentBlock::ToolUse(ToolUseBlock::new(
            "p1",
            "pay",
            json!({"invoice": 7}),
        ))],
    );
    let mut state = AgentState::new(
        AgentIdentity::new("assistant", "a"),
        vec![Msg::user("Pay invoice 7."), call],
    );
    state.running_tools = vec!["p1".to_owned()];
    store
        .save("assistant.c1", &StateChange::replace(&state))
        .await
        .unwrap();
}

/// `pay`, recording the idempotency key of each run.
fn pay(keys: Arc<Mutex<Vec<String>>>) -> Toolkit {
    Toolkit::new().tool(tools::pay(move |_invoice, ctx| {
        let keys = Arc::clone(&keys);
        async move {
            keys.lock().unwrap().push(ctx.idempotency_key());
            "paid invoice 7".to_owned()
        }
    }))
}

async fn asked(
    model: &ScriptedModel,
    keys: &Arc<Mutex<Vec<String>>>,
    dir: &std::path::Path,
) -> (crate::support::Server, a2a::Task) {
    let store = JsonFileSessionStore::new(dir);
    left_in_doubt(&store).await;
    let server = serve_on(model, pay(Arc::clone(keys)), store, None, None).await;
    let client = client(&server, "JSONRPC").await;
    let task = task_of(
        client
            .send_message(&request("Did it go through?", "c1"))
            .await
            .unwrap(),
    );
    (server, task)
}

fn tool_result(dir: &std::path::Path) -> (bool, String) {
    let stored = futures::executor::block_on(JsonFileSessionStore::new(dir).load("assistant.c1"))
        .unwrap()
        .unwrap();
    assert!(stored.running_tools.is_empty());
    let result = stored
        .messages
        .iter()
        .flat_map(|msg| msg.tool_results())
        .find(|result| result.id == "p1")
        .unwrap()
        .clone();
    (result.is_error, result.text_output())
}

#[tokio::test]
async fn a_call_in_doubt_retried_runs_again_with_its_first_key() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel::new([ScriptedResponse::text("Paid now.")]);
    let (server, task) = asked(&model, &keys, dir.path()).await;
    assert_eq!(state(&task.status.state), "input-required");
    assert_eq!(model.request_count(), 0, "nothing was called");
    let first_key = ToolContext::new(ToolUseBlock::new("p1", "pay", json!({"invoice": 7})))
        .with_scope("assistant.c1")
        .idempotency_key();
    let a2a::PartContent::Data(data) = &task.status.message.as_ref().unwrap().parts[1].content
    else {
        panic!("no data part")
    };
    assert_eq!(
        *data,
        json!({"inDoubtToolCalls": [
            // Numbers travel as protobuf doubles: 7 arrives as 7.0.
            {"id": "p1", "name": "pay", "input": {"invoice": 7.0}, "idempotencyKey": first_key}
        ]})
    );

    let client = client(&server, "JSONRPC").await;
    // A message without an answer asks again; the call still does not run.
    let again = task_of(
        client
            .send_message(&answer(&task, vec![Part::text("retry it")]))
            .await
            .unwrap(),
    );
    assert_eq!(state(&again.status.state), "input-required");
    assert!(
        line(again.status.message.as_ref().unwrap())
            .starts_with("agent: The message carries no decisions. In doubt: pay")
    );
    let done = task_of(
        client
            .send_message(&answer(
                &task,
                vec![Part::data(
                    json!({"decisions": [{"toolCallId": "p1", "action": "retry"}]}),
                )],
            ))
            .await
            .unwrap(),
    );
    assert_eq!(state(&done.status.state), "completed");
    assert_eq!(
        done.status.message.as_ref().map(line).as_deref(),
        Some("agent: Paid now.")
    );
    assert_eq!(*keys.lock().unwrap(), [first_key], "ran once, with its key");
    assert_eq!(
        tool_result(dir.path()),
        (false, "paid invoice 7".to_owned())
    );
}

#[tokio::test]
async fn a_call_in_doubt_failed_is_an_error_result_and_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel::new([ScriptedResponse::text("It was declined.")]);
    let (server, task) = asked(&model, &keys, dir.path()).await;
    assert_eq!(state(&task.status.state), "input-required");
    let client = client(&server, "HTTP+JSON").await;
    // A wrong answer says what is wrong, and asks again.
    let wrong = task_of(
        client
            .send_message(&answer(
                &task,
                vec![Part::data(
                    json!({"decisions": [{"toolCallId": "p1", "approved": true}]}),
                )],
            ))
            .await
            .unwrap(),
    );
    assert_eq!(state(&wrong.status.state), "input-required");
    assert!(
        line(wrong.status.message.as_ref().unwrap())
            .starts_with("agent: Decision 0 has no `action`. In doubt: pay")
    );
    let done = task_of(
        client
            .send_message(&answer(
                &task,
                vec![Part::data(json!({"decisions": [
                    {"toolCallId": "p1", "action": "fail", "reason": "card declined"}
                ]}))],
            ))
            .await
            .unwrap(),
    );
    assert_eq!(state(&done.status.state), "completed");
    assert_eq!(
        done.status.message.as_ref().map(line).as_deref(),
        Some("agent: It was declined.")
    );
    assert!(keys.lock().unwrap().is_empty(), "pay did not run");
    assert_eq!(
        tool_result(dir.path()),
        (
            true,
            "Error: the call failed (checked by the user): card declined".to_owned()
        )
    );
}
