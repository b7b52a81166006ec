//! `session_step`: the save of one agent step (an assistant message with a tool call, ~300
//! bytes of JSON, and its tool result, ~500 bytes) to a session holding 10 vs 1,000
//! messages. A save writes only the change (two message rows and the session row), so the
//! two should cost about the same (the requirement: within 2x).
//!
//! Each measured save appends the two messages to a session of exactly N messages; between
//! measured saves an unmeasured save drops them again, so the session never grows. Saves go
//! through the async API on a tokio runtime, as the engine calls them (blocking pool, one
//! writer connection, `synchronous = FULL`: each save includes a sync of the write-ahead
//! log to disk).
//!
//! Run: `cargo bench -p agentscope-sqlite --bench session_step`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agentscope::session::{SessionStore, StateChange};
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::conversation::{agent, assistant_call, history, tool_result};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const SESSION: &str = "bench-session";

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let step = [assistant_call(0), tool_result(0)];
    eprintln!(
        "session_step: assistant message {} bytes, tool result {} bytes of JSON",
        serde_json::to_vec(&step[0]).unwrap().len(),
        serde_json::to_vec(&step[1]).unwrap().len(),
    );

    let mut group = c.benchmark_group("session_step");
    group.measurement_time(Duration::from_secs(5));
    for stored in [10usize, 1_000] {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap();
        let mut revision = runtime
            .block_on(store.save(SESSION, &StateChange::new(0, 0, history(stored), agent())))
            .unwrap();
        group.bench_with_input(
            BenchmarkId::new("append_2_messages", stored),
            &stored,
            |b, &stored| {
                b.iter_custom(|iters| {
                    let mut measured = Duration::ZERO;
                    for i in 0..iters {
                        let i = usize::try_from(i).unwrap();
                        let change = StateChange::new(
                            revision,
                            stored,
                            vec![assistant_call(i), tool_result(i)],
                            agent(),
                        )
                        .with_running_tools(Vec::new());
                        let start = Instant::now();
                        revision = runtime.block_on(store.save(SESSION, &change)).unwrap();
                        measured += start.elapsed();
                        // Not measured: back to `stored` messages.
                        let back = StateChange::new(revision, stored, Vec::new(), agent());
                        revision = runtime.block_on(store.save(SESSION, &back)).unwrap();
                    }
                    measured
                });
            },
        );
        let state = runtime.block_on(store.load(SESSION)).unwrap().unwrap();
        assert_eq!(state.messages.len(), stored);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
