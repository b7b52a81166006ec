//! What the tests share: a PostgreSQL server of their own
//! (`agentscope_test::components::postgres`), stores on it, and a raw client for looking
//! at (and damaging) the rows.
//!
//! Without PostgreSQL (or `openssl` for TLS) the crate's build script leaves `has_postgres`
//! (`has_openssl`) unset and the tests that need it are ignored, with the reason, so
//! `cargo test --workspace` passes with only the Rust toolchain and counts them as ignored.
//! Under CI (`AGENTSCOPE_CI=1`, set by `.ci/run`) they always run and a missing component
//! fails them; `PostgresServer::start` checks again at run time.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used
)]

use agentscope_postgres::PostgresSessionStore;
pub use agentscope_test::components::postgres::PostgresServer;

/// A store on `server` with the default settings.
pub async fn store(server: &PostgresServer) -> PostgresSessionStore {
    PostgresSessionStore::connect(server.url())
        .await
        .expect("the store connects")
}

/// A plain client of `server` (the superuser), its connection driven by a task.
pub async fn raw(server: &PostgresServer) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
        .await
        .expect("a raw connection");
    tokio::spawn(connection);
    client
}
