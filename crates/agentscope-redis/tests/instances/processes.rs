//! Instances in processes of their own (copies of this binary, see `worker`): alternating
//! turns, racing calls, a holder killed with SIGKILL, an interrupt across processes, and
//! Redis restarted mid-run.

use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_test::messages::speakers;
use agentscope_test::{ScriptedModel, ScriptedResponse};

use crate::support::{Connect, RedisServer};
use crate::worker::{Outcome, Request, Settings, Worker, agent};
use crate::{INTERRUPTED_WHILE_RUNNING, all_said, assert_interrupted, wait_running};

fn settings(server: &RedisServer, name: &str, lease_ttl_ms: u64) -> Settings {
    Settings {
        url: server.url(),
        session: "shared".into(),
        name: name.into(),
        lease_ttl_ms,
    }
}

/// Two worker processes, `a` and `b`, on session `shared` with 30 s leases.
fn two_workers(server: &RedisServer) -> [Worker; 2] {
    ["a", "b"].map(|name| Worker::spawn(&settings(server, name, 30_000)))
}

fn request(input: &str, reply: &str) -> Request {
    Request {
        input: input.into(),
        reply: reply.into(),
        wait_ms: None,
    }
}

/// Two processes take turns on one conversation: each sees every turn of the other, in
/// order, and the stored conversation holds every turn once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn two_processes_alternate_turns_of_one_conversation() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut workers = two_workers(&server);
    let mut expected: Vec<String> = Vec::new();
    for round in 0..10 {
        let question = format!("question {round}");
        let answer = format!("answer {round}");
        expected.push(question.clone());
        let outcome = workers[round % 2].call(&request(&question, &answer));
        assert_eq!(
            outcome,
            Outcome::Ok {
                reply: answer.clone(),
                model_input: expected.clone(),
            },
            "round {round}"
        );
        expected.push(answer);
    }
    let stored = server.store().await.load("shared").await.unwrap().unwrap();
    assert_eq!(all_said(&stored.messages), expected);
    assert_eq!(speakers(&stored.messages), ["a", "b"].repeat(5));
    assert_eq!(stored.revision, 10);
}

/// Two processes get a call on one session at the same moment: exactly one runs, the other
/// is busy at once; round after round, the session holds exactly the winners' turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn racing_calls_from_two_processes_one_runs_the_other_is_busy() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut workers = two_workers(&server);
    let mut expected: Vec<String> = Vec::new();
    let mut wins = [0, 0];
    for round in 0..8 {
        let requests: Vec<Request> = ["a", "b"]
            .iter()
            .map(|name| Request {
                input: format!("{name} asks {round}"),
                reply: format!("{name} answers {round}"),
                wait_ms: Some(300),
            })
            .collect();
        for (worker, request) in workers.iter_mut().zip(&requests) {
            worker.send(request);
        }
        let outcomes: Vec<Outcome> = workers.iter_mut().map(Worker::outcome).collect();
        let winners: Vec<usize> = (0..2)
            .filter(|&i| matches!(outcomes[i], Outcome::Ok { .. }))
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        let winner = winners[0];
        assert_eq!(outcomes[1 - winner], Outcome::Busy, "round {round}");
        wins[winner] += 1;
        expected.push(requests[winner].input.clone());
        let Outcome::Ok { model_input, reply } = &outcomes[winner] else {
            unreachable!()
        };
        assert_eq!(model_input, &expected, "round {round}");
        assert_eq!(reply, &requests[winner].reply);
        expected.extend([
            "call wait".to_owned(),
            "result waited 300ms".to_owned(),
            requests[winner].reply.clone(),
        ]);
    }
    println!("racing calls: wins {wins:?}");
    let stored = server.store().await.load("shared").await.unwrap().unwrap();
    assert_eq!(all_said(&stored.messages), expected);
    assert!(stored.running_tools.is_empty());
}

/// The lease holder is killed with SIGKILL mid-tool: the session stays busy while its lease
/// lives, then another instance takes it, and the tool the dead process left running gets
/// the "interrupted while running" result: no orphan call, and it is not run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_killed_holder_frees_the_session_after_the_lease_ttl() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    const TTL: Duration = Duration::from_secs(2);
    let mut holder = Worker::spawn(&settings(&server, "a", 2_000));
    holder.send(&Request::until_interrupted("q1"));
    holder.expect("TOOL_STARTED");
    let store = RedisSessionStore::builder(server.url())
        .lease_ttl(TTL)
        .connect()
        .await
        .unwrap();
    let model = ScriptedModel::new([]);
    let b = agent(store.clone(), "shared", "b", model.clone());
    // Alive, the holder keeps the session however long its tool runs.
    tokio::time::sleep(TTL + Duration::from_millis(500)).await;
    assert!(matches!(b.call("q2").await, Err(AgentError::Busy)));

    holder.kill();
    let killed = Instant::now();
    let mut busy = 0;
    model.push(ScriptedResponse::text("a2"));
    let reply = loop {
        match b.call("q2").await {
            Err(AgentError::Busy) => busy += 1,
            other => break other.unwrap(),
        }
        assert!(killed.elapsed() < TTL * 5, "the session stayed busy");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let freed = killed.elapsed();
    println!(
        "killed holder: session free after {freed:?} ({busy} busy attempts; lease TTL {TTL:?})"
    );
    assert!(busy > 0, "the dead holder's lease lived on for its TTL");
    assert!(freed <= TTL + Duration::from_secs(1), "{freed:?}");
    assert_eq!(reply.text(), "a2");
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
    assert_eq!(model.request_count(), 1);
}

/// An interrupt from this process stops the call another process runs, as a local
/// interrupt would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn an_interrupt_from_one_process_stops_a_call_in_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut runner = Worker::spawn(&settings(&server, "b", 30_000));
    runner.send(&Request::until_interrupted("q1"));
    runner.expect("TOOL_STARTED");
    let store = server.store().await;
    let a = agent(store.clone(), "shared", "a", ScriptedModel::new([]));
    let started = Instant::now();
    assert!(a.interrupt_session().await.unwrap());
    let outcome = runner.outcome();
    println!("interrupt across processes: {:?}", started.elapsed());
    assert_interrupted(outcome, &store, "shared").await;
    // The runner serves the next turn as usual.
    assert!(matches!(
        runner.call(&request("q2", "a2")),
        Outcome::Ok { .. }
    ));
}

/// Redis goes away mid-call and comes back (with its append-only file): the call fails with
/// a clear error, the stored session is exactly what was saved before (no partial step),
/// and calls work again once Redis is back and the failed call's lease has expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn redis_restarted_mid_run_fails_the_call_cleanly_then_recovers() {
    let Some(mut server) =
        RedisServer::start_with(None, &["--appendonly", "yes", "--appendfsync", "always"])
    else {
        return;
    };
    const TTL: Duration = Duration::from_secs(2);
    let store = RedisSessionStore::builder(server.url())
        .lease_ttl(TTL)
        .response_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    let model = ScriptedModel::new([]);
    let a = agent(store.clone(), "shared", "a", model.clone());
    model.push(ScriptedResponse::text("a0"));
    a.call("q0").await.unwrap();
    let running = {
        let a = a.clone();
        let model = model.clone();
        tokio::spawn(async move {
            let request = Request {
                input: "q1".into(),
                reply: "a1".into(),
                wait_ms: Some(1_500),
            };
            crate::worker::serve(&a, &model, &request).await
        })
    };
    wait_running(&store, "shared").await;
    let before = store.load("shared").await.unwrap().unwrap();
    assert_eq!(all_said(&before.messages), ["q0", "a0", "q1", "call wait"]);
    server.kill();
    let outcome = running.await.unwrap();
    let Outcome::Failed(message) = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        message.starts_with("session error: session 'shared': storage backend error: saving"),
        "{message}"
    );
    server.restart();
    let deadline = Instant::now() + TTL * 5;
    model.push(ScriptedResponse::text("a2"));
    let reply = loop {
        match a.call("q2").await {
            Ok(reply) => break reply,
            Err(error) => {
                assert!(Instant::now() < deadline, "no recovery: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(reply.text(), "a2");
    let after = store.load("shared").await.unwrap().unwrap();
    // What was stored before Redis went away, then the tool the failed call left running
    // settled, then the new turn.
    assert_eq!(
        all_said(&after.messages),
        [
            "q0",
            "a0",
            "q1",
            "call wait",
            &format!("result {INTERRUPTED_WHILE_RUNNING}"),
            "q2",
            "a2"
        ]
    );
}
