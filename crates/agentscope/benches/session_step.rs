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

use agentscope::session::{AgentIdentity, JsonFileSessionStore, SessionStore, StateChange};
use agentscope::{Msg, Role, ToolResultBlock, ToolUseBlock};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use serde_json::json;

/// Steps between two resets of the session to its size.
const STEPS_PER_RESET: u64 = 5;

fn agent() -> AgentIdentity {
    AgentIdentity::new("assistant", "8c1e2d4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f")
}

/// An assistant message calling a tool: about 300 bytes of JSON.
fn tool_call(step: u64) -> Msg {
    Msg::builder()
        .role(Role::Assistant)
        .name("assistant")
        .text("Checking the order.")
        .block(ToolUseBlock::new(
            format!("call_{step:08}"),
            "lookup_order",
            json!({"order_id": format!("A-{step:06}"), "fields": ["status", "eta"]}),
        ))
        .build()
}

/// The tool's result: about 500 bytes of JSON.
fn tool_result(step: u64) -> Msg {
    Msg::tool_result(ToolResultBlock::text(
        format!("call_{step:08}"),
        "lookup_order",
        format!(
            "{{\"order_id\": \"A-{step:06}\", \"status\": \"shipped\", \"carrier\": \"UPS\", \
             \"eta\": \"2026-12-04\", \"items\": [{{\"sku\": \"X-100\", \"qty\": 2}}, \
             {{\"sku\": \"Y-220\", \"qty\": 1}}], \"note\": \"{}\"}}",
            "left the warehouse ".repeat(2)
        ),
    ))
}

/// `len` messages of a conversation: a question, then tool calls and results.
fn history(len: usize) -> Vec<Msg> {
    (0..len)
        .map(|index| match index % 3 {
            0 => Msg::user("Where is my order? It was supposed to arrive on Monday."),
            1 => tool_call(index as u64),
            _ => tool_result(index as u64),
        })
        .collect()
}

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
                            vec![tool_call(step), tool_result(step)],
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
