//! The lease and the interrupt between two instances of one process (two stores, each with
//! its own connections, as two processes have).

use std::time::{Duration, Instant};

use agentscope::CancellationToken;
use agentscope::prelude::*;
use agentscope::session::{SessionError, SessionStore, StateChange};
use agentscope_redis::RedisSessionStore;
use agentscope_test::session_store::identity;
use agentscope_test::session_store::instances::worker::{Request, agent, serve};
use agentscope_test::session_store::instances::{assert_interrupted, scenarios, wait_running};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use redis::AsyncCommands;

use crate::short_lease_store;
use crate::support::{Connect, RedisServer};

/// A second instance is busy at once, before any hook runs, and its interrupt stops the
/// first instance's call (the shared scenario of the same name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_second_instance_is_busy_before_any_hook_and_its_interrupt_stops_the_first() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (store_a, store_b) = (server.store().await, server.store().await);
    scenarios::a_second_instance_is_busy_before_any_hook_and_its_interrupt_stops_the_first(
        store_a, store_b,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_lease_taken_over_refuses_the_old_holders_saves_and_release() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = short_lease_store(&server).await;
    let other = server.store().await;
    let key = store.lease_key("s").unwrap();
    assert_eq!(key, "agentscope:{s}:lease");

    let cancel = CancellationToken::new();
    let lease = store.lease("s", &cancel).await.unwrap().unwrap();
    let mut raw = server.raw().await;
    let held: String = raw.get(&key).await.unwrap();
    assert_eq!(held, lease.fence());
    let ttl: i64 = raw.pttl(&key).await.unwrap();
    assert!((1..=300).contains(&ttl), "{ttl}");
    // Held past its time to live: the holder renews it.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let still: String = raw.get(&key).await.unwrap();
    assert_eq!(still, lease.fence());
    assert!(!cancel.is_cancelled());
    // Another instance is refused.
    let error = other
        .lease("s", &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SessionError::Busy { session } if session == "s"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "session 's' is busy: another call holds its lease"
    );
    assert!(matches!(AgentError::from(error), AgentError::Busy));

    // Saves under the lease go through.
    let first = StateChange::new(0, 0, vec![Msg::user("1")], identity()).with_fence(lease.fence());
    assert_eq!(store.save("s", &first).await.unwrap(), 1);

    // Another call takes the session over (as after the holder stalled past the TTL).
    let _: () = raw.set(&key, "newer-holder").await.unwrap();
    let stale =
        StateChange::new(1, 1, vec![Msg::assistant("2")], identity()).with_fence(lease.fence());
    let error = store.save("s", &stale).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::LeaseLost { session } if session == "s"),
        "{error:?}"
    );
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!((stored.revision, stored.messages.len()), (1, 1));
    // The old holder's renewal notices and stops its call.
    tokio::time::timeout(Duration::from_secs(5), cancel.cancelled())
        .await
        .expect("the lost lease cancels the call");
    // Giving the old lease back leaves the new holder's alone.
    lease.release().await.unwrap();
    let holder: String = raw.get(&key).await.unwrap();
    assert_eq!(holder, "newer-holder");

    // The new holder releases: the session is free.
    let _: () = raw.del(&key).await.unwrap();
    let lease = other
        .lease("s", &CancellationToken::new())
        .await
        .unwrap()
        .unwrap();
    lease.release().await.unwrap();
    let gone: Option<String> = raw.get(&key).await.unwrap();
    assert_eq!(gone, None);
}

/// The rule every leasing store follows: a holder that cannot renew its lease before it
/// would expire stops its call. Redis stops answering writes (`CLIENT PAUSE WRITE`, as a
/// stalled or partitioned server) for longer than the lease's time to live: every renewal
/// goes unanswered, so the holder interrupts its call when the lease would have expired
/// (measured from its last renewal that went through). Once Redis answers again, no other
/// call took the session, so the stopped call's last save goes through: it ends with the
/// interrupt reply, and the conversation is stored as an interrupt leaves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_holder_that_cannot_renew_its_lease_stops_its_call() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    const TTL: Duration = Duration::from_millis(600);
    let store = RedisSessionStore::builder(server.url())
        .lease_ttl(TTL)
        .connect()
        .await
        .unwrap();
    let model = ScriptedModel::new([]);
    let a = agent(store.clone(), "s", "a", model.clone());
    let running =
        tokio::spawn(async move { serve(&a, &model, &Request::until_interrupted("q1")).await });
    wait_running(&store, "s").await;
    // Renewed a while: the pause comes well after the lease was taken.
    tokio::time::sleep(TTL).await;

    let mut raw = server.raw().await;
    let pause = TTL * 4;
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(pause.as_millis().to_string())
        .arg("WRITE")
        .query_async(&mut raw)
        .await
        .unwrap();
    let paused = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the call stops")
        .unwrap();
    let ended = paused.elapsed();
    println!("renewals unanswered: the call ended {ended:?} after the pause began");
    // It could not end before the pause did: its last save waited for Redis.
    assert!(ended >= pause - Duration::from_millis(50), "{ended:?}");
    assert_interrupted(outcome, &store, "s").await;
    let mut raw = server.raw().await;
    let keys: Vec<String> = raw.keys("agentscope:{s}:*").await.unwrap();
    let mut keys = keys;
    keys.sort();
    assert_eq!(
        keys,
        ["agentscope:{s}:messages", "agentscope:{s}:state"],
        "the lease was given back with the call"
    );
}

/// A holder that missed the interrupt message (its subscription was down) reads the mark
/// when it next renews.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn an_interrupt_mark_reaches_a_holder_that_missed_the_message() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = short_lease_store(&server).await;
    let cancel = CancellationToken::new();
    let lease = store.lease("s", &cancel).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(!cancel.is_cancelled());
    // The mark alone, as the interrupt script leaves it, without the published message.
    let mut raw = server.raw().await;
    let _: () = raw
        .set_ex("agentscope:{s}:interrupt", lease.fence(), 5)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), cancel.cancelled())
        .await
        .expect("the renewal reads the mark");
    lease.release().await.unwrap();
    let keys: Vec<String> = raw.keys("agentscope:{s}:*").await.unwrap();
    assert!(
        keys.is_empty(),
        "release removes the lease and its mark: {keys:?}"
    );
}

/// A dropped call gives its lease back at once (in the background), and the next call on
/// any instance settles the tool it left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_dropped_call_gives_its_lease_back() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (store_a, store_b) = (server.store().await, server.store().await);
    assert_eq!(store_a.lease_ttl(), Some(Duration::from_secs(30)));
    let raw = server.raw().await;
    scenarios::a_dropped_call_gives_its_lease_back(store_a, store_b, || {
        let mut raw = raw.clone();
        async move {
            let held: Option<String> = raw.get("agentscope:{s}:lease").await.unwrap();
            held.is_some()
        }
    })
    .await;
}

/// A store built `without_leases` takes none: agents on it rely on the saves'
/// compare-and-swap alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn without_leases_no_lease_is_taken() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = RedisSessionStore::builder(server.url())
        .without_leases()
        .connect()
        .await
        .unwrap();
    assert_eq!(store.lease_ttl(), None);
    assert!(
        store
            .lease("s", &CancellationToken::new())
            .await
            .unwrap()
            .is_none()
    );
    let model = ScriptedModel::new([ScriptedResponse::text("hi")]);
    let agent = agent(store.clone(), "s", "a", model);
    agent.call("hello").await.unwrap();
    let mut raw = server.raw().await;
    let keys: Vec<String> = raw.keys("agentscope:{s}:*").await.unwrap();
    let mut keys = keys;
    keys.sort();
    assert_eq!(keys, ["agentscope:{s}:messages", "agentscope:{s}:state"]);
}
