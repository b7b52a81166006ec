//! Trace context across processes: fills agentscope's propagation seam
//! (`agentscope::propagation`) with OpenTelemetry's text-map propagator, so the MCP client
//! sends the current span's `traceparent` / `tracestate` with each tool call and the AG-UI
//! server continues the trace of a run request that carries them.
//!
//! [`Otel::builder`](crate::Otel::builder)'s `build` (and so [`init`](crate::init)) calls
//! [`install`]; call it yourself when you put `tracing-opentelemetry` in a subscriber of your
//! own without this crate's pipeline.
//!
//! The propagators are those of the standard variable `OTEL_PROPAGATORS` (a comma-separated
//! list of `tracecontext`, `baggage` and `none`; default `tracecontext,baggage`; other names
//! are ignored), set as OpenTelemetry's global text-map propagator: replace it afterwards with
//! `opentelemetry::global::set_text_map_propagator` to use another format (B3, Jaeger, ...).
//! The seam reads the global propagator at each use.

use std::collections::HashMap;

use agentscope_core::propagation::{self, Propagator, TraceContext};
use opentelemetry::global;
use opentelemetry::propagation::{Injector, TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The variable that names the propagators.
const PROPAGATORS_ENV: &str = "OTEL_PROPAGATORS";

/// Sets the global text-map propagator from `OTEL_PROPAGATORS` and installs
/// [`OtelPropagator`] as agentscope's propagator (once per process; later calls only set the
/// global propagator again).
pub fn install() {
    let names = std::env::var(PROPAGATORS_ENV).unwrap_or_default();
    global::set_text_map_propagator(from_names(&names));
    propagation::install(OtelPropagator);
}

/// The propagators `names` lists (the value of `OTEL_PROPAGATORS`): `tracecontext` and
/// `baggage` when empty.
fn from_names(names: &str) -> TextMapCompositePropagator {
    let names: Vec<&str> = names
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect();
    let names = if names.is_empty() {
        vec!["tracecontext", "baggage"]
    } else {
        names
    };
    let mut propagators: Vec<Box<dyn TextMapPropagator + Send + Sync>> = Vec::new();
    for name in names {
        match name {
            "tracecontext" => propagators.push(Box::new(TraceContextPropagator::new())),
            "baggage" => propagators.push(Box::new(BaggagePropagator::new())),
            // `none`, and formats this crate does not ship (b3, jaeger, xray, ...).
            _ => {}
        }
    }
    TextMapCompositePropagator::new(propagators)
}

/// agentscope's [`Propagator`] on OpenTelemetry: the global text-map propagator reads and
/// writes the fields, `tracing-opentelemetry` gives a span's context and sets its parent.
#[derive(Debug, Clone, Copy, Default)]
pub struct OtelPropagator;

impl Propagator for OtelPropagator {
    fn fields(&self) -> Vec<String> {
        global::get_text_map_propagator(|propagator| {
            propagator.fields().map(str::to_owned).collect()
        })
    }

    fn inject(&self, span: &Span, context: &mut TraceContext) {
        let otel = span.context();
        if !otel.span().span_context().is_valid() {
            return;
        }
        global::get_text_map_propagator(|propagator| {
            propagator.inject_context(&otel, &mut Carrier(context));
        });
    }

    fn set_parent(&self, span: &Span, context: &TraceContext) -> bool {
        let fields: HashMap<String, String> = context
            .iter()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
        let parent = global::get_text_map_propagator(|propagator| propagator.extract(&fields));
        parent.span().span_context().is_valid() && span.set_parent(parent).is_ok()
    }
}

/// A [`TraceContext`] as OpenTelemetry's carrier.
struct Carrier<'a>(&'a mut TraceContext);

impl Injector for Carrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        // The W3C propagator writes an empty `tracestate` for a span without one: a field
        // without a value is not sent.
        if !value.is_empty() {
            self.0.insert(key.to_ascii_lowercase(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_names_the_propagators() {
        // In no particular order.
        let fields = |names: &str| -> Vec<String> {
            let mut fields: Vec<String> = from_names(names).fields().map(str::to_owned).collect();
            fields.sort();
            fields
        };
        assert_eq!(fields(""), ["baggage", "traceparent", "tracestate"]);
        assert_eq!(fields("tracecontext"), ["traceparent", "tracestate"]);
        assert_eq!(fields(" baggage , b3"), ["baggage"]);
        assert!(fields("none").is_empty());
    }
}
