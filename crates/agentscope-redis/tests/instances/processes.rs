//! Instances in processes of their own (copies of this binary, see `worker`): alternating
//! turns, racing calls, a holder killed with SIGKILL, an interrupt across processes (the
//! shared scenarios of `agentscope_test::session_store::instances::scenarios`), and Redis
//! restarted mid-run.

use std::time::Duration;

use agentscope_redis::RedisSessionStore;
use agentscope_test::session_store::instances::scenarios;

use crate::support::{Connect, RedisServer};
use crate::worker::spawn;

/// Two processes take turns on one conversation: each sees every turn of the other, in
/// order, and the stored conversation holds every turn once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn two_processes_alternate_turns_of_one_conversation() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let reader = server.store().await;
    scenarios::two_processes_alternate_turns(|name, ttl| spawn(&server, name, ttl), &reader).await;
}

/// Two processes get a call on one session at the same moment: exactly one runs, the other
/// is busy at once; round after round, the session holds exactly the winners' turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn racing_calls_from_two_processes_one_runs_the_other_is_busy() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let reader = server.store().await;
    scenarios::racing_calls_one_runs_the_other_is_busy(
        |name, ttl| spawn(&server, name, ttl),
        &reader,
    )
    .await;
}

/// The lease holder is killed with SIGKILL mid-tool: the session stays busy while its lease
/// lives, then another instance takes it, and the tool the dead process left running gets
/// the "interrupted while running" result: no orphan call, and it is not run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_killed_holder_frees_the_session_after_the_lease_ttl() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = RedisSessionStore::builder(server.url())
        .lease_ttl(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    scenarios::a_killed_holder_frees_the_session_after_the_lease_ttl(
        |name, ttl| spawn(&server, name, ttl),
        store,
    )
    .await;
}

/// An interrupt from this process stops the call another process runs, as a local
/// interrupt would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn an_interrupt_from_one_process_stops_a_call_in_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    scenarios::an_interrupt_from_one_process_stops_a_call_in_another(
        |name, ttl| spawn(&server, name, ttl),
        store,
    )
    .await;
}

/// Redis goes away mid-call and comes back (with its append-only file): the call fails with
/// a clear error, the stored session is exactly what was saved before (no partial step),
/// and calls work again once Redis is back and the failed call's lease has expired (the
/// shared scenario).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn redis_restarted_mid_run_fails_the_call_cleanly_then_recovers() {
    let Some(mut server) =
        RedisServer::start_with(None, &["--appendonly", "yes", "--appendfsync", "always"])
    else {
        return;
    };
    const TTL: Duration = Duration::from_secs(2);
    let store = RedisSessionStore::builder(server.url())
        .lease_ttl(TTL)
        .response_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    scenarios::a_server_restarted_mid_call(store, TTL, 1_500, &mut server).await;
}
