//! The JSON file store's lease between processes on one host: the worker (a copy of this
//! binary, see `worker`) holds a session in a call; calls of this process on it are busy
//! until the worker's call ends, or until the kernel releases the lock of a killed worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentscope::interrupt::INTERRUPTED_WHILE_RUNNING;
use agentscope::prelude::*;
use agentscope::session::{JsonFileSessionStore, SessionStore};
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use serde_json::json;
use tempfile::TempDir;

use crate::worker::{ANSWER, QUESTION, Settings, Worker};
use agentscope_test::session_store::instances::all_said;

/// An agent of this process on `session` of `store`, answering from `model`, with a `hold`
/// tool of its own that counts its runs (it must never run here).
fn agent(
    store: JsonFileSessionStore,
    model: &ScriptedModel,
    runs: &Arc<AtomicUsize>,
) -> (ReActAgent, RecordingHook) {
    let runs = Arc::clone(runs);
    let hold = tool_fn(
        "hold",
        "Holds the call.",
        json!({"type": "object"}),
        move |_input, _ctx| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok("held here")
            }
        },
    );
    let recorder = RecordingHook::new(0);
    let agent = ReActAgent::builder()
        .name("parent")
        .model(model.clone())
        .toolkit(Toolkit::new().tool(hold))
        .hook(recorder.clone())
        .session(store, "shared")
        .build()
        .unwrap();
    (agent, recorder)
}

/// A worker whose call holds the session "shared" of a store in `dir`, and this process's
/// store on the same directory.
fn held_by_a_worker(dir: &TempDir) -> (Worker, JsonFileSessionStore) {
    let sessions = dir.path().join("sessions");
    let worker = Worker::spawn_holding(&Settings {
        dir: sessions.clone(),
        session: "shared".into(),
    });
    (worker, JsonFileSessionStore::new(&sessions))
}

/// While the worker's call holds the session, this process's call on it is busy at once
/// (no hook runs, the model is not asked, nothing is loaded or stored), loads still read
/// what the worker saved, and an interrupt does not reach the other process (`false`).
/// Once the worker's call ends, the same call runs on the whole conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_another_process_makes_calls_here_busy_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (worker, store) = held_by_a_worker(&dir);
    let before = store.load("shared").await.unwrap().unwrap();
    assert_eq!(all_said(&before.messages), [QUESTION, "call hold"]);
    assert_eq!(before.running_tools, ["hold-1"]);

    let model = ScriptedModel::new([ScriptedResponse::text("parent done")]);
    let runs = Arc::new(AtomicUsize::new(0));
    let (agent, recorder) = agent(store.clone(), &model, &runs);
    for _ in 0..3 {
        assert!(matches!(
            agent.call("parent q").await,
            Err(AgentError::Busy)
        ));
    }
    assert!(recorder.events().is_empty(), "{:?}", recorder.types());
    assert_eq!(model.request_count(), 0);
    assert!(agent.memory().is_empty());
    assert_eq!(store.load("shared").await.unwrap().unwrap(), before);
    assert!(!agent.interrupt_session().await.unwrap());

    assert_eq!(worker.finish(), ANSWER);
    assert_eq!(agent.call("parent q").await.unwrap().text(), "parent done");
    let conversation = [
        QUESTION,
        "call hold",
        "result held",
        ANSWER,
        "parent q",
        "parent done",
    ];
    assert_eq!(all_said(&model.requests()[0].messages), conversation[..5]);
    let stored = store.load("shared").await.unwrap().unwrap();
    assert_eq!(all_said(&stored.messages), conversation);
    // The worker's 3 saves (the reasoning with the running record, the result, the
    // answer), then this call's one.
    assert_eq!(stored.revision, 4);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// The worker is killed with SIGKILL while its tool runs: the kernel releases its lock with
/// the process, so the next call here runs at once, and the tool call the dead call left
/// running gets the "interrupted while running" result instead of running again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_frees_the_session_and_its_running_tool_is_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (worker, store) = held_by_a_worker(&dir);
    let model = ScriptedModel::new([ScriptedResponse::text("parent done")]);
    let runs = Arc::new(AtomicUsize::new(0));
    let (agent, _) = agent(store.clone(), &model, &runs);
    assert!(matches!(
        agent.call("parent q").await,
        Err(AgentError::Busy)
    ));

    worker.kill();
    assert_eq!(agent.call("parent q").await.unwrap().text(), "parent done");
    let interrupted = format!("result {INTERRUPTED_WHILE_RUNNING}");
    let conversation = [
        QUESTION,
        "call hold",
        interrupted.as_str(),
        "parent q",
        "parent done",
    ];
    assert_eq!(all_said(&model.requests()[0].messages), conversation[..4]);
    let stored = store.load("shared").await.unwrap().unwrap();
    assert_eq!(all_said(&stored.messages), conversation);
    assert!(stored.running_tools.is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool is not run again");
}
