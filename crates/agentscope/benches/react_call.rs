//! `react_call`: a full `call()` with an instant scripted model (one tool call, then an
//! answer) and an instant tool, with 0 hooks, 10 no-op async hooks on every event, and 10
//! hooks that modify events. Memory is cleared after each call so every call sees the same
//! one-message history.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

mod support;

use agentscope::prelude::*;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use support::AsyncNoop;

/// Appends to the system message, bumps the temperature and rewrites the final reply.
struct Modifying;

impl Hook for Modifying {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        match event {
            HookEvent::PreReasoning(e) => {
                e.append_system_content("Be brief.");
                let options = e.generate_options().clone().temperature(0.1);
                e.set_generate_options(options);
            }
            HookEvent::PostActing(e) => {
                let mut result = e.tool_result().clone();
                result.is_error = false;
                e.set_tool_result(result);
            }
            HookEvent::PostCall(e) => {
                let mut reply = e.final_message().clone();
                reply.metadata.insert("checked".into(), true.into());
                e.set_final_message(reply);
            }
            _ => {}
        }
        Ok(())
    }
}

fn agent(hooks: &str) -> ReActAgent {
    support::react_agent(|mut builder| {
        for _ in 0..10 {
            builder = match hooks {
                "noop_hooks_10" => builder.hook(AsyncNoop),
                "modifying_hooks_10" => builder.hook(Modifying),
                _ => builder,
            };
        }
        builder
    })
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("react_call");
    group.measurement_time(Duration::from_secs(3));
    for hooks in ["hooks_0", "noop_hooks_10", "modifying_hooks_10"] {
        let agent = agent(hooks);
        group.bench_with_input(BenchmarkId::from_parameter(hooks), &agent, |b, agent| {
            b.iter_custom(|iters| {
                futures::executor::block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let reply = agent.call(Msg::user("ping")).await.unwrap();
                        assert_eq!(reply.text(), "done");
                        agent.memory().clear();
                    }
                    start.elapsed()
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
