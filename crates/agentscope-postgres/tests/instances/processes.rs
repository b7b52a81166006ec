//! Instances in processes of their own (copies of this binary, see `worker`): alternating
//! turns, racing calls, a holder killed with SIGKILL, an interrupt across processes (the
//! shared scenarios of `agentscope_test::session_store::instances::scenarios`); and the
//! server restarted mid-call and mid-save.

use std::time::Duration;

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore, StateChange};
use agentscope_test::messages::texts;
use agentscope_test::session_store::instances::scenarios;

use crate::store_with_lease_ttl;
use crate::support::PostgresServer;
use crate::worker::spawn;

/// Two processes take turns on one conversation: each sees every turn of the other, in
/// order, and the stored conversation holds every turn once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn two_processes_alternate_turns_of_one_conversation() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let reader = crate::support::store(&server).await;
    scenarios::two_processes_alternate_turns(|name, ttl| spawn(&server, name, ttl), &reader).await;
}

/// Two processes get a call on one session at the same moment: exactly one runs, the other
/// is busy at once; round after round, the session holds exactly the winners' turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn racing_calls_from_two_processes_one_runs_the_other_is_busy() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let reader = crate::support::store(&server).await;
    scenarios::racing_calls_one_runs_the_other_is_busy(
        |name, ttl| spawn(&server, name, ttl),
        &reader,
    )
    .await;
}

/// The lease holder is killed with SIGKILL mid-tool: the session stays busy while its lease
/// lives, then another instance takes it, and the tool the dead process left running gets
/// the "interrupted while running" result: no orphan call, and it is not run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_killed_holder_frees_the_session_after_the_lease_ttl() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = store_with_lease_ttl(&server, Duration::from_secs(2)).await;
    scenarios::a_killed_holder_frees_the_session_after_the_lease_ttl(
        |name, ttl| spawn(&server, name, ttl),
        store,
    )
    .await;
}

/// An interrupt from this process stops the call another process runs, as a local
/// interrupt would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn an_interrupt_from_one_process_stops_a_call_in_another() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = crate::support::store(&server).await;
    scenarios::an_interrupt_from_one_process_stops_a_call_in_another(
        |name, ttl| spawn(&server, name, ttl),
        store,
    )
    .await;
}

/// PostgreSQL goes away mid-call and comes back: the call fails with a clear error, the
/// stored session is exactly what was saved before (no partial step), and calls work again
/// once the server is back and the failed call's lease has expired (the shared scenario).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn postgres_restarted_mid_call_fails_the_call_cleanly_then_recovers() {
    let Some(mut server) = PostgresServer::start() else {
        return;
    };
    const TTL: Duration = Duration::from_secs(2);
    let store = store_with_lease_ttl(&server, TTL).await;
    scenarios::a_server_restarted_mid_call(store, TTL, 300, &mut server).await;
}

/// The state a save from revision `revision` writes: 200 + `revision` messages, each saying
/// `revision/i` (and 200 bytes more).
fn big_state(revision: u64) -> AgentState {
    let messages = (0..200 + revision)
        .map(|i| Msg::user(format!("{revision}/{i} {}", "x".repeat(200))))
        .collect();
    let mut state = AgentState::new(AgentIdentity::new("writer", "w-1"), messages);
    state.revision = revision;
    state
}

/// The server is killed while a writer saves large states as fast as it can: after the
/// restart the session holds one whole state a save committed (every message of one
/// revision, and that revision), never part of one; and the next save from it works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_save_cut_by_a_server_crash_is_all_or_nothing() {
    let Some(mut server) = PostgresServer::start() else {
        return;
    };
    let store = crate::support::store(&server).await;
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut committed = 0;
            loop {
                let change = StateChange::replace(&big_state(committed));
                match store.save("crash", &change).await {
                    Ok(revision) => committed = revision,
                    Err(_) => return committed,
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.stop();
    let last_ok = writer.await.unwrap();
    server.start_again();
    let stored = store.load("crash").await.unwrap().unwrap();
    println!(
        "crash mid-save: {last_ok} saves returned Ok; revision {} stored",
        stored.revision
    );
    // The save that was cut may have committed before the server died (its answer lost).
    assert!(
        stored.revision == last_ok || stored.revision == last_ok + 1,
        "stored {} after {last_ok} saves",
        stored.revision
    );
    // Every message of the one state that revision holds (ids and times are random).
    let expected = big_state(stored.revision - 1);
    let (stored_texts, expected_texts) = (texts(&stored.messages), texts(&expected.messages));
    assert!(
        stored_texts == expected_texts,
        "revision {} holds {} messages, the first {:?}; expected {}",
        stored.revision,
        stored_texts.len(),
        stored_texts.first(),
        expected_texts.len()
    );
    // It goes on from there.
    let next = StateChange::new(stored.revision, 1, Vec::new(), expected.agent.clone());
    assert_eq!(
        store.save("crash", &next).await.unwrap(),
        stored.revision + 1
    );
}
