//! `list_recent`: one page of 10 sessions, most recently saved first, over 2,000 sessions
//! of 10 messages each (saved as an agent saves them: the first exchange, then four steps
//! of a tool call and its result), on every store, against what the provided method does (`list()`,
//! then `load()` of every session, sorted and cut in memory), in one run, so each store's
//! ratio is measured on the same data at the same moment.
//!
//! Rows: each store's own `list_recent` for the first page and for a page after the
//! 1,000th session (a cursor deep in the listing), and the provided method's first page
//! (the same store wrapped so that it does not override `list_recent`: exactly the code a
//! third-party store without an index runs; for the JSON file store, through the store that
//! saved the sessions, whose cache holds them decoded: its cheapest case, and again through
//! a new store value each time, what another process pays). The figures are medians of 15
//! pages after 15 unmeasured ones (a pool's connections each prepare the statement once);
//! 5 after one for the provided method, which loads 2,000 sessions each time. Every page is
//! checked against the one expected.
//!
//! Where: the JSON file store and SQLite on tmpfs (`/dev/shm`, else a temporary directory
//! of the disk; the printout says which), Redis (standalone, and a 3-node cluster when
//! `redis-cli` is installed) and PostgreSQL started by the bench on 127.0.0.1
//! (`agentscope_test::components`: no persistence, `fsync=off`). A store whose server is
//! not installed is skipped, with the reason printed. Every operation runs through
//! `block_on` of a 2-worker tokio runtime, as an agent's call does.
//!
//! Run: `cargo bench -p agentscope-sqlite --bench list_recent` (it prints a markdown table).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::session::{
    AgentState, JsonFileSessionStore, SessionError, SessionStore, SessionSummary, StateChange,
};
use agentscope_postgres::PostgresSessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::bench::median;
use agentscope_test::components::postgres::PostgresServer;
use agentscope_test::components::redis::{RedisCluster, RedisServer};
use agentscope_test::conversation::{agent, assistant_call, history, tool_result};
use futures::future::BoxFuture;
use tokio::runtime::Runtime;

const SESSIONS: usize = 2_000;
const MESSAGES: usize = 10;
const PAGE: usize = 10;
const RUNS: usize = 15;
const PROVIDED_RUNS: usize = 5;

/// A store that does not override `list_recent`: the provided method, list and load all.
struct Provided(Arc<dyn SessionStore>);

impl SessionStore for Provided {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        self.0.save(session, change)
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        self.0.load(session)
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        self.0.delete(session)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        self.0.list()
    }
}

/// The median of `runs` pages of `store.list_recent(after, PAGE)` after `warm_up`
/// unmeasured ones (a pool's connections each prepare the statement once), each checked
/// against `expected`.
fn page_median(
    runtime: &Runtime,
    store: &dyn SessionStore,
    after: Option<&SessionSummary>,
    expected: &[SessionSummary],
    warm_up: usize,
    runs: usize,
) -> Duration {
    let page = || {
        runtime
            .block_on(store.list_recent("", after, PAGE))
            .unwrap()
    };
    for _ in 0..warm_up {
        assert_eq!(page(), expected, "the page (unmeasured)");
    }
    let samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let listed = page();
            let took = start.elapsed();
            assert_eq!(listed.len(), PAGE);
            took
        })
        .collect();
    median(samples).expect("at least one run")
}

fn ms(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1e6;
    match micros < 1_000.0 {
        true => format!("{micros:.0} µs"),
        false => format!("{:.1} ms", micros / 1_000.0),
    }
}

/// Fills `store` with the sessions and measures it; returns the table rows. `cold` makes a
/// new store value on the same sessions, for the provided method without a warm cache.
fn measure(
    runtime: &Runtime,
    name: &str,
    store: Arc<dyn SessionStore>,
    cold: Option<&dyn Fn() -> Arc<dyn SessionStore>>,
) -> String {
    let start = Instant::now();
    let base = chrono::Utc::now();
    let mut summaries = Vec::with_capacity(SESSIONS);
    runtime.block_on(async {
        let saves: Vec<_> = (0..SESSIONS)
            .map(|n| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    // Two sessions at each instant (ties by id), 1 ms apart, each saved as an
                    // agent saves: its first exchange, then each step's call and result.
                    let offset = i64::try_from(n / 2 * 2).unwrap();
                    let saved_at = base + chrono::Duration::milliseconds(offset);
                    let id = format!("task-{n:05}");
                    let mut state = AgentState::new(agent(), history(2));
                    state.saved_at = saved_at;
                    store
                        .save(&id, &StateChange::replace(&state))
                        .await
                        .unwrap();
                    let steps = (MESSAGES - 2) / 2;
                    for step in 0..steps {
                        let base = u64::try_from(step + 1).unwrap();
                        let mut change = StateChange::new(
                            base,
                            2 + 2 * step,
                            vec![assistant_call(step), tool_result(step)],
                            agent(),
                        );
                        change.saved_at = saved_at;
                        store.save(&id, &change).await.unwrap();
                    }
                    SessionSummary::new(id, 1 + u64::try_from(steps).unwrap(), saved_at)
                })
            })
            .collect();
        for save in saves {
            summaries.push(save.await.unwrap());
        }
    });
    let filled = start.elapsed();
    summaries.sort_by(SessionSummary::cmp_recent);
    let first = &summaries[..PAGE];
    let cursor = &summaries[999];
    let deep = &summaries[1_000..1_000 + PAGE];
    let own_first = page_median(runtime, &*store, None, first, RUNS, RUNS);
    let own_deep = page_median(runtime, &*store, Some(cursor), deep, RUNS, RUNS);
    let provided = Provided(Arc::clone(&store));
    let provided_first = page_median(runtime, &provided, None, first, 1, PROVIDED_RUNS);
    eprintln!("{name}: filled in {filled:?}");
    let row = format!(
        "| {name} | {} | {} | {} | {:.0}x |",
        ms(own_first),
        ms(own_deep),
        ms(provided_first),
        provided_first.as_secs_f64() / own_first.as_secs_f64()
    );
    let Some(cold) = cold else {
        return row;
    };
    // The provided method through a new store value each time: what another process (or
    // a restarted one) pays, with nothing decoded yet.
    let samples: Vec<Duration> = (0..PROVIDED_RUNS)
        .map(|_| {
            let provided = Provided(cold());
            let start = Instant::now();
            let page = runtime
                .block_on(provided.list_recent("", None, PAGE))
                .unwrap();
            let took = start.elapsed();
            assert_eq!(page, first);
            took
        })
        .collect();
    let cold = median(samples).expect("PROVIDED_RUNS runs");
    format!(
        "{row}\n| {name}, provided method through a new store value (nothing decoded yet) | | | {} | {:.0}x |",
        ms(cold),
        cold.as_secs_f64() / own_first.as_secs_f64()
    )
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmpfs = Path::new("/dev/shm");
    let (dir, place) = match tmpfs.is_dir() {
        true => (tempfile::tempdir_in(tmpfs).unwrap(), "tmpfs"),
        false => (tempfile::tempdir().unwrap(), "disk"),
    };
    let mut rows = Vec::new();

    let json_dir = dir.path().join("json");
    let json = JsonFileSessionStore::new(&json_dir);
    let cold = || -> Arc<dyn SessionStore> { Arc::new(JsonFileSessionStore::new(&json_dir)) };
    rows.push(measure(
        &runtime,
        &format!("`JsonFileSessionStore`, {place}"),
        Arc::new(json),
        Some(&cold),
    ));
    let sqlite = SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap();
    rows.push(measure(
        &runtime,
        &format!("`SqliteSessionStore`, {place}"),
        Arc::new(sqlite),
        None,
    ));
    match RedisServer::start() {
        Some(server) => {
            let store = runtime
                .block_on(RedisSessionStore::connect(server.url()))
                .unwrap();
            rows.push(measure(
                &runtime,
                "`RedisSessionStore`",
                Arc::new(store),
                None,
            ));
        }
        None => eprintln!("redis-server is not installed: Redis skipped"),
    }
    match RedisCluster::start() {
        Some(cluster) => {
            let store = runtime
                .block_on(RedisSessionStore::cluster_builder(cluster.seeds()).connect())
                .unwrap();
            rows.push(measure(
                &runtime,
                "`RedisSessionStore`, 3-node cluster",
                Arc::new(store),
                None,
            ));
        }
        None => eprintln!("no Redis cluster (redis-cli): the cluster skipped"),
    }
    match PostgresServer::start() {
        Some(server) => {
            let store = runtime
                .block_on(PostgresSessionStore::connect(server.url()))
                .unwrap();
            rows.push(measure(
                &runtime,
                "`PostgresSessionStore`",
                Arc::new(store),
                None,
            ));
        }
        None => eprintln!("PostgreSQL is not installed: PostgreSQL skipped"),
    }

    println!(
        "\nOne page of {PAGE} over {SESSIONS} sessions of {MESSAGES} messages, medians \
         ({RUNS} pages; {PROVIDED_RUNS} for the provided method):\n"
    );
    println!(
        "| store | `list_recent`, first page | after the 1,000th | provided method (list + load all) | ratio (first page) |"
    );
    println!("|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}
