//! `peers`: our side of `scripts/compare-peers.sh`, which runs it beside rig 0.44 and prints
//! the side-by-side table of docs/performance.md.
//!
//! Prints one line per figure, `<who> <figure> <value>` (ns unless the name says otherwise),
//! the format the script reads:
//!
//! - `ours react_call_0`: a ReAct call (one `echo` tool call, then the answer `done`, instant
//!   scripted model and tool; the agent of `react_call`), no hook;
//! - `ours react_call_10`: the same call with 10 no-op async hooks on every event;
//! - `ours hook_calls_per_run`: how many events one hook sees in that call, counted;
//! - `ours hook_async_per_event`: one PreReasoning event through 10 no-op async hooks, per hook;
//! - `ours hook_fn_per_event`: the same through 10 no-op `hook_fn` hooks, per hook;
//! - `floor boxed_dyn_future`: the floor of an async hook, an async no-op called through
//!   `dyn` with its future boxed (10 per event, the same event), per call.
//!
//! Each figure is the median of 151 batches of about 2 ms (`--quick`: 41), the figures'
//! batches interleaved so a noisy moment hits all of them; batches that short mostly run
//! within one scheduler time slice, so the median holds on a machine shared with other work.
//! No criterion and no counting allocator. Arguments: `--quick`; anything else (cargo's
//! `--bench`) is ignored.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::{HookChain, hook_fn};
use agentscope_test::bench::median;
use support::{AsyncNoop, dispatches, run_floor};

/// `calls` ReAct calls one after another under one `block_on`; the elapsed time.
fn react_calls(agent: &ReActAgent, calls: u64) -> Duration {
    futures::executor::block_on(async {
        let start = Instant::now();
        for _ in 0..calls {
            let reply = agent.call(Msg::user("ping")).await.unwrap();
            assert_eq!(black_box(reply).text(), "done");
            agent.memory().clear();
        }
        start.elapsed()
    })
}

/// One figure: its name, how many units (calls, hooks) one iteration holds, and the
/// function timing `iters` iterations.
struct Figure<'a> {
    name: &'static str,
    units: f64,
    run: Box<dyn Fn(u64) -> Duration + 'a>,
}

impl<'a> Figure<'a> {
    fn new(name: &'static str, units: f64, run: impl Fn(u64) -> Duration + 'a) -> Self {
        Self {
            name,
            units,
            run: Box::new(run),
        }
    }
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let batches = if quick { 41 } else { 151 };
    let batch_time = Duration::from_millis(2);

    // How many events one hook sees in a ReAct call.
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = {
        let seen = seen.clone();
        support::react_agent(|builder| {
            builder.hook(hook_fn(move |_| {
                seen.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }))
        })
    };
    react_calls(&counted, 1);
    println!("ours hook_calls_per_run {}", seen.load(Ordering::Relaxed));

    let agent_0 = support::react_agent(|builder| builder);
    let agent_10 = support::react_agent(|mut builder| {
        for _ in 0..10 {
            builder = builder.hook(AsyncNoop);
        }
        builder
    });
    let mut async_chain = HookChain::new();
    let mut fn_chain = HookChain::new();
    for _ in 0..10 {
        async_chain.push(AsyncNoop);
        fn_chain.push(hook_fn(|_| Ok(())));
    }

    let figures = [
        Figure::new("ours react_call_0", 1.0, |n| react_calls(&agent_0, n)),
        Figure::new("ours react_call_10", 1.0, |n| react_calls(&agent_10, n)),
        Figure::new("ours hook_async_per_event", 10.0, |n| {
            dispatches(&async_chain, n)
        }),
        Figure::new("ours hook_fn_per_event", 10.0, |n| dispatches(&fn_chain, n)),
        Figure::new("floor boxed_dyn_future", 10.0, |n| run_floor(10, n)),
    ];

    // Warm up, and size each figure's batch to about `batch_time`.
    let sizes: Vec<u64> = figures
        .iter()
        .map(|figure| {
            (figure.run)(100);
            let mut n = 100u64;
            let mut elapsed = (figure.run)(n);
            while elapsed < Duration::from_millis(50) {
                n *= 2;
                elapsed = (figure.run)(n);
            }
            ((n as f64) * batch_time.as_secs_f64() / elapsed.as_secs_f64()).max(1.0) as u64
        })
        .collect();

    let mut samples = vec![Vec::with_capacity(batches); figures.len()];
    for _ in 0..batches {
        for ((figure, size), samples) in figures.iter().zip(&sizes).zip(&mut samples) {
            let elapsed = (figure.run)(*size);
            samples.push(elapsed.as_nanos() as f64 / *size as f64 / figure.units);
        }
    }
    for (figure, samples) in figures.iter().zip(samples) {
        println!("{} {:.2}", figure.name, median(samples).expect("batches"));
    }
}
