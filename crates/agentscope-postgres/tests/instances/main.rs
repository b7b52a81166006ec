//! Several instances of a service on one PostgreSQL: the session lease (one call at a time
//! per session across instances, fenced saves, expiry, a holder cut off from the server
//! stopping its call), the cross-instance interrupt (LISTEN/NOTIFY), and the failures a
//! deployment sees: a holder killed with SIGKILL, the server restarted mid-call. The process
//! tests start copies of this binary as instances (`worker::run`); the scenarios every
//! leasing store runs live in `agentscope_test::session_store::instances`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod leases;
mod processes;
mod proxy;
mod worker;

use std::time::Duration;

use agentscope_postgres::PostgresSessionStore;

use crate::support::PostgresServer;

/// A store on `server` whose leases live `ttl`.
async fn store_with_lease_ttl(server: &PostgresServer, ttl: Duration) -> PostgresSessionStore {
    PostgresSessionStore::builder(server.url())
        .lease_ttl(ttl)
        .connect()
        .await
        .unwrap()
}
