//! A client after the server crashed (the recipe of `docs/a2a.md`), with real processes: a
//! `RemoteAgent` approves a payment, the server is killed with SIGKILL while `pay` runs
//! (after the payment service took the payment), and another server takes over the store.
//! The answer sent again on the dead task fails saying so and drops the question; the next
//! call starts a new task, which asks about the call in doubt with its idempotency key; the
//! client checks the service by that key and answers `done`; `pay` ran once.
//!
//! The servers are those of `killed.rs` (copies of this test binary running the ignored test
//! `killed::worker`), with the same payment service.

use std::time::Duration;

use agentscope::prelude::*;
use agentscope_a2a::RemoteAgent;
use agentscope_test::ledger::Ledger;
use serde_json::json;

use crate::killed::start;
use crate::support::get;

fn approve() -> Msg {
    RemoteAgent::data_message(json!({"decisions": [{"toolCallId": "c1", "approved": true}]}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_after_the_server_crashed_drops_the_dead_question_and_resolves_the_call_in_doubt()
{
    let dir = tempfile::tempdir().unwrap();
    let books = Ledger::new(dir.path());

    // The first server asks; the client approves; the server dies while `pay` runs.
    let (first, base) = start(dir.path(), true);
    let remote = RemoteAgent::connect(&base).await.unwrap();
    let asked = remote.call("Pay invoice 7.").await.unwrap();
    assert_eq!(
        asked.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(
        remote.pending_tool_calls(),
        [ToolUseBlock::new("c1", "pay", json!({"invoice": 7}))]
    );
    let task = asked.metadata["a2a"]["taskId"].as_str().unwrap().to_owned();
    let approving = tokio::spawn(remote.call(approve()));
    // The service paid under the key, once.
    let key = tokio::task::block_in_place(|| books.kill_once_paid(first));
    assert!(
        approving.await.unwrap().is_err(),
        "the call died with the server"
    );
    // The conversation (in a session, or saved) goes on with the server that took over.
    let state = agentscope::Agent::save_state(&remote).unwrap();

    let (_second, base) = start(dir.path(), false);
    let card = a2a_client::agent_card::AgentCardResolver::new(None)
        .resolve(&base)
        .await
        .unwrap();
    let sdk = a2a_client::A2AClientFactory::builder()
        .build()
        .create_from_card(&card)
        .await
        .unwrap();
    // The server that took over reports the task that died failed, once its grace is over.
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let got = sdk.get_task(&get(&task)).await.unwrap();
            if got.status.state != a2a::TaskState::Working {
                assert_eq!(got.status.state, a2a::TaskState::Failed);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .unwrap();
    let remote = RemoteAgent::connect(&base).await.unwrap();
    agentscope::Agent::load_state(&remote, state).await.unwrap();
    assert!(remote.pending_question().is_some());

    // 1. The answer, on the task that died: refused, and the question dropped.
    let error = remote.call(approve()).await.unwrap_err();
    assert!(
        error.to_string().starts_with(&format!(
            "the remote agent 'assistant' cannot take the answer: its task {task}, which asked \
             the question, has ended (failed), so the answer was not given to it. The question \
             is dropped: the next call starts a new task in the context."
        )),
        "{error}"
    );
    assert_eq!(remote.pending_question(), None);

    // 2. The next call is a new task in the context: it asks about the call in doubt.
    let asked = remote.call(approve()).await.unwrap();
    assert_eq!(asked.generate_reason(), Some(GenerateReason::ToolInDoubt));
    assert_ne!(asked.metadata["a2a"]["taskId"], json!(task));
    let doubts = remote.in_doubt_calls();
    assert_eq!(doubts.len(), 1);
    assert_eq!(
        doubts[0].call(),
        &ToolUseBlock::new("c1", "pay", json!({"invoice": 7}))
    );
    // 3. The key the tool gave the service: the client checks there, and answers.
    assert_eq!(doubts[0].idempotency_key(), key);
    assert!(books.paid().contains(&key));
    let done = remote
        .call(RemoteAgent::data_message(json!({"decisions": [
            {"toolCallId": "c1", "action": "done", "result": "paid (ledger checked)"}
        ]})))
        .await
        .unwrap();
    assert_eq!(done.text(), "Invoice 7 is paid.");
    assert_eq!(remote.pending_question(), None);
    assert_eq!(books.attempts(), std::slice::from_ref(&key), "pay ran once");
    assert_eq!(books.paid(), [key], "paid once");
}
