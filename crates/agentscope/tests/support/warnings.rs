//! A `tracing` layer that collects the `warn!` events a test provokes.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer};

/// Collects `warn!` events (level and fields) emitted while it is the default subscriber.
#[derive(Clone, Default)]
pub(crate) struct Warnings(Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut Vec<String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }
}

impl<S: tracing::Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut fields = Vec::new();
            event.record(&mut Fields(&mut fields));
            self.0.lock().unwrap().push(fields.join(" "));
        }
    }
}

impl Warnings {
    /// The fields of every warning so far, one line each.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}
