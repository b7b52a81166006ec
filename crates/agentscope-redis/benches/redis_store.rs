//! `redis_store`: what an agent step costs on a `RedisSessionStore`, against a real
//! `redis-server` the benchmark starts (127.0.0.1, a free port, no persistence): a load of
//! a 1,000-message conversation, and the save of one step (an assistant message with a
//! tool call, ~300 bytes of JSON, and its tool result, ~500 bytes) to it; the same at 10
//! messages for comparison (a save sends only the change, so both should cost about the
//! same).
//!
//! First it prints p50/p99 of each over 300 iterations (load, save, load + save), then
//! criterion measures them. Each measured save appends the two messages to a session of
//! exactly N messages; an unmeasured save drops them again, so the session never grows.
//!
//! Run: `cargo bench -p agentscope-redis --bench redis_store`. Skipped (with a message)
//! when `redis-server` is not installed.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use agentscope::session::{AgentState, SessionStore, StateChange};
use agentscope_redis::RedisSessionStore;
use agentscope_test::conversation::{agent, assistant_call, history, tool_result};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;

const SESSION: &str = "bench-session";
const SAMPLES: usize = 300;

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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(what: &str, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    eprintln!(
        "redis_store: {what:<34} p50 {:>9.3?}  p99 {:>9.3?}  (n = {})",
        percentile(&samples, 50.0),
        percentile(&samples, 99.0),
        samples.len()
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
