//! `dispatch`: one event through N = 1, 10, 100 hooks.
//!
//! Variants: no-op async hooks, no-op synchronous hooks (`hook_fn`), hooks that modify the
//! event, and hooks not interested in the event. Criterion reports time per event; the
//! throughput line ("elem/s") is hooks per second, so ns per hook = 1e9 / throughput. After
//! the measurements a summary table prints ns per hook per event beside the floor measured in
//! the same run: an async no-op called through `dyn` with a boxed future, the least an async
//! hook can cost. Allocations are counted in the `allocations` bench, not here (a counting
//! allocator would slow every figure of this one).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use agentscope::{HookChain, HookEvent, HookEventType, hook_fn};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use support::{AsyncNoop, dispatches, run_floor};

#[derive(Clone, Copy)]
enum Kind {
    AsyncNoop,
    SyncNoop,
    SyncModifying,
    Uninterested,
}

impl Kind {
    const ALL: [Kind; 4] = [
        Kind::AsyncNoop,
        Kind::SyncNoop,
        Kind::SyncModifying,
        Kind::Uninterested,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::AsyncNoop => "async_noop",
            Kind::SyncNoop => "sync_noop",
            Kind::SyncModifying => "sync_modifying",
            Kind::Uninterested => "uninterested",
        }
    }

    fn chain(self, n: usize) -> HookChain {
        let mut chain = HookChain::new();
        for _ in 0..n {
            match self {
                Kind::AsyncNoop => {
                    chain.push(AsyncNoop);
                }
                Kind::SyncNoop => {
                    chain.push(hook_fn(|_| Ok(())));
                }
                Kind::SyncModifying => {
                    chain.push(hook_fn(|event| {
                        if let HookEvent::PreReasoning(e) = event {
                            let temperature = e.generate_options().temperature.unwrap_or(0.0);
                            let options = e
                                .generate_options()
                                .clone()
                                .temperature(temperature + 0.001);
                            e.set_generate_options(options);
                        }
                        Ok(())
                    }));
                }
                Kind::Uninterested => {
                    chain.push(hook_fn(|_| Ok(())).with_interests(HookEventType::PostCall));
                }
            }
        }
        chain
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("dispatch");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    for kind in Kind::ALL {
        for n in [1usize, 10, 100] {
            let chain = kind.chain(n);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(kind.name(), n), &chain, |b, chain| {
                b.iter_custom(|iters| dispatches(chain, iters));
            });
        }
    }
    group.finish();

    // A summary a reader can compare with the targets in docs/performance.md.
    let events = 200_000u64;
    let floor = |n: usize| {
        run_floor(n, 10_000);
        run_floor(n, events).as_nanos() as f64 / events as f64 / n as f64
    };
    let floors = [floor(1), floor(10), floor(100)];
    println!("\ndispatch summary (PreReasoning event, 200k events per row):");
    println!(
        "floor (boxed dyn future, ns per call): N=1 {:.1}, N=10 {:.1}, N=100 {:.1}",
        floors[0], floors[1], floors[2]
    );
    println!(
        "{:<16} {:>5} {:>12} {:>15} {:>16}",
        "hooks", "N", "ns/event", "ns/hook/event", "x floor per hook"
    );
    for kind in Kind::ALL {
        for (i, n) in [1usize, 10, 100].into_iter().enumerate() {
            let chain = kind.chain(n);
            dispatches(&chain, 10_000);
            let elapsed = dispatches(&chain, events);
            let per_event = elapsed.as_nanos() as f64 / events as f64;
            let per_hook = per_event / n as f64;
            println!(
                "{:<16} {:>5} {:>12.1} {:>15.2} {:>16.2}",
                kind.name(),
                n,
                per_event,
                per_hook,
                per_hook / floors[i]
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
