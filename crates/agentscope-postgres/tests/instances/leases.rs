//! The lease and the interrupt between two instances of one process (two stores, each with
//! its own pool and listener, as two processes have): the shared suite's lease checks, and
//! what they do not see: the lease row, and a holder cut off from the server (the server
//! stopped; a proxy resetting, then black-holing, its renewals).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentscope::CancellationToken;
use agentscope::prelude::*;
use agentscope::session::{SessionError, SessionStore, StateChange};
use agentscope_postgres::PostgresSessionStore;
use agentscope_test::ScriptedModel;
use agentscope_test::session_store::identity;
use agentscope_test::session_store::instances::worker::{Outcome, Request, agent, serve};
use agentscope_test::session_store::instances::{scenarios, wait_running};
use agentscope_test::session_store::leases::{self, LeaseHarness};

use crate::proxy::{Mode, Proxy};
use crate::store_with_lease_ttl;
use crate::support::{PostgresServer, raw};

/// The lease row of `session`: its token, and how many ms it still lives (by the server's
/// clock); `None` without a row.
async fn lease_row(client: &tokio_postgres::Client, session: &str) -> Option<(String, f64)> {
    client
        .query_opt(
            "SELECT token, (extract(epoch FROM expires_at - now()) * 1000)::float8 \
             FROM agentscope_session_leases WHERE session_id = $1",
            &[&session],
        )
        .await
        .unwrap()
        .map(|row| (row.get(0), row.get(1)))
}

/// A second instance is busy at once, before any hook runs, and its interrupt stops the
/// first instance's call (the shared scenario of the same name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_second_instance_is_busy_before_any_hook_and_its_interrupt_stops_the_first() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store_a = crate::support::store(&server).await;
    let store_b = crate::support::store(&server).await;
    scenarios::a_second_instance_is_busy_before_any_hook_and_its_interrupt_stops_the_first(
        store_a, store_b,
    )
    .await;
}

/// The lease checks of the shared suite on one server: each handle has its own pool and
/// listener, as instances have, all through a proxy; another call takes the session over,
/// or its lease expires, by writing its row; the server stalls when the proxy pauses
/// (every renewal goes unanswered, and every statement waits).
struct Harness {
    server: PostgresServer,
    proxy: Proxy,
    client: tokio_postgres::Client,
}

impl Harness {
    async fn new(server: PostgresServer) -> Self {
        let proxy = Proxy::start(([127, 0, 0, 1], server.port()).into()).await;
        let client = raw(&server).await;
        Self {
            server,
            proxy,
            client,
        }
    }

    async fn execute(&self, sql: &str, session: &str) {
        let changed = self.client.execute(sql, &[&session]).await.unwrap();
        assert_eq!(changed, 1, "{sql}");
    }
}

impl LeaseHarness for Harness {
    type Store = PostgresSessionStore;

    fn ttl(&self) -> Duration {
        Duration::from_millis(600)
    }

    async fn store(&self) -> PostgresSessionStore {
        let _ = &self.server;
        PostgresSessionStore::builder(format!(
            "postgresql://postgres@127.0.0.1:{}/postgres",
            self.proxy.port()
        ))
        .lease_ttl(self.ttl())
        .connect()
        .await
        .unwrap()
    }

    async fn take_over(&self, session: &str) {
        self.execute(
            "UPDATE agentscope_session_leases SET token = 'newer-holder', \
             expires_at = now() + interval '1 hour' WHERE session_id = $1",
            session,
        )
        .await;
    }

    async fn expire(&self, session: &str) {
        self.execute(
            "UPDATE agentscope_session_leases SET expires_at = now() - interval '1 second' \
             WHERE session_id = $1",
            session,
        )
        .await;
    }

    async fn stall(&self, duration: Duration) {
        self.proxy.set(Mode::Pause);
        let proxy = self.proxy.handle();
        tokio::spawn(async move {
            tokio::time::sleep(duration).await;
            proxy.set(Mode::Forward);
        });
    }
}

/// The shared lease checks: fencing, a lease taken over then expired, and the rule every
/// leasing store follows, that a holder that cannot renew its lease before it would expire
/// stops its call (here a tenth of the time to live before, at the latest). Afterwards no
/// lease row is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn lease_conformance() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let harness = Harness::new(server).await;
    leases::run_all(&harness).await;
    let rows = harness
        .client
        .query("SELECT session_id FROM agentscope_session_leases", &[])
        .await
        .unwrap();
    assert!(rows.is_empty(), "{} lease rows left", rows.len());
}

/// What the shared checks do not see: the lease is a row holding the fence and an expiry
/// by the server's clock that renewals move on, and a save without a fence (not made under
/// a lease) is compare-and-swap only, even while another call holds the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_lease_is_a_row_and_unfenced_saves_are_compare_and_swap_only() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    const TTL: Duration = Duration::from_millis(300);
    let store = store_with_lease_ttl(&server, TTL).await;
    let client = raw(&server).await;

    let cancel = CancellationToken::new();
    let lease = store.lease("s", &cancel).await.unwrap().unwrap();
    let (token, left) = lease_row(&client, "s").await.unwrap();
    assert_eq!(token, lease.fence());
    assert!(left > 0.0 && left <= 300.0, "{left}");
    // Held past its time to live: the holder renews it.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (still, left) = lease_row(&client, "s").await.unwrap();
    assert_eq!(still, lease.fence());
    assert!(left > 0.0, "{left}");
    assert!(!cancel.is_cancelled());
    let first = StateChange::new(0, 0, vec![Msg::user("1")], identity()).with_fence(lease.fence());
    assert_eq!(store.save("s", &first).await.unwrap(), 1);
    let unfenced = StateChange::new(1, 1, vec![Msg::assistant("2")], identity());
    assert_eq!(store.save("s", &unfenced).await.unwrap(), 2);
    lease.release().await.unwrap();
    assert_eq!(lease_row(&client, "s").await, None);
}

/// A holder that missed the notification (its listener was reconnecting) reads the mark
/// when it next renews.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn an_interrupt_mark_reaches_a_holder_that_missed_the_notification() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = store_with_lease_ttl(&server, Duration::from_millis(300)).await;
    let cancel = CancellationToken::new();
    let lease = store.lease("s", &cancel).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(!cancel.is_cancelled());
    // The mark alone, as the interrupt statement leaves it, without the notification.
    let client = raw(&server).await;
    client
        .execute(
            "UPDATE agentscope_session_leases SET interrupted = true WHERE session_id = 's'",
            &[],
        )
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), cancel.cancelled())
        .await
        .expect("the renewal reads the mark");
    lease.release().await.unwrap();
    assert_eq!(lease_row(&client, "s").await, None);
    // A new lease starts without the mark.
    let again = CancellationToken::new();
    let lease = store.lease("s", &again).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!again.is_cancelled());
    lease.release().await.unwrap();
}

/// A dropped call gives its lease back at once (in the background), and the next call on
/// any instance settles the tool it left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_dropped_call_gives_its_lease_back() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store_a = crate::support::store(&server).await;
    let store_b = crate::support::store(&server).await;
    let client = raw(&server).await;
    let client = &client;
    scenarios::a_dropped_call_gives_its_lease_back(store_a, store_b, move || async move {
        lease_row(client, "s").await.is_some()
    })
    .await;
}

/// A store built `without_leases` takes none (agents on it rely on the saves'
/// compare-and-swap alone), and its interrupt still reaches a call that a leasing store
/// runs (the shared scenario).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn without_leases_no_lease_is_taken() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = PostgresSessionStore::builder(server.url())
        .without_leases()
        .connect()
        .await
        .unwrap();
    assert_eq!(store.lease_ttl(), None);
    let client = raw(&server).await;
    let leasing = crate::support::store(&server).await;
    scenarios::without_leases_no_lease_is_taken(store, leasing, || async move {
        lease_row(&client, "s").await.is_some()
    })
    .await;
}

/// The holder is cut off from the server mid-call (the server stops): its renewals fail,
/// and it stops its own call before its lease would expire, so no other instance can take
/// the session while it still runs. Renewals that succeed never stop it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_holder_that_cannot_renew_stops_its_call_before_the_lease_expires() {
    let Some(mut server) = PostgresServer::start() else {
        return;
    };
    const TTL: Duration = Duration::from_millis(1_200);
    let store = store_with_lease_ttl(&server, TTL).await;
    let model = ScriptedModel::new([]);
    let holder = agent(store.clone(), "s", "a", model.clone());
    let running =
        tokio::spawn(
            async move { serve(&holder, &model, &Request::until_interrupted("q1")).await },
        );
    wait_running(&store, "s").await;
    // Renewed for three lease lifetimes: the call goes on.
    tokio::time::sleep(TTL * 3).await;
    assert!(!running.is_finished());

    server.stop();
    let stopped = Instant::now();
    // (A holder that only logged its failed renewals would run on for the tool's ten
    // minutes: give up well before.)
    let outcome = tokio::time::timeout(TTL * 3, running)
        .await
        .expect("the cut-off holder stopped its call")
        .unwrap();
    let ended = stopped.elapsed();
    println!("holder cut off: its call ended {ended:?} after the server stopped (TTL {TTL:?})");
    // Stopped before the lease (renewed at most a third of the TTL before) could expire.
    assert!(ended < TTL, "{ended:?}");
    // The interrupt ended the tool; the final save could not reach the server.
    let Outcome::Failed(message) = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        message.starts_with("session error: session 's': storage backend error: saving"),
        "{message}"
    );
}

/// The lease row of session `s`: its token and its expiry, by the server's clock.
async fn lease_expiry(client: &tokio_postgres::Client) -> (String, SystemTime) {
    let row = client
        .query_one(
            "SELECT token, extract(epoch FROM expires_at)::float8 \
             FROM agentscope_session_leases WHERE session_id = 's'",
            &[],
        )
        .await
        .unwrap();
    (
        row.get(0),
        UNIX_EPOCH + Duration::from_secs_f64(row.get::<_, f64>(1)),
    )
}

/// A holder whose renewals fail the way a network fails: the first renewal's connection is
/// reset (a fast failure), and the next is black-holed (its connection accepted, never
/// answered), through a proxy between the store and the server. The holder stops its call
/// (cancels its interrupt token) strictly before its lease expires by the server's clock
/// (the expiry the server set when the lease was taken, which no renewal moved), and
/// another instance, trying all along, takes the session only after that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_holder_whose_renewals_are_reset_then_black_holed_stops_before_its_lease_expires() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    const TTL: Duration = Duration::from_millis(1_500);
    let proxy = Proxy::start(([127, 0, 0, 1], server.port()).into()).await;
    let holder = PostgresSessionStore::builder(format!(
        "postgresql://postgres@127.0.0.1:{}/postgres",
        proxy.port()
    ))
    .lease_ttl(TTL)
    .connect()
    .await
    .unwrap();
    let other = store_with_lease_ttl(&server, TTL).await;
    let client = raw(&server).await;
    let cancel = CancellationToken::new();
    let lease = holder.lease("s", &cancel).await.unwrap().unwrap();
    let (token, expires_at) = lease_expiry(&client).await;
    assert_eq!(token, lease.fence());
    proxy.set(Mode::ResetNext);
    let stopped = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            cancel.cancelled().await;
            SystemTime::now()
        })
    };
    // Another instance tries to take the session every few milliseconds.
    let taker = tokio::spawn(async move {
        loop {
            match other.lease("s", &CancellationToken::new()).await {
                Ok(Some(lease)) => return lease,
                Ok(None) => panic!("the store takes leases"),
                Err(SessionError::Busy { .. }) => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(error) => panic!("{error}"),
            }
        }
    });

    let stopped = tokio::time::timeout(TTL * 3, stopped)
        .await
        .expect("the cut-off holder stopped its call")
        .unwrap();
    let taken = tokio::time::timeout(TTL * 3, taker)
        .await
        .expect("another instance took the session")
        .unwrap();
    assert_eq!(
        proxy.resets(),
        1,
        "the first renewal's connection was reset"
    );
    // The row the other instance wrote: its token, and an expiry `TTL` after the server
    // took it.
    let (token, taken_expiry) = lease_expiry(&client).await;
    assert_eq!(token, taken.fence());
    let taken_at = taken_expiry - TTL;
    let early = expires_at
        .duration_since(stopped)
        .unwrap_or_else(|late| panic!("stopped {:?} after the lease expired", late.duration()));
    println!(
        "holder cut off (reset, then black hole): its call stopped {early:?} before its lease \
         expired (TTL {TTL:?}); the session was taken {:?} after the stop",
        taken_at.duration_since(stopped).unwrap_or_default()
    );
    assert!(early > Duration::ZERO);
    assert!(
        stopped < taken_at && expires_at <= taken_at,
        "the session was taken before the holder stopped or its lease expired"
    );
    // The holder is still cut off: giving its lease back cannot reach the server (and
    // would leave the new holder's lease alone if it did).
    let error = lease.release().await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("session 's': storage backend error: giving back the session's lease"),
        "{error}"
    );
    assert_eq!(lease_expiry(&client).await.0, taken.fence());
    taken.release().await.unwrap();
}
