//! The GenAI client metrics, recorded from `TracingHook`'s `chat` spans as they close.
//!
//! | Metric | Instrument | Unit | Attributes | Buckets |
//! |---|---|---|---|---|
//! | `gen_ai.client.operation.duration` | histogram (f64) | `s` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model` (when known), `error.type` (on failure) | [`DURATION_BUCKETS`] |
//! | `gen_ai.client.token.usage` | histogram (u64) | `{token}` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.token.type` (`input` / `output`), `gen_ai.request.model`, `gen_ai.response.model` | [`TOKEN_BUCKETS`] |
//!
//! Token usage is recorded only for a model call that reported it and did not fail (as the
//! conventions say); the duration for every model call, failed ones with `error.type`.

use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// `gen_ai.client.operation.duration`'s explicit bucket boundaries, in seconds.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// `gen_ai.client.token.usage`'s explicit bucket boundaries, in tokens.
pub const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The `tracing` target of `TracingHook`'s spans (`agentscope::hooks::TracingHook::TARGET`; this
/// crate depends on the core only, and the metrics tests fail if the two differ).
const HOOK_TARGET: &str = "agentscope::hooks::tracing";

/// Records the metrics of every `chat` span that closes.
pub(crate) struct MetricsLayer {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
}

impl MetricsLayer {
    pub(crate) fn new(meter: &Meter) -> Self {
        Self {
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
        }
    }
}

/// What a `chat` span says, as its fields are recorded.
#[derive(Default)]
struct Chat {
    operation: Option<String>,
    provider: Option<String>,
    request_model: Option<String>,
    response_model: Option<String>,
    error_type: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

struct Timed {
    started: Instant,
    chat: Chat,
}

impl Visit for Chat {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "gen_ai.operation.name" => &mut self.operation,
            "gen_ai.provider.name" => &mut self.provider,
            "gen_ai.request.model" => &mut self.request_model,
            "gen_ai.response.model" => &mut self.response_model,
            "error.type" => &mut self.error_type,
            _ => return,
        };
        *slot = Some(value.to_owned());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.input_tokens = Some(value),
            "gen_ai.usage.output_tokens" => self.output_tokens = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.record_u64(field, value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%value` fields (the span name) and anything else: only strings matter here.
        if matches!(field.name(), "gen_ai.request.model" | "error.type") {
            self.record_str(field, &format!("{value:?}"));
        }
    }
}

impl<S> Layer<S> for MetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        if meta.name() != "chat" || meta.target() != HOOK_TARGET {
            return;
        }
        let mut chat = Chat::default();
        attrs.record(&mut chat);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Timed {
                started: Instant::now(),
                chat,
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(timed) = span.extensions_mut().get_mut::<Timed>()
        {
            values.record(&mut timed.chat);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(Timed { started, chat }) = span.extensions_mut().remove::<Timed>() else {
            return;
        };
        let mut attributes = vec![
            KeyValue::new(
                "gen_ai.operation.name",
                chat.operation.unwrap_or_else(|| "chat".to_owned()),
            ),
            KeyValue::new(
                "gen_ai.provider.name",
                chat.provider.unwrap_or_else(|| "_OTHER".to_owned()),
            ),
        ];
        if let Some(model) = chat.request_model {
            attributes.push(KeyValue::new("gen_ai.request.model", model));
        }
        if let Some(model) = chat.response_model {
            attributes.push(KeyValue::new("gen_ai.response.model", model));
        }
        let failed = chat.error_type.is_some();
        let mut timing = attributes.clone();
        if let Some(error) = chat.error_type {
            timing.push(KeyValue::new("error.type", error));
        }
        self.duration
            .record(started.elapsed().as_secs_f64(), &timing);
        if failed {
            return;
        }
        for (kind, count) in [("input", chat.input_tokens), ("output", chat.output_tokens)] {
            if let Some(count) = count {
                let mut with_type = attributes.clone();
                with_type.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(count, &with_type);
            }
        }
    }
}
