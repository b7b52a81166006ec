//! The lease and the interrupt between two instances of one process (two stores, each with
//! its own connections, as two processes have): the shared suite's lease checks, and what
//! they do not see (the lease key, the interrupt mark, a dropped call, no lease without
//! leases).

use std::time::Duration;

use agentscope::CancellationToken;
use agentscope::session::SessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_test::session_store::instances::scenarios;
use agentscope_test::session_store::leases::{self, LeaseHarness};
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

/// The lease checks of the shared suite on one server: each handle has its own
/// connections, as instances have; another call takes the session over by writing the
/// lease key, its lease expires when the key goes; Redis stalls under `CLIENT PAUSE WRITE`
/// (as a stalled or partitioned server: every renewal goes unanswered).
struct Harness {
    server: RedisServer,
}

impl LeaseHarness for Harness {
    type Store = RedisSessionStore;

    fn ttl(&self) -> Duration {
        Duration::from_millis(600)
    }

    async fn store(&self) -> RedisSessionStore {
        RedisSessionStore::builder(self.server.url())
            .lease_ttl(self.ttl())
            .connect()
            .await
            .unwrap()
    }

    async fn take_over(&self, session: &str) {
        let mut raw = self.server.raw().await;
        let _: () = raw
            .set(format!("agentscope:{{{session}}}:lease"), "newer-holder")
            .await
            .unwrap();
    }

    async fn expire(&self, session: &str) {
        let mut raw = self.server.raw().await;
        let removed: i64 = raw
            .del(format!("agentscope:{{{session}}}:lease"))
            .await
            .unwrap();
        assert_eq!(removed, 1);
    }

    async fn stall(&self, duration: Duration) {
        let mut raw = self.server.raw().await;
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(duration.as_millis().to_string())
            .arg("WRITE")
            .query_async(&mut raw)
            .await
            .unwrap();
    }
}

/// The shared lease checks: fencing, a lease taken over then expired, and the rule every
/// leasing store follows, that a holder that cannot renew its lease before it would expire
/// stops its call. Afterwards the lease keys are gone with the calls (the interrupt flag
/// too): only the sessions' state and messages are left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn lease_conformance() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let harness = Harness { server };
    leases::run_all(&harness).await;
    let mut raw = harness.server.raw().await;
    let mut keys: Vec<String> = raw.keys("agentscope:{*").await.unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "agentscope:{call}:messages",
            "agentscope:{call}:state",
            "agentscope:{expiring}:messages",
            "agentscope:{expiring}:state",
            "agentscope:{fenced}:messages",
            "agentscope:{fenced}:state",
            "agentscope:{stalled}:messages",
            "agentscope:{stalled}:state"
        ],
        "the leases were given back with the calls"
    );
}

/// What the shared checks do not see: the lease is the key `<prefix>{<id>}:lease` holding
/// the fence, expiring after the time to live unless renewed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_lease_is_a_key_holding_the_fence() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = short_lease_store(&server).await;
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
    lease.release().await.unwrap();
    let gone: Option<String> = raw.get(&key).await.unwrap();
    assert_eq!(gone, None);
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

/// A store built `without_leases` takes none (agents on it rely on the saves'
/// compare-and-swap alone), and its interrupt still reaches a call that a leasing store
/// runs (the shared scenario).
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
    let raw = server.raw().await;
    let leasing = server.store().await;
    scenarios::without_leases_no_lease_is_taken(store, leasing, || async move {
        let mut raw = raw;
        let mut keys: Vec<String> = raw.keys("agentscope:{s}:*").await.unwrap();
        keys.sort();
        keys != ["agentscope:{s}:messages", "agentscope:{s}:state"]
    })
    .await;
}
