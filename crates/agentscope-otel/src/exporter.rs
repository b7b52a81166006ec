//! A span exporter wrapper that gives the conventions' array attributes their array type:
//! `tracing` has no array values, so `TracingHook` records `gen_ai.response.finish_reasons`
//! as a JSON array in a string.

use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// The attributes the conventions type as `string[]`.
const STRING_ARRAYS: [&str; 2] = [
    "gen_ai.response.finish_reasons",
    "gen_ai.request.stop_sequences",
];

#[derive(Debug)]
pub(crate) struct Conventions<E>(pub(crate) E);

/// Turns a JSON array of strings recorded as a string into a string array.
pub(crate) fn fix_arrays(span: &mut SpanData) {
    for attribute in &mut span.attributes {
        if !STRING_ARRAYS.contains(&attribute.key.as_str()) {
            continue;
        }
        if let Value::String(text) = &attribute.value
            && let Ok(items) = serde_json::from_str::<Vec<String>>(text.as_str())
        {
            let items: Vec<StringValue> = items.into_iter().map(StringValue::from).collect();
            *attribute = KeyValue::new(attribute.key.clone(), Value::Array(Array::String(items)));
        }
    }
}

impl<E: SpanExporter> SpanExporter for Conventions<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        for span in &mut batch {
            fix_arrays(span);
        }
        self.0.export(batch).await
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.0.set_resource(resource);
    }
}
