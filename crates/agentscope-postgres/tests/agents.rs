//! Agents on PostgreSQL sessions: two agents (two instances, two separately connected
//! stores, as two processes would have) alternating turns of one conversation; 50
//! concurrent agents with tool calls losing no update; and 1,000 agents calling at once,
//! each on its own session, through one store's pool of 16 connections: 0 failures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope_test::session_store::agents;
use support::{PostgresServer, store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn two_agents_on_two_stores_alternate_on_one_session() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let stores = [store(&server).await, store(&server).await];
    agents::alternating_agents(stores, store(&server).await, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn fifty_concurrent_agents_lose_no_update() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let stores = [store(&server).await, store(&server).await];
    agents::concurrent_agents(stores, store(&server).await, 50, 3).await;
}

const AGENTS: usize = 1_000;

/// 1,000 agents call at once, each on its own session (lease, load, a tool call, three
/// saves, release), through one store whose pool holds 16 connections: every call succeeds
/// and every session loads back with exactly its agent's messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_thousand_concurrent_sessions_all_succeed_through_one_pool() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = store(&server).await;
    assert_eq!(store.max_connections(), 16);
    let elapsed = agents::many_sessions_at_once(store, AGENTS).await;
    println!("{AGENTS} concurrent sessions: all succeeded in {elapsed:?}");
    // Every lease was given back.
    let held = server.psql("SELECT count(*) FROM agentscope_session_leases");
    assert_eq!(held, "0");
}
