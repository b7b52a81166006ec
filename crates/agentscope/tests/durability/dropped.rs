//! A stream dropped right after its first tool result.

use agentscope::prelude::*;
use futures::StreamExt;

use crate::stores::Place;
use crate::worker::{StoreKind, approval_agent};

async fn dropped_after_tool_result(kind: StoreKind) {
    let Some(place) = Place::new(kind) else {
        return;
    };
    let store = place.open();
    let effects = place.dir.path().join("effects");
    // The model's answer after the tool never comes in time: the call is still running
    // when the consumer goes away, as with a real model.
    let model = agentscope_test::ScriptedModel::new([
        agentscope_test::ScriptedResponse::tool_call(
            "t1",
            "transfer",
            serde_json::json!({"amount": 5}),
        ),
        agentscope_test::ScriptedResponse::text("Sent.")
            .with_delay(std::time::Duration::from_secs(600)),
    ]);
    let (agent, approvals) = approval_agent(store.clone(), "s", model, effects.clone());
    agent.call("Send 5.").await.unwrap();
    approvals.approve("t1").unwrap();

    // The consumer goes away right after the tool result (a closed browser tab).
    let mut stream = agent.stream((), StreamOptions::default());
    loop {
        let event = stream.next().await.unwrap().unwrap();
        if event.event_type == EventType::ToolResult && event.is_last {
            break;
        }
    }
    drop(stream);
    drop(agent);
    let done = || {
        std::fs::read_to_string(&effects)
            .unwrap()
            .lines()
            .filter(|line| line.starts_with("done "))
            .count()
    };
    assert_eq!(done(), 1);

    // A fresh agent (another process, after a restart) resumes: the result is stored, so
    // the tool does not run again; the model reads the result and answers. A server store
    // gives a dropped call's lease back in the background (`LeaseHandle`): until it has, the
    // session is busy (refused before any hook or model request), for at most the lease's
    // time to live.
    let model =
        agentscope_test::ScriptedModel::new([agentscope_test::ScriptedResponse::text("Sent.")]);
    let (fresh, _) = approval_agent(store.clone(), "s", model.clone(), effects.clone());
    let dropped = std::time::Instant::now();
    let reply = loop {
        match fresh.call(()).await {
            Err(AgentError::Busy)
                if kind
                    .lease_outlives_holder()
                    .is_some_and(|ttl| dropped.elapsed() < ttl * 3) =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            other => break other.unwrap(),
        }
    };
    assert_eq!(reply.text(), "Sent.");
    assert_eq!(done(), 1);
    let sent = &model.requests()[0].messages;
    let last = sent.last().unwrap();
    assert_eq!(last.tool_results()[0].id, "t1");
    let stored = store.load("s").await.unwrap().unwrap();
    let roles: Vec<Role> = stored.messages.iter().map(|msg| msg.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert!(stored.running_tools.is_empty());
}

on_every_store! {
    // Multi-threaded: opening a server store waits for it to connect (`worker::open_store`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    dropped_after_tool_result:
    a_dropped_stream_never_runs_an_approved_tool_again_json,
    a_dropped_stream_never_runs_an_approved_tool_again_sqlite,
    a_dropped_stream_never_runs_an_approved_tool_again_redis,
    a_dropped_stream_never_runs_an_approved_tool_again_postgres,
}
