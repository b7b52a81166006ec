//! The worker side: an agent instance on Redis in a process of its own
//! (`agentscope_test::session_store::instances::worker`), driven line by line over stdin by
//! the tests, as a service instance is driven by requests.

use std::time::Duration;

use agentscope_redis::RedisSessionStore;
use agentscope_test::session_store::instances::worker::{self, Settings, Worker, WorkerEntry};

use crate::support::RedisServer;

/// This binary's worker entry point and the environment variable of its settings.
const ENTRY: WorkerEntry = WorkerEntry {
    test: "worker::run",
    env: "AGENTSCOPE_REDIS_WORKER",
};

/// Starts a worker process named `name` on session `shared` of `server`, with leases that
/// live `lease_ttl_ms`.
pub(crate) fn spawn(server: &RedisServer, name: &str, lease_ttl_ms: u64) -> Worker {
    Worker::spawn_shared(ENTRY, server.url(), name, lease_ttl_ms)
}

/// The worker entry point: serves the requests read from stdin with the settings in
/// `AGENTSCOPE_REDIS_WORKER`. Ignored, so a normal test run does not run it; the tests
/// start it in child processes.
#[test]
#[ignore = "started by the instance tests in child processes"]
fn run() {
    worker::serve_stdin(ENTRY, |settings: Settings| async move {
        RedisSessionStore::builder(&settings.url)
            .lease_ttl(Duration::from_millis(settings.lease_ttl_ms))
            .connect()
            .await
            .unwrap()
    });
}
