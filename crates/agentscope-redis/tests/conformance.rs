//! RedisSessionStore passes the shared SessionStore conformance suite against a real
//! `redis-server`: every check gets a store with a fresh key prefix on one connection.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::{Connect, RedisServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn redis_session_store_conformance() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let base = server.store().await;
    let mut stores = 0;
    agentscope_test::session_store::conformance(|| {
        stores += 1;
        base.with_key_prefix(format!("conformance-{stores}:"))
            .unwrap()
    })
    .await;
    println!("conformance: {stores} stores (key prefixes) checked");
}

/// The same suite with a TTL on every save (nothing expires during the checks).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn redis_session_store_conformance_with_ttl() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let base = server
        .store()
        .await
        .with_ttl(Some(std::time::Duration::from_secs(3600)));
    let mut stores = 0;
    agentscope_test::session_store::conformance(|| {
        stores += 1;
        base.with_key_prefix(format!("ttl-{stores}:")).unwrap()
    })
    .await;
}
