//! A real server process killed with SIGKILL while an approved `pay` runs, after the payment
//! service took the payment: a new server process on the same store reports the task that
//! died `failed`; the next message in the context ends `input-required`, naming the call in
//! doubt and its idempotency key; the client checks the service by that key and answers
//! "done" with the receipt, and the context goes on without running `pay` again.
//!
//! The servers are copies of this test binary running the ignored test `killed::worker`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use a2a::Part;
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_test::ledger::Ledger;
use agentscope_test::process::{SelfProcess, json_settings};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

use crate::http::client_at;
use crate::support::{answer, get, line, request, serve_worker, state};
use crate::task_of;

/// The environment variable carrying a worker's settings: `{"dir": .., "first": ..}`.
const WORKER_ENV: &str = "AGENTSCOPE_A2A_KILLED_WORKER";

/// A server process: `assistant` with `pay` (approval needed) on the JSON sessions in
/// `<dir>/sessions`; prints `LISTENING <base url>` and serves until killed.
#[tokio::test]
#[ignore = "a server process of `a_server_killed_mid_tool_...`, which starts it itself"]
async fn worker() {
    let settings: Value = json_settings(WORKER_ENV);
    let dir = PathBuf::from(settings["dir"].as_str().unwrap());
    let first = settings["first"].as_bool().unwrap();
    let model = if first {
        ScriptedModel::new([ScriptedResponse::tool_call(
            "c1",
            "pay",
            json!({"invoice": 7}),
        )])
    } else {
        ScriptedModel::new([ScriptedResponse::text("Invoice 7 is paid.")])
    };
    let toolkit = Toolkit::new().tool(Ledger::new(&dir).pay_tool(first));
    serve_worker(
        &model,
        toolkit,
        JsonFileSessionStore::new(dir.join("sessions")),
    )
    .await;
}

/// A server process on the store in `dir` (`first`: the one whose `pay` hangs after paying),
/// and its base URL.
pub(crate) fn start(dir: &Path, first: bool) -> (SelfProcess, String) {
    let settings = json!({"dir": dir, "first": first});
    let mut server = SelfProcess::spawn_json("killed::worker", WORKER_ENV, &settings);
    let base = tokio::task::block_in_place(|| server.expect("LISTENING "));
    (server, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_tool_fails_the_task_and_asks_about_the_call_in_doubt_without_paying_twice()
 {
    let dir = tempfile::tempdir().unwrap();
    let books = Ledger::new(dir.path());

    // The first server: ask, approve, and die while `pay` runs, after the service paid.
    let (first, base) = start(dir.path(), true);
    let client = client_at(&base).await;
    let asked = task_of(
        client
            .send_message(&request("Pay invoice 7.", "c1"))
            .await
            .unwrap(),
    );
    assert_eq!(state(&asked.status.state), "input-required");
    let approve = answer(
        &asked,
        vec![Part::data(
            json!({"decisions": [{"toolCallId": "c1", "approved": true}]}),
        )],
    );
    let approving = tokio::spawn(async move {
        // Cut off by the kill: what it got does not matter.
        let _ = client.send_message(&approve).await;
    });
    let key = tokio::task::block_in_place(|| books.kill_once_paid(first));
    approving.await.unwrap();

    // The second server, on the same store.
    let (_second, base) = start(dir.path(), false);
    let client = client_at(&base).await;
    // The task that died is reported failed once its grace is over, never working for good.
    let died = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let task = client.get_task(&get(&asked.id)).await.unwrap();
            if task.status.state != a2a::TaskState::Working {
                break task;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(state(&died.status.state), "failed");
    assert_eq!(
        died.status.message.as_ref().map(line).as_deref(),
        Some(format!("agent: {}", agentscope_serving::STOPPED_IN_DOUBT).as_str())
    );

    // The next message in the context asks about the call in doubt instead of moving on.
    let next = task_of(
        client
            .send_message(&request("Was it paid?", "c1"))
            .await
            .unwrap(),
    );
    assert_eq!(state(&next.status.state), "input-required");
    let question = next.status.message.as_ref().unwrap();
    assert!(
        line(question).starts_with(
            "agent: This message was not given to the agent: the calls below must be answered \
             on this task first; send it again after. In doubt: pay({\"invoice\":7}) [c1] \
             started before the agent stopped"
        ),
        "{}",
        line(question)
    );
    let data = question
        .parts
        .iter()
        .find_map(|part| match &part.content {
            a2a::PartContent::Data(value) => Some(value.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(data["inDoubtToolCalls"][0]["id"], "c1");
    assert_eq!(data["inDoubtToolCalls"][0]["name"], "pay");
    // The key the tool gave the service is the key the question names: the client checks.
    let asked_key = data["inDoubtToolCalls"][0]["idempotencyKey"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(asked_key, key);
    assert!(books.paid().contains(&asked_key));
    let done = task_of(
        client
            .send_message(&answer(
                &next,
                vec![Part::data(json!({"decisions": [
                    {"toolCallId": "c1", "action": "done", "result": "paid (ledger checked)"}
                ]}))],
            ))
            .await
            .unwrap(),
    );
    assert_eq!(state(&done.status.state), "completed");
    assert_eq!(
        done.status.message.as_ref().map(line).as_deref(),
        Some("agent: Invoice 7 is paid.")
    );
    assert_eq!(books.attempts(), std::slice::from_ref(&key), "pay ran once");
    assert_eq!(books.paid(), [key], "paid once");
    let stored = JsonFileSessionStore::new(dir.path().join("sessions"))
        .load("assistant.c1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored
            .messages
            .iter()
            .map(|msg| format!("{:?}: {}", msg.role, msg.text()))
            .collect::<Vec<_>>(),
        [
            "User: Pay invoice 7.",
            "Assistant: ",
            "Tool: ",
            "Assistant: Invoice 7 is paid."
        ]
    );
    let result = stored
        .messages
        .iter()
        .flat_map(|msg| msg.tool_results())
        .find(|result| result.id == "c1")
        .unwrap();
    assert!(!result.is_error);
    assert_eq!(result.text_output(), "paid (ledger checked)");
    assert!(stored.running_tools.is_empty());
}
