//! `concurrency`: 10,000 agents each running a two-step call (a tool call, then an answer)
//! concurrently on a multi-thread runtime, with a scripted model that sleeps 10 ms per
//! response. Reports wall time (criterion) next to the latency of one call alone; then a
//! summary, in one run: one call, and for 10,000 and 100,000 concurrent calls their time,
//! the tokio floor for as many tasks (each sleeping 10 ms twice), the ratios to both, and
//! the peak resident memory of the run (VmHWM, reset before the run). Agents are dropped inside their tasks, as a
//! service that builds an agent per request would.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const AGENTS: usize = 10_000;
const DELAY: Duration = Duration::from_millis(10);

/// One toolkit for all agents, as a service would share it (a clone is a few reference
/// counts; each tool's schema is compiled once).
fn toolkit() -> Toolkit {
    static TOOLKIT: std::sync::OnceLock<Toolkit> = std::sync::OnceLock::new();
    TOOLKIT
        .get_or_init(|| {
            let echo = tool_fn(
                "echo",
                "Echoes text.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                |input, _ctx| async move { Ok(input["text"].as_str().unwrap_or_default().to_owned()) },
            );
            Toolkit::new().tool(echo)
        })
        .clone()
}

fn agent() -> ReActAgent {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "echo", json!({"text": "pong"})).with_delay(DELAY),
        ScriptedResponse::text("done").with_delay(DELAY),
    ])
    .without_recording();
    ReActAgent::builder()
        .sys_prompt("You are one of many.")
        .model(model)
        .toolkit(toolkit())
        .build()
        .unwrap()
}

async fn run_all(agents: Vec<ReActAgent>) {
    let handles: Vec<_> = agents
        .into_iter()
        .map(|agent| tokio::spawn(async move { agent.call(Msg::user("ping")).await }))
        .collect();
    for handle in handles {
        assert_eq!(handle.await.unwrap().unwrap().text(), "done");
    }
}

/// Resets the peak resident set size (Linux: `echo 5 > /proc/self/clear_refs`).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set size in MiB since the last reset (Linux `VmHWM`).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("concurrency");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("one_agent", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let agents = vec![agent()];
                let start = Instant::now();
                runtime.block_on(run_all(agents));
                total += start.elapsed();
            }
            total
        });
    });
    group.bench_function("agents_10000", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let agents: Vec<ReActAgent> = (0..AGENTS).map(|_| agent()).collect();
                let start = Instant::now();
                runtime.block_on(run_all(agents));
                total += start.elapsed();
            }
            total
        });
    });
    group.finish();

    let single = {
        let start = Instant::now();
        runtime.block_on(run_all(vec![agent()]));
        start.elapsed()
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("\nconcurrency summary: one call {:.1} ms", ms(single));
    for count in [AGENTS, 10 * AGENTS] {
        let floor = {
            let start = Instant::now();
            runtime.block_on(sleep_twice(count));
            start.elapsed()
        };
        reset_peak_rss();
        let before = peak_rss_mib();
        let agents: Vec<ReActAgent> = (0..count).map(|_| agent()).collect();
        let start = Instant::now();
        runtime.block_on(run_all(agents));
        let wall = start.elapsed();
        println!(
            "{count} concurrent calls {:.1} ms = {:.2}x one call; tokio floor ({count} tasks sleeping twice) {:.1} ms, {:.2}x it; peak RSS {} MiB (at start of run {} MiB)",
            ms(wall),
            wall.as_secs_f64() / single.as_secs_f64(),
            ms(floor),
            wall.as_secs_f64() / floor.as_secs_f64(),
            peak_rss_mib().map_or("n/a".to_owned(), |m| format!("{m:.1}")),
            before.map_or("n/a".to_owned(), |m| format!("{m:.1}")),
        );
    }
}

/// The runtime's floor: `count` tasks that each sleep [`DELAY`] twice, like a call's two
/// model steps.
async fn sleep_twice(count: usize) {
    let handles: Vec<_> = (0..count)
        .map(|_| {
            tokio::spawn(async {
                tokio::time::sleep(DELAY).await;
                tokio::time::sleep(DELAY).await;
            })
        })
        .collect();
    for handle in handles {
        handle.await.unwrap();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
