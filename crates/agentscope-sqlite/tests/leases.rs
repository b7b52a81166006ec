//! The SQLite store's session lease between two store handles on one file (each with its
//! own connections and renewal thread, as two processes have): the shared suite's lease
//! checks (fencing, a lease taken over and expired, a holder that cannot renew its lease
//! before it expires stopping its call), and what they do not see: a second call busy
//! before any hook or model request, the interrupt stopping the holder, the lease row, a
//! dropped call's lease, no lease without leases, no tokio runtime. The same between real
//! processes: `agentscope/tests/durability/lease.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::CancellationToken;
use agentscope::interrupt::INTERRUPTED_WHILE_RUNNING;
use agentscope::prelude::*;
use agentscope::session::{SessionStore, StateChange};
use agentscope_sqlite::{DEFAULT_LEASE_TTL, LEASES_TABLE, SqliteSessionStore};
use agentscope_test::session_store::identity;
use agentscope_test::session_store::instances::{all_said, scenarios};
use agentscope_test::session_store::leases::{self, LeaseHarness};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use rusqlite::{Connection, OptionalExtension};
use serde_json::json;

/// The wall clock in milliseconds since the Unix epoch, as lease expiries are written.
fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A store on `path` whose leases live `ttl`.
fn store_with_ttl(path: &Path, ttl: Duration) -> SqliteSessionStore {
    SqliteSessionStore::builder(path)
        .lease_ttl(ttl)
        .open()
        .unwrap()
}

/// The lease row of `session`: (token, expires_at, interrupted).
fn lease_row(path: &Path, session: &str) -> Option<(String, i64, bool)> {
    Connection::open(path)
        .unwrap()
        .query_row(
            &format!(
                "SELECT token, expires_at, interrupted FROM {LEASES_TABLE} WHERE session_id = ?1"
            ),
            [session],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()
        .unwrap()
}

/// The `wait` tool: notifies `started`, then waits until its call is interrupted.
fn wait_tool(started: Arc<tokio::sync::Notify>) -> impl Tool {
    tool_fn(
        "wait",
        "Waits until interrupted.",
        json!({"type": "object"}),
        move |_input, ctx| {
            let started = Arc::clone(&started);
            async move {
                started.notify_one();
                ctx.cancelled().await;
                Err::<String, _>(ToolError::Cancelled)
            }
        },
    )
}

/// A call on `session` of `store` that runs the `wait` tool until interrupted, started in
/// the background; returns once the tool runs.
async fn waiting_call(
    store: &SqliteSessionStore,
    session: &str,
) -> tokio::task::JoinHandle<Result<Msg, AgentError>> {
    let started = Arc::new(tokio::sync::Notify::new());
    let agent = ReActAgent::builder()
        .name("first")
        .model(ScriptedModel::new([ScriptedResponse::tool_call(
            "w1",
            "wait",
            json!({}),
        )]))
        .toolkit(Toolkit::new().tool(wait_tool(Arc::clone(&started))))
        .session(store.clone(), session)
        .build()
        .unwrap();
    let call = tokio::spawn(async move { agent.call("q1").await });
    started.notified().await;
    call
}

/// While a call runs, a call on another store handle (another process) is busy before any
/// hook runs or the model is asked, with nothing loaded or stored; its `interrupt_session`
/// stops the first call, which ends as a local interrupt ends it and gives the session
/// back; the second then runs on the whole conversation (the shared scenario).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_call_is_busy_before_any_hook_and_its_interrupt_stops_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let (store_a, store_b) = (
        SqliteSessionStore::open(&path).unwrap(),
        SqliteSessionStore::open(&path).unwrap(),
    );
    assert_eq!(store_a.lease_ttl(), Some(DEFAULT_LEASE_TTL));
    assert_eq!(DEFAULT_LEASE_TTL, Duration::from_secs(30));
    scenarios::a_second_instance_is_busy_before_any_hook_and_its_interrupt_stops_the_first(
        store_a, store_b,
    )
    .await;
    assert_eq!(lease_row(&path, "s"), None, "given back with the call");
}

/// The lease checks of the shared suite on one database file: each store handle has its
/// own connections and renewal thread, as processes have; another call takes the session
/// over, or its lease expires, by writing its row; the database stalls under another
/// connection's exclusive lock.
struct Harness {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Harness {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        Self { _dir: dir, path }
    }

    fn execute(&self, sql: &str, session: &str) {
        let changed = Connection::open(&self.path)
            .unwrap()
            .execute(sql, [session])
            .unwrap();
        assert_eq!(changed, 1, "{sql}");
    }
}

impl LeaseHarness for Harness {
    type Store = SqliteSessionStore;

    fn ttl(&self) -> Duration {
        Duration::from_millis(600)
    }

    async fn store(&self) -> SqliteSessionStore {
        store_with_ttl(&self.path, self.ttl())
    }

    async fn take_over(&self, session: &str) {
        self.execute(
            &format!(
                "UPDATE {LEASES_TABLE} SET token = 'newer-holder', expires_at = {} \
                 WHERE session_id = ?1",
                now_ms() + 3_600_000
            ),
            session,
        );
    }

    async fn expire(&self, session: &str) {
        self.execute(
            &format!("UPDATE {LEASES_TABLE} SET expires_at = 0 WHERE session_id = ?1"),
            session,
        );
    }

    async fn stall(&self, duration: Duration) {
        let path = self.path.clone();
        let (locked, begun) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let locker = Connection::open(path).unwrap();
            locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
            locked.send(()).unwrap();
            std::thread::sleep(duration);
            locker.execute_batch("ROLLBACK").unwrap();
        });
        tokio::task::spawn_blocking(move || begun.recv().unwrap())
            .await
            .unwrap();
    }
}

/// The shared lease checks: fencing, a lease taken over then expired, and the rule every
/// leasing store follows, that a holder that cannot renew its lease before it would expire
/// stops its call (here another connection holds the database's write lock beyond the
/// lease's time to live, so every renewal fails).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_conformance() {
    leases::run_all(&Harness::new()).await;
}

/// What the shared checks do not see: the lease is the row of [`LEASES_TABLE`] holding the
/// fence, whose expiry each renewal moves on; a lease given back deletes its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_is_a_row_its_renewals_move_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = store_with_ttl(&path, Duration::from_millis(600));
    assert_eq!(store.lease_ttl(), Some(Duration::from_millis(600)));
    let cancel = CancellationToken::new();
    let taken = now_ms();
    let lease = store.lease("s", &cancel).await.unwrap().unwrap();
    let (token, first_expiry, interrupted) = lease_row(&path, "s").unwrap();
    assert_eq!((token.as_str(), interrupted), (lease.fence(), false));
    assert_eq!(token.len(), 32);
    assert!(
        (taken..=now_ms() + 600).contains(&first_expiry),
        "{first_expiry} vs {taken}"
    );
    // Held past its time to live: the holder renews it.
    tokio::time::sleep(Duration::from_millis(1_400)).await;
    let (token, renewed_expiry, _) = lease_row(&path, "s").unwrap();
    assert_eq!(token, lease.fence());
    assert!(
        renewed_expiry > first_expiry + 600,
        "renewed past the first expiry"
    );
    assert!(!cancel.is_cancelled());
    lease.release().await.unwrap();
    assert_eq!(lease_row(&path, "s"), None);
}

/// A dropped call gives its lease back at once: a new call through the same store is not
/// busy, and settles the tool the dropped call left running; another store handle sees the
/// lease row gone shortly after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_gives_its_lease_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).unwrap();
    let first = waiting_call(&store, "s").await;
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());

    let model = ScriptedModel::new([ScriptedResponse::text("a2")]);
    let next = ReActAgent::builder()
        .model(model.clone())
        .session(store.clone(), "s")
        .build()
        .unwrap();
    assert_eq!(next.call("q2").await.unwrap().text(), "a2");
    assert_eq!(
        all_said(&store.load("s").await.unwrap().unwrap().messages),
        [
            "q1",
            "call wait",
            &format!("result {INTERRUPTED_WHILE_RUNNING}"),
            "q2",
            "a2"
        ]
    );
    assert_eq!(lease_row(&path, "s"), None);

    // Dropped without a call: the keeper deletes the row in the background.
    let lease = store
        .lease("t", &CancellationToken::new())
        .await
        .unwrap()
        .unwrap();
    assert!(lease_row(&path, "t").is_some());
    drop(lease);
    let deadline = Instant::now() + Duration::from_secs(5);
    while lease_row(&path, "t").is_some() {
        assert!(Instant::now() < deadline, "the dropped lease stayed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A store built `without_leases` takes none: agents rely on the saves' compare-and-swap.
#[tokio::test]
async fn without_leases_no_lease_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::builder(&path)
        .without_leases()
        .open()
        .unwrap();
    assert_eq!(store.lease_ttl(), None);
    assert!(
        store
            .lease("s", &CancellationToken::new())
            .await
            .unwrap()
            .is_none()
    );
    assert!(!store.interrupt("s").await.unwrap());
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::text("hi")]))
        .session(store.clone(), "s")
        .build()
        .unwrap();
    agent.call("hello").await.unwrap();
    assert_eq!(lease_row(&path, "s"), None);
    assert!(format!("{store:?}").ends_with("lease_ttl: None }"));
    // The time to live is whole milliseconds, at least 3 ms, at most a year.
    let ttl = |ttl| {
        SqliteSessionStore::builder(&path)
            .lease_ttl(ttl)
            .open()
            .unwrap()
            .lease_ttl()
    };
    assert_eq!(
        ttl(Duration::from_micros(2_500_700)),
        Some(Duration::from_millis(2_500))
    );
    assert_eq!(ttl(Duration::ZERO), Some(Duration::from_millis(3)));
    assert_eq!(
        ttl(Duration::MAX),
        Some(Duration::from_secs(365 * 24 * 60 * 60))
    );
}

/// Leases work without a tokio runtime (the keeper is a thread of its own): taken, renewed,
/// fenced, given back.
#[test]
fn leases_work_without_a_tokio_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = store_with_ttl(&path, Duration::from_millis(600));
    futures::executor::block_on(async {
        let cancel = CancellationToken::new();
        let lease = store.lease("s", &cancel).await.unwrap().unwrap();
        let first = lease_row(&path, "s").unwrap().1;
        std::thread::sleep(Duration::from_millis(900));
        assert!(lease_row(&path, "s").unwrap().1 > first, "renewed");
        assert!(!cancel.is_cancelled());
        let change =
            StateChange::new(0, 0, vec![Msg::user("1")], identity()).with_fence(lease.fence());
        assert_eq!(store.save("s", &change).await.unwrap(), 1);
        // An interrupt through the same store cancels at once.
        assert!(store.interrupt("s").await.unwrap());
        assert!(cancel.is_cancelled());
        assert!(lease_row(&path, "s").unwrap().2, "marked");
        lease.release().await.unwrap();
        assert_eq!(lease_row(&path, "s"), None);
    });
    assert!(
        format!("{store:?}").ends_with("lease_ttl: Some(600ms) }"),
        "{store:?}"
    );
}
