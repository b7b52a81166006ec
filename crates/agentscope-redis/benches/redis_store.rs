//! `redis_store`: what an agent step costs on a `RedisSessionStore`, against a real
//! `redis-server` the benchmark starts (127.0.0.1, a free port, no persistence), in two
//! parts.
//!
//! Latency: a load of a 1,000-message conversation, and the save of one step (an assistant
//! message with a tool call, ~300 bytes of JSON, and its tool result, ~500 bytes) to it; the
//! same at 10 messages for comparison (a save sends only the change, so both should cost
//! about the same). First it prints p50/p99 of each over 300 iterations (load, save, load +
//! save), then criterion measures them. Each measured save appends the two messages to a
//! session of exactly N messages; an unmeasured save drops them again, so the session never
//! grows.
//!
//! Throughput (printed after the percentiles, before criterion): 1,000 `ReActAgent`s, each
//! bound to its own session `tp-<i>`, each make one ReAct call (a scripted model asks for
//! the calculator tool, then answers; no model latency), all at once on the 2-worker-thread
//! runtime: spawned, then released together by a barrier. Printed per variant: calls/s
//! (1,000 / wall time from the first call's start to the last call's end), p50 and p99 of a
//! call's latency (`agent.call` alone, measured inside its task, so it includes waiting for
//! the two worker threads), the store operations of one call (counted by a wrapper around
//! the store, in a separate unmeasured call) and, for Redis, the commands Redis executed
//! per call (`INFO commandstats` before and after the round: it also counts the commands
//! run inside the store's Lua scripts and MULTI blocks, so it is not the number of round
//! trips). Variants: the Redis store with leases (the default), the Redis store
//! `without_leases()`, `JsonFileSessionStore` on a directory under `/dev/shm` (a temporary
//! directory elsewhere when there is none), and no session (the floor: the agents alone).
//! Each variant runs 3 rounds (interleaved with the other variants) on the same session
//! ids, deleted after each round; the table shows the round of median calls/s, and the
//! calls/s of all three.
//!
//! Run: `cargo bench -p agentscope-redis --bench redis_store` (criterion options after
//! `--`, e.g. `-- --warm-up-time 1`; the criterion group fixes its measurement time at 5 s;
//! the printed parts ignore them). Skipped (with a message) when `redis-server` is not
//! installed.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentscope::session::{
    AgentState, JsonFileSessionStore, SessionError, SessionStore, StateChange,
};
use agentscope::{CancellationToken, ReActAgent, Toolkit};
use agentscope_core::session::{LeaseHandle, SessionLease};
use agentscope_redis::RedisSessionStore;
use agentscope_test::bench::percentile;
use agentscope_test::conversation::{agent, assistant_call, history, tool_result};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::future::{BoxFuture, FutureExt, join_all};
use serde_json::json;
use support::Connect;
use tokio::runtime::Runtime;

const SESSION: &str = "bench-session";
const SAMPLES: usize = 300;
/// Concurrent calls of a throughput round.
const AGENTS: usize = 1_000;
/// Rounds of each throughput variant.
const ROUNDS: usize = 3;

/// A session of `stored` messages in `store`, and its revision.
struct Fixture {
    store: RedisSessionStore,
    stored: usize,
    revision: u64,
}

impl Fixture {
    fn new(runtime: &Runtime, store: &RedisSessionStore, stored: usize) -> Self {
        let store = store.with_key_prefix(format!("bench-{stored}:")).unwrap();
        runtime.block_on(store.delete(SESSION)).unwrap();
        let revision = runtime
            .block_on(store.save(SESSION, &StateChange::new(0, 0, history(stored), agent())))
            .unwrap();
        Self {
            store,
            stored,
            revision,
        }
    }

    /// Loads the session; returns the time taken.
    fn load(&self, runtime: &Runtime) -> Duration {
        let start = Instant::now();
        let state = runtime.block_on(self.store.load(SESSION)).unwrap().unwrap();
        let elapsed = start.elapsed();
        assert_eq!(state.messages.len(), self.stored);
        elapsed
    }

    /// Saves one step (two messages); returns the time taken. Then, not measured, drops
    /// them again.
    fn save_step(&mut self, runtime: &Runtime, step: usize) -> Duration {
        let change = StateChange::new(
            self.revision,
            self.stored,
            vec![assistant_call(step), tool_result(step)],
            agent(),
        );
        let start = Instant::now();
        self.revision = runtime.block_on(self.store.save(SESSION, &change)).unwrap();
        let elapsed = start.elapsed();
        let back = StateChange::new(self.revision, self.stored, Vec::new(), agent());
        self.revision = runtime.block_on(self.store.save(SESSION, &back)).unwrap();
        elapsed
    }
}

fn report(what: &str, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    eprintln!(
        "redis_store: {what:<34} p50 {:>9.3?}  p99 {:>9.3?}  (n = {})",
        percentile(&samples, 50.0).unwrap_or_default(),
        percentile(&samples, 99.0).unwrap_or_default(),
        samples.len()
    );
}

// ---------------------------------------------------------------------------------------
// Throughput: 1,000 concurrent ReAct calls, each on its own session.
// ---------------------------------------------------------------------------------------

/// The agent of one throughput call: a model that asks for the calculator, then answers;
/// bound to session `session` of `store` when given.
fn react_agent<S: SessionStore + Clone>(session: Option<(&S, String)>) -> ReActAgent {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "1+1"})),
        ScriptedResponse::text("2"),
    ])
    .without_recording();
    let mut builder = ReActAgent::builder()
        .name("tp")
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()));
    if let Some((store, id)) = session {
        builder = builder.session(store.clone(), id);
    }
    builder.build().unwrap()
}

/// Runs one call of each agent, all at once (spawned, then released by a barrier); returns
/// the wall time (first start to last end) and each call's latency.
async fn run_round(agents: Vec<ReActAgent>) -> (Duration, Vec<Duration>) {
    let barrier = Arc::new(tokio::sync::Barrier::new(agents.len()));
    let tasks: Vec<_> = agents
        .into_iter()
        .map(|agent| {
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                let start = Instant::now();
                let reply = agent.call("What is 1+1?").await.unwrap();
                let end = Instant::now();
                assert_eq!(reply.text(), "2");
                (start, end)
            })
        })
        .collect();
    let mut spans = Vec::with_capacity(tasks.len());
    for task in tasks {
        spans.push(task.await.unwrap());
    }
    let first = spans.iter().map(|(start, _)| *start).min().unwrap();
    let last = spans.iter().map(|(_, end)| *end).max().unwrap();
    let latencies = spans.iter().map(|(start, end)| *end - *start).collect();
    (last - first, latencies)
}

/// Store operations, counted by [`Counted`].
#[derive(Default)]
struct OpCounts {
    lease: AtomicUsize,
    granted: AtomicUsize,
    release: AtomicUsize,
    load: AtomicUsize,
    save: AtomicUsize,
    other: AtomicUsize,
}

impl OpCounts {
    fn describe(&self) -> String {
        let get = |count: &AtomicUsize| count.load(Ordering::Relaxed);
        let mut text = format!(
            "lease {} (granted {}), load {}, save {}, release {}",
            get(&self.lease),
            get(&self.granted),
            get(&self.load),
            get(&self.save),
            get(&self.release)
        );
        if get(&self.other) > 0 {
            text.push_str(&format!(", other {}", get(&self.other)));
        }
        text
    }
}

/// A store that counts the operations an agent makes on `inner`.
#[derive(Clone)]
struct Counted<S> {
    inner: S,
    counts: Arc<OpCounts>,
}

/// Counts the release of a lease of [`Counted`].
struct CountedLease {
    inner: SessionLease,
    counts: Arc<OpCounts>,
}

impl LeaseHandle for CountedLease {
    fn release(self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>> {
        self.counts.release.fetch_add(1, Ordering::Relaxed);
        self.inner.release().boxed()
    }
}

impl<S: SessionStore> SessionStore for Counted<S> {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        self.counts.save.fetch_add(1, Ordering::Relaxed);
        self.inner.save(session, change)
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        self.counts.load.fetch_add(1, Ordering::Relaxed);
        self.inner.load(session)
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        self.inner.delete(session)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        self.inner.list()
    }

    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Option<SessionLease>, SessionError>> {
        self.counts.lease.fetch_add(1, Ordering::Relaxed);
        async move {
            let lease = self.inner.lease(session, interrupt).await?;
            Ok(lease.map(|inner| {
                self.counts.granted.fetch_add(1, Ordering::Relaxed);
                let fence = inner.fence().to_owned();
                let counts = Arc::clone(&self.counts);
                SessionLease::new(fence, CountedLease { inner, counts })
            }))
        }
        .boxed()
    }

    fn interrupt<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        self.inner.interrupt(session)
    }
}

/// Where a throughput variant keeps its sessions.
enum Backend {
    Redis(RedisSessionStore),
    File(JsonFileSessionStore),
    None,
}

/// One variant of the throughput part and its rounds so far.
struct Variant {
    name: &'static str,
    backend: Backend,
    /// Store operations of one call (counted in an unmeasured call); empty without a store.
    ops: String,
    /// Each round: wall time, sorted call latencies, Redis commands (by name) per call.
    rounds: Vec<(Duration, Vec<Duration>, BTreeMap<String, f64>)>,
}

/// Calls of each command since the server started, from `INFO commandstats`.
async fn command_calls(
    connection: &mut redis::aio::MultiplexedConnection,
) -> BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(connection)
        .await
        .unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.split(',').find_map(|s| s.strip_prefix("calls="))?;
            Some((name.to_owned(), calls.parse().ok()?))
        })
        .collect()
}

/// Deletes the sessions `tp-0`..`tp-999` of `store` after checking that it holds them all
/// (and nothing else).
async fn check_and_delete<S: SessionStore>(store: &S) {
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), AGENTS, "every call stored its session");
    let deleted = join_all(
        (0..AGENTS).map(|i| async move { store.delete(&format!("tp-{i}")).await.unwrap() }),
    )
    .await;
    assert!(deleted.into_iter().all(|existed| existed));
}

impl Variant {
    /// Counts the store operations of one call (on a session deleted afterwards): also
    /// warms the store up (the Redis store subscribes to its prefix's interrupt channel at
    /// its first lease).
    async fn count_ops(&mut self) {
        async fn one_call<S: SessionStore + Clone>(store: &S) -> String {
            let counted = Counted {
                inner: store.clone(),
                counts: Arc::default(),
            };
            let agent = react_agent(Some((&counted, "tp-count".to_owned())));
            assert_eq!(agent.call("What is 1+1?").await.unwrap().text(), "2");
            assert!(store.delete("tp-count").await.unwrap());
            counted.counts.describe()
        }
        self.ops = match &self.backend {
            Backend::Redis(store) => one_call(store).await,
            Backend::File(store) => one_call(store).await,
            Backend::None => "none".to_owned(),
        };
    }

    /// Runs one round: builds the agents, runs their calls, checks and deletes the sessions.
    async fn round(&mut self, redis: &mut redis::aio::MultiplexedConnection) {
        let ids = (0..AGENTS).map(|i| format!("tp-{i}"));
        let agents: Vec<ReActAgent> = match &self.backend {
            Backend::Redis(store) => ids.map(|id| react_agent(Some((store, id)))).collect(),
            Backend::File(store) => ids.map(|id| react_agent(Some((store, id)))).collect(),
            Backend::None => (0..AGENTS)
                .map(|_| react_agent::<JsonFileSessionStore>(None))
                .collect(),
        };
        let before = command_calls(redis).await;
        let (wall, mut latencies) = run_round(agents).await;
        let after = command_calls(redis).await;
        latencies.sort_unstable();
        let mut commands = BTreeMap::new();
        if matches!(self.backend, Backend::Redis(_)) {
            for (name, calls) in after {
                let new = calls - before.get(&name).copied().unwrap_or(0);
                if name != "info" && new > 0 {
                    commands.insert(name, new as f64 / AGENTS as f64);
                }
            }
        }
        match &self.backend {
            Backend::Redis(store) => check_and_delete(store).await,
            Backend::File(store) => check_and_delete(store).await,
            Backend::None => {}
        }
        self.rounds.push((wall, latencies, commands));
    }

    /// The round of median calls/s (median wall time).
    fn median_round(&self) -> &(Duration, Vec<Duration>, BTreeMap<String, f64>) {
        let mut rounds: Vec<_> = self.rounds.iter().collect();
        rounds.sort_by_key(|(wall, ..)| *wall);
        rounds[rounds.len() / 2]
    }

    /// The table row: the round of median calls/s.
    fn row(&self) -> String {
        let rate = |wall: &Duration| AGENTS as f64 / wall.as_secs_f64();
        let (wall, latencies, _) = self.median_round();
        let all: Vec<String> = self
            .rounds
            .iter()
            .map(|(wall, ..)| format!("{:.0}", rate(wall)))
            .collect();
        format!(
            "{:<22} {:>9.0} {:>10.1?} {:>10.1?} {:>10.1?}   {}",
            self.name,
            rate(wall),
            wall,
            percentile(latencies, 50.0).unwrap_or_default(),
            percentile(latencies, 99.0).unwrap_or_default(),
            all.join(" / "),
        )
    }

    /// The Redis commands per call, of the median round.
    fn commands(&self) -> Option<String> {
        let (_, _, commands) = self.median_round();
        if commands.is_empty() {
            return None;
        }
        let total: f64 = commands.values().sum();
        let each: Vec<String> = commands
            .iter()
            .map(|(name, calls)| format!("{name} {calls:.2}"))
            .collect();
        Some(format!("{total:.2} ({})", each.join(", ")))
    }
}

/// The throughput part: see the module docs.
fn throughput(runtime: &Runtime, server: &support::RedisServer, store: &RedisSessionStore) {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::Builder::new()
            .prefix("agentscope-bench-")
            .tempdir_in(shm)
            .unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let (mut redis, without_leases) = runtime.block_on(async {
        let without_leases = RedisSessionStore::builder(server.url())
            .key_prefix("tp-no-lease:")
            .without_leases()
            .connect()
            .await
            .unwrap();
        (server.raw().await, without_leases)
    });
    let mut variants = [
        (
            "redis, leases",
            Backend::Redis(store.with_key_prefix("tp-lease:").unwrap()),
        ),
        ("redis, without_leases", Backend::Redis(without_leases)),
        (
            "json file",
            Backend::File(JsonFileSessionStore::new(dir.path().join("sessions"))),
        ),
        ("no session", Backend::None),
    ]
    .map(|(name, backend)| Variant {
        name,
        backend,
        ops: String::new(),
        rounds: Vec::new(),
    });
    let start = Instant::now();
    runtime.block_on(async {
        for variant in &mut variants {
            variant.count_ops().await;
        }
        for _ in 0..ROUNDS {
            for variant in &mut variants {
                variant.round(&mut redis).await;
            }
        }
    });
    eprintln!(
        "redis_store: throughput of {AGENTS} concurrent ReAct calls (tool call + answer), each \
         on its own session, 2 worker threads; the round of median calls/s of {ROUNDS} \
         (json file under {}):",
        dir.path().display()
    );
    eprintln!(
        "redis_store: {:<22} {:>9} {:>10} {:>10} {:>10}   calls/s of each round",
        "variant", "calls/s", "wall", "p50 call", "p99 call"
    );
    for variant in &variants {
        eprintln!("redis_store: {}", variant.row());
    }
    eprintln!("redis_store: store operations of one call (counted):");
    for variant in &variants {
        eprintln!("redis_store:   {:<22} {}", variant.name, variant.ops);
    }
    eprintln!(
        "redis_store: commands Redis executed per call (INFO commandstats, median round; \
         includes those run inside Lua scripts and MULTI, so more than the round trips):"
    );
    for variant in &variants {
        if let Some(commands) = variant.commands() {
            eprintln!("redis_store:   {:<22} {commands}", variant.name);
        }
    }
    eprintln!(
        "redis_store: throughput part took {:.1?} (building agents, checks and deletes included)",
        start.elapsed()
    );
}

fn bench(c: &mut Criterion) {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let store = runtime.block_on(server.store());
    let step = [assistant_call(0), tool_result(0)];
    eprintln!(
        "redis_store: redis-server on 127.0.0.1:{}; a step is an assistant message of {} bytes \
         and a tool result of {} bytes of JSON; the 1,000-message session is {} bytes",
        server.port(),
        serde_json::to_vec(&step[0]).unwrap().len(),
        serde_json::to_vec(&step[1]).unwrap().len(),
        serde_json::to_vec(&history(1_000)).unwrap().len(),
    );

    // Percentiles first, over SAMPLES iterations each.
    for stored in [10usize, 1_000] {
        let mut fixture = Fixture::new(&runtime, &store, stored);
        for i in 0..20 {
            fixture.load(&runtime);
            fixture.save_step(&runtime, i);
        }
        let (mut loads, mut saves, mut both) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..SAMPLES {
            let load = fixture.load(&runtime);
            let save = fixture.save_step(&runtime, i);
            loads.push(load);
            saves.push(save);
            both.push(load + save);
        }
        report(&format!("load of {stored} messages"), loads);
        report(&format!("save of a step to {stored} messages"), saves);
        report(&format!("load + save at {stored} messages"), both);
        // For scale: decoding the same state from one JSON document, no Redis involved.
        let state = runtime
            .block_on(fixture.store.load(SESSION))
            .unwrap()
            .unwrap();
        let bytes = state.encode(SESSION).unwrap();
        let decodes = (0..SAMPLES)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(AgentState::decode(SESSION, &bytes).unwrap());
                start.elapsed()
            })
            .collect();
        report(&format!("(JSON decode alone, {stored} messages)"), decodes);
    }

    throughput(&runtime, &server, &store);

    let mut group = c.benchmark_group("redis_store");
    group.measurement_time(Duration::from_secs(5));
    for stored in [10usize, 1_000] {
        let mut fixture = Fixture::new(&runtime, &store, stored);
        group.bench_with_input(BenchmarkId::new("load", stored), &stored, |b, _| {
            b.iter_custom(|iters| (0..iters).map(|_| fixture.load(&runtime)).sum());
        });
        group.bench_with_input(BenchmarkId::new("save_step", stored), &stored, |b, _| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|i| fixture.save_step(&runtime, usize::try_from(i).unwrap()))
                    .sum()
            });
        });
        group.bench_with_input(
            BenchmarkId::new("load_and_save", stored),
            &stored,
            |b, _| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|i| {
                            fixture.load(&runtime)
                                + fixture.save_step(&runtime, usize::try_from(i).unwrap())
                        })
                        .sum()
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
