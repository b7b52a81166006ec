//! SqliteSessionStore passes the shared SessionStore conformance suite: every check gets a
//! new database file in a temporary directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentscope_sqlite::SqliteSessionStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_session_store_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let mut databases = 0;
    agentscope_test::session_store::conformance(|| {
        databases += 1;
        SqliteSessionStore::open(dir.path().join(format!("sessions-{databases}.db"))).unwrap()
    })
    .await;
}
