//! Durability modes with an approval hook, with real processes: a worker approves a call
//! and resumes, and is killed with SIGKILL at a chosen point (it blocks its thread there, so
//! nothing of the call goes on, its save queue included); then the application resumes
//! "after the restart". Under `Step` and `Async` alike: a decision the killed worker took is
//! never asked for again, a tool that is not idempotent runs once (found in doubt when it
//! was killed mid-tool), and one that declares `RunAgain` runs again with the same
//! idempotency key. `Exit` is refused with an approval hook (see `sessions::durability`).

use std::path::Path;
use std::time::{Duration, Instant};

use agentscope::ToolContext;
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_test::process::SelfProcess;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::stores::Place;
use crate::worker::{
    Mode, Outcome, Pause, StoreKind, TASK, Task, classify, paused_agent, transfer_model,
};

/// What the application found and did after the kill.
#[derive(Debug, PartialEq, Eq)]
struct AfterKill {
    /// The stored session still awaited a decision on `t1`: the person would be asked
    /// again (the test approves again and resumes).
    asked_again: bool,
    /// How the resume ended.
    outcome: Outcome,
    /// The idempotency key of each start of the tool, the killed worker's included.
    starts: Vec<String>,
}

/// The keys of the `start <key>` lines of `path`, in order.
fn starts(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix("start ").map(str::to_owned))
        .collect()
}

/// The idempotency key of `t1` in `session`.
fn key(session: &str) -> String {
    ToolContext::new(ToolUseBlock::new("t1", "transfer", json!({"amount": 5})))
        .with_scope(session)
        .idempotency_key()
}

/// On `session` of `place`: a call stops for approval of `t1`; a worker in `mode` approves
/// and resumes, and is killed at `pause`; then a fresh agent resumes, approving again only
/// if the session asks for it.
async fn killed_at(
    place: &Place,
    session: &str,
    mode: Mode,
    pause: Pause,
    run_again: bool,
) -> AfterKill {
    let store = place.open();
    let effects = place.dir.path().join(format!("effects-{session}"));
    let agent = |model| {
        paused_agent(
            store.clone(),
            session,
            model,
            effects.clone(),
            mode,
            (None, run_again),
        )
        .unwrap()
    };
    let (first, _) = agent(transfer_model());
    let stopped = first.call("Send 5.").await.unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    drop(first);

    let task = Task::Paused {
        store: place.kind,
        path: place.path.clone(),
        session: session.to_owned(),
        effects: effects.clone(),
        mode,
        pause,
        run_again,
    };
    let mut worker = SelfProcess::spawn_json("worker::run", TASK, &task);
    worker.expect("PAUSED");
    worker.kill();
    let killed = Instant::now();

    // After the restart: what awaits a person is what the session says.
    let (agent, approvals) = agent(ScriptedModel::new([ScriptedResponse::text("Sent.")]));
    let stored = store.load(session).await.unwrap().unwrap();
    approvals.restore_state(&stored).unwrap();
    let asked_again = approvals.pending().iter().any(|call| call.id == "t1");
    if asked_again {
        approvals.approve("t1").unwrap();
    }
    let outcome = loop {
        match agent.call(()).await {
            // The killed worker's lease (SQLite) lives on until it expires.
            Err(AgentError::Busy)
                if place
                    .kind
                    .lease_outlives_holder()
                    .is_some_and(|ttl| killed.elapsed() < ttl * 3) =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            result => break classify(result),
        }
    };
    AfterKill {
        asked_again,
        outcome,
        starts: starts(&effects),
    }
}

/// The three kills in `mode`, each on a session of its own, and what each must come to.
async fn approved_resumes_killed(kind: StoreKind, mode: Mode) {
    let Some(place) = Place::new(kind) else {
        return;
    };
    let found = [
        killed_at(&place, "before-tool", mode, Pause::BeforeTool, false).await,
        killed_at(&place, "in-tool", mode, Pause::InTool, false).await,
        killed_at(&place, "in-tool-run-again", mode, Pause::InTool, true).await,
    ];
    let sent = || Outcome::Ok("Sent.".into());
    let expected = [
        // Killed after PreCall, before the tool: the decision was stored; the tool runs
        // once.
        AfterKill {
            asked_again: false,
            outcome: sent(),
            starts: vec![key("before-tool")],
        },
        // Killed while the tool ran: in doubt, it stops for the application and never runs
        // again by itself.
        AfterKill {
            asked_again: false,
            outcome: Outcome::InDoubt(vec!["t1".into()]),
            starts: vec![key("in-tool")],
        },
        // A tool that declares `RunAgain` (it does not wait for its "started" record under
        // `Async`): it runs again with the same key, without asking again.
        AfterKill {
            asked_again: false,
            outcome: sent(),
            starts: vec![key("in-tool-run-again"); 2],
        },
    ];
    assert_eq!(found, expected, "{kind:?} {mode:?}");
}

async fn under_step(kind: StoreKind) {
    approved_resumes_killed(kind, Mode::Step).await;
}

async fn under_async(kind: StoreKind) {
    approved_resumes_killed(kind, Mode::Async).await;
}

on_both_stores! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    under_step:
    step_kills_after_an_approval_never_ask_again_nor_run_twice_json,
    step_kills_after_an_approval_never_ask_again_nor_run_twice_sqlite,
}

on_both_stores! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    under_async:
    async_kills_after_an_approval_never_ask_again_nor_run_twice_json,
    async_kills_after_an_approval_never_ask_again_nor_run_twice_sqlite,
}
