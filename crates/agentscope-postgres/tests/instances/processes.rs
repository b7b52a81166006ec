//! Instances in processes of their own (copies of this binary, see `worker`): alternating
//! turns, racing calls, a holder killed with SIGKILL, an interrupt across processes (the
//! shared scenarios of `agentscope_test::session_store::instances::scenarios`); and the
//! server restarted mid-call and mid-save.

use std::time::Duration;

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore, StateChange};
use agentscope_postgres::PostgresSessionStore;
use agentscope_test::messages::texts;
use agentscope_test::session_store::instances::scenarios;
use agentscope_test::session_store::instances::worker::Worker;

use crate::store_with_lease_ttl;
use crate::support::PostgresServer;
use crate::worker::spawn;

/// This crate's worker processes and store handles on one server.
struct Instances {
    server: PostgresServer,
}

impl scenarios::Processes for Instances {
    type Store = PostgresSessionStore;

    fn spawn(&self, name: &str, lease_ttl_ms: u64) -> Worker {
        spawn(&self.server, name, lease_ttl_ms)
    }

    async fn store(&self, lease_ttl: Duration) -> PostgresSessionStore {
        store_with_lease_ttl(&self.server, lease_ttl).await
    }
}

/// The scenarios between processes (`agentscope_test::session_store::instances::scenarios`):
/// two processes take turns on one conversation; two processes get a call on one session
/// at the same moment, and exactly one runs; the lease holder killed with SIGKILL mid-tool
/// frees the session after its lease's time to live, and its tool gets the "interrupted
/// while running" result; an interrupt from this process stops a call another process
/// runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn between_processes() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    scenarios::between_processes(&Instances { server }).await;
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
