//! Finding 2b of issue 42: a message arriving just as a dead holder's lease expires is
//! answered `input-required` naming the call in doubt, and never given to the agent, on
//! every store that leases sessions.
//!
//! Each trial: a worker process (a copy of this test binary running the ignored test
//! `expiry::worker`) holds a context's session with a call whose `pay` tool hangs (recorded
//! as running), and is killed with SIGKILL; the test then sends messages to a server on the
//! same store, one after another, until one is not refused as busy: the messages cross the
//! moment the dead holder's lease expires. Before the serving core decided under the lease,
//! the in-doubt check probed the lease (busy: "another call runs it", nothing in doubt) and
//! the turn then took the lease a moment later, as it expired, and gave the message to the
//! model past the call in doubt.

use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_postgres::PostgresSessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::process::json_settings;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

use crate::support::{Server, client, line, request, serve_on, state};
use crate::task_of;

/// The environment variable carrying a worker's settings.
const WORKER_ENV: &str = "AGENTSCOPE_A2A_EXPIRY_WORKER";
/// The leases' time to live: short, so that a trial waits little for the dead holder's (a
/// holder that cannot renew within it stops its call: on a loaded machine one may, before
/// its tool runs; that trial starts again).
const TTL: Duration = Duration::from_millis(100);

/// How many trials per store (`EXPIRY_TRIALS`, default 200).
fn trials() -> usize {
    std::env::var("EXPIRY_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200)
}

/// The store `settings` name (`{"store": "sqlite"|"redis"|"postgres", "at": path or URL}`),
/// with leases of [`TTL`].
async fn open(settings: &Value) -> Box<dyn SessionStore> {
    let at = settings["at"].as_str().unwrap();
    match settings["store"].as_str().unwrap() {
        "sqlite" => Box::new(
            SqliteSessionStore::builder(at)
                .lease_ttl(TTL)
                .open()
                .unwrap(),
        ),
        "redis" => Box::new(
            RedisSessionStore::builder(at)
                .lease_ttl(TTL)
                .connect()
                .await
                .unwrap(),
        ),
        "postgres" => Box::new(
            PostgresSessionStore::builder(at)
                .lease_ttl(TTL)
                .connect()
                .await
                .unwrap(),
        ),
        other => panic!("no store {other}"),
    }
}

/// A holder: `assistant` on the session of context `context`, calling `pay`, which prints
/// `RUNNING` and hangs (the process is killed meanwhile).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a holder process of `a_message_as_a_dead_holders_lease_expires_...`, which starts it itself"]
async fn worker() {
    let settings: Value = json_settings(WORKER_ENV);
    let store = open(&settings).await;
    let context = settings["context"].as_str().unwrap();
    let pay = tool_fn(
        "pay",
        "Pays an invoice.",
        json!({"type": "object", "properties": {"invoice": {"type": "integer"}}}),
        |_input: Value, _ctx: ToolContext| async {
            println!("RUNNING");
            std::future::pending::<()>().await;
            Ok::<_, ToolError>("paid".to_owned())
        },
    );
    let agent = ReActAgent::builder()
        .name("assistant")
        .model(ScriptedModel::new([ScriptedResponse::tool_call(
            "p1",
            "pay",
            json!({"invoice": 7}),
        )]))
        .toolkit(Toolkit::new().tool(pay))
        .session(store, format!("assistant.{context}"))
        .build()
        .unwrap();
    match agent.call("Pay invoice 7").await {
        // Stopped: its lease could not be renewed in time (the trial starts again).
        Ok(reply) => assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted)),
        Err(error) => panic!("the holder's call failed before its tool ran: {error}"),
    }
}

/// What the messages of one trial were answered.
#[derive(Debug, Default)]
struct Tally {
    trials: usize,
    busy: usize,
    asked: usize,
    other: Vec<String>,
    slowest: Duration,
    /// Trials started again: the holder lost its lease (the machine too loaded to renew
    /// within the short TTL) and stopped before its tool ran.
    restarted: usize,
}

async fn run(settings: Value, store: impl SessionStore) -> Tally {
    // The server's model has no answer: a message given to it would fail the task.
    let model = ScriptedModel::new([]);
    let server: Server = serve_on(&model, Toolkit::new(), store, None, None).await;
    let client = client(&server, "JSONRPC").await;
    let mut tally = Tally::default();
    for trial in 0..trials() {
        let context = format!("ctx-{trial}");
        let mut worker_settings = settings.clone();
        worker_settings["context"] = json!(context);
        let mut attempts = 0;
        while !tokio::task::block_in_place(|| hold_and_kill(&worker_settings)) {
            attempts += 1;
            tally.restarted += 1;
            assert!(attempts < 5, "trial {trial}: no holder reached its tool");
        }
        let killed = Instant::now();
        tally.trials += 1;
        loop {
            let task = task_of(
                client
                    .send_message(&request("Was it paid?", &context))
                    .await
                    .unwrap(),
            );
            let said = task.status.message.as_ref().map(line).unwrap_or_default();
            match state(&task.status.state) {
                "rejected" if said.contains("The context is busy") => tally.busy += 1,
                "input-required" if said.contains(r#""inDoubtToolCalls":[{"id":"p1""#) => {
                    tally.asked += 1;
                    break;
                }
                other => {
                    tally.other.push(format!("trial {trial}: {other}: {said}"));
                    break;
                }
            }
            assert!(
                killed.elapsed() < Duration::from_secs(30),
                "trial {trial}: the dead holder's lease never expired"
            );
        }
        tally.slowest = tally.slowest.max(killed.elapsed());
    }
    assert_eq!(model.request_count(), 0, "a message was given to the agent");
    tally
}

/// Starts a holder with `settings`, waits until its tool runs, and kills it with SIGKILL;
/// `false` when the holder ended its call before its tool ran (its lease lost under load).
fn hold_and_kill(settings: &Value) -> bool {
    use std::io::BufRead;
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "expiry::worker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WORKER_ENV, settings.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut said = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        if line.ends_with("RUNNING") {
            child.kill().unwrap();
            child.wait().unwrap();
            return true;
        }
        said.push(line);
    }
    let status = child.wait().unwrap();
    if status.success() {
        return false;
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    panic!(
        "the holder exited ({status}) before its tool ran: {}\n{stderr}",
        said.join("\n")
    );
}

fn report(store: &str, tally: &Tally) {
    println!(
        "expiry {store}: {} trials, {} messages refused as busy before the lease expired, {} \
         answered input-required naming the call in doubt, {} otherwise, slowest {:?} ({} \
         holders started again)",
        tally.trials,
        tally.busy,
        tally.asked,
        tally.other.len(),
        tally.slowest,
        tally.restarted
    );
    assert!(tally.other.is_empty(), "{:#?}", tally.other);
    assert_eq!(tally.asked, tally.trials);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_as_a_dead_holders_lease_expires_is_asked_about_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let settings = json!({"store": "sqlite", "at": path});
    let store = SqliteSessionStore::builder(&path)
        .lease_ttl(TTL)
        .open()
        .unwrap();
    let tally = run(settings, store).await;
    report("sqlite", &tally);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_message_as_a_dead_holders_lease_expires_is_asked_about_on_redis() {
    let Some(server) = agentscope_test::components::redis::RedisServer::start() else {
        return;
    };
    let settings = json!({"store": "redis", "at": server.url()});
    let store = RedisSessionStore::builder(server.url())
        .lease_ttl(TTL)
        .connect()
        .await
        .unwrap();
    let tally = run(settings, store).await;
    report("redis", &tally);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_message_as_a_dead_holders_lease_expires_is_asked_about_on_postgres() {
    let Some(server) = agentscope_test::components::postgres::PostgresServer::start() else {
        return;
    };
    let settings = json!({"store": "postgres", "at": server.url()});
    let store = PostgresSessionStore::builder(server.url())
        .lease_ttl(TTL)
        .connect()
        .await
        .unwrap();
    let tally = run(settings, store).await;
    report("postgres", &tally);
}
