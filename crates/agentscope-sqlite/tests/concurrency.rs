//! Many agents on one SQLite file: 50 concurrent agents (each its own session, several calls
//! each, through two separately opened stores as two processes would) lose no update; two
//! agents alternating on one session each load what the other saved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::session_store::agents;
use tempfile::TempDir;

/// Three handles on a new database file, opened separately (three connection pools, as in
/// three processes): two for the agents, one to read back what they stored.
fn three_handles() -> (TempDir, [SqliteSessionStore; 2], SqliteSessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let open = || SqliteSessionStore::open(&path).unwrap();
    let stores = [open(), open()];
    let reader = open();
    (dir, stores, reader)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_agents_lose_no_update() {
    let (_dir, stores, reader) = three_handles();
    agents::concurrent_agents(stores, reader, 50, 4).await;
}

/// Two agents (two instances, two store handles) alternating on one session: every call
/// loads what the other saved, and no message is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_alternating_on_one_session() {
    let (_dir, stores, reader) = three_handles();
    agents::alternating_agents(stores, reader, 10).await;
}
