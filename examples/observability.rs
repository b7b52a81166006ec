//! Observability: a ReAct call with a tool, traced as the OpenTelemetry GenAI conventions
//! say (`invoke_agent`, `chat`, `execute_tool` spans) and exported over OTLP with
//! `agentscope-otel` to the endpoint the standard variables name; then flushed.
//!
//! ```sh
//! # Arize Phoenix (`pip install arize-phoenix && phoenix serve`), Jaeger, Langfuse, a Collector:
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:6006 cargo run -p agentscope-example-observability --example observability
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc ...  # needs agentscope-otel's `grpc` feature
//! OTEL_SERVICE_NAME=support-bot OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true ...
//! # no endpoint: the spans are printed instead, as a tree
//! cargo run -p agentscope-example-observability --example observability
//! # a real model (see examples/support/mod.rs)
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run -p agentscope-example-observability --example observability
//! ```
//!
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, the
//! spans and the GenAI metrics go there, in batches, and are flushed before the example
//! exits. Without one, nothing is sent anywhere: the example exports to an exporter of its
//! own that keeps the spans, and prints them (name, kind, duration, attributes, events),
//! which is also how to plug any `SpanExporter` in (`Otel::builder().span_exporter(..)`).
//!
//! The first line says which model runs; the offline demo model is scripted (it asks the
//! calculator, then answers with its result).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use agentscope::hooks::TracingHook;
use agentscope::prelude::*;
use agentscope_otel::Otel;
use agentscope_test::tools::Calculator;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use support::{WarningPrinter, model};
use tracing_subscriber::layer::SubscriberExt;

// One thread: the subscriber below is this thread's default for the whole run.
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    let model = model("6*7")?;
    let endpoint = [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .into_iter()
    .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
    let kept = Kept::default();
    let metrics = KeptMetrics::default();
    let otel = match &endpoint {
        // Endpoint, protocol, headers, service name and resource from the OTEL_* variables.
        Some(_) => Otel::builder().build()?,
        None => Otel::builder()
            .service_name("observability-example")
            .span_exporter(kept.clone())
            .metric_exporter(metrics.clone())
            .build()?,
    };
    let subscriber = tracing_subscriber::registry()
        .with(WarningPrinter::layer(|line| eprintln!("{line}")))
        .with(otel.layer());
    let _current = tracing::subscriber::set_default(subscriber);
    let guard = otel.into_guard();

    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are a helpful assistant. Use the calculator for arithmetic.")
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        // Span names and attributes of the GenAI conventions; content only when
        // OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
        .hook(TracingHook::new())
        .build()?;
    let reply = agent.call("What is 6*7?").await?;
    println!("assistant: {}", reply.text());

    // Sends what is buffered and stops the export (dropping the guard would too).
    guard.shutdown().map_err(|error| match &endpoint {
        Some(url) => format!("could not export to {} (OTLP): {error}", shown(url)),
        None => error,
    })?;
    match endpoint {
        Some(url) => println!("\ntraces and metrics exported to {} (OTLP)", shown(&url)),
        None => {
            println!(
                "\nno OTEL_EXPORTER_OTLP_ENDPOINT set, so nothing was sent; the spans, as they \
                 would be exported:"
            );
            print!("{}", kept.tree());
            println!("and the metrics:");
            for line in metrics
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
            {
                println!("{line}");
            }
        }
    }
    Ok(())
}

/// `url` without what may be secret (user and password, path, query): scheme and host.
fn shown(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    format!("{scheme}://{host}")
}

/// A span exporter that keeps the spans, to print them.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(batch);
        Ok(())
    }
}

impl Kept {
    /// The spans as an indented tree, children in start order: one line each with its kind,
    /// duration and the conventions' attributes, then its events.
    fn tree(&self) -> String {
        let mut spans = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        spans.sort_by_key(|span| span.start_time);
        let mut text = String::new();
        let roots = spans.iter().filter(|span| {
            !spans
                .iter()
                .any(|other| other.span_context.span_id() == span.parent_span_id)
        });
        for root in roots {
            write_span(&mut text, &spans, root, 0);
        }
        text
    }
}

/// A metric exporter that keeps the last export as lines: each histogram's series with its
/// count and sum.
#[derive(Debug, Clone, Default)]
struct KeptMetrics(Arc<Mutex<Vec<String>>>);

impl PushMetricExporter for KeptMetrics {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let mut lines = Vec::new();
        for metric in metrics.scope_metrics().flat_map(|scope| scope.metrics()) {
            let points: Vec<(Vec<String>, u64, f64)> = match metric.data() {
                AggregatedMetrics::F64(MetricData::Histogram(h)) => h
                    .data_points()
                    .map(|p| (labels(p.attributes()), p.count(), p.sum()))
                    .collect(),
                AggregatedMetrics::U64(MetricData::Histogram(h)) => h
                    .data_points()
                    .map(|p| (labels(p.attributes()), p.count(), p.sum() as f64))
                    .collect(),
                _ => Vec::new(),
            };
            for (labels, count, sum) in points {
                lines.push(format!(
                    "{} {{{}}} count={count} sum={sum:.3} {}",
                    metric.name(),
                    labels.join(" "),
                    metric.unit()
                ));
            }
        }
        lines.sort();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = lines;
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: std::time::Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

fn labels<'a>(attributes: impl Iterator<Item = &'a opentelemetry::KeyValue>) -> Vec<String> {
    let mut labels: Vec<String> = attributes
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    labels.sort();
    labels
}

fn write_span(text: &mut String, spans: &[SpanData], span: &SpanData, depth: usize) {
    let indent = "  ".repeat(depth);
    let took = span
        .end_time
        .duration_since(span.start_time)
        .unwrap_or_default();
    let mut attributes: Vec<String> = span
        .attributes
        .iter()
        .filter(|kv| {
            let key = kv.key.as_str();
            key.starts_with("gen_ai.") || key.starts_with("agentscope.") || key == "error.type"
        })
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    attributes.sort();
    let _ = writeln!(
        text,
        "{indent}{} [{:?}, {:.1} ms] {}",
        span.name,
        span.span_kind,
        took.as_secs_f64() * 1000.0,
        attributes.join(" ")
    );
    for event in span.events.iter() {
        let _ = writeln!(text, "{indent}  event {}", event.name);
    }
    for child in spans
        .iter()
        .filter(|other| other.parent_span_id == span.span_context.span_id())
    {
        write_span(text, spans, child, depth + 1);
    }
}
