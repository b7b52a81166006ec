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

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, SessionStore, StateChange};
use agentscope_sqlite::SqliteSessionStore;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;

const SESSION: &str = "bench-session";

fn agent() -> AgentIdentity {
    AgentIdentity::new("assistant", "agent-0f3c9a12")
}

/// A realistic assistant message: a sentence and a tool call (~300 bytes of JSON).
fn assistant_call(step: usize) -> Msg {
    Msg::builder()
        .role(Role::Assistant)
        .name("assistant")
        .text("Let me look up that order.")
        .block(ToolUseBlock::new(
            format!("call_{step:020}"),
            "lookup_order",
            json!({"order_id": "ORD-2026-004217", "fields": ["status", "items"]}),
        ))
        .build()
}

/// A realistic tool result (~500 bytes of JSON).
fn tool_result(step: usize) -> Msg {
    Msg::tool_result(ToolResultBlock::text(
        format!("call_{step:020}"),
        "lookup_order",
        "Order ORD-2026-004217: status shipped (carrier DHL, tracking 00340434161234567890), \
         2 items: 1x USB-C cable 2 m (SKU CBL-USBC-2M, 12.90 EUR), 1x travel charger 65 W \
         (SKU CHG-65W-EU, 39.90 EUR); shipped 2026-11-28 from Leipzig, expected 2026-12-02.",
    ))
}

/// A conversation of `n` messages: alternating user questions and assistant answers.
fn history(n: usize) -> Vec<Msg> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Msg::user(format!("Question {i}: where is my order ORD-2026-004217?"))
            } else {
                Msg::assistant(format!(
                    "Answer {i}: it was shipped and arrives on Tuesday."
                ))
            }
        })
        .collect()
}

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
