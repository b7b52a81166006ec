//! The pipeline: providers, exporters, the `tracing` layer and the guard that flushes.

use std::fmt;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{KeyValue, metrics::MeterProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter};
use tracing::Subscriber;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

use crate::exporter::Conventions;
use crate::metrics::MetricsLayer;

/// The instrumentation scope of the spans and metrics.
const SCOPE: &str = "agentscope";

/// Installs the export pipeline as the process's `tracing` subscriber, configured by the
/// standard variables: `OTEL_EXPORTER_OTLP_ENDPOINT` (default `http://localhost:4318`;
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._METRICS_ENDPOINT` per signal),
/// `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, or `grpc` with the `grpc` feature),
/// `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`.
/// Shorthand for `Otel::builder().install()`.
///
/// Keep the guard for the life of the program: dropping it flushes and shuts the pipeline
/// down.
///
/// # Errors
///
/// [`Error`] when a variable names an unknown protocol, an exporter cannot be built, or a
/// global subscriber is already set.
pub fn init() -> Result<OtelGuard, Error> {
    Otel::builder().install()
}

/// Why the pipeline could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (or [`OtelBuilder::protocol`]) names a protocol this
    /// build does not export with.
    #[error("unsupported OTLP protocol '{0}' (use http/protobuf, or grpc with the `grpc` feature)")]
    Protocol(String),
    /// An exporter could not be built.
    #[error("cannot build the OTLP {signal} exporter: {message}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A global `tracing` subscriber is already set (use [`Otel::layer`] in yours).
    #[error("a global tracing subscriber is already set: {0}")]
    AlreadyInstalled(String),
}

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// OTLP over HTTP with protobuf bodies (`http/protobuf`), to port 4318.
    #[default]
    HttpProtobuf,
    /// OTLP over gRPC (`grpc`), to port 4317; needs the `grpc` feature.
    Grpc,
}

impl Protocol {
    /// Parses the value of `OTEL_EXPORTER_OTLP_PROTOCOL`.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] for anything but `http/protobuf` and `grpc`.
    pub fn parse(value: &str) -> Result<Self, Error> {
        match value.trim() {
            "http/protobuf" => Ok(Self::HttpProtobuf),
            "grpc" => Ok(Self::Grpc),
            other => Err(Error::Protocol(other.to_owned())),
        }
    }
}

type BoxedSpanExporter = Box<dyn FnOnce(Resource) -> SdkTracerProvider + Send>;
type BoxedMetricExporter = Box<dyn FnOnce(Resource) -> SdkMeterProvider + Send>;

/// Configures the pipeline in code; what is not set comes from the standard variables.
///
/// ```no_run
/// use agentscope_otel::{Otel, Protocol};
///
/// # fn main() -> Result<(), agentscope_otel::Error> {
/// let _guard = Otel::builder()
///     .service_name("support-bot")
///     .endpoint("http://127.0.0.1:6006")
///     .protocol(Protocol::HttpProtobuf)
///     .attribute("deployment.environment.name", "staging")
///     .install()?;
/// # Ok(())
/// # }
/// ```
#[must_use]
pub struct OtelBuilder {
    service_name: Option<String>,
    endpoint: Option<String>,
    protocol: Option<Protocol>,
    attributes: Vec<KeyValue>,
    level: LevelFilter,
    spans: Option<BoxedSpanExporter>,
    metrics: Option<BoxedMetricExporter>,
}

impl fmt::Debug for OtelBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The endpoint may carry credentials: only whether one is set.
        f.debug_struct("OtelBuilder")
            .field("service_name", &self.service_name)
            .field("endpoint_set", &self.endpoint.is_some())
            .field("protocol", &self.protocol)
            .field("level", &self.level)
            .field("custom_span_exporter", &self.spans.is_some())
            .field("custom_metric_exporter", &self.metrics.is_some())
            .finish()
    }
}

impl OtelBuilder {
    /// The `service.name` resource attribute (default: `OTEL_SERVICE_NAME`, else the SDK's
    /// `unknown_service`).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// The OTLP endpoint's base URL (`http://host:4318` for HTTP, `/v1/traces` and
    /// `/v1/metrics` are appended; `http://host:4317` for gRPC). Default: the variables.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The transport (default: `OTEL_EXPORTER_OTLP_PROTOCOL`, else HTTP/protobuf).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Adds a resource attribute (`deployment.environment.name`, `service.version`, ...).
    pub fn attribute(mut self, key: &'static str, value: impl Into<opentelemetry::Value>) -> Self {
        self.attributes.push(KeyValue::new(key, value));
        self
    }

    /// The most verbose spans and events exported (default `INFO`: `TracingHook`'s spans
    /// and the decision events; `DEBUG` adds the model layers' attempt spans).
    pub fn level(mut self, level: LevelFilter) -> Self {
        self.level = level;
        self
    }

    /// Exports spans with `exporter` instead of OTLP, as they end (for tests: the SDK's
    /// in-memory exporter; for debugging: a stdout exporter).
    pub fn span_exporter<E: SpanExporter + 'static>(mut self, exporter: E) -> Self {
        self.spans = Some(Box::new(move |resource| {
            SdkTracerProvider::builder()
                .with_resource(resource)
                .with_simple_exporter(Conventions(exporter))
                .build()
        }));
        self
    }

    /// Exports metrics with `exporter` instead of OTLP (periodically, and at flush).
    pub fn metric_exporter<E: PushMetricExporter>(mut self, exporter: E) -> Self {
        self.metrics = Some(Box::new(move |resource| {
            SdkMeterProvider::builder()
                .with_resource(resource)
                .with_periodic_exporter(exporter)
                .build()
        }));
        self
    }

    /// Builds the providers and exporters.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] or [`Error::Exporter`].
    pub fn build(self) -> Result<Otel, Error> {
        let mut resource = Resource::builder().with_attributes(self.attributes);
        if let Some(name) = self.service_name {
            resource = resource.with_service_name(name);
        }
        let resource = resource.build();
        crate::propagation::install();
        let protocol = match self.protocol {
            Some(protocol) => protocol,
            None => match std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL") {
                Ok(value) if !value.trim().is_empty() => Protocol::parse(&value)?,
                _ => Protocol::HttpProtobuf,
            },
        };
        let endpoint = self.endpoint.as_deref();
        let tracer_provider = match self.spans {
            Some(make) => make(resource.clone()),
            None => SdkTracerProvider::builder()
                .with_resource(resource.clone())
                .with_batch_exporter(Conventions(otlp_spans(protocol, endpoint)?))
                .build(),
        };
        let meter_provider = match self.metrics {
            Some(make) => make(resource),
            None => SdkMeterProvider::builder()
                .with_resource(resource)
                .with_periodic_exporter(otlp_metrics(protocol, endpoint)?)
                .build(),
        };
        Ok(Otel {
            tracer_provider,
            meter_provider,
            level: self.level,
        })
    }

    /// Builds the pipeline and installs it as the process's `tracing` subscriber.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build), and [`Error::AlreadyInstalled`].
    pub fn install(self) -> Result<OtelGuard, Error> {
        let otel = self.build()?;
        tracing_subscriber::registry()
            .with(otel.layer())
            .try_init()
            .map_err(|error| Error::AlreadyInstalled(error.to_string()))?;
        Ok(otel.into_guard())
    }
}

fn otlp_spans(
    protocol: Protocol,
    endpoint: Option<&str>,
) -> Result<opentelemetry_otlp::SpanExporter, Error> {
    use opentelemetry_otlp::WithExportConfig;
    let failed = |error: opentelemetry_otlp::ExporterBuildError| Error::Exporter {
        signal: "traces",
        message: error.to_string(),
    };
    match protocol {
        Protocol::HttpProtobuf => {
            let mut builder = opentelemetry_otlp::SpanExporter::builder().with_http();
            if let Some(base) = endpoint {
                builder = builder.with_endpoint(signal_url(base, "traces"));
            }
            builder.build().map_err(failed)
        }
        #[cfg(feature = "grpc")]
        Protocol::Grpc => {
            let mut builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
            if let Some(base) = endpoint {
                builder = builder.with_endpoint(base);
            }
            builder.build().map_err(failed)
        }
        #[cfg(not(feature = "grpc"))]
        Protocol::Grpc => Err(Error::Protocol("grpc".to_owned())),
    }
}

fn otlp_metrics(
    protocol: Protocol,
    endpoint: Option<&str>,
) -> Result<opentelemetry_otlp::MetricExporter, Error> {
    use opentelemetry_otlp::WithExportConfig;
    let failed = |error: opentelemetry_otlp::ExporterBuildError| Error::Exporter {
        signal: "metrics",
        message: error.to_string(),
    };
    match protocol {
        Protocol::HttpProtobuf => {
            let mut builder = opentelemetry_otlp::MetricExporter::builder().with_http();
            if let Some(base) = endpoint {
                builder = builder.with_endpoint(signal_url(base, "metrics"));
            }
            builder.build().map_err(failed)
        }
        #[cfg(feature = "grpc")]
        Protocol::Grpc => {
            let mut builder = opentelemetry_otlp::MetricExporter::builder().with_tonic();
            if let Some(base) = endpoint {
                builder = builder.with_endpoint(base);
            }
            builder.build().map_err(failed)
        }
        #[cfg(not(feature = "grpc"))]
        Protocol::Grpc => Err(Error::Protocol("grpc".to_owned())),
    }
}

/// `base` + `/v1/<signal>`, as the OTLP HTTP exporters expect a full URL.
fn signal_url(base: &str, signal: &str) -> String {
    format!("{}/v1/{signal}", base.trim_end_matches('/'))
}

/// The built pipeline: its `tracing` layer, and the guard that flushes it.
pub struct Otel {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    level: LevelFilter,
}

impl fmt::Debug for Otel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Otel").field("level", &self.level).finish()
    }
}

impl Otel {
    /// A builder; what it leaves unset comes from the standard variables.
    pub fn builder() -> OtelBuilder {
        OtelBuilder {
            service_name: None,
            endpoint: None,
            protocol: None,
            attributes: Vec::new(),
            level: LevelFilter::INFO,
            spans: None,
            metrics: None,
        }
    }

    /// The `tracing` layer that exports spans (tracing-opentelemetry) and records the
    /// metrics, filtered at the builder's level: add it to a subscriber of your own.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let tracer = self.tracer_provider.tracer(SCOPE);
        let meter = self.meter_provider.meter(SCOPE);
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .and_then(MetricsLayer::new(&meter))
            .with_filter(self.level)
    }

    /// The guard that flushes and shuts the pipeline down when dropped.
    pub fn into_guard(self) -> OtelGuard {
        OtelGuard {
            tracer_provider: self.tracer_provider,
            meter_provider: self.meter_provider,
            shut_down: false,
        }
    }
}

/// Flushes and shuts the pipeline down when dropped (or at [`shutdown`](Self::shutdown)).
#[must_use = "dropping the guard shuts the export down at once"]
pub struct OtelGuard {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    shut_down: bool,
}

impl fmt::Debug for OtelGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelGuard")
            .field("shut_down", &self.shut_down)
            .finish()
    }
}

impl OtelGuard {
    /// Exports what is buffered now (spans that ended, metrics so far).
    ///
    /// # Errors
    ///
    /// The exporters' failure, as text (the backend is unreachable, ...).
    pub fn flush(&self) -> Result<(), String> {
        let traces = self.tracer_provider.force_flush();
        let metrics = self.meter_provider.force_flush();
        traces.and(metrics).map_err(|error| error.to_string())
    }

    /// Flushes and shuts the pipeline down (later spans are not exported).
    ///
    /// # Errors
    ///
    /// As [`flush`](Self::flush).
    pub fn shutdown(mut self) -> Result<(), String> {
        self.shut_down = true;
        let traces = self.tracer_provider.shutdown();
        let metrics = self.meter_provider.shutdown();
        traces.and(metrics).map_err(|error| error.to_string())
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if !self.shut_down {
            // Nothing to report to at drop: a failed export is lost either way.
            let _ = self.tracer_provider.shutdown();
            let _ = self.meter_provider.shutdown();
        }
    }
}
