//! Agents on Redis sessions: two agents (two instances, two separately connected stores, as
//! two processes would have) alternating turns of one conversation; and 50 concurrent
//! agents with tool calls, each on its own session, losing no update.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope_test::session_store::agents;
use support::{Connect, RedisServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn two_agents_on_two_connections_alternate_on_one_session() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    // Each agent has its own connection: another process, as far as Redis can tell.
    let stores = [server.store().await, server.store().await];
    agents::alternating_agents(stores, server.store().await, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn fifty_concurrent_agents_lose_no_update() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let stores = [server.store().await, server.store().await];
    agents::concurrent_agents(stores, server.store().await, 50, 3).await;
}
