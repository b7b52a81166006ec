//! Trace context across processes: the seam through which the MCP client, the AG-UI server
//! (and any transport) carry a span's W3C trace context (`traceparent`, `tracestate`, and
//! whatever else the installed propagator uses, e.g. `baggage`) without depending on
//! OpenTelemetry.
//!
//! The `tracing` crate alone cannot read or set a span's OpenTelemetry context, so the work
//! is done by a [`Propagator`] that an OpenTelemetry integration installs once per process
//! (`agentscope-otel` does it when its pipeline is built). Without one, [`inject`] and
//! [`extract`] return `None` and [`set_parent`] does nothing: a transport pays one atomic
//! load per request.
//!
//! - A client (MCP tool calls) calls [`inject`] with the current span and sends the fields
//!   it gets (in MCP: the request's `params._meta`).
//! - A server calls [`extract`] with its request's headers, makes a span for the request and
//!   calls [`set_parent`] before entering it: the caller's span becomes its parent, so one
//!   trace crosses the processes.
//!
//! ```
//! use agentscope_core::propagation::{self, TraceContext};
//!
//! // No propagator installed: nothing is carried, and nothing is paid.
//! assert_eq!(propagation::inject(&tracing::Span::current()), None);
//! let headers = [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")];
//! let found = propagation::extract(|name| {
//!     headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string())
//! });
//! assert_eq!(found, None);
//!
//! // A context is plain fields.
//! let mut context = TraceContext::new();
//! context.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
//! assert_eq!(context.get("traceparent").map(str::len), Some(55));
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use tracing::Span;

/// A trace context in transit: the propagator's fields by name (`traceparent`,
/// `tracestate`, `baggage`, ...), as they travel in headers or in MCP's `_meta`.
///
/// `Debug` shows the field names only: a value (baggage above all) may carry data a log
/// should not.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    fields: BTreeMap<String, String>,
}

impl TraceContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets field `name` (lower case, as W3C names them) to `value`.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.fields.insert(name.into(), value.into());
    }

    /// The value of field `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// The fields, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }

    /// Whether it has no field.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceContext")
            .field("fields", &self.fields.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Reads and writes a span's trace context: implemented by an OpenTelemetry integration
/// (`agentscope-otel`'s uses the global text-map propagator and `tracing-opentelemetry`),
/// installed once with [`install`].
pub trait Propagator: Send + Sync + 'static {
    /// The names of the fields it reads and writes (`traceparent`, `tracestate`, ...), for
    /// [`extract`] to pick from a request.
    fn fields(&self) -> Vec<String>;

    /// Writes the trace context of `span` into `context` (nothing for a span that is not
    /// recorded).
    fn inject(&self, span: &Span, context: &mut TraceContext);

    /// Makes the context in `context` the parent of `span`, a span that has not been
    /// entered and has no children yet. Returns whether it did (not for a context without
    /// a valid trace, a disabled span, or one already started).
    fn set_parent(&self, span: &Span, context: &TraceContext) -> bool;
}

static PROPAGATOR: OnceLock<Box<dyn Propagator>> = OnceLock::new();

/// Installs the process's propagator. The first one stays: returns `false` (and drops
/// `propagator`) when one was installed before.
pub fn install(propagator: impl Propagator) -> bool {
    let mut installed = false;
    PROPAGATOR.get_or_init(|| {
        installed = true;
        Box::new(propagator)
    });
    installed
}

/// Whether a propagator is installed.
pub fn is_installed() -> bool {
    PROPAGATOR.get().is_some()
}

/// The trace context of `span` (usually `Span::current()`), to send with a request; `None`
/// without a propagator, or when the span carries no context (it is disabled, or not
/// exported).
pub fn inject(span: &Span) -> Option<TraceContext> {
    let propagator = PROPAGATOR.get()?;
    let mut context = TraceContext::new();
    propagator.inject(span, &mut context);
    (!context.is_empty()).then_some(context)
}

/// The trace context a request carries, read with `get` (a header's value by its lower-case
/// name); `None` without a propagator, or when the request carries none of its fields.
pub fn extract(mut get: impl FnMut(&str) -> Option<String>) -> Option<TraceContext> {
    let propagator = PROPAGATOR.get()?;
    let mut context = TraceContext::new();
    for name in propagator.fields() {
        if let Some(value) = get(&name) {
            context.insert(name, value);
        }
    }
    (!context.is_empty()).then_some(context)
}

/// Makes `context` (from [`extract`]) the parent of `span`, which must be new (not entered,
/// no children). Returns whether it did; `false` without a propagator.
pub fn set_parent(span: &Span, context: &TraceContext) -> bool {
    PROPAGATOR
        .get()
        .is_some_and(|propagator| propagator.set_parent(span, context))
}

/// Makes the span of a request a server takes (`span`, new, declaring the field
/// `otel.kind`) a SERVER span continuing the caller's trace: the request's trace context,
/// read with `get` (a header's value by its lower-case name), becomes its parent. Only with
/// a propagator installed, and only when no span encloses the handler: one that does (an
/// HTTP tracing layer of the application) has continued the trace already. Returns whether
/// the span now continues the caller's trace.
pub fn continue_trace(span: &Span, get: impl FnMut(&str) -> Option<String>) -> bool {
    if !is_installed() || !Span::current().is_none() {
        return false;
    }
    span.record("otel.kind", "server");
    extract(get).is_some_and(|context| set_parent(span, &context))
}
