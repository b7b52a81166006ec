//! The JSON file store's lease, seen by agents of one process: a second call on a session
//! that a call holds is busy before any hook runs, `interrupt_session` stops the holder,
//! and a call under the lease saves what a call without one saves.

use std::sync::Arc;

use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT, INTERRUPTED_WHILE_RUNNING};
use agentscope::prelude::*;
use agentscope::session::{JsonFileSessionStore, SessionError, SessionStore, StateChange};
use agentscope_test::session_store::instances::all_said;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::store::{Recording, temp_store};

use crate::support::rows::rows;

/// The `wait` tool: notifies `started`, then waits until its call is interrupted.
fn wait_tool(started: Arc<tokio::sync::Notify>) -> impl Tool {
    tool_fn(
        "wait",
        "Waits until interrupted.",
        json!({"type": "object"}),
        move |_input, ctx| {
            let started = Arc::clone(&started);
            async move {
                started.notify_one();
                ctx.cancelled().await;
                Err::<String, _>(ToolError::Cancelled)
            }
        },
    )
}

/// Two agents on one session of one JSON file store: while the first runs a call, the
/// second's calls (and those of an agent on another store value for the directory) are
/// busy before any hook runs, with nothing loaded or stored; the second's
/// `interrupt_session` stops the first, which ends as a local interrupt ends it, and gives
/// the session back; the second then runs on the whole conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_agent_is_busy_and_its_interrupt_session_stops_the_first() {
    let (dir, store) = temp_store();
    let started = Arc::new(tokio::sync::Notify::new());
    let first = ReActAgent::builder()
        .name("first")
        .model(ScriptedModel::new([ScriptedResponse::tool_call(
            "w1",
            "wait",
            json!({}),
        )]))
        .toolkit(Toolkit::new().tool(wait_tool(Arc::clone(&started))))
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let running = tokio::spawn(async move { first.call("q1").await });
    started.notified().await;
    let before = store.load("s").await.unwrap().unwrap();
    assert_eq!(all_said(&before.messages), ["q1", "call wait"]);
    assert_eq!(before.running_tools, ["w1"]);

    let model = ScriptedModel::new([]);
    let recorder = RecordingHook::new(0);
    let second = ReActAgent::builder()
        .name("second")
        .model(model.clone())
        .hook(recorder.clone())
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let elsewhere = ReActAgent::builder()
        .model(model.clone())
        .hook(recorder.clone())
        .session(JsonFileSessionStore::new(dir.path().join("sessions")), "s")
        .build()
        .unwrap();
    for agent in [&second, &elsewhere] {
        assert!(matches!(agent.call("q2").await, Err(AgentError::Busy)));
        // Observing and changing metadata take the lease too.
        assert!(matches!(
            agent.observe(Msg::user("note")).await,
            Err(AgentError::Busy)
        ));
        assert!(matches!(
            agent.update_metadata(|_| {}).await,
            Err(AgentError::Busy)
        ));
        assert!(agent.memory().is_empty(), "nothing was loaded");
    }
    assert!(recorder.events().is_empty(), "{:?}", recorder.types());
    assert_eq!(model.request_count(), 0);
    assert_eq!(store.load("s").await.unwrap().unwrap(), before);

    assert!(second.interrupt_session().await.unwrap());
    let reply = running.await.unwrap().unwrap();
    assert_eq!(reply.text(), INTERRUPT_REPLY);
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(
        all_said(&stored.messages),
        [
            "q1",
            "call wait",
            &format!("result {INTERRUPTED_RESULT}"),
            INTERRUPT_REPLY
        ]
    );
    assert!(stored.running_tools.is_empty());

    model.push(ScriptedResponse::text("a2"));
    assert_eq!(second.call("q2").await.unwrap().text(), "a2");
    let mut expected = all_said(&stored.messages);
    expected.push("q2".into());
    assert_eq!(all_said(&model.requests()[0].messages), expected);
    assert_eq!(recorder.types().first(), Some(&HookEventType::PreCall));
    // Nobody holds the session now.
    assert!(!second.interrupt_session().await.unwrap());
}

/// A call whose lease is lost stops: the JSON file store's lease cannot expire, but its
/// lock file removed while the call runs lets another call lock a new one. The holder's
/// watch stops the call (its tool sees the cancellation) and its last save is refused, so
/// the call fails with `LeaseLost` and the session keeps what was stored before; the next
/// call takes the session and settles the tool the stopped call left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_lock_file_is_removed_stops_and_stores_nothing_more() {
    let (dir, store) = temp_store();
    let started = Arc::new(tokio::sync::Notify::new());
    let first = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::tool_call(
            "w1",
            "wait",
            json!({}),
        )]))
        .toolkit(Toolkit::new().tool(wait_tool(Arc::clone(&started))))
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let running = tokio::spawn(async move { first.call("q1").await });
    started.notified().await;
    let before = store.load("s").await.unwrap().unwrap();
    assert_eq!(all_said(&before.messages), ["q1", "call wait"]);

    std::fs::remove_file(dir.path().join("sessions").join(".s.lock")).unwrap();
    let error = tokio::time::timeout(std::time::Duration::from_secs(5), running)
        .await
        .expect("the call stops")
        .unwrap()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "session error: session 's': this call's lease expired and another call took the \
         session, so the save was refused"
    );
    assert!(matches!(
        error,
        AgentError::Session(SessionError::LeaseLost { .. })
    ));
    assert_eq!(store.load("s").await.unwrap().unwrap(), before);

    let model = ScriptedModel::new([ScriptedResponse::text("a2")]);
    let next = ReActAgent::builder()
        .model(model)
        .session(store.clone(), "s")
        .build()
        .unwrap();
    assert_eq!(next.call("q2").await.unwrap().text(), "a2");
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(
        all_said(&stored.messages),
        [
            "q1",
            "call wait",
            &format!("result {INTERRUPTED_WHILE_RUNNING}"),
            "q2",
            "a2"
        ]
    );
}

/// (base, kept, appended messages as rows, running tools, metadata, hooks) of each change.
type Shape = (
    u64,
    usize,
    Vec<crate::support::rows::Row>,
    Vec<String>,
    serde_json::Map<String, serde_json::Value>,
    serde_json::Map<String, serde_json::Value>,
);

fn shapes(changes: &[StateChange]) -> Vec<Shape> {
    changes
        .iter()
        .map(|c| {
            (
                c.base,
                c.kept,
                rows(&c.appended),
                c.running_tools.clone(),
                c.metadata.clone(),
                c.hooks.clone(),
            )
        })
        .collect()
}

/// Two calls (a tool round, then an answer) under the JSON file store's lease save the
/// same changes and store the same conversation as the same calls on the store without
/// leases; each call's saves carry its own lease's fence.
#[tokio::test]
async fn calls_under_a_lease_save_what_calls_without_one_save() {
    let (_dir, files) = temp_store();
    let mut outcomes = Vec::new();
    for leases in [true, false] {
        let store = Recording::new(files.clone(), leases);
        let session = if leases { "leased" } else { "plain" };
        let model = ScriptedModel::new([
            ScriptedResponse::tool_call("t1", "calculator", json!({"expression": "6*7"})),
            ScriptedResponse::text("It is 42."),
            ScriptedResponse::text("Again 42."),
        ]);
        let agent = ReActAgent::builder()
            .model(model)
            .toolkit(Toolkit::new().tool(agentscope_test::tools::Calculator::new()))
            .session(store.clone(), session)
            .build()
            .unwrap();
        agent
            .update_metadata(|m| {
                m.insert("title".into(), json!("Sums"));
            })
            .await
            .unwrap();
        assert_eq!(agent.call("6*7?").await.unwrap().text(), "It is 42.");
        assert_eq!(agent.call("Once more?").await.unwrap().text(), "Again 42.");
        let stored = files.load(session).await.unwrap().unwrap();
        assert_eq!(stored.messages, agent.memory().messages());
        let changes = store.changes.lock().unwrap().clone();
        let fences: Vec<Option<String>> = changes.iter().map(|c| c.fence.clone()).collect();
        outcomes.push((
            shapes(&changes),
            fences,
            rows(&stored.messages),
            stored.revision,
            stored.metadata,
        ));
    }
    let (leased, plain) = (&outcomes[0], &outcomes[1]);
    assert_eq!(leased.0, plain.0, "the same changes");
    assert_eq!(leased.2, plain.2, "the same conversation");
    assert_eq!((leased.3, plain.3), (5, 5));
    assert_eq!(leased.4, plain.4);
    assert_eq!(leased.4["title"], "Sums");
    // update_metadata, the tool round's 3 saves, the second call's save.
    assert_eq!(plain.1, [None, None, None, None, None]);
    let fences = &leased.1;
    assert!(fences.iter().all(Option::is_some), "{fences:?}");
    assert_eq!(fences[1], fences[2]);
    assert_eq!(fences[1], fences[3]);
    assert_ne!(fences[0], fences[1]);
    assert_ne!(fences[3], fences[4]);
}
