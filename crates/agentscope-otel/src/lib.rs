//! One-line OpenTelemetry export for agentscope-rs: the spans of
//! `agentscope::hooks::TracingHook` (`invoke_agent`, `chat`, `execute_tool`,
//! named and attributed as the OpenTelemetry GenAI semantic conventions say) go to any OTLP
//! backend (Arize Phoenix, Jaeger, Langfuse, an OpenTelemetry Collector), and the
//! conventions' two client metrics are recorded from them.
//!
//! ```no_run
//! # fn main() -> Result<(), agentscope_otel::Error> {
//! // Reads OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME and
//! // OTEL_RESOURCE_ATTRIBUTES; exports in batches; flushes when the guard drops.
//! let _guard = agentscope_otel::init()?;
//! // ... build agents with `.hook(TracingHook::new())` and call them ...
//! # Ok(())
//! # }
//! ```
//!
//! - [`init`] installs the pipeline as the process's `tracing` subscriber;
//!   [`Otel::builder`] configures it in code (endpoint, protocol, service name, resource
//!   attributes, level, or your own exporters) and [`Otel::layer`] gives the layer to put in
//!   a subscriber of your own.
//! - Traces and metrics go out over OTLP HTTP/protobuf (`http/protobuf`, the default) or, with
//!   the `grpc` feature, gRPC (`grpc`), in batches on a thread of their own.
//! - Metrics: `gen_ai.client.operation.duration` (seconds) and `gen_ai.client.token.usage`
//!   (tokens, `gen_ai.token.type` = `input` / `output`) histograms for every `chat` span,
//!   with the conventions' attributes and bucket boundaries ([`metrics`]).
//! - Trace context across processes: building the pipeline installs [`propagation`], so MCP
//!   tool calls carry the current span's W3C `traceparent` and the AG-UI server continues
//!   the trace of a request that carries one.
//!
//! The guide is `docs/observability.md`.

mod exporter;
pub mod metrics;
mod pipeline;
pub mod propagation;

pub use pipeline::{Error, Otel, OtelBuilder, OtelGuard, Protocol, init};

#[cfg(doctest)]
#[doc = include_str!("../../../docs/observability.md")]
mod guide {}
