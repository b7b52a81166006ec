//! `stream_throughput`: chunk events per second delivered to a `stream()` consumer, for
//! responses of 1,000 and 100,000 chunks, with 3 hooks interested in ReasoningChunk.
//!
//! Criterion's throughput line ("elem/s") is chunk events per second; compare the time per
//! element of the two sizes to see that accumulation is not quadratic.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::{ChatResponse, ChatStream, ModelError, ModelRequest};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;

/// A model that streams `chunks` text chunks, each a fresh 4-byte token (as a real client
/// allocates per chunk).
struct ChunkModel {
    chunks: usize,
}

impl Model for ChunkModel {
    fn model_name(&self) -> &str {
        "chunks"
    }

    async fn stream(&self, _request: ModelRequest) -> Result<ChatStream, ModelError> {
        let chunks = self.chunks;
        Ok(futures::stream::iter(
            (0..chunks).map(|_| Ok(ChatResponse::new(vec![ContentBlock::text("tok ")]))),
        )
        .boxed())
    }
}

fn agent(chunks: usize, seen: &Arc<AtomicU64>) -> ReActAgent {
    let mut builder = ReActAgent::builder().model(ChunkModel { chunks });
    for _ in 0..3 {
        let seen = Arc::clone(seen);
        builder = builder.hook(
            hook_fn(move |event| {
                if let HookEvent::ReasoningChunk(e) = event {
                    seen.fetch_add(
                        e.incremental_chunk().content.len() as u64,
                        Ordering::Relaxed,
                    );
                }
                Ok(())
            })
            .with_interests(HookEventType::ReasoningChunk),
        );
    }
    builder.build().unwrap()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("stream_throughput");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for chunks in [1_000usize, 100_000] {
        let seen = Arc::new(AtomicU64::new(0));
        let agent = agent(chunks, &seen);
        group.throughput(Throughput::Elements(chunks as u64));
        group.bench_with_input(BenchmarkId::from_parameter(chunks), &agent, |b, agent| {
            b.iter_custom(|iters| {
                futures::executor::block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let mut events = agent.stream(Msg::user("go"), StreamOptions::default());
                        let mut received = 0usize;
                        while let Some(event) = events.next().await {
                            let event = event.unwrap();
                            if event.event_type == EventType::Reasoning && !event.is_last {
                                received += 1;
                            }
                        }
                        assert_eq!(received, chunks);
                        agent.memory().clear();
                    }
                    let elapsed = start.elapsed();
                    assert!(seen.load(Ordering::Relaxed) > 0, "the chunk hooks ran");
                    elapsed
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
