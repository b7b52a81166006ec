//! The scenarios every store shared by several instances runs, with exact outcomes. The
//! process scenarios start workers through `spawn(name, lease_ttl_ms)`, which a store crate
//! writes with [`Worker::spawn_shared`] (session `shared` on its server); the others take
//! store handles opened separately (as separate processes would have them).
//!
//! They must run inside a multi-threaded tokio runtime, on a new, empty store.

use std::future::Future;
use std::time::{Duration, Instant};

use agentscope::CancellationToken;
use agentscope::interrupt::INTERRUPTED_WHILE_RUNNING;
use agentscope::prelude::*;
use agentscope::session::SessionStore;

use super::worker::{Outcome, Request, Worker, agent, serve};
use super::{all_said, assert_interrupted, stored, wait_running};
use crate::messages::speakers;
use crate::{RecordingHook, ScriptedModel, ScriptedResponse};

/// Two processes (`a` and `b`, 30 s leases) take turns on one conversation: each sees every
/// turn of the other, in order, and `reader` holds every turn once, at revision 10.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn two_processes_alternate_turns<S: SessionStore + ?Sized>(
    spawn: impl Fn(&str, u64) -> Worker,
    reader: &S,
) {
    let mut workers = ["a", "b"].map(|name| spawn(name, 30_000));
    let mut expected: Vec<String> = Vec::new();
    for round in 0..10 {
        let question = format!("question {round}");
        let answer = format!("answer {round}");
        expected.push(question.clone());
        let outcome = workers[round % 2].call(&Request::text(&question, &answer));
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
    let stored = stored(reader, "shared").await;
    assert_eq!(all_said(&stored.messages), expected);
    assert_eq!(speakers(&stored.messages), ["a", "b"].repeat(5));
    assert_eq!(stored.revision, 10);
}

/// Two processes (30 s leases) get a call on one session at the same moment: exactly one
/// runs, the other is busy at once; round after round, `reader` holds exactly the winners'
/// turns and no tool left running.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn racing_calls_one_runs_the_other_is_busy<S: SessionStore + ?Sized>(
    spawn: impl Fn(&str, u64) -> Worker,
    reader: &S,
) {
    let mut workers = ["a", "b"].map(|name| spawn(name, 30_000));
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
    let stored = stored(reader, "shared").await;
    assert_eq!(all_said(&stored.messages), expected);
    assert!(stored.running_tools.is_empty());
}

/// The lease holder (a process with 2 s leases) is killed with SIGKILL mid-tool: the
/// session stays busy while its lease lives, then an agent on `store` (whose leases live
/// 2 s) takes it, and the tool the dead process left running gets the "interrupted while
/// running" result: no orphan call, and it is not run again.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn a_killed_holder_frees_the_session_after_the_lease_ttl<S>(
    spawn: impl Fn(&str, u64) -> Worker,
    store: S,
) where
    S: SessionStore + Clone + 'static,
{
    const TTL: Duration = Duration::from_secs(2);
    let mut holder = spawn("a", 2_000);
    holder.send(&Request::until_interrupted("q1"));
    holder.expect("TOOL_STARTED");
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
            other => break other.expect("the call after the lease expired"),
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
    let stored = stored(&store, "shared").await;
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

/// An interrupt from an agent on `store` (in this process) stops the call another process
/// (`b`, 30 s leases) runs, as a local interrupt would; the runner serves the next turn as
/// usual.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn an_interrupt_from_one_process_stops_a_call_in_another<S>(
    spawn: impl Fn(&str, u64) -> Worker,
    store: S,
) where
    S: SessionStore + Clone + 'static,
{
    let mut runner = spawn("b", 30_000);
    runner.send(&Request::until_interrupted("q1"));
    runner.expect("TOOL_STARTED");
    let a = agent(store.clone(), "shared", "a", ScriptedModel::new([]));
    let started = Instant::now();
    assert!(a.interrupt_session().await.expect("the interrupt is sent"));
    let outcome = runner.outcome();
    println!("interrupt across processes: {:?}", started.elapsed());
    assert_interrupted(outcome, &store, "shared").await;
    // The runner serves the next turn as usual.
    assert!(matches!(
        runner.call(&Request::text("q2", "a2")),
        Outcome::Ok { .. }
    ));
}

/// Two instances (agents on `store_a` and `store_b`) on session `s`: while `a` runs a call,
/// `b` is busy at once (no hook ran, the model was not asked, nothing stored; observing is
/// refused too); `b`'s interrupt ends `a`'s call as a local interrupt would; then `b` runs
/// on the whole conversation, and an interrupt finds no call.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn a_second_instance_is_busy_before_any_hook_and_its_interrupt_stops_the_first<S>(
    store_a: S,
    store_b: S,
) where
    S: SessionStore + Clone + 'static,
{
    let model_a = ScriptedModel::new([]);
    let a = agent(store_a.clone(), "s", "a", model_a.clone());
    let model_b = ScriptedModel::new([]);
    let b = agent(store_b.clone(), "s", "b", model_b.clone());
    let recorder = RecordingHook::new(0);
    b.add_hook(recorder.clone());

    let running =
        tokio::spawn(async move { serve(&a, &model_a, &Request::until_interrupted("q1")).await });
    wait_running(&store_b, "s").await;
    let before = stored(&store_b, "s").await;

    // Instance B: busy at once; no hook ran, the model was not asked, nothing was stored.
    let error = b.call("q2").await.expect_err("b is busy");
    assert!(matches!(error, AgentError::Busy), "{error:?}");
    assert!(recorder.events().is_empty(), "{:?}", recorder.events());
    assert_eq!(model_b.request_count(), 0);
    assert_eq!(stored(&store_b, "s").await, before);
    // Observing and changing metadata take the lease too.
    assert!(matches!(
        b.observe(Msg::user("note")).await,
        Err(AgentError::Busy)
    ));
    assert!(matches!(
        b.update_metadata(|_| {}).await,
        Err(AgentError::Busy)
    ));
    assert!(b.memory().is_empty(), "nothing was loaded");
    let error = store_b
        .lease("s", &CancellationToken::new())
        .await
        .expect_err("the session is busy");
    assert_eq!(
        error.to_string(),
        "session 's' is busy: another call holds its lease"
    );

    // B interrupts A's call: A ends as a local interrupt ends it.
    let started = Instant::now();
    assert!(b.interrupt_session().await.expect("the interrupt is sent"));
    let outcome = running.await.expect("a's call task");
    println!("interrupt across instances: {:?}", started.elapsed());
    assert_interrupted(outcome, &store_b, "s").await;
    let stored = stored(&store_b, "s").await;

    // The lease was given back with the call: B runs now, on the whole conversation.
    model_b.push(ScriptedResponse::text("a2"));
    assert_eq!(b.call("q2").await.expect("b's call").text(), "a2");
    let mut expected = all_said(&stored.messages);
    expected.push("q2".into());
    assert_eq!(all_said(&model_b.requests()[0].messages), expected);
    assert_eq!(recorder.types().first(), Some(&HookEventType::PreCall));
    // Nobody holds the session now: an interrupt finds no call, through either handle.
    assert!(!b.interrupt_session().await.expect("the interrupt is sent"));
    assert!(!store_a.interrupt("s").await.expect("the interrupt is sent"));
}

/// A dropped call (an agent on `store_a`, on session `s`) gives its lease back at once, in
/// the background: `lease_held` (the store's own look at its lease of `s`) turns false
/// within 5 s; and the next call, on `store_b`, settles the tool it left running.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn a_dropped_call_gives_its_lease_back<S, F, Fut>(
    store_a: S,
    store_b: S,
    mut lease_held: F,
) where
    S: SessionStore + Clone + 'static,
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let model_a = ScriptedModel::new([]);
    let a = agent(store_a, "s", "a", model_a.clone());
    let running =
        tokio::spawn(async move { serve(&a, &model_a, &Request::until_interrupted("q1")).await });
    wait_running(&store_b, "s").await;
    running.abort();
    assert!(
        running
            .await
            .expect_err("the call was aborted")
            .is_cancelled()
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while lease_held().await {
        assert!(Instant::now() < deadline, "the dropped call's lease stayed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let model_b = ScriptedModel::new([ScriptedResponse::text("a2")]);
    let b = agent(store_b.clone(), "s", "b", model_b.clone());
    assert_eq!(b.call("q2").await.expect("b's call").text(), "a2");
    assert_eq!(
        all_said(&stored(&store_b, "s").await.messages),
        [
            "q1",
            "call wait",
            &format!("result {INTERRUPTED_WHILE_RUNNING}"),
            "q2",
            "a2"
        ]
    );
}

/// A store built without leases (`without`) takes none: `lease` is `Ok(None)`, an agent's
/// call on session `s` runs and is stored, after which `lease_stored` (the store's own look
/// at its lease of `s`) is false and an interrupt of `s` finds no call; yet the store's
/// interrupt reaches a call that a leasing store on the same server (`leasing`) runs on
/// session `t`, which ends as an interrupt ends it.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn without_leases_no_lease_is_taken<S, L, F, Fut>(without: S, leasing: L, lease_stored: F)
where
    S: SessionStore + Clone + 'static,
    L: SessionStore + Clone + 'static,
    F: FnOnce() -> Fut,
    Fut: Future<Output = bool>,
{
    assert!(
        without
            .lease("s", &CancellationToken::new())
            .await
            .expect("no lease is no error")
            .is_none()
    );
    let model = ScriptedModel::new([ScriptedResponse::text("hi")]);
    let a = agent(without.clone(), "s", "a", model);
    assert_eq!(a.call("hello").await.expect("the call runs").text(), "hi");
    assert_eq!(
        all_said(&stored(&without, "s").await.messages),
        ["hello", "hi"]
    );
    assert!(!lease_stored().await, "a lease was stored");
    assert!(!without.interrupt("s").await.expect("the interrupt is sent"));

    let model = ScriptedModel::new([]);
    let runner = agent(leasing.clone(), "t", "b", model.clone());
    let running =
        tokio::spawn(
            async move { serve(&runner, &model, &Request::until_interrupted("q1")).await },
        );
    wait_running(&leasing, "t").await;
    assert!(without.interrupt("t").await.expect("the interrupt is sent"));
    assert_interrupted(
        running.await.expect("the call does not panic"),
        &leasing,
        "t",
    )
    .await;
}

/// What the process scenarios need from a store's tests: workers in processes of their
/// own, and store handles in this process, all on one server.
pub trait Processes: Sync {
    /// The store.
    type Store: SessionStore + Clone + 'static;

    /// Starts a worker process named `name` on session `shared`, with leases that live
    /// `lease_ttl_ms` (the store crate writes it with [`Worker::spawn_shared`]).
    fn spawn(&self, name: &str, lease_ttl_ms: u64) -> Worker;

    /// A store handle in this process whose leases live `lease_ttl`.
    fn store(&self, lease_ttl: Duration) -> impl Future<Output = Self::Store> + Send;
}

/// Runs the scenarios between processes, in order: [`two_processes_alternate_turns`],
/// [`racing_calls_one_runs_the_other_is_busy`],
/// [`a_killed_holder_frees_the_session_after_the_lease_ttl`] and
/// [`an_interrupt_from_one_process_stops_a_call_in_another`], on a new, empty server (they
/// all use session `shared`, deleted between them).
///
/// # Panics
///
/// At the first scenario that fails.
pub async fn between_processes<P: Processes>(processes: &P) {
    let spawn = |name: &str, ttl| processes.spawn(name, ttl);
    let default = processes
        .store(agentscope_core::session::DEFAULT_LEASE_TTL)
        .await;
    two_processes_alternate_turns(spawn, &default).await;
    default
        .delete("shared")
        .await
        .expect("the session is deleted");
    racing_calls_one_runs_the_other_is_busy(spawn, &default).await;
    default
        .delete("shared")
        .await
        .expect("the session is deleted");
    let short = processes.store(Duration::from_secs(2)).await;
    a_killed_holder_frees_the_session_after_the_lease_ttl(spawn, short).await;
    default
        .delete("shared")
        .await
        .expect("the session is deleted");
    an_interrupt_from_one_process_stops_a_call_in_another(spawn, default).await;
}

/// A store's server, stopped and started again by [`a_server_restarted_mid_call`] (the
/// test's own server, keeping its data across the restart).
pub trait Restart {
    /// Stops the server (as a crash does: connections drop, nothing answers).
    fn stop(&mut self);
    /// Starts it again on the same port and data.
    fn start(&mut self);
}

impl Restart for crate::components::redis::RedisServer {
    fn stop(&mut self) {
        self.kill();
    }

    fn start(&mut self) {
        self.restart();
    }
}

impl Restart for crate::components::postgres::PostgresServer {
    fn stop(&mut self) {
        crate::components::postgres::PostgresServer::stop(self);
    }

    fn start(&mut self) {
        self.start_again();
    }
}

/// The server goes away while a call on `store` (leases living `ttl`) runs its tool for
/// `tool_ms`, and comes back: the call fails with the backend error of its next save
/// (`session error: session 'shared': storage backend error: saving...`); once the server
/// is back, the session holds exactly what was saved before (no partial step); and a call
/// works again within five times `ttl` (once the failed call's lease has expired), settling
/// the tool the failed call left running: the stored conversation is the turns before, the
/// tool's "interrupted while running" result, and the new turn.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn a_server_restarted_mid_call<S: SessionStore + Clone + 'static>(
    store: S,
    ttl: Duration,
    tool_ms: u64,
    server: &mut impl Restart,
) {
    let model = ScriptedModel::new([]);
    let a = agent(store.clone(), "shared", "a", model.clone());
    model.push(ScriptedResponse::text("a0"));
    a.call("q0").await.expect("the first call");
    let running = {
        let a = a.clone();
        let model = model.clone();
        tokio::spawn(async move {
            let request = Request {
                input: "q1".into(),
                reply: "a1".into(),
                wait_ms: Some(tool_ms),
            };
            serve(&a, &model, &request).await
        })
    };
    wait_running(&store, "shared").await;
    let before = stored(&store, "shared").await;
    assert_eq!(all_said(&before.messages), ["q0", "a0", "q1", "call wait"]);
    server.stop();
    let outcome = running.await.expect("the call does not panic");
    let Outcome::Failed(message) = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        message.starts_with("session error: session 'shared': storage backend error: saving"),
        "{message}"
    );
    server.start();
    let deadline = Instant::now() + ttl * 5;
    // Nothing half-written: exactly the revision stored before the server went away (read
    // once the store has reconnected).
    let after_restart = loop {
        match store.load("shared").await {
            Ok(state) => break state.expect("the session is stored"),
            Err(error) => {
                assert!(Instant::now() < deadline, "no reconnection: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(after_restart, before);
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
    // What was stored before the server went away, then the tool the failed call left
    // running settled, then the new turn.
    assert_eq!(
        all_said(&stored(&store, "shared").await.messages),
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
