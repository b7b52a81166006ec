//! `export_cost`: what tracing and exporting cost a ReAct call (the model asks the
//! calculator, then answers), in the same run:
//!
//! - `model_1ms/no_hook`: no hook, no subscriber; each model call takes 1 ms;
//! - `model_1ms/tracing_hook_no_subscriber`: `TracingHook` but no subscriber: target, nothing
//!   measurable over `no_hook`;
//! - `model_1ms/tracing_hook_otlp`: `TracingHook` and `agentscope-otel`'s pipeline as the
//!   subscriber, exporting over OTLP/HTTP (batch export, protobuf) to a loopback HTTP server
//!   that accepts and discards the requests; target: at most 10% more than `no_hook`;
//! - `instant/no_hook`, `instant/noop_hook` and `instant/tracing_hook_no_subscriber`: an
//!   instant model, which shows the engine's own costs: `TracingHook` without a subscriber
//!   costs what a hook that does nothing costs (the engine builds the events of the kinds
//!   some hook wants, whatever the hook then does with them).
//!
//! `cargo bench -p agentscope-otel --bench export_cost`; figures in docs/observability.md.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use agentscope::hooks::TracingHook;
use agentscope::prelude::*;
use agentscope_otel::Otel;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// A model that asks the calculator, then answers, forever; each answer after `latency`.
fn model(latency: Duration) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"}))
            .with_usage(120, 12)
            .with_delay(latency),
        ScriptedResponse::text("42")
            .with_usage(140, 3)
            .with_delay(latency),
    ])
    .cycling()
    .without_recording()
}

/// Which hook the agent has.
#[derive(Clone, Copy)]
enum With {
    Nothing,
    /// An async hook that does nothing, with `TracingHook`'s interests: what any hook costs.
    Noop,
    Tracing,
}

struct Noop;

impl Hook for Noop {
    async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
        Ok(())
    }

    fn interests(&self) -> HookEventTypes {
        TracingHook::new().interests()
    }
}

fn agent(latency: Duration, with: With) -> ReActAgent {
    let builder = ReActAgent::builder()
        .name("assistant")
        .model(model(latency))
        .toolkit(Toolkit::new().tool(Calculator::new()));
    match with {
        With::Nothing => builder,
        With::Noop => builder.hook(Noop),
        With::Tracing => builder.hook(TracingHook::new()),
    }
    .build()
    .unwrap()
}

/// An OTLP/HTTP receiver on loopback that reads each request and answers 200, keeping the
/// connection open; its address.
fn discarding_receiver() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    format!("http://{address}")
}

fn serve(stream: TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// `iters` calls of `agent`, on `runtime`, with `dispatch` as the thread's subscriber
/// (none: no subscriber at all).
fn run(
    runtime: &tokio::runtime::Runtime,
    agent: &ReActAgent,
    dispatch: Option<&tracing::Dispatch>,
    iters: u64,
) -> Duration {
    let _default = dispatch.map(tracing::dispatcher::set_default);
    runtime.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            let reply = agent.call(Msg::user("What is 6*7?")).await.unwrap();
            assert_eq!(reply.text(), "42");
            agent.memory().clear();
        }
        start.elapsed()
    })
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // First, while no subscriber was ever set in the process (once one is, `tracing` keeps
    // asking it whether each span is wanted).
    let mut group = c.benchmark_group("instant");
    group.measurement_time(Duration::from_secs(3));
    for (name, with) in [
        ("no_hook", With::Nothing),
        ("noop_hook", With::Noop),
        ("tracing_hook_no_subscriber", With::Tracing),
    ] {
        let agent = agent(Duration::ZERO, with);
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| run(&runtime, &agent, None, iters));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("model_1ms");
    group.measurement_time(Duration::from_secs(5));
    let latency = Duration::from_millis(1);
    for (name, with) in [
        ("no_hook", With::Nothing),
        ("tracing_hook_no_subscriber", With::Tracing),
    ] {
        let agent = agent(latency, with);
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| run(&runtime, &agent, None, iters));
        });
    }
    let otel = Otel::builder()
        .service_name("export-cost-bench")
        .endpoint(discarding_receiver())
        .build()
        .unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(otel.layer()));
    let guard = otel.into_guard();
    let traced = agent(latency, With::Tracing);
    group.bench_function(BenchmarkId::from_parameter("tracing_hook_otlp"), |b| {
        b.iter_custom(|iters| run(&runtime, &traced, Some(&dispatch), iters));
    });
    group.finish();
    // Everything was sent (and answered) by the receiver.
    guard.shutdown().unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
