//! PostgresSessionStore passes the shared SessionStore conformance suite against a real
//! PostgreSQL: every check gets a store on a fresh schema of one server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope_postgres::PostgresSessionStore;
use support::PostgresServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn postgres_session_store_conformance() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let runtime = tokio::runtime::Handle::current();
    let mut stores = 0;
    // The suite's factory is synchronous; connecting (and migrating the new schema) is not.
    agentscope_test::session_store::conformance(|| {
        stores += 1;
        let builder =
            PostgresSessionStore::builder(server.url()).schema(format!("conformance_{stores}"));
        tokio::task::block_in_place(|| runtime.block_on(builder.connect())).unwrap()
    })
    .await;
    println!("conformance: {stores} stores (schemas) checked");
}
