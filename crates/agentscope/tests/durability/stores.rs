//! Where a scenario's store lives, and how its workers get past a killed worker's lease.

use std::path::PathBuf;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::session::SessionStore;
use agentscope_test::components::postgres::PostgresServer;
use agentscope_test::components::redis::RedisServer;

use crate::worker::{Outcome, StoreKind, finish, open_store};

/// The password of the tests' Redis servers: the workers get it in their task's URL.
const REDIS_PASSWORD: &str = "durability-redis-Pa55";

/// The store of one test, for the test's duration: a temporary directory (the file stores
/// live in it, the tool's effect files too) and, for Redis and PostgreSQL, a server of the
/// test's own, which the workers reach by its URL. The Redis URL holds a password (a task
/// carries it, no output shows it). The PostgreSQL one is the trusted superuser's: a
/// password there means SCRAM, whose key derivation in a debug build takes tens of
/// milliseconds per new connection, and a worker's call opens connections as it goes, so
/// the kills, spread over a call's time, would nearly all land before its first save.
pub(crate) struct Place {
    pub(crate) kind: StoreKind,
    pub(crate) dir: tempfile::TempDir,
    /// What a task carries as its `path`: the store's file or directory, or the server's URL.
    pub(crate) path: PathBuf,
    /// The server, stopped on drop.
    _redis: Option<RedisServer>,
    _postgres: Option<PostgresServer>,
}

impl Place {
    /// `None` (after saying why) when the store's server is not installed: the test then
    /// returns (skips); under CI that is a failure instead (`agentscope_test::components`).
    pub(crate) fn new(kind: StoreKind) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let (mut redis, mut postgres) = (None, None);
        let path = match kind {
            StoreKind::Json | StoreKind::Sqlite => kind.path_in(dir.path()),
            StoreKind::Redis => {
                let server = redis.insert(RedisServer::start_with(Some(REDIS_PASSWORD), &[])?);
                PathBuf::from(server.url())
            }
            StoreKind::Postgres => {
                let server = postgres.insert(PostgresServer::start()?);
                PathBuf::from(server.url())
            }
        };
        Some(Self {
            kind,
            dir,
            path,
            _redis: redis,
            _postgres: postgres,
        })
    }

    /// A store on it, as the workers open it.
    pub(crate) fn open(&self) -> Arc<dyn SessionStore> {
        open_store(self.kind, &self.path)
    }
}

/// The outcomes of the worker `start` spawns, spawning it again while it is refused as busy
/// by the lease of a worker killed at `killed`, and how many times it was. A store whose
/// lease dies with its holder (`StoreKind::lease_outlives_holder`) is never busy here; the
/// others are busy for at most their lease's time to live after the kill (three times
/// that, for a loaded machine).
pub(crate) async fn finish_past_dead_lease(
    kind: StoreKind,
    killed: Instant,
    start: impl Fn() -> Child,
) -> (Vec<Outcome>, usize) {
    let mut busy = 0;
    loop {
        let outcomes = finish(start());
        if !matches!(outcomes.as_slice(), [Outcome::Busy(_)]) {
            return (outcomes, busy);
        }
        let waited = killed.elapsed();
        let ttl = kind.lease_outlives_holder();
        assert!(
            ttl.is_some_and(|ttl| waited < ttl * 3),
            "{kind:?}: busy {waited:?} after the kill (lease time to live: {ttl:?})"
        );
        busy += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
