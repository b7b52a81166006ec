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

/// Collects the spans opened and the events emitted for one `tracing` target, in order,
/// per thread: `span NAME fields` and `LEVEL fields`.
///
/// It is the process's global subscriber (installed once by [`TargetLog::global`]): with
/// thread-local subscribers, tests running on other threads at the same time can leave a
/// callsite marked uninteresting.
pub(crate) struct TargetLog {
    target: &'static str,
    lines: Mutex<Vec<(Option<String>, String)>>,
}

impl TargetLog {
    /// The global log of `target` (the first caller's target wins).
    pub(crate) fn global(target: &'static str) -> &'static Self {
        static LOG: std::sync::OnceLock<&'static TargetLog> = std::sync::OnceLock::new();
        LOG.get_or_init(|| {
            let log: &'static TargetLog = Box::leak(Box::new(TargetLog {
                target,
                lines: Mutex::default(),
            }));
            use tracing_subscriber::layer::SubscriberExt;
            tracing::subscriber::set_global_default(
                tracing_subscriber::Registry::default().with(ForwardTo(log)),
            )
            .unwrap();
            log
        })
    }

    /// Every line recorded on the calling thread (a test's own thread) so far.
    pub(crate) fn lines(&self) -> Vec<String> {
        let me = std::thread::current().name().map(str::to_owned);
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|(thread, _)| *thread == me)
            .map(|(_, line)| line.clone())
            .collect()
    }

    fn push(&self, line: String) {
        let thread = std::thread::current().name().map(str::to_owned);
        self.lines.lock().unwrap().push((thread, line));
    }
}

struct ForwardTo(&'static TargetLog);

impl<S: tracing::Subscriber> Layer<S> for ForwardTo {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: Context<'_, S>,
    ) {
        if attrs.metadata().target() == self.0.target {
            let mut fields = Vec::new();
            attrs.record(&mut Fields(&mut fields));
            self.0.push(format!(
                "span {} {}",
                attrs.metadata().name(),
                fields.join(" ")
            ));
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() == self.0.target {
            let mut fields = Vec::new();
            event.record(&mut Fields(&mut fields));
            self.0
                .push(format!("{} {}", event.metadata().level(), fields.join(" ")));
        }
    }
}
