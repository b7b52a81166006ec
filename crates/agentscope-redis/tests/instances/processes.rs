//! Instances in processes of their own (copies of this binary, see `worker`): alternating
//! turns, racing calls, a holder killed with SIGKILL, an interrupt across processes (the
//! shared scenarios of `agentscope_test::session_store::instances::scenarios`), and Redis
//! restarted mid-run.

use std::time::Duration;

use agentscope_redis::RedisSessionStore;
use agentscope_test::session_store::instances::scenarios;
use agentscope_test::session_store::instances::worker::Worker;

use crate::support::RedisServer;
use crate::worker::spawn;

/// This crate's worker processes and store handles on one server.
struct Instances {
    server: RedisServer,
}

impl scenarios::Processes for Instances {
    type Store = RedisSessionStore;

    fn spawn(&self, name: &str, lease_ttl_ms: u64) -> Worker {
        spawn(&self.server, name, lease_ttl_ms)
    }

    async fn store(&self, lease_ttl: Duration) -> RedisSessionStore {
        RedisSessionStore::builder(self.server.url())
            .lease_ttl(lease_ttl)
            .connect()
            .await
            .unwrap()
    }
}

/// The scenarios between processes (`agentscope_test::session_store::instances::scenarios`):
/// two processes take turns on one conversation; two processes get a call on one session
/// at the same moment, and exactly one runs; the lease holder killed with SIGKILL mid-tool
/// frees the session after its lease's time to live, and its tool gets the "interrupted
/// while running" result; an interrupt from this process stops a call another process
/// runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn between_processes() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    scenarios::between_processes(&Instances { server }).await;
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
