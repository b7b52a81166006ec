//! The SQLite store's session lease between real processes: a holder process runs a call
//! whose tool waits until interrupted; another process on the same session is busy before
//! any hook runs or the model is asked; the holder killed with SIGKILL frees the session
//! once its lease expires; and an interrupt from another process stops the holder.

use std::time::{Duration, Instant};

use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT, INTERRUPTED_WHILE_RUNNING};
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_test::process::SelfProcess;
use agentscope_test::session_store::instances::all_said;
use agentscope_test::{ScriptedModel, ScriptedResponse};

use crate::worker::{
    Counts, Outcome, SQLITE_LEASE_TTL, StoreKind, TASK, Task, finish_with_counts, open_store, spawn,
};

/// A worker process holding session `shared` of the SQLite database `path`: its call runs
/// the `wait` tool until interrupted (or killed).
fn holder(path: &std::path::Path) -> SelfProcess {
    let task = Task::Hold {
        store: StoreKind::Sqlite,
        path: path.to_owned(),
        session: "shared".into(),
        input: "q1".into(),
    };
    let mut holder = SelfProcess::spawn_json("worker::run", TASK, &task);
    holder.expect("TOOL_STARTED");
    holder
}

/// While a holder process runs a call, a second process's calls on the session are busy
/// before any hook runs or the model is asked; killed with SIGKILL, the holder keeps the
/// session busy until its lease expires, then the next call (of this process) takes it and
/// settles the tool the dead holder left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_is_busy_before_any_model_request_and_a_killed_holder_frees_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = StoreKind::Sqlite.path_in(dir.path());
    let store = open_store(StoreKind::Sqlite, &path);
    let holder = holder(&path);
    let before = store.load("shared").await.unwrap().unwrap();
    assert_eq!(all_said(&before.messages), ["q1", "call wait"]);

    // Alive, the holder keeps the session past the lease's time to live.
    tokio::time::sleep(SQLITE_LEASE_TTL * 2).await;
    let second = Task::Write {
        store: StoreKind::Sqlite,
        path: path.clone(),
        session: "shared".into(),
        tag: "b".into(),
        calls: 3,
    };
    let (outcomes, counts) = finish_with_counts(spawn(&second));
    let busy = Outcome::Busy("the agent is busy with another call".into());
    assert_eq!(outcomes, [busy.clone(), busy.clone(), busy]);
    assert_eq!(
        counts,
        Some(Counts {
            model_requests: 0,
            pre_calls: 0,
        })
    );
    assert_eq!(store.load("shared").await.unwrap().unwrap(), before);

    holder.kill();
    let killed = Instant::now();
    let model = ScriptedModel::new([ScriptedResponse::text("a2")]);
    let next = ReActAgent::builder()
        .model(model.clone())
        .session(store.clone(), "shared")
        .build()
        .unwrap();
    let mut busy = 0;
    let reply = loop {
        match next.call("q2").await {
            Err(AgentError::Busy) => busy += 1,
            other => break other.unwrap(),
        }
        assert!(
            killed.elapsed() < SQLITE_LEASE_TTL * 5,
            "the session stayed busy"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let freed = killed.elapsed();
    println!(
        "killed holder: session free after {freed:?} ({busy} busy attempts; lease TTL \
         {SQLITE_LEASE_TTL:?})"
    );
    assert!(busy > 0, "the dead holder's lease lived on");
    assert!(
        freed <= SQLITE_LEASE_TTL + Duration::from_millis(500),
        "{freed:?}"
    );
    assert_eq!(reply.text(), "a2");
    assert_eq!(model.request_count(), 1);
    let stored = store.load("shared").await.unwrap().unwrap();
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
    assert!(stored.running_tools.is_empty());
}

/// An interrupt from this process stops the call a holder process runs, as a local
/// interrupt would: the holder's call ends with the interrupt reply and stores it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_from_one_process_stops_a_call_in_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = StoreKind::Sqlite.path_in(dir.path());
    let store = open_store(StoreKind::Sqlite, &path);
    let mut holder = holder(&path);
    let started = Instant::now();
    assert!(store.interrupt("shared").await.unwrap());
    let outcome: Outcome = serde_json::from_str(&holder.expect("OUTCOME ")).unwrap();
    println!("interrupt across processes: {:?}", started.elapsed());
    assert_eq!(outcome, Outcome::Ok(INTERRUPT_REPLY.into()));
    holder.wait_success();
    let stored = store.load("shared").await.unwrap().unwrap();
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
    // The holder gave the session back: nobody holds it.
    assert!(!store.interrupt("shared").await.unwrap());
}
