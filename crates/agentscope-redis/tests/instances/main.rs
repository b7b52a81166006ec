//! Several instances of a service on one Redis: the session lease (one call at a time per
//! session across instances, fenced saves, expiry), the cross-instance interrupt, and the
//! failures a deployment sees: a holder killed with SIGKILL, Redis restarted mid-run. The
//! process tests start copies of this binary as instances (`worker::run`); the scenarios
//! every leasing store runs live in `agentscope_test::session_store::instances`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod leases;
mod processes;
mod worker;

use std::time::Duration;

use agentscope_redis::RedisSessionStore;

/// A store on `server` whose leases live 300 ms (renewed every 100 ms).
async fn short_lease_store(server: &support::RedisServer) -> RedisSessionStore {
    RedisSessionStore::builder(server.url())
        .lease_ttl(Duration::from_millis(300))
        .connect()
        .await
        .unwrap()
}
