//! `history`: one reasoning iteration with 1,000 messages of 10 bytes vs 1,000 messages of
//! 10 KB in memory (plus a PreReasoning hook, so the memory copy goes through an event too).
//! Message text is shared, not copied, so the two should cost about the same.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agentscope::InMemoryMemory;
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};

fn history(bytes: usize) -> Vec<Msg> {
    let text = "x".repeat(bytes);
    (0..1_000)
        .map(|i| {
            if i % 2 == 0 {
                Msg::user(text.as_str())
            } else {
                Msg::assistant(text.as_str())
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("history");
    group.measurement_time(Duration::from_secs(3));
    let model = ScriptedModel::new([ScriptedResponse::text("ok")])
        .cycling()
        .without_recording();
    for bytes in [10usize, 10 * 1024] {
        let template = history(bytes);
        group.bench_with_input(
            BenchmarkId::new("messages_1000", format!("{bytes}B")),
            &template,
            |b, template| {
                b.iter_batched(
                    || {
                        ReActAgent::builder()
                            .sys_prompt("You are a benchmark.")
                            .model(model.clone())
                            .memory(InMemoryMemory::with_messages(template.clone()))
                            .hook(hook_fn(|_| Ok(())).with_interests(HookEventType::PreReasoning))
                            .build()
                            .unwrap()
                    },
                    |agent| {
                        futures::executor::block_on(agent.call(Msg::user("next"))).unwrap();
                        assert_eq!(agent.memory().len(), 1_002);
                        agent
                    },
                    BatchSize::SmallInput,
                );
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
