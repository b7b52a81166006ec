//! The SQLite store's session lease between two store handles on one file (each with its
//! own connections and keeper, as two processes have): a second call is busy before any
//! hook or model request; the interrupt stops the holder; fenced saves, a lease taken over,
//! renewal, a dropped call's lease, no lease without leases, no tokio runtime; and a holder
//! that cannot renew its lease before it expires stops its call. The same between real
//! processes: `agentscope/tests/durability/lease.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::CancellationToken;
use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT, INTERRUPTED_WHILE_RUNNING};
use agentscope::prelude::*;
use agentscope::session::{SessionError, SessionStore, StateChange};
use agentscope_sqlite::{DEFAULT_LEASE_TTL, LEASES_TABLE, SqliteSessionStore};
use agentscope_test::session_store::identity;
use agentscope_test::session_store::instances::all_said;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
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

/// The `wait` tool: notifies `started`, waits until its call is interrupted, then notifies
/// `stopped`.
fn wait_tool(started: Arc<tokio::sync::Notify>, stopped: Arc<tokio::sync::Notify>) -> impl Tool {
    tool_fn(
        "wait",
        "Waits until interrupted.",
        json!({"type": "object"}),
        move |_input, ctx| {
            let (started, stopped) = (Arc::clone(&started), Arc::clone(&stopped));
            async move {
                started.notify_one();
                ctx.cancelled().await;
                stopped.notify_one();
                Err::<String, _>(ToolError::Cancelled)
            }
        },
    )
}

/// A call on `session` of `store` that runs the `wait` tool until interrupted, started in
/// the background once the tool runs; with the notification of the tool's stop.
struct Waiting {
    call: tokio::task::JoinHandle<Result<Msg, AgentError>>,
    stopped: Arc<tokio::sync::Notify>,
}

async fn waiting_call(store: &SqliteSessionStore, session: &str) -> Waiting {
    let started = Arc::new(tokio::sync::Notify::new());
    let stopped = Arc::new(tokio::sync::Notify::new());
    let agent = ReActAgent::builder()
        .name("first")
        .model(ScriptedModel::new([ScriptedResponse::tool_call(
            "w1",
            "wait",
            json!({}),
        )]))
        .toolkit(Toolkit::new().tool(wait_tool(Arc::clone(&started), Arc::clone(&stopped))))
        .session(store.clone(), session)
        .build()
        .unwrap();
    let call = tokio::spawn(async move { agent.call("q1").await });
    started.notified().await;
    Waiting { call, stopped }
}

/// While a call runs, a call on another store handle (another process) is busy before any
/// hook runs or the model is asked, with nothing loaded or stored; its `interrupt_session`
/// stops the first call, which ends as a local interrupt ends it and gives the session
/// back; the second then runs on the whole conversation.
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
    let first = waiting_call(&store_a, "s").await;
    let before = store_b.load("s").await.unwrap().unwrap();
    assert_eq!(all_said(&before.messages), ["q1", "call wait"]);
    assert_eq!(before.running_tools, ["w1"]);
    let (token, expires_at, interrupted) = lease_row(&path, "s").unwrap();
    assert_eq!(token.len(), 32);
    assert!(!interrupted);
    let now_ms = now_ms();
    assert!(
        (now_ms..=now_ms + 30_000).contains(&expires_at),
        "{expires_at} vs {now_ms}"
    );

    let model = ScriptedModel::new([]);
    let recorder = RecordingHook::new(0);
    let second = ReActAgent::builder()
        .name("second")
        .model(model.clone())
        .hook(recorder.clone())
        .session(store_b.clone(), "s")
        .build()
        .unwrap();
    assert!(matches!(second.call("q2").await, Err(AgentError::Busy)));
    // Observing and changing metadata take the lease too.
    assert!(matches!(
        second.observe(Msg::user("note")).await,
        Err(AgentError::Busy)
    ));
    assert!(matches!(
        second.update_metadata(|_| {}).await,
        Err(AgentError::Busy)
    ));
    assert!(second.memory().is_empty(), "nothing was loaded");
    assert!(recorder.events().is_empty(), "{:?}", recorder.types());
    assert_eq!(model.request_count(), 0);
    assert_eq!(store_b.load("s").await.unwrap().unwrap(), before);
    let error = store_b
        .lease("s", &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "session 's' is busy: another call holds its lease"
    );

    // The other handle's interrupt reaches the holder through the lease row.
    let started = Instant::now();
    assert!(second.interrupt_session().await.unwrap());
    let reply = first.call.await.unwrap().unwrap();
    println!("interrupt across store handles: {:?}", started.elapsed());
    assert_eq!(reply.text(), INTERRUPT_REPLY);
    let stored = store_b.load("s").await.unwrap().unwrap();
    assert_eq!(
        all_said(&stored.messages),
        [
            "q1",
            "call wait",
            &format!("result {INTERRUPTED_RESULT}"),
            INTERRUPT_REPLY
        ]
    );
    assert!(stored.running_tools.is_empty());
    assert_eq!(lease_row(&path, "s"), None, "given back with the call");

    model.push(ScriptedResponse::text("a2"));
    assert_eq!(second.call("q2").await.unwrap().text(), "a2");
    let mut expected = all_said(&stored.messages);
    expected.push("q2".into());
    assert_eq!(all_said(&model.requests()[0].messages), expected);
    assert_eq!(recorder.types().first(), Some(&HookEventType::PreCall));
    // Nobody holds the session now.
    assert!(!second.interrupt_session().await.unwrap());
    assert!(!store_a.interrupt("s").await.unwrap());
}

/// The holder renews its lease past the time to live; fenced saves go through while it
/// holds it; another call that took the session over (as after the holder stalled past the
/// time to live) makes them fail with `LeaseLost`, the holder's keeper notices and stops
/// its call, and giving the old lease back leaves the new holder's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_taken_over_refuses_the_old_holders_saves_and_release() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = store_with_ttl(&path, Duration::from_millis(600));
    let other = store_with_ttl(&path, Duration::from_millis(600));
    assert_eq!(store.lease_ttl(), Some(Duration::from_millis(600)));

    let cancel = CancellationToken::new();
    let lease = store.lease("s", &cancel).await.unwrap().unwrap();
    let (token, first_expiry, _) = lease_row(&path, "s").unwrap();
    assert_eq!(token, lease.fence());
    // Held past its time to live: the holder renews it.
    tokio::time::sleep(Duration::from_millis(1_400)).await;
    let (token, renewed_expiry, _) = lease_row(&path, "s").unwrap();
    assert_eq!(token, lease.fence());
    assert!(
        renewed_expiry > first_expiry + 600,
        "renewed past the first expiry"
    );
    assert!(!cancel.is_cancelled());
    let error = other
        .lease("s", &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SessionError::Busy { session } if session == "s"),
        "{error:?}"
    );
    assert!(matches!(AgentError::from(error), AgentError::Busy));

    let first = StateChange::new(0, 0, vec![Msg::user("1")], identity()).with_fence(lease.fence());
    assert_eq!(store.save("s", &first).await.unwrap(), 1);
    // A fence that holds nothing is refused too.
    let stranger =
        StateChange::new(1, 1, vec![Msg::user("x")], identity()).with_fence("not-a-lease");
    let error = other.save("s", &stranger).await.unwrap_err();
    assert!(matches!(&error, SessionError::LeaseLost { session } if session == "s"));

    // Another call takes the session over.
    Connection::open(&path)
        .unwrap()
        .execute(
            &format!("UPDATE {LEASES_TABLE} SET token = 'newer-holder' WHERE session_id = 's'"),
            [],
        )
        .unwrap();
    let stale =
        StateChange::new(1, 1, vec![Msg::assistant("2")], identity()).with_fence(lease.fence());
    let error = store.save("s", &stale).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::LeaseLost { session } if session == "s"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "session 's': this call's lease expired and another call took the session, so the \
         save was refused"
    );
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!((stored.revision, stored.messages.len()), (1, 1));
    // The old holder's renewal notices and stops its call.
    tokio::time::timeout(Duration::from_secs(5), cancel.cancelled())
        .await
        .expect("the lost lease cancels the call");
    lease.release().await.unwrap();
    assert_eq!(lease_row(&path, "s").unwrap().0, "newer-holder");

    // An expired lease is taken over at once (its holder died).
    Connection::open(&path)
        .unwrap()
        .execute(
            &format!("UPDATE {LEASES_TABLE} SET expires_at = 0 WHERE session_id = 's'"),
            [],
        )
        .unwrap();
    let lease = other
        .lease("s", &CancellationToken::new())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lease_row(&path, "s").unwrap().0, lease.fence());
    lease.release().await.unwrap();
    assert_eq!(lease_row(&path, "s"), None);
}

/// The rule every leasing store follows: a holder that cannot renew its lease before it
/// would expire stops its call. Here another connection holds the database's write lock
/// beyond the lease's time to live, so every renewal fails: the call is interrupted at the
/// lease's expiry (its tool sees the cancellation), and once the lock is released its last
/// save goes through (no other call took the session): the call ends with the interrupt
/// reply, and the conversation is stored as an interrupt leaves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_cannot_renew_its_lease_stops_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    const TTL: Duration = Duration::from_millis(600);
    let store = store_with_ttl(&path, TTL);
    let first = waiting_call(&store, "s").await;
    // Renewed a while: the lock comes well after the lease was taken.
    tokio::time::sleep(TTL).await;

    let locker = Connection::open(&path).unwrap();
    locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // The expiry of the last renewal that went through: no renewal does from now on.
    let expires_at: i64 = locker
        .query_row(
            &format!("SELECT expires_at FROM {LEASES_TABLE} WHERE session_id = 's'"),
            [],
            |row| row.get(0),
        )
        .unwrap();
    tokio::time::timeout(TTL * 5, first.stopped.notified())
        .await
        .expect("the call is stopped when its lease would have expired");
    let stopped_at = now_ms();
    println!(
        "renewals failing: call stopped {} ms after the lease's expiry",
        stopped_at - expires_at
    );
    // Not before the lease could have expired (measured from the moment the renewal was
    // sent, which is a little before the store read the clock), and promptly then.
    assert!(
        (expires_at - 50..expires_at + 1_000).contains(&stopped_at),
        "stopped at {stopped_at}, expiry {expires_at}"
    );
    assert!(
        !first.call.is_finished(),
        "the last save waits for the lock"
    );
    locker.execute_batch("ROLLBACK").unwrap();
    drop(locker);

    let reply = first.call.await.unwrap().unwrap();
    assert_eq!(reply.text(), INTERRUPT_REPLY);
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(
        all_said(&stored.messages),
        [
            "q1",
            "call wait",
            &format!("result {INTERRUPTED_RESULT}"),
            INTERRUPT_REPLY
        ]
    );
    assert!(stored.running_tools.is_empty());
    assert_eq!(lease_row(&path, "s"), None, "given back with the call");
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
    first.call.abort();
    assert!(first.call.await.unwrap_err().is_cancelled());

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
