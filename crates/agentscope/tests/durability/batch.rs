//! Kill -9 at random instants in the middle of a sequential batch of three tools, in each
//! durability mode.
//!
//! - `Step` and `Async`: each call is recorded as running before it starts (under `Async`
//!   the call waits for that record, the tool not being idempotent) and its result stored
//!   as it settles (under `Async`, by the next record or the end at the latest), so a resume
//!   keeps every completed result, runs the calls that never started, and finds at most one
//!   call in doubt (the one running at the kill), which it does not run again.
//! - `Exit`: the session holds either nothing of the call or all of it; a resume runs the
//!   whole call again, its tools included: what `Exit` gives up.
//!
//! On SQLite, Redis and PostgreSQL, a resume refused as busy by the killed worker's lease is
//! tried again.

use std::path::Path;
use std::time::Instant;

use agentscope::interrupt::INTERRUPTED_WHILE_RUNNING;
use agentscope::prelude::*;

use crate::stores::{Place, finish_past_dead_lease};
use crate::worker::{Mode, Outcome, StoreKind, Task, finish, spawn, spawn_ready};

const TRIALS: usize = 30;
const IDS: [&str; 3] = ["s1", "s2", "s3"];
/// How many `<what> <id>` lines `path` holds.
fn count(path: &Path, what: &str, id: &str) -> usize {
    let line = format!("{what} {id}");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == line)
        .count()
}

/// The task of a batch worker in `mode` on `place`: on `session`, effects in `effects`,
/// asking for the batch when `first`.
fn batch_task(
    kind: StoreKind,
    place: &Place,
    mode: Mode,
) -> impl Fn(&str, &Path, bool) -> Task + '_ {
    move |session, effects, first| Task::Batch {
        store: kind,
        path: place.path.clone(),
        session: session.to_owned(),
        effects: effects.to_owned(),
        first,
        mode,
    }
}

/// How long the whole call takes unkilled, from the worker's store being open to its exit:
/// the kills are spread over it.
fn lifetime(place: &Place, task: &impl Fn(&str, &Path, bool) -> Task) -> std::time::Duration {
    let effects = place.dir.path().join("effects-calibration");
    let child = spawn_ready(&task("calibration", &effects, true));
    let started = Instant::now();
    let outcomes = finish(child);
    assert_eq!(outcomes, [Outcome::Ok("Done.".into())]);
    started.elapsed()
}

/// Starts a worker for `task` and kills it (SIGKILL) `trial / TRIALS` of `lifetime` after its
/// store is open; when.
async fn kill_at(task: &Task, lifetime: std::time::Duration, trial: usize) -> Instant {
    let mut child = spawn_ready(task);
    tokio::time::sleep(lifetime.mul_f64(trial as f64 / TRIALS as f64)).await;
    let _ = child.kill();
    let _ = child.wait();
    Instant::now()
}

async fn step_trials(kind: StoreKind) {
    trials(kind, Mode::Step).await;
}

async fn async_trials(kind: StoreKind) {
    trials(kind, Mode::Async).await;
}

/// `Step` and `Async`: what a killed worker leaves, and its resume.
async fn trials(kind: StoreKind, mode: Mode) {
    let Some(place) = Place::new(kind) else {
        return;
    };
    let dir = &place.dir;
    let store = place.open();
    let began = Instant::now();
    let task = batch_task(kind, &place, mode);
    let lifetime = lifetime(&place, &task);
    // Per trial: how many results were real before the resume, and whether one was in doubt.
    let mut kept_before_resume = [0_usize; 4];
    let mut in_doubt = 0;
    let mut finished_before_kill = 0;
    // Resumes refused as busy while a killed worker's lease lived on.
    let mut busy_resumes = 0;
    for trial in 0..TRIALS {
        let session = format!("batch-{trial}");
        let effects = dir.path().join(format!("effects-{trial}"));
        let killed = kill_at(&task(&session, &effects, true), lifetime, trial).await;

        let before = store.load(&session).await.unwrap();
        let stored_before: Vec<String> = before
            .iter()
            .flat_map(|state| state.messages.iter().flat_map(Msg::tool_results))
            .map(ToolResultBlock::text_output)
            .collect();
        kept_before_resume[stored_before.len()] += 1;
        let asked = before
            .as_ref()
            .is_some_and(|state| state.messages.iter().any(Msg::has_tool_uses));
        let whole = before
            .as_ref()
            .is_some_and(|state| state.messages.last().map(Msg::text).as_deref() == Some("Done."));
        if whole {
            // The killed worker finished the call first.
            kept_before_resume[3] -= 1;
            finished_before_kill += 1;
        } else if asked {
            let (outcomes, busy) =
                finish_past_dead_lease(kind, killed, || spawn(&task(&session, &effects, false)))
                    .await;
            assert_eq!(outcomes, [Outcome::Ok("Done.".into())], "trial {trial}");
            busy_resumes += busy;
        } else {
            // Killed before the batch was stored: nothing ran, nothing to resume.
            assert!(IDS.iter().all(|id| count(&effects, "start", id) == 0));
            continue;
        }

        let state = store.load(&session).await.unwrap().unwrap();
        let results: Vec<(String, String)> = state
            .messages
            .iter()
            .flat_map(Msg::tool_results)
            .map(|result| (result.id.to_string(), result.text_output()))
            .collect();
        // Every result stored before the kill is kept, in call order.
        for (stored, (_, now)) in stored_before.iter().zip(&results) {
            assert_eq!(stored, now, "trial {trial}");
        }
        let mut doubted = 0;
        for (id, (result_id, text)) in IDS.iter().zip(&results) {
            assert_eq!(id, result_id, "trial {trial}: results in call order");
            assert!(count(&effects, "done", id) <= 1, "trial {trial}: {id}");
            if text == INTERRUPTED_WHILE_RUNNING {
                // Recorded as running, then killed: before, inside or after the tool.
                assert!(count(&effects, "start", id) <= 1, "trial {trial}: {id}");
                doubted += 1;
            } else {
                // Started exactly once: not run again, not left unrun.
                assert_eq!(count(&effects, "start", id), 1, "trial {trial}: {id}");
                assert_eq!(*text, format!("{id} done"), "trial {trial}");
                assert_eq!(count(&effects, "done", id), 1, "trial {trial}: {id}");
            }
        }
        assert_eq!(results.len(), 3, "trial {trial}: {results:?}");
        // Only the call running at the kill can be in doubt.
        assert!(doubted <= 1, "trial {trial}: {results:?}");
        in_doubt += doubted;
        assert!(state.running_tools.is_empty(), "trial {trial}");
        assert_eq!(
            state.messages.last().map(Msg::text).as_deref(),
            Some("Done."),
            "trial {trial}"
        );
    }
    println!(
        "{kind:?}, {mode:?}: {TRIALS} trials in {:.1?}, kills spread over {lifetime:?}: results stored \
         before the resume (0, 1, 2, 3): {kept_before_resume:?}; calls in doubt: {in_doubt}; \
         whole before the kill: {finished_before_kill}; {busy_resumes} resumes busy until the \
         killed worker's lease expired",
        began.elapsed()
    );
}

on_every_store! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    step_trials:
    a_killed_sequential_batch_keeps_its_results_and_runs_the_rest_json,
    a_killed_sequential_batch_keeps_its_results_and_runs_the_rest_sqlite,
    a_killed_sequential_batch_keeps_its_results_and_runs_the_rest_redis,
    a_killed_sequential_batch_keeps_its_results_and_runs_the_rest_postgres,
}

on_every_store! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async_trials:
    async_a_killed_sequential_batch_keeps_its_results_and_runs_the_rest_json,
    async_a_killed_sequential_batch_keeps_its_results_and_runs_the_rest_sqlite,
    async_a_killed_sequential_batch_keeps_its_results_and_runs_the_rest_redis,
    async_a_killed_sequential_batch_keeps_its_results_and_runs_the_rest_postgres,
}

/// `Exit`: a killed worker leaves nothing of its call or all of it; a resume runs the call
/// again from the start, tools included.
async fn exit_trials(kind: StoreKind) {
    let Some(place) = Place::new(kind) else {
        return;
    };
    let dir = &place.dir;
    let store = place.open();
    let began = Instant::now();
    let task = batch_task(kind, &place, Mode::Exit);
    let lifetime = lifetime(&place, &task);
    let mut nothing_stored = 0;
    let mut finished_before_kill = 0;
    // Tools that started in the killed worker and ran again on the resume.
    let mut ran_twice = 0;
    let mut busy_resumes = 0;
    for trial in 0..TRIALS {
        let session = format!("exit-{trial}");
        let effects = dir.path().join(format!("effects-{trial}"));
        let killed = kill_at(&task(&session, &effects, true), lifetime, trial).await;

        if let Some(state) = store.load(&session).await.unwrap() {
            // All of the call, or it would not be stored at all.
            assert_eq!(
                state.messages.last().map(Msg::text).as_deref(),
                Some("Done."),
                "trial {trial}"
            );
            assert_eq!(state.messages.iter().flat_map(Msg::tool_results).count(), 3);
            assert!(state.running_tools.is_empty());
            finished_before_kill += 1;
            continue;
        }
        nothing_stored += 1;
        let started_before = IDS.map(|id| count(&effects, "start", id));
        // Nothing of the call is stored: the application makes it again.
        let (outcomes, busy) =
            finish_past_dead_lease(kind, killed, || spawn(&task(&session, &effects, true))).await;
        assert_eq!(outcomes, [Outcome::Ok("Done.".into())], "trial {trial}");
        busy_resumes += busy;
        let state = store.load(&session).await.unwrap().unwrap();
        let results: Vec<String> = state
            .messages
            .iter()
            .flat_map(Msg::tool_results)
            .map(ToolResultBlock::text_output)
            .collect();
        assert_eq!(results, IDS.map(|id| format!("{id} done")), "trial {trial}");
        for (id, before) in IDS.iter().zip(started_before) {
            // Every tool ran again, whether or not it had run in the killed worker.
            assert_eq!(
                count(&effects, "start", id),
                before + 1,
                "trial {trial}: {id}"
            );
            ran_twice += usize::from(before > 0);
        }
    }
    // Kills spread over the call land inside the batch: tools ran twice.
    assert!(ran_twice > 0, "no kill landed after a tool started");
    println!(
        "{kind:?}, Exit: {TRIALS} trials in {:.1?}, kills spread over {lifetime:?}: nothing \
         stored {nothing_stored}, whole before the kill {finished_before_kill}; tools that ran \
         twice: {ran_twice}; {busy_resumes} resumes busy until the killed worker's lease expired",
        began.elapsed()
    );
}

on_every_store! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    exit_trials:
    exit_a_killed_call_leaves_all_or_nothing_and_its_tools_run_again_json,
    exit_a_killed_call_leaves_all_or_nothing_and_its_tools_run_again_sqlite,
    exit_a_killed_call_leaves_all_or_nothing_and_its_tools_run_again_redis,
    exit_a_killed_call_leaves_all_or_nothing_and_its_tools_run_again_postgres,
}
