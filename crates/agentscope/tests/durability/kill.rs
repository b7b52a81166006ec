//! Kill -9 at random instants while a worker resumes an approved tool: the tool never runs
//! without a decision, an approved call found in doubt stops for the application (the
//! default for a tool that needs approval), and the application's resolution holds: a
//! verified result is what the model reads, a retry reaches the tool with the key of the
//! first attempt, and the transfer happens once. On SQLite, Redis and PostgreSQL, a worker
//! killed while it held the session's lease leaves the session busy until the lease expires
//! (`StoreKind::lease_outlives_holder`): a resume refused as busy then is tried again.

use std::path::Path;
use std::time::Instant;

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use serde_json::Value;

use crate::stores::{Place, finish_past_dead_lease};
use crate::worker::{
    Outcome, Resolve, StoreKind, Task, VERIFIED, approval_agent, finish, spawn, spawn_ready,
    transfer_model,
};

const TRIALS: usize = 30;

/// What one trial came to.
#[derive(Debug, Default)]
struct Tally {
    /// The killed worker stored the tool's result (and maybe the answer).
    completed_before_kill: usize,
    /// The approval was stored; a resume ran the tool to completion.
    completed_on_resume: usize,
    /// The tool was recorded as started and its result never stored: the resume stopped
    /// with it in doubt, and the application ran it again with the same key.
    in_doubt_retried: usize,
    /// The same, and the application answered it with a result it verified.
    in_doubt_verified: usize,
    /// Killed before the approval was stored: the session still awaited it, nothing ran,
    /// and it was approved again.
    approval_not_yet_stored: usize,
}

/// The keys of the `<what> <key>` lines of `path`, in order.
fn keys(path: &Path, what: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            line.strip_prefix(what)?
                .strip_prefix(' ')
                .map(str::to_owned)
        })
        .collect()
}

/// The text of t1's stored result, if there is one.
fn t1_result(messages: &[Msg]) -> Option<String> {
    messages
        .iter()
        .flat_map(Msg::tool_results)
        .find(|result| result.id == "t1")
        .map(ToolResultBlock::text_output)
}

async fn trials(kind: StoreKind) {
    let Some(place) = Place::new(kind) else {
        return;
    };
    let (dir, path) = (&place.dir, &place.path);
    let store = place.open();
    let began = Instant::now();
    let mut tally = Tally::default();
    // Resumes refused as busy while a killed worker's lease lived on.
    let mut busy_resumes = 0;
    // How long a resume takes unkilled, from its store being open to its exit: the kills are
    // spread evenly over it, so they land before the approval is stored, while the tool
    // runs, and after.
    let lifetime = {
        let effects = dir.path().join("effects-calibration");
        let (agent, _) = approval_agent(
            store.clone(),
            "calibration",
            transfer_model(),
            effects.clone(),
        );
        agent.call("Send 5.").await.unwrap();
        let child = spawn_ready(&Task::Resume {
            store: kind,
            path: path.clone(),
            session: "calibration".into(),
            effects,
            approve: true,
            resolve: Resolve::Nothing,
        });
        let started = Instant::now();
        let outcomes = finish(child);
        assert!(
            matches!(outcomes.as_slice(), [Outcome::Ok(_)]),
            "{outcomes:?}"
        );
        started.elapsed()
    };
    for trial in 0..TRIALS {
        let session = format!("kill-{trial}");
        let effects = dir.path().join(format!("effects-{trial}"));
        // The first call stops for approval of t1.
        let (agent, _) = approval_agent(store.clone(), &session, transfer_model(), effects.clone());
        let stopped = agent.call("Send 5.").await.unwrap();
        assert_eq!(
            stopped.generate_reason(),
            Some(GenerateReason::ReasoningStopRequested)
        );
        drop(agent);

        // A worker approves and resumes; it is killed at a random instant.
        let task = |approve, resolve| Task::Resume {
            store: kind,
            path: path.clone(),
            session: session.clone(),
            effects: effects.clone(),
            approve,
            resolve,
        };
        let mut child = spawn_ready(&task(true, Resolve::Nothing));
        tokio::time::sleep(lifetime.mul_f64(trial as f64 / TRIALS as f64)).await;
        let _ = child.kill();
        let _ = child.wait();
        let killed = Instant::now();

        // Resume until the conversation is whole, approving only when the session does not
        // hold the approval (or the started record) already; a call in doubt is resolved by
        // a retry in even trials and by a verified result in odd ones.
        let mut resumes = 0;
        let mut classified = false;
        let mut resolve = Resolve::Nothing;
        loop {
            let state = store.load(&session).await.unwrap().unwrap();
            let result = t1_result(&state.messages);
            if let Some(text) = &result
                && !classified
            {
                classified = true;
                match (text.as_str(), resolve) {
                    ("transferred", Resolve::Nothing) if resumes == 0 => {
                        tally.completed_before_kill += 1;
                    }
                    ("transferred", Resolve::Nothing) => tally.completed_on_resume += 1,
                    ("transferred", Resolve::Retry) => tally.in_doubt_retried += 1,
                    (VERIFIED, Resolve::Verified) => tally.in_doubt_verified += 1,
                    other => panic!("trial {trial}: unexpected result {other:?}"),
                }
            }
            let answered = state
                .messages
                .last()
                .is_some_and(|msg| msg.role == Role::Assistant && !msg.has_tool_uses());
            if result.is_some() && answered {
                break;
            }
            let decided = result.is_some()
                || state
                    .hooks
                    .get("tool_approval")
                    .and_then(|state| state.get("decisions"))
                    .and_then(Value::as_object)
                    .is_some_and(|decisions| decisions.contains_key("t1"))
                || state.running_tools.iter().any(|id| id == "t1");
            if !decided {
                tally.approval_not_yet_stored += 1;
            }
            let (outcomes, busy) =
                finish_past_dead_lease(kind, killed, || spawn(&task(!decided, resolve))).await;
            // Only the killed worker's lease can make a resume busy: the later ones start
            // after a worker that exited normally.
            assert!(
                busy == 0 || resumes == 0,
                "trial {trial}: resume {resumes} busy"
            );
            busy_resumes += busy;
            resumes += 1;
            match outcomes.as_slice() {
                [Outcome::Ok(_)] => {}
                // Started, never finished: it stops for the application, once.
                [Outcome::InDoubt(ids)] if resolve == Resolve::Nothing => {
                    assert_eq!(ids, &["t1"], "trial {trial}");
                    resolve = if trial % 2 == 0 {
                        Resolve::Retry
                    } else {
                        Resolve::Verified
                    };
                }
                other => panic!(
                    "trial {trial}: resume {resumes} ended {other:?} (a stored approval asked \
                     for again, or a resolution not taken?)"
                ),
            }
            assert!(resumes <= 3, "trial {trial}: not whole after three resumes");
        }
        // The transfer happened at most once, never without a decision: one start, or two
        // when the application retried, both with the same idempotency key.
        let (starts, dones) = (keys(&effects, "start"), keys(&effects, "done"));
        let most = if resolve == Resolve::Retry { 2 } else { 1 };
        assert!(
            starts.len() <= most && dones.len() <= 1,
            "trial {trial}: {starts:?} starts, {dones:?} done"
        );
        assert!(
            starts.iter().chain(&dones).all(|key| *key == starts[0]),
            "trial {trial}: a retry used another key: {starts:?} {dones:?}"
        );
        // The conversation is whole: nothing pending, the answer stored last.
        let state = store.load(&session).await.unwrap().unwrap();
        assert!(state.running_tools.is_empty(), "trial {trial}");
        assert_eq!(
            state.messages.last().map(Msg::text).as_deref(),
            Some("Sent."),
            "trial {trial}"
        );
    }
    println!(
        "{kind:?}: {TRIALS} trials in {:.1?}, kills spread over {lifetime:?}: {tally:?}; \
         {busy_resumes} resumes busy until the killed worker's lease expired",
        began.elapsed()
    );
    assert_eq!(
        tally.completed_before_kill
            + tally.completed_on_resume
            + tally.in_doubt_retried
            + tally.in_doubt_verified,
        TRIALS
    );
}

on_every_store! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    trials:
    killed_resumes_never_run_an_approved_tool_twice_json,
    killed_resumes_never_run_an_approved_tool_twice_sqlite,
    killed_resumes_never_run_an_approved_tool_twice_redis,
    killed_resumes_never_run_an_approved_tool_twice_postgres,
}
