//! Three A2A server processes behind one store (SQLite on one local file, Redis, PostgreSQL,
//! each with a 1 s lease TTL), driven by the official A2A Python client
//! (`tests/python/instances.py`), 40 trials per store, 8 of each kind. Each trial pays one invoice in a
//! context of its own: the client asks on instance A (`pay` needs approval), approves there,
//! and while `pay` runs sends the same approval again to instance B (answered with the task
//! it started, followed to its end) and subscribes on instance C; then, by turn:
//!
//! - **complete**: `pay` is let finish;
//! - **cancel**: the task is canceled from B;
//! - **kill**: A is killed with SIGKILL mid-tool; the next message, sent to B until it is
//!   not refused as busy (the dead holder's lease lasts up to its TTL), must ask about the
//!   call in doubt with the key the tool got, and is not given to the agent; the client
//!   answers `done` or `retry` (by turn) on B, then sends the message again to A's successor;
//! - **kill at the tool's end**: `pay` is let finish and A is killed 0 to 18 ms later, racing
//!   the call's last saves: the task must say what the conversation holds (completed with
//!   the answer stored, failed with the calls in doubt or after the result);
//! - **kill twice**: as kill, then the call is retried on C and C is killed while `pay` runs
//!   again: the retry's task is failed with the call in doubt, and the next message asks
//!   about it again, with the same key; the client answers `done`.
//!
//! `pay` records each run with its idempotency key (`attempts`) and pays once per key (a
//! file per key in `effects/`). After the trials the test reads the ledger, the store and
//! the client's report, prints one line of tallies per store, and asserts: no invoice paid
//! under two keys, every task and run in the state of what happened (the conversation
//! stored, exactly), every stream of a task (the original, the resend, the subscription)
//! ending with the task's state, every message that got a task id in the conversation or in
//! the record of a task that says what became of it.
//!
//! The servers are copies of this test binary running the ignored test `processes::worker`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT};
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_a2a::A2a;
use agentscope_serving::{Runs, STOPPED, STOPPED_IN_DOUBT};
use agentscope_test::components::available;
use agentscope_test::components::postgres::PostgresServer;
use agentscope_test::components::redis::RedisServer;
use serde_json::{Value, json};

use crate::payer::{
    Books, Kind, Outcome, Payer, Trial, assert_trials, pay, run_trials, stored_problems,
    worker_settings,
};
use crate::python::python;
use crate::support::serve_worker;

/// The environment variable carrying a worker's settings.
const WORKER_ENV: &str = "AGENTSCOPE_A2A_PROCESSES_WORKER";
/// How a message not given to the agent (its context awaits answers) is answered.
const NOT_GIVEN: &str = "This message was not given to the agent: the calls below must be \
     answered on this task first; send it again after.";
/// Trials per store: a fifth of each kind.
const TRIALS: usize = 40;
/// The stores' lease TTL: a killed holder's lease expires this long after its last renewal.
const LEASE_TTL: Duration = Duration::from_millis(1000);

/// A server process: `assistant` with `pay` (approval needed) on the store the settings
/// name, `{"store", "target", "ttl_ms", "dir"}`; prints `LISTENING <base url>` and serves
/// until killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a server process of the `several_processes_...` tests, which start it themselves"]
async fn worker() {
    let (store, dir) = worker_settings(WORKER_ENV).await;
    serve_worker(&Payer, Toolkit::new().tool(pay(dir)), store).await;
}

/// What the trials of one store came to.
#[derive(Debug, Default)]
struct Tally {
    trials: usize,
    /// Trials by kind: complete, cancel, kill (mid-tool), kill-at-end, kill-twice.
    kinds: BTreeMap<String, usize>,
    /// Tasks by how they ended: completed, canceled, failed as killed (the calls in doubt),
    /// failed as killed (after the tool's result was stored).
    completed: usize,
    canceled: usize,
    failed_in_doubt: usize,
    failed_stopped: usize,
    /// Kills racing the tool's end, by how the task ended.
    at_end: BTreeMap<&'static str, usize>,
    resends_followed: usize,
    subscriptions_followed: usize,
    effects: usize,
    duplicates: usize,
    busy_refusals: usize,
    /// Every difference from what happened, described.
    problems: Vec<String>,
}

/// How a trial's task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// `pay` finished and the model answered.
    Completed,
    /// Canceled while `pay` ran.
    Canceled,
    /// Killed while `pay` ran: its call is in doubt.
    InDoubt,
    /// Killed after `pay`'s result was stored, before the model's answer was.
    Stopped,
}

impl Ended {
    /// From the task's state and status text as GetTask reads them.
    fn of(state: &Value, text: &Value) -> Option<Self> {
        match (state.as_str()?, text.as_str()?) {
            ("TASK_STATE_COMPLETED", _) => Some(Ended::Completed),
            ("TASK_STATE_CANCELED", _) => Some(Ended::Canceled),
            ("TASK_STATE_FAILED", STOPPED_IN_DOUBT) => Some(Ended::InDoubt),
            ("TASK_STATE_FAILED", STOPPED) => Some(Ended::Stopped),
            _ => None,
        }
    }

    /// The task's state and status text.
    fn task(self, invoice: u64) -> Value {
        let (state, text) = match self {
            Ended::Completed => (
                "TASK_STATE_COMPLETED",
                format!("Invoice {invoice} is paid."),
            ),
            Ended::Canceled => ("TASK_STATE_CANCELED", INTERRUPT_REPLY.to_owned()),
            Ended::InDoubt => ("TASK_STATE_FAILED", STOPPED_IN_DOUBT.to_owned()),
            Ended::Stopped => ("TASK_STATE_FAILED", STOPPED.to_owned()),
        };
        json!({"state": state, "text": text})
    }

    fn run_state(self) -> &'static str {
        match self {
            Ended::Completed => "completed",
            Ended::Canceled => "canceled",
            Ended::InDoubt | Ended::Stopped => "failed",
        }
    }
}

/// What one trial's stored session, ledger and client report must say, and the tally.
async fn check_trial(trial: &Value, store: &dyn SessionStore, books: &Books, tally: &mut Tally) {
    let read = Trial::read(trial, "context");
    let (kind, invoice, context, killed) =
        (read.kind, read.invoice, read.conversation, read.killed);
    let session = A2a::session_id("assistant", context);
    *tally.kinds.entry(kind.to_owned()).or_default() += 1;
    let label = |what| read.problem(what);
    let mut problems = Vec::new();
    let mut problem = |what: String| problems.push(what);
    let expect = |problem: &mut dyn FnMut(String), what: &str, got: &Value, want: Value| {
        if *got != want {
            problem(format!("{what}: got {got}, expected {want}"));
        }
    };

    // How the task ended, as GetTask reads it, and whether that is what this kind of trial
    // allows: a kill mid-tool leaves the call in doubt; a kill racing the tool's end may
    // land before the result was stored, after it, or after the answer.
    let ended = Ended::of(&trial["get"]["state"], &trial["get"]["text"]);
    let allowed = match kind {
        "complete" => ended == Some(Ended::Completed),
        "cancel" => ended == Some(Ended::Canceled),
        "kill" | "kill-twice" => ended == Some(Ended::InDoubt),
        _ => ended.is_some_and(|ended| ended != Ended::Canceled),
    };
    let Some(ended) = ended.filter(|_| allowed) else {
        problem(format!("the task ended {}", trial["get"]));
        tally.problems.extend(problems.into_iter().map(label));
        return;
    };
    let final_task = ended.task(invoice);

    // The ledger: one key per invoice, paid once (a retry runs `pay` again with that key).
    let keys = books.attempts.get(&invoice).cloned().unwrap_or_default();
    let distinct: BTreeSet<&String> = keys.iter().collect();
    let retried = trial["answer"]["action"] == "retry";
    let runs_expected = if retried || kind == "kill-twice" {
        2
    } else {
        1
    };
    if distinct.len() > 1 {
        problem(format!("pay ran under {} keys: {keys:?}", distinct.len()));
    }
    if keys.len() != runs_expected {
        problem(format!(
            "pay ran {} times, expected {runs_expected}: {keys:?}",
            keys.len()
        ));
    }
    let key = keys.first().cloned().unwrap_or_default();
    if !books.effects.contains(&key) {
        problem(format!("no effect recorded under key {key}"));
    }

    // The client's view: the question, then three streams of the same task, the resent
    // approval and the subscription followed to the task's end.
    let asked = &trial["asked"];
    expect(
        &mut problem,
        "asked",
        &asked["state"],
        json!("TASK_STATE_INPUT_REQUIRED"),
    );
    expect(
        &mut problem,
        "asked about",
        &asked["pending"],
        json!([format!("pay-{invoice}")]),
    );
    let task = trial["task"].as_str().unwrap_or_default();
    let mut ended_stream = final_task.clone();
    ended_stream["error"] = Value::Null;
    for name in ["original", "resend", "subscribe"] {
        let stream = &trial[name];
        expect(
            &mut problem,
            &format!("{name}: first event"),
            &stream["first"],
            json!("task TASK_STATE_WORKING"),
        );
        expect(
            &mut problem,
            &format!("{name}: task ids"),
            &stream["ids"],
            json!([task]),
        );
        let last = &stream["last"];
        let cut = last["state"] == "TASK_STATE_WORKING" && !last["error"].is_null();
        // The killed instance's own stream is cut, unless the task ended before the kill.
        let fine = *last == ended_stream || (name == "original" && killed && cut);
        if !fine {
            problem(format!("{name} ended {last}, expected {ended_stream}"));
        } else if name == "resend" {
            tally.resends_followed += 1;
        } else if name == "subscribe" {
            tally.subscriptions_followed += 1;
        }
    }
    if kind == "kill" && trial["original"]["last"]["error"].is_null() {
        problem("the killed instance's stream was not cut".to_owned());
    }
    if kind == "cancel" {
        expect(
            &mut problem,
            "the cancel's answer",
            &trial["cancel"],
            json!("TASK_STATE_CANCELED"),
        );
    }

    // After a kill: the next message asks about the call in doubt (not given to the agent)
    // and completes once answered; with nothing in doubt it reaches the agent.
    if killed {
        let next = &trial["next"];
        tally.busy_refusals += next["busy"].as_u64().unwrap_or_default() as usize;
        if ended == Ended::InDoubt {
            let asks = |problem: &mut dyn FnMut(String), name: &str, next: &Value| {
                let not_given = next["text"]
                    .as_str()
                    .is_some_and(|text| text.starts_with(NOT_GIVEN));
                if next["state"] != "TASK_STATE_INPUT_REQUIRED" || !not_given {
                    problem(format!(
                        "{name}: {} {}, expected input-required, the message not given to the \
                         agent",
                        next["state"], next["text"]
                    ));
                }
                if next["in_doubt"]
                    != json!([{"id": format!("pay-{invoice}"), "idempotencyKey": key}])
                {
                    problem(format!(
                        "{name}: the calls in doubt {}, expected pay-{invoice} with key {key}",
                        next["in_doubt"]
                    ));
                }
            };
            asks(&mut problem, "next", next);
            if kind == "kill-twice" {
                // The retry on C, cut by C's kill while `pay` ran again: its task failed with
                // the call in doubt again, and the next message asks about it again.
                let retrying = &trial["retrying"];
                let cut = retrying["last"]["state"] == "TASK_STATE_WORKING"
                    && !retrying["last"]["error"].is_null();
                if retrying["first"] != "task TASK_STATE_WORKING" || !cut {
                    problem(format!(
                        "the retry's stream: {retrying}, expected working then cut"
                    ));
                }
                expect(
                    &mut problem,
                    "the retry's task once its instance was killed",
                    &trial["retried"],
                    Ended::InDoubt.task(invoice),
                );
                asks(&mut problem, "next after the second kill", &trial["next2"]);
                tally.busy_refusals += trial["next2"]["busy"].as_u64().unwrap_or_default() as usize;
            }
            expect(
                &mut problem,
                "answer",
                &trial["answer"]["reply"],
                json!({"state": "TASK_STATE_COMPLETED", "text": format!("Invoice {invoice} is paid.")}),
            );
        } else {
            expect(
                &mut problem,
                "next",
                &json!({"state": next["state"], "text": next["text"], "in_doubt": next["in_doubt"]}),
                json!({"state": "TASK_STATE_COMPLETED", "text": "Yes, it was paid.", "in_doubt": []}),
            );
            if !trial["answer"].is_null() {
                problem(format!(
                    "an answer with nothing in doubt: {}",
                    trial["answer"]
                ));
            }
        }
        expect(
            &mut problem,
            "again",
            &json!({"state": trial["again"]["state"], "text": trial["again"]["text"]}),
            json!({"state": "TASK_STATE_COMPLETED", "text": "Yes, it was paid."}),
        );
    }

    // The store: the conversation and the runs, as what happened.
    let Some(stored) = store.load(&session).await.unwrap() else {
        problem("no session stored".to_owned());
        tally.problems.extend(problems.into_iter().map(label));
        return;
    };
    let paid = format!("Tool: result pay-{invoice} (ok): paid invoice {invoice}");
    let answered = format!("Assistant: Invoice {invoice} is paid.");
    let question = "User: Was it paid?".to_owned();
    let yes = "Assistant: Yes, it was paid.".to_owned();
    let mut expected = vec![
        format!("User: Pay invoice {invoice}"),
        format!(r#"Assistant: call pay-{invoice} pay {{"invoice":{invoice}}}"#),
    ];
    match (ended, killed) {
        (Ended::Completed, false) => expected.extend([paid, answered]),
        (Ended::Canceled, _) => expected.extend([
            format!("Tool: result pay-{invoice} (error): {INTERRUPTED_RESULT}"),
            format!("Assistant: {INTERRUPT_REPLY}"),
        ]),
        // The next message was not given to the agent; the one sent again after was.
        (Ended::InDoubt, _) => {
            let result = match retried {
                true => paid,
                false => format!("{paid} (ledger checked)"),
            };
            expected.extend([result, answered, question, yes]);
        }
        // Both messages reached the agent.
        (Ended::Completed, true) => {
            expected.extend([paid, answered, question.clone(), yes.clone(), question, yes])
        }
        (Ended::Stopped, _) => {
            expected.extend([paid, question.clone(), yes.clone(), question, yes])
        }
    }
    // The conversation, and the key the tool got is the call's key in its session.
    stored_problems(&stored, &session, invoice, &key, &expected)
        .into_iter()
        .for_each(&mut problem);
    let runs = Runs::read(&agentscope::session::HookState::new(stored.hooks.clone())).unwrap();
    let states: Vec<(String, &str)> = runs
        .iter()
        .map(|run| (run.id.clone(), run.state.name()))
        .collect();
    let mut want = vec![(task.to_owned(), ended.run_state())];
    if killed {
        let task_of = |name: &str| trial[name]["task"].as_str().unwrap_or_default().to_owned();
        if kind == "kill-twice" {
            want.push((task_of("next"), "failed"));
            want.push((task_of("next2"), "completed"));
        } else {
            want.push((task_of("next"), "completed"));
        }
        want.push((task_of("again"), "completed"));
    }
    if states != want {
        problem(format!("the runs: {states:?}, expected {want:?}"));
    }

    // No lost message: each message that got a task id is in the conversation, or in the
    // record of a task that says what became of it.
    for sent in trial["messages"].as_array().unwrap() {
        let id = sent["id"].as_str().unwrap();
        let task = sent["task"].as_str().unwrap();
        let in_conversation = stored.messages.iter().any(|msg| msg.id == id);
        let in_task = runs.get(task).is_some_and(|run| run.received(id));
        if !in_conversation && !in_task {
            problem(format!("message {id} (task {task}) is lost"));
        }
    }

    match ended {
        Ended::Completed => tally.completed += 1,
        Ended::Canceled => tally.canceled += 1,
        Ended::InDoubt => tally.failed_in_doubt += 1,
        Ended::Stopped => tally.failed_stopped += 1,
    }
    if kind == "kill-at-end" {
        let name = match ended {
            Ended::Completed => "completed",
            Ended::InDoubt => "in doubt",
            _ => "stopped after the result",
        };
        *tally.at_end.entry(name).or_default() += 1;
    }
    tally.problems.extend(problems.into_iter().map(label));
}

/// The trials on one store: three instances on `target`, the client's trials, the checks;
/// prints the tallies and asserts there is nothing to report.
fn several_processes(kind: Kind, target: &str) {
    let Some(python) = available(python()) else {
        return;
    };
    let started = Instant::now();
    let mut client = Command::new(python);
    client.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/instances.py"));
    let mut tally = Tally::default();
    let Outcome { books, trials, .. } = run_trials(
        ("processes::worker", WORKER_ENV, 3),
        (kind, target, LEASE_TTL),
        client,
        TRIALS,
        async |trial, store, books| check_trial(trial, store, books, &mut tally).await,
    );
    (tally.trials, tally.effects) = (trials, books.effects.len());
    tally.duplicates = books.duplicates();
    let paid_invoices = books.attempts.len();
    let kinds = |name: &str| tally.kinds.get(name).copied().unwrap_or_default();
    println!(
        "A2A, 3 processes on {}: trials {} (complete {}, cancel {}, kill mid-tool {}, kill at \
         the tool's end {}, kill mid-tool and again mid-retry {}); tasks completed {}, canceled {}, failed-as-killed {} (in doubt \
         {}, after the result {}); kills at the tool's end {:?}; resends followed {}, \
         subscriptions followed {}; effects {} for {} invoices, duplicates {}; busy refusals \
         while a dead holder's lease lasted {}; problems {}; wall {:.1} s",
        kind.name(),
        tally.trials,
        kinds("complete"),
        kinds("cancel"),
        kinds("kill"),
        kinds("kill-at-end"),
        kinds("kill-twice"),
        tally.completed,
        tally.canceled,
        tally.failed_in_doubt + tally.failed_stopped,
        tally.failed_in_doubt,
        tally.failed_stopped,
        tally.at_end,
        tally.resends_followed,
        tally.subscriptions_followed,
        tally.effects,
        paid_invoices,
        tally.duplicates,
        tally.busy_refusals,
        tally.problems.len(),
        started.elapsed().as_secs_f64(),
    );
    assert_trials(&tally.problems, tally.trials, TRIALS);
    assert_eq!(
        [
            kinds("complete"),
            kinds("cancel"),
            kinds("kill"),
            kinds("kill-at-end"),
            kinds("kill-twice")
        ],
        [TRIALS / 5; 5]
    );
    assert_eq!(
        (tally.resends_followed, tally.subscriptions_followed),
        (TRIALS, TRIALS)
    );
    assert_eq!((tally.effects, paid_invoices), (TRIALS, TRIALS));
    assert_eq!(tally.duplicates, 0);
}

#[test]
fn several_processes_on_one_sqlite_file_keep_at_most_once_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    several_processes(Kind::Sqlite, path.to_str().unwrap());
}

#[test]
fn several_processes_on_one_redis_keep_at_most_once_and_lose_nothing() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    several_processes(Kind::Redis, &server.url());
}

#[test]
fn several_processes_on_one_postgres_keep_at_most_once_and_lose_nothing() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    several_processes(Kind::Postgres, &server.url());
}
