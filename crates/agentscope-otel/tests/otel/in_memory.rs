//! A pipeline that keeps its spans in memory, as the running thread's default subscriber:
//! how the tests of `agentscope-otel`, and of the crates whose spans it exports (A2A, MCP,
//! the AG-UI server, the evaluations, which include this file), read their spans back; and
//! the traced agent several of them run.
#![allow(dead_code)] // each test binary that includes it uses part of it

use std::future::Future;

use agentscope::hooks::TracingHook;
use agentscope::{ReActAgent, ReActAgentBuilder, Toolkit};
use agentscope_otel::{Otel, OtelBuilder};
use agentscope_test::ScriptedModel;
use agentscope_test::tools::Calculator;
use opentelemetry_sdk::metrics::InMemoryMetricExporter;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use tracing::dispatcher::DefaultGuard;
use tracing_subscriber::layer::SubscriberExt;

/// A pipeline whose spans and metrics stay in memory, the running thread's default
/// subscriber until `default` drops.
pub(crate) struct InMemory {
    /// Where its spans go.
    pub(crate) exporter: InMemorySpanExporter,
    pub(crate) otel: Otel,
    pub(crate) default: DefaultGuard,
}

impl InMemory {
    /// Flushes the pipeline; the finished spans (the subscriber stays the default until
    /// they are read).
    pub(crate) fn finish(self) -> Vec<SpanData> {
        let guard = self.otel.into_guard();
        guard.flush().unwrap();
        self.exporter.get_finished_spans().unwrap()
    }
}

/// `builder`'s pipeline with its spans and metrics kept in memory, made the running
/// thread's default subscriber.
pub(crate) fn in_memory(builder: OtelBuilder) -> InMemory {
    let exporter = InMemorySpanExporter::default();
    let otel = builder
        .span_exporter(exporter.clone())
        .metric_exporter(InMemoryMetricExporter::default())
        .build()
        .unwrap();
    let default = set_default(&otel);
    InMemory {
        exporter,
        otel,
        default,
    }
}

/// `otel`'s layer on a registry, the running thread's default subscriber until the guard
/// drops.
pub(crate) fn set_default(otel: &Otel) -> DefaultGuard {
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(otel.layer()));
    tracing::dispatcher::set_default(&dispatch)
}

/// `assistant` on `model`, with the calculator and the tracing hook: the agent whose spans
/// the tests read.
pub(crate) fn traced_calculator(model: ScriptedModel) -> ReActAgentBuilder {
    ReActAgent::builder()
        .name("assistant")
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(TracingHook::new())
}

/// The span named `name` among `spans`.
pub(crate) fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|span| span.name == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = spans.iter().map(|span| span.name.as_ref()).collect();
            panic!("no span {name} in {names:?}")
        })
}

/// Runs `scenario` with a pipeline of the service `service` exporting to memory; the
/// finished spans.
pub(crate) async fn export(service: &str, scenario: impl Future<Output = ()>) -> Vec<SpanData> {
    let traced = in_memory(Otel::builder().service_name(service));
    scenario.await;
    traced.finish()
}
