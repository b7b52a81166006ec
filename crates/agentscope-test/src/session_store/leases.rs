//! The lease checks every store that coordinates instances passes
//! ([`SessionStore::lease`]): [`fencing`], [`expiry`] and [`renewal_failure`], with exact
//! outcomes. A store crate's tests give them a [`LeaseHarness`]: store handles on one
//! backend (as separate instances have them), and the faults only the backend can cause
//! (another instance taking the session over, a lease expiring, the backend stalling).
//!
//! ```no_run
//! # use std::time::Duration;
//! # use agentscope::session::SessionStore;
//! use agentscope_test::session_store::leases::{self, LeaseHarness};
//!
//! # async fn example<H: LeaseHarness>(harness: H) {
//! // In a `#[tokio::test(flavor = "multi_thread")]`: every check, or one of them
//! // (`leases::fencing(&harness).await`, `expiry`, `renewal_failure`).
//! leases::run_all(&harness).await;
//! # }
//! ```
//!
//! They must run inside a multi-threaded tokio runtime, on a new, empty backend (each check
//! uses its own session ids, so one backend serves them all).
//! Everything here panics when a step fails: it is test support.
#![allow(clippy::expect_used, clippy::panic)] // checks: a step that fails fails the test

use std::future::Future;
use std::time::{Duration, Instant};

use agentscope::CancellationToken;
use agentscope::prelude::*;
use agentscope::session::{SessionError, SessionLease, SessionStore, StateChange};

use super::identity;
use super::instances::worker::{Request, agent, serve};
use super::instances::{assert_interrupted, stored, wait_running};
use crate::ScriptedModel;

/// What the lease checks need from a store's tests: handles on one backend, and the faults
/// of the backend.
pub trait LeaseHarness: Sync {
    /// The store.
    type Store: SessionStore + Clone;

    /// How long the leases of [`store`](Self::store)'s handles live (short: a few hundred
    /// milliseconds, so the checks take seconds).
    fn ttl(&self) -> Duration;

    /// A new handle on the harness's backend (its own connections, as another instance
    /// has), whose leases live [`ttl`](Self::ttl). Every handle of one harness sees the
    /// same sessions and leases.
    fn store(&self) -> impl Future<Output = Self::Store> + Send;

    /// Another call takes session `session` over, as after its holder stalled past the
    /// lease's time to live: the session's lease is now one no handle of the harness holds
    /// (a row, key or lock of another token), which lives on until
    /// [`expire`](Self::expire).
    fn take_over(&self, session: &str) -> impl Future<Output = ()> + Send;

    /// The lease [`take_over`](Self::take_over) left on `session` expires now, as when its
    /// holder died and stopped renewing it.
    fn expire(&self, session: &str) -> impl Future<Output = ()> + Send;

    /// The backend stops answering the holder's writes for `duration` (longer than the time
    /// to live), as a stalled server, a locked database or a partition does: every renewal
    /// fails or goes unanswered, and a write waits until the stall ends. Returns once the
    /// stall has begun; it ends by itself.
    fn stall(&self, duration: Duration) -> impl Future<Output = ()> + Send;

    /// Whether the store renews its leases, so that [`run_all`] runs [`renewal_failure`]
    /// (the provided method: `true`). A store whose lease cannot expire while its holder
    /// lives (a kernel lock on a file) returns `false`, and need not implement
    /// [`stall`](Self::stall) (it is never called).
    fn renews(&self) -> bool {
        true
    }
}

/// Runs [`fencing`], [`expiry`] and, when the store [renews](LeaseHarness::renews) its
/// leases, [`renewal_failure`], in that order.
///
/// # Panics
///
/// At the first check that fails.
pub async fn run_all<H: LeaseHarness>(harness: &H) {
    fencing(harness).await;
    expiry(harness).await;
    if harness.renews() {
        renewal_failure(harness).await;
    }
}

/// Takes session `session`'s lease through `store` for a call that `interrupt` stops.
async fn take<S: SessionStore>(
    store: &S,
    session: &str,
    interrupt: &CancellationToken,
) -> SessionLease {
    store
        .lease(session, interrupt)
        .await
        .expect("the lease is taken")
        .expect("the store takes leases")
}

/// Checks that `store` refuses `session`'s lease as busy, with the exact error, which an
/// agent reports as [`AgentError::Busy`].
async fn assert_busy<S: SessionStore>(store: &S, session: &str) {
    let error = store
        .lease(session, &CancellationToken::new())
        .await
        .expect_err("the session is busy");
    assert!(
        matches!(&error, SessionError::Busy { session: busy } if busy == session),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("session '{session}' is busy: another call holds its lease")
    );
    assert!(matches!(AgentError::from(error), AgentError::Busy));
}

/// Checks that saving `change` to `session` through `store` is refused with
/// [`SessionError::LeaseLost`] (the exact error), and that the session is still stored at
/// `revision` with `messages` messages.
async fn assert_lease_lost<S: SessionStore>(
    store: &S,
    session: &str,
    change: &StateChange,
    (revision, messages): (u64, usize),
) {
    let error = store
        .save(session, change)
        .await
        .expect_err("the save is refused");
    assert!(
        matches!(&error, SessionError::LeaseLost { session: lost } if lost == session),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "session '{session}': this call's lease expired and another call took the session, \
             so the save was refused"
        )
    );
    let stored = stored(store, session).await;
    assert_eq!(
        (stored.revision, stored.messages.len()),
        (revision, messages)
    );
}

/// Fencing: a save carrying a lease's fence goes through while that lease holds the
/// session, and is refused with [`SessionError::LeaseLost`] (nothing written) once the lease
/// was given back and another call took the session, as is a fence no lease ever had; the
/// new holder's fenced saves go through; a second lease is [`SessionError::Busy`] (an agent:
/// [`AgentError::Busy`]) on any handle while one is held; a lease given back frees the
/// session at once; and a save without a fence is compare-and-swap only once no lease is
/// held.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn fencing<H: LeaseHarness>(harness: &H) {
    let (a, b) = (harness.store().await, harness.store().await);
    let first = take(&a, "fenced", &CancellationToken::new()).await;
    // Busy on every handle, the holder's too.
    assert_busy(&b, "fenced").await;
    assert_busy(&a, "fenced").await;
    let step =
        |base, text: &str| StateChange::new(base, base as usize, vec![Msg::user(text)], identity());
    assert_eq!(
        a.save("fenced", &step(0, "1").with_fence(first.fence()))
            .await
            .expect("a save under the lease goes through"),
        1
    );
    // A fence that holds nothing is refused, on any handle.
    assert_lease_lost(
        &b,
        "fenced",
        &step(1, "x").with_fence("not-a-lease"),
        (1, 1),
    )
    .await;
    let stale_fence = first.fence().to_owned();
    first.release().await.expect("the lease is given back");
    // Given back: another call takes the session at once.
    let second = take(&b, "fenced", &CancellationToken::new()).await;
    assert_ne!(second.fence(), stale_fence);
    assert_lease_lost(&a, "fenced", &step(1, "2").with_fence(&stale_fence), (1, 1)).await;
    assert_eq!(
        b.save("fenced", &step(1, "2").with_fence(second.fence()))
            .await
            .expect("the new holder saves"),
        2
    );
    second.release().await.expect("the lease is given back");
    // No lease held: a save without a fence is compare-and-swap only.
    assert_eq!(
        a.save("fenced", &step(2, "3"))
            .await
            .expect("an unfenced save goes through"),
        3
    );
    let third = take(&a, "fenced", &CancellationToken::new()).await;
    third.release().await.expect("the lease is given back");
}

/// Expiry: a lease lives while its holder renews it (held past three times its time to
/// live, other handles busy, the holder's call not stopped); once another call took the
/// session over ([`LeaseHarness::take_over`]), the old holder's fenced saves are refused
/// with [`SessionError::LeaseLost`] (nothing written), its call is stopped (its interrupt
/// token cancelled, within 5 s), giving its lease back leaves the new holder's alone
/// (every handle still busy), and once that lease expires ([`LeaseHarness::expire`]: its
/// holder died) another call takes the session at once.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn expiry<H: LeaseHarness>(harness: &H) {
    let (a, b) = (harness.store().await, harness.store().await);
    let call = CancellationToken::new();
    let lease = take(&a, "expiring", &call).await;
    tokio::time::sleep(harness.ttl() * 3).await;
    assert!(!call.is_cancelled(), "a renewed lease stopped its call");
    assert_busy(&b, "expiring").await;
    let first = StateChange::new(0, 0, vec![Msg::user("1")], identity()).with_fence(lease.fence());
    assert_eq!(
        a.save("expiring", &first)
            .await
            .expect("a save under the lease goes through"),
        1
    );

    harness.take_over("expiring").await;
    let stale =
        StateChange::new(1, 1, vec![Msg::assistant("2")], identity()).with_fence(lease.fence());
    assert_lease_lost(&a, "expiring", &stale, (1, 1)).await;
    tokio::time::timeout(Duration::from_secs(5), call.cancelled())
        .await
        .expect("the lost lease stops the holder's call");
    lease
        .release()
        .await
        .expect("giving back a lost lease is no error");
    assert_busy(&a, "expiring").await;
    assert_busy(&b, "expiring").await;

    harness.expire("expiring").await;
    let taken = take(&b, "expiring", &CancellationToken::new()).await;
    assert_busy(&a, "expiring").await;
    let next =
        StateChange::new(1, 1, vec![Msg::assistant("2")], identity()).with_fence(taken.fence());
    assert_eq!(
        b.save("expiring", &next)
            .await
            .expect("the new holder saves"),
        2
    );
    taken.release().await.expect("the lease is given back");
}

/// Renewal failure, the rule of [`SessionStore::lease`]: a holder that cannot renew its
/// lease before it would expire stops its call. The backend stalls
/// ([`LeaseHarness::stall`], four times the time to live) while a lease is held, after it
/// was renewed a while: the holder's interrupt token is cancelled no earlier than half the
/// time to live after the stall began (the last renewal was at most a third of it before,
/// and a store may stop a tenth early) and no later than the time to live after it (250 ms
/// of scheduling allowed), while the stall lasts. Renewing goes on after the stop: once the
/// backend answers again, no other call having taken the session, the holder's fenced save
/// goes through and its release frees the session. An agent's call under the same stall
/// ends as an interrupt ends it (its last save waits for the backend): the interrupt reply,
/// the conversation stored with the tool call's "interrupted" result, and its lease given
/// back.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn renewal_failure<H: LeaseHarness>(harness: &H) {
    let ttl = harness.ttl();
    let stall = ttl * 4;
    let (a, b) = (harness.store().await, harness.store().await);

    // A lease taken directly: when exactly its call is stopped.
    let call = CancellationToken::new();
    let lease = take(&a, "stalled", &call).await;
    tokio::time::sleep(ttl).await;
    harness.stall(stall).await;
    let stalled = Instant::now();
    tokio::time::timeout(stall, call.cancelled())
        .await
        .expect("the holder stopped its call while the backend stalled");
    let stopped = stalled.elapsed();
    println!(
        "renewals failing: the call was stopped {stopped:?} after the stall began (TTL {ttl:?})"
    );
    assert!(stopped >= ttl / 2, "stopped {stopped:?} into the stall");
    assert!(
        stopped <= ttl + Duration::from_millis(250),
        "stopped {stopped:?} into the stall"
    );
    tokio::time::sleep(stall.saturating_sub(stalled.elapsed())).await;
    let change = StateChange::new(0, 0, vec![Msg::user("1")], identity()).with_fence(lease.fence());
    assert_eq!(
        a.save("stalled", &change)
            .await
            .expect("nobody took the session: the stopped holder's save goes through"),
        1
    );
    lease.release().await.expect("the lease is given back");
    take(&b, "stalled", &CancellationToken::new())
        .await
        .release()
        .await
        .expect("the lease is given back");

    // An agent's call.
    let model = ScriptedModel::new([]);
    let holder = agent(a.clone(), "call", "a", model.clone());
    let running =
        tokio::spawn(
            async move { serve(&holder, &model, &Request::until_interrupted("q1")).await },
        );
    wait_running(&a, "call").await;
    tokio::time::sleep(ttl).await;
    harness.stall(stall).await;
    let stalled = Instant::now();
    let outcome = tokio::time::timeout(stall + Duration::from_secs(10), running)
        .await
        .expect("the call ends")
        .expect("the call does not panic");
    let ended = stalled.elapsed();
    println!("renewals failing: the call ended {ended:?} after the stall began");
    assert!(
        ended >= stall - Duration::from_millis(50),
        "the call's last save waits for the backend: ended {ended:?} into a {stall:?} stall"
    );
    assert_interrupted(outcome, &b, "call").await;
    take(&b, "call", &CancellationToken::new())
        .await
        .release()
        .await
        .expect("the lease is given back");
}
