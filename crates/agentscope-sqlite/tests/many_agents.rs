//! 1,000 agents, each with its own session, on one `SqliteSessionStore` (one file), all
//! calling at once on a multi-thread runtime. Each call makes a tool call and then answers,
//! so it saves several times (the engine saves at every step). No call may fail ("database
//! is locked" was the failure before writes were serialised), and every session must load
//! back with exactly the agent's messages, in order: the shared scenario
//! `agentscope_test::session_store::agents::many_sessions_at_once`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::session_store::agents;

const AGENTS: usize = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_agents_on_one_file_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap();
    let elapsed = agents::many_sessions_at_once(store, AGENTS).await;
    println!("{AGENTS} concurrent agent calls on one SQLite file: {elapsed:?}, 0 failed");
}
