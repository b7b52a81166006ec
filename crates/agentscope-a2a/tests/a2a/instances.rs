//! Two instances of one agent on one store (SQLite, each instance with its own handle, as
//! two processes have): a task running on one is canceled from the other, and followed
//! from the other until it ends.

use std::sync::Arc;
use std::time::Duration;

use a2a::{StreamResponse, SubscribeToTaskRequest};
use agentscope::interrupt::INTERRUPT_REPLY;
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;

use crate::support::{Server, cancel, client, describe, get, request, serve_on, state};

/// Both instances, on one SQLite file.
async fn two_instances(model: &ScriptedModel, path: &std::path::Path) -> (Server, Server) {
    let first = serve_on(
        model,
        Toolkit::new(),
        SqliteSessionStore::open(path).unwrap(),
        None,
        None,
    )
    .await;
    let second = serve_on(
        model,
        Toolkit::new(),
        SqliteSessionStore::open(path).unwrap(),
        None,
        None,
    )
    .await;
    (first, second)
}

async fn started(
    server: &Server,
    text: &str,
) -> (
    String,
    futures::stream::BoxStream<'static, Result<StreamResponse, a2a::A2AError>>,
) {
    let client = client(server, "JSONRPC").await;
    let mut events = client
        .send_streaming_message(&request(text, "c1"))
        .await
        .unwrap();
    let first = events.next().await.unwrap().unwrap();
    let StreamResponse::Task(task) = first else {
        panic!("the first event is not the task: {first:?}")
    };
    // The call has taken the context's session once the task is working.
    (task.id, events)
}

#[tokio::test]
async fn cancel_task_on_another_instance_interrupts_the_call_where_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let model =
        ScriptedModel::new(
            [ScriptedResponse::text("too late").with_delay(Duration::from_secs(30))],
        );
    let (first, second) = two_instances(&model, &path).await;
    let (task_id, events) = started(&first, "Take your time").await;

    let other = client(&second, "HTTP+JSON").await;
    let canceled = tokio::time::timeout(
        Duration::from_secs(10),
        other.cancel_task(&cancel(&task_id)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(state(&canceled.status.state), "canceled");

    // The call on the first instance was interrupted (not left to run out its 30 s): it
    // stored the interrupted reply, and its stream ends with the task canceled.
    let store: Arc<dyn SessionStore> = Arc::new(SqliteSessionStore::open(&path).unwrap());
    let stored = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let state = store.load("assistant.c1").await.unwrap();
            if let Some(state) = state.filter(|s| s.messages.len() == 2) {
                break state;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(
        stored.messages.iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["Take your time", INTERRUPT_REPLY]
    );
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(10), events.collect::<Vec<_>>())
        .await
        .unwrap()
        .into_iter()
        .map(|event| describe(&event.unwrap()))
        .collect();
    assert_eq!(rest, [format!("status canceled - {INTERRUPT_REPLY}")]);
    // Both instances report the task canceled.
    for server in [&first, &second] {
        let task = client(server, "JSONRPC")
            .await
            .get_task(&get(&task_id))
            .await
            .unwrap();
        assert_eq!(state(&task.status.state), "canceled");
    }
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn subscribe_on_another_instance_follows_the_task_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let model = ScriptedModel::new([
        ScriptedResponse::text("Done at last.").with_delay(Duration::from_millis(1500))
    ]);
    let (first, second) = two_instances(&model, &path).await;
    let (task_id, _events) = started(&first, "Work").await;

    let followed: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        client(&second, "HTTP+JSON")
            .await
            .subscribe_to_task(&SubscribeToTaskRequest {
                id: task_id.clone(),
                tenant: None,
            })
            .await
            .unwrap()
            .map(|event| describe(&event.unwrap()))
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    // The stored states, not each token (tokens are not stored): the task as it was, then
    // its reply and its end, once the first instance stored them.
    assert_eq!(
        followed,
        [
            "task working",
            "artifact reply append=None last=Some(true) Done at last.",
            "status completed - Done at last.",
        ]
    );
}

#[tokio::test]
async fn a_second_message_in_a_busy_context_on_another_instance_is_rejected_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let model =
        ScriptedModel::new(
            [ScriptedResponse::text("too late").with_delay(Duration::from_secs(30))],
        );
    let (first, second) = two_instances(&model, &path).await;
    let (_task_id, _events) = started(&first, "Take your time").await;
    let other = tokio::time::timeout(
        Duration::from_secs(10),
        client(&second, "JSONRPC")
            .await
            .send_message(&crate::support::request("Meanwhile?", "c1")),
    )
    .await
    .unwrap()
    .unwrap();
    // Rejected (nothing ran, nothing will): not a failure of the task.
    let task = crate::task_of(other);
    assert_eq!(state(&task.status.state), "rejected");
    let said = crate::support::line(task.status.message.as_ref().unwrap());
    assert_eq!(
        said,
        "agent: The context is busy: another task's call runs on it. Send this message again \
         when that task has ended."
    );
    assert_eq!(model.request_count(), 1, "the second message ran nothing");
}
