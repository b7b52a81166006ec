//! Two AG-UI server processes behind one store, driven by the official AG-UI client
//! (`@ag-ui/client` 1.0's `HttpAgent`, `tests/agui-client/instances.test.mjs`), 30 trials
//! per store. Each trial pays one invoice on a thread of its own: a run on instance A asks
//! (`pay` needs approval), a run on A approves, and while `pay` runs the same approving run
//! is sent again to instance B, which refuses it (`409 thread_busy`: A's call holds the
//! thread); then, by turn:
//!
//! - **complete**: `pay` is let finish; the thread goes on on B;
//! - **kill**: A is killed with SIGKILL mid-tool; a new client on B runs without messages
//!   (refused as busy while the dead holder's lease lasts): the run lists the call in doubt
//!   with the key the tool got, never runs it; the client answers `done` or `retry`, and the
//!   thread goes on on A's successor;
//! - **kill at the tool's end**: `pay` is let finish and A is killed 0 to 18 ms later, racing
//!   the run's last saves: the run's record says what the conversation holds.
//!
//! `pay` records each run with its idempotency key and pays once per key (the ledger shared
//! with the A2A test, `agentscope-a2a/tests/a2a/payer.rs`). After the trials the test reads
//! the ledger, the store and the client's report, prints one line of tallies per store and
//! asserts: no invoice paid under two keys, every run recorded in the state of what happened
//! (the conversation stored, exactly), every user message in the conversation.
//!
//! The servers are copies of this test binary running the ignored test `worker`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../agentscope-a2a/tests/a2a/payer.rs"]
mod payer;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_server::AgUi;
use agentscope_serving::{Runs, STOPPED, STOPPED_IN_DOUBT};
use agentscope_test::components::postgres::PostgresServer;
use agentscope_test::components::redis::RedisServer;
use payer::{
    Books, Kind, Payer, Trial, assert_trials, pay, run_trials, stored_problems, worker_settings,
};
use serde_json::{Value, json};
use support::components::{node, node_packages};
use support::serve::serve_worker;

/// The environment variable carrying a worker's settings.
const WORKER_ENV: &str = "AGENTSCOPE_AGUI_INSTANCES_WORKER";
/// Trials per store: a third of each kind.
const TRIALS: usize = 30;
/// The stores' lease TTL: a killed holder's lease expires this long after its last renewal.
const LEASE_TTL: Duration = Duration::from_millis(1000);
const CLIENT_DIR: &str = "tests/agui-client";

/// A server process: `assistant` with `pay` (approval needed) on the store the settings
/// name, `{"store", "target", "ttl_ms", "dir"}`; prints `LISTENING <base url>` and serves
/// until killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a server process of the `two_processes_...` tests, which start it themselves"]
async fn worker() {
    let (store, dir) = worker_settings(WORKER_ENV).await;
    let agent = move || {
        ReActAgent::builder()
            .model(Payer)
            .toolkit(Toolkit::new().tool(pay(dir.clone())))
    };
    serve_worker(agent, store).await;
}

/// What the trials of one store came to.
#[derive(Debug, Default)]
struct Tally {
    trials: usize,
    kinds: BTreeMap<String, usize>,
    /// Approving runs by how they ended (their record).
    runs: BTreeMap<&'static str, usize>,
    /// Kills racing the tool's end, by how the approving run ended.
    at_end: BTreeMap<&'static str, usize>,
    resends_refused: usize,
    in_doubt_listed: usize,
    effects: usize,
    duplicates: usize,
    busy_refusals: usize,
    /// The client's unhandled rejections (its reader's cancel after a kill cut a stream).
    unhandled: usize,
    problems: Vec<String>,
}

/// How many trials killed an instance.
fn kinds_killed(tally: &Tally) -> usize {
    tally
        .kinds
        .iter()
        .filter(|(kind, _)| kind.starts_with("kill"))
        .map(|(_, count)| count)
        .sum()
}

/// How a trial's approving run ended, as its record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    Completed,
    InDoubt,
    Stopped,
}

async fn check_trial(trial: &Value, store: &dyn SessionStore, books: &Books, tally: &mut Tally) {
    let read = Trial::read(trial, "thread");
    let (index, kind, invoice, thread) = (read.index, read.kind, read.invoice, read.conversation);
    let killed = read.killed;
    let session = AgUi::session_id("assistant", thread);
    *tally.kinds.entry(kind.to_owned()).or_default() += 1;
    let mut problems: Vec<String> = Vec::new();
    let report = |problems: Vec<String>, tally: &mut Tally| {
        tally
            .problems
            .extend(problems.into_iter().map(|what| read.problem(what)));
    };
    let Some(stored) = store.load(&session).await.unwrap() else {
        report(vec!["no session stored".to_owned()], tally);
        return;
    };
    let runs = Runs::read(&agentscope::session::HookState::new(stored.hooks.clone())).unwrap();
    let approve_id = format!("t{index}-approve");
    let Some(approve) = runs.get(&approve_id) else {
        report(
            vec![format!("no record of run {approve_id}: {runs:?}")],
            tally,
        );
        return;
    };
    // What happened, from the conversation as the next run found it: the approving run's
    // call finished (its record says completed), was cut with `pay`'s result stored (the next
    // run continues the thread), or was cut while `pay` ran (the next run lists the call in
    // doubt).
    let listed_in_doubt = trial["next"]["interrupts"][0]["reason"] == "tool_in_doubt";
    let ended = match &approve.state {
        agentscope_serving::RunState::Completed { .. } => Some(Ended::Completed),
        agentscope_serving::RunState::Failed { .. } if listed_in_doubt => Some(Ended::InDoubt),
        agentscope_serving::RunState::Failed { .. } if killed => Some(Ended::Stopped),
        _ => None,
    };
    let allowed = match kind {
        "complete" => ended == Some(Ended::Completed),
        "kill" => ended == Some(Ended::InDoubt),
        _ => ended.is_some(),
    };
    let Some(ended) = ended.filter(|_| allowed) else {
        report(
            vec![format!(
                "run {approve_id} ended {:?}; the next run: {}",
                approve.state, trial["next"]
            )],
            tally,
        );
        return;
    };
    // The run's record says why it failed: its call stopped while `pay` ran (in doubt), or
    // after.
    let reason = match ended {
        Ended::Completed => None,
        Ended::InDoubt => Some(STOPPED_IN_DOUBT),
        Ended::Stopped => Some(STOPPED),
    };
    if let (
        Some(reason),
        agentscope_serving::RunState::Failed {
            reason: recorded, ..
        },
    ) = (reason, &approve.state)
        && recorded != reason
    {
        problems.push(format!(
            "run {approve_id} is recorded failed {recorded:?}; its call pay-{invoice} was \
             cut {}: expected {reason:?}",
            match ended {
                Ended::InDoubt => "while pay ran (the next run listed it in doubt)",
                _ => "after pay's result was stored",
            }
        ));
    }
    let expect = |problems: &mut Vec<String>, what: &str, got: Value, want: Value| {
        if got != want {
            problems.push(format!("{what}: got {got}, expected {want}"));
        }
    };

    // The ledger: one key per invoice, paid once (a retry runs `pay` again with that key).
    let keys = books.attempts.get(&invoice).cloned().unwrap_or_default();
    let retried = trial["answer"]["action"] == "retry";
    if keys.iter().collect::<BTreeSet<_>>().len() != 1 || keys.len() != 1 + usize::from(retried) {
        problems.push(format!("pay's runs: {keys:?} (retried: {retried})"));
    }
    let key = keys.first().cloned().unwrap_or_default();
    if !books.effects.contains(&key) {
        problems.push(format!("no effect recorded under key {key}"));
    }

    // The client's view.
    let finished = |run: &Value| {
        json!({"outcome": run["outcome"], "interrupts": run["interrupts"], "text": run["text"],
               "error": run["error"]})
    };
    expect(
        &mut problems,
        "asked",
        finished(&trial["asked"]),
        json!({"outcome": "interrupt", "interrupts": [{"id": format!("pay-{invoice}"),
               "reason": "tool_approval", "idempotencyKey": null}], "text": null, "error": null}),
    );
    let refused = json!({"status": trial["resend"]["status"], "code": trial["resend"]["code"]});
    if refused == json!({"status": 409, "code": "thread_busy"}) {
        tally.resends_refused += 1;
    } else {
        problems.push(format!("the resent run: {}", trial["resend"]));
    }
    let paid_run = json!({"outcome": "success", "interrupts": [],
                          "text": format!("Invoice {invoice} is paid."), "error": null});
    let approve_seen = finished(&trial["approve"]);
    let approve_cut = trial["approve"]["outcome"].is_null() && !trial["approve"]["error"].is_null();
    match (kind, ended) {
        ("complete", _) => expect(&mut problems, "approve", approve_seen, paid_run.clone()),
        // Killed mid-tool: the run's stream is cut.
        ("kill", _) | (_, Ended::InDoubt | Ended::Stopped) => {
            if !approve_cut {
                problems.push(format!("the killed run was not cut: {}", trial["approve"]));
            }
        }
        // Killed as it ended: the client saw it end, or the kill cut it.
        _ => {
            if !approve_cut && approve_seen != paid_run {
                problems.push(format!("the killed run: {}", trial["approve"]));
            }
        }
    }
    let mut later = Vec::new();
    if killed {
        let next = &trial["next"];
        tally.busy_refusals += next["busy"].as_u64().unwrap_or_default() as usize;
        match ended {
            Ended::InDoubt => {
                expect(
                    &mut problems,
                    "next",
                    finished(next),
                    json!({"outcome": "interrupt", "interrupts": [{"id": format!("pay-{invoice}"),
                           "reason": "tool_in_doubt", "idempotencyKey": key}], "text": null,
                           "error": null}),
                );
                if next["interrupts"][0]["idempotencyKey"] == json!(key) {
                    tally.in_doubt_listed += 1;
                }
                expect(
                    &mut problems,
                    "answer",
                    finished(&trial["answer"]),
                    paid_run.clone(),
                );
                later.extend([
                    (format!("t{index}-next"), "input-required"),
                    (format!("t{index}-answer"), "completed"),
                ]);
            }
            // The result was stored: the run continues the thread, the model answers.
            Ended::Stopped => {
                expect(&mut problems, "next", finished(next), paid_run.clone());
                later.push((format!("t{index}-next"), "completed"));
            }
            // Nothing to continue.
            Ended::Completed => expect(
                &mut problems,
                "next",
                json!({"status": next["status"], "code": next["code"]}),
                json!({"status": 400, "code": "no_new_message"}),
            ),
        }
        if ended != Ended::InDoubt && !trial["answer"].is_null() {
            problems.push(format!(
                "an answer with nothing in doubt: {}",
                trial["answer"]
            ));
        }
    }
    expect(
        &mut problems,
        "again",
        finished(&trial["again"]),
        json!({"outcome": "success", "interrupts": [], "text": "Yes, it was paid.", "error": null}),
    );
    later.push((format!("t{index}-again"), "completed"));

    // The store: the conversation and the runs, as what happened.
    let result = match (ended, retried) {
        (Ended::InDoubt, false) => format!("paid invoice {invoice} (ledger checked)"),
        _ => format!("paid invoice {invoice}"),
    };
    let expected = vec![
        format!("User: Pay invoice {invoice}"),
        format!(r#"Assistant: call pay-{invoice} pay {{"invoice":{invoice}}}"#),
        format!("Tool: result pay-{invoice} (ok): {result}"),
        format!("Assistant: Invoice {invoice} is paid."),
        "User: Was it paid?".to_owned(),
        "Assistant: Yes, it was paid.".to_owned(),
    ];
    problems.extend(stored_problems(&stored, &session, invoice, &key, &expected));
    let states: Vec<(String, &str)> = runs
        .iter()
        .map(|run| (run.id.clone(), run.state.name()))
        .collect();
    let mut want = vec![
        (format!("t{index}-ask"), "input-required"),
        (
            approve_id.clone(),
            match ended {
                Ended::Completed => "completed",
                _ => "failed",
            },
        ),
    ];
    want.extend(later);
    if states
        != want
            .iter()
            .map(|(id, s)| (id.clone(), *s))
            .collect::<Vec<_>>()
    {
        problems.push(format!("the runs: {states:?}, expected {want:?}"));
    }
    // No lost message: each user message a run brought is in the conversation.
    for id in [format!("t{index}-ask"), format!("t{index}-again")] {
        if !stored.messages.iter().any(|msg| msg.id == id.as_str()) {
            problems.push(format!("message {id} is lost"));
        }
    }

    let name = match ended {
        Ended::Completed => "completed",
        Ended::InDoubt => "failed, in doubt",
        Ended::Stopped => "failed after the result",
    };
    *tally.runs.entry(name).or_default() += 1;
    if kind == "kill-at-end" {
        *tally.at_end.entry(name).or_default() += 1;
    }
    report(problems, tally);
}

/// The trials on one store: two instances on `target`, the client's trials, the checks;
/// prints the tallies and asserts there is nothing to report.
fn two_processes(kind: Kind, target: &str) {
    if node().is_none() || node_packages(CLIENT_DIR).is_none() {
        return;
    }
    let started = Instant::now();
    let mut client = Command::new("node");
    client
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg(Path::new(CLIENT_DIR).join("instances.test.mjs"));
    let mut tally = Tally::default();
    let outcome = run_trials(
        ("worker", WORKER_ENV, 2),
        (kind, target, LEASE_TTL),
        client,
        TRIALS,
        async |trial, store, books| check_trial(trial, store, books, &mut tally).await,
    );
    let (report, books) = (outcome.report, outcome.books);
    tally.trials = outcome.trials;
    tally.effects = books.effects.len();
    tally.duplicates = books.duplicates();
    // The client's own unhandled rejections: its reader's cancel, re-thrown when a killed
    // server cut a run's stream (one per kill at most), and nothing else.
    let unhandled: Vec<&str> = report["unhandled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|reason| reason.as_str().unwrap())
        .collect();
    tally.unhandled = unhandled.len();
    if unhandled
        .iter()
        .any(|reason| *reason != "TypeError: terminated")
        || unhandled.len() > kinds_killed(&tally)
    {
        tally
            .problems
            .push(format!("the client's unhandled rejections: {unhandled:?}"));
    }
    let kinds = |name: &str| tally.kinds.get(name).copied().unwrap_or_default();
    println!(
        "AG-UI, 2 processes on {}: trials {} (complete {}, kill mid-tool {}, kill at the \
         tool's end {}); approving runs {:?}; kills at the tool's end {:?}; resent runs \
         refused 409 {}; calls in doubt listed with the tool's key {}; effects {} for {} \
         invoices, duplicates {}; busy refusals while a dead holder's lease lasted {}; the \
         client's unhandled rejections (a cut stream's reader) {}; problems {}; wall {:.1} s",
        kind.name(),
        tally.trials,
        kinds("complete"),
        kinds("kill"),
        kinds("kill-at-end"),
        tally.runs,
        tally.at_end,
        tally.resends_refused,
        tally.in_doubt_listed,
        tally.effects,
        books.attempts.len(),
        tally.duplicates,
        tally.busy_refusals,
        tally.unhandled,
        tally.problems.len(),
        started.elapsed().as_secs_f64(),
    );
    assert_trials(&tally.problems, tally.trials, TRIALS);
    assert_eq!(
        [kinds("complete"), kinds("kill"), kinds("kill-at-end")],
        [TRIALS / 3; 3]
    );
    assert_eq!(tally.resends_refused, TRIALS);
    assert_eq!((tally.effects, books.attempts.len()), (TRIALS, TRIALS));
    assert_eq!(tally.duplicates, 0);
}

#[test]
#[cfg_attr(
    not(all(has_node, has_redis)),
    ignore = "Node.js, npm or redis-server not installed: .ci/run installs them"
)]
fn two_processes_on_one_redis_keep_at_most_once_and_lose_nothing() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    two_processes(Kind::Redis, &server.url());
}

#[test]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
fn two_processes_on_one_sqlite_file_keep_at_most_once_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    two_processes(Kind::Sqlite, path.to_str().unwrap());
}

#[test]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
fn two_processes_on_one_postgres_keep_at_most_once_and_lose_nothing() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    two_processes(Kind::Postgres, &server.url());
}
