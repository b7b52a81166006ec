//! `session_step`: the cost of one agent step's save to `JsonFileSessionStore` (in a
//! temporary directory) in a session already holding 10 and 1,000 messages.
//!
//! A step appends two messages: an assistant message with a tool call (about 300 bytes of
//! JSON) and the tool's result (about 500 bytes), keeping every stored message, as the
//! engine does after a tool ran. The store appends one record and `fsync`s the log, so the
//! two sizes should cost about the same.
//!
//! Each sample times the saves only: every 5 steps the session is put back to its size
//! (a whole-state save, not timed), so it holds between N and N + 10 messages. Saves run
//! inline (no tokio runtime), as a measure of the store's own work.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agentscope::session::{JsonFileSessionStore, SessionStore, StateChange};
use agentscope_test::conversation::{agent, assistant_call as tool_call, history, tool_result};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::executor::block_on;

/// Steps between two resets of the session to its size.
const STEPS_PER_RESET: u64 = 5;

fn bench(c: &mut Criterion) {
    let sizes = [(tool_call(0), "tool call"), (tool_result(0), "tool result")];
    for (msg, what) in sizes {
        eprintln!(
            "session_step: a {what} message is {} bytes of JSON",
            serde_json::to_vec(&msg).unwrap().len()
        );
    }
    let mut group = c.benchmark_group("session_step");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    for len in [10usize, 1_000] {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileSessionStore::new(dir.path());
        let stored = history(len);
        let mut revision = 0;
        group.bench_with_input(
            BenchmarkId::new("json_file", format!("{len}_messages")),
            &stored,
            |b, stored| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    let mut messages = 0;
                    for step in 0..iters {
                        if step % STEPS_PER_RESET == 0 {
                            let reset = StateChange::new(revision, 0, stored.clone(), agent());
                            revision = block_on(store.save("s", &reset)).unwrap();
                            messages = stored.len();
                        }
                        let change = StateChange::new(
                            revision,
                            messages,
                            vec![tool_call(step as usize), tool_result(step as usize)],
                            agent(),
                        );
                        let start = Instant::now();
                        revision = block_on(store.save("s", &change)).unwrap();
                        total += start.elapsed();
                        messages += 2;
                    }
                    total
                });
            },
        );
        let loaded = block_on(store.load("s")).unwrap().unwrap();
        assert_eq!(loaded.revision, revision);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
