//! Small hooks, the macros that write them (`on_event!` for a hook on one kind of event,
//! `hooks!` to box a list of hooks), a first-time flag for hooks that act once, and a shared
//! log for hooks and tools to write to.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentscope::prelude::*;
use agentscope::{BoxedHook, HookFn};

/// The events of a plain answer (no tool call), in order.
pub(crate) const PLAIN_CALL: [HookEventType; 5] = [
    HookEventType::PreCall,
    HookEventType::PreReasoning,
    HookEventType::ReasoningChunk,
    HookEventType::PostReasoning,
    HookEventType::PostCall,
];

/// A log that hooks and tools append entries to.
pub(crate) type Log = Arc<Mutex<Vec<String>>>;

/// An empty [`Log`].
pub(crate) fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

/// Appends `entry` to `log`.
pub(crate) fn push(log: &Log, entry: impl Into<String>) {
    log.lock().unwrap().push(entry.into());
}

/// The entries of `log` so far.
pub(crate) fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

/// A hook handling only `kind`, running `f` on its event; named `"{kind}@{priority}"`.
pub(crate) fn on<F>(kind: HookEventType, priority: i32, f: F) -> BoxedHook
where
    F: Fn(&mut HookEvent) -> Result<(), HookError> + Send + Sync + 'static,
{
    BoxedHook::new(
        hook_fn(f)
            .with_interests(kind)
            .with_priority(priority)
            .with_name(format!("{kind}@{priority}")),
    )
}

/// The hooks given, each boxed: `hooks![gate, rec.clone()]` is
/// `vec![BoxedHook::new(gate), BoxedHook::new(rec.clone())]`.
#[allow(unused_macros)] // Not every test binary that includes the support module uses it.
macro_rules! hooks {
    ($($hook:expr),* $(,)?) => {
        vec![$(::agentscope::BoxedHook::new($hook)),*]
    };
}
#[allow(unused_imports)]
pub(crate) use hooks;

/// [`on`] for one kind, running `$body` on the typed event (`?` works in the body); named
/// `"{kind}@{priority}"`. For example,
/// `on_event!(PreCall, 10, |e| e.set_system_message(None))` runs the body on every PreCall,
/// with `e` the `&mut PreCallEvent`.
#[allow(unused_macros)] // Not every test binary that includes the support module uses it.
macro_rules! on_event {
    ($kind:ident, $priority:expr, |$e:ident| $body:expr) => {
        $crate::support::hooks::on(
            ::agentscope::prelude::HookEventType::$kind,
            $priority,
            move |event| {
                if let ::agentscope::prelude::HookEvent::$kind($e) = event {
                    $body;
                }
                Ok(())
            },
        )
    };
}
#[allow(unused_imports)]
pub(crate) use on_event;

/// True the first time it is asked and false ever after: for hooks that act on the first
/// event they see only.
pub(crate) fn first_time() -> impl Fn() -> bool + Send + Sync + 'static {
    let armed = AtomicBool::new(true);
    move || armed.swap(false, Ordering::SeqCst)
}

/// Calls `stop_agent()` at the first PostReasoning it sees (only once); named "stopper".
pub(crate) fn stop_after_first_reasoning() -> HookFn {
    let first = first_time();
    hook_fn(move |event| {
        if let HookEvent::PostReasoning(e) = event
            && first()
        {
            e.stop_agent();
        }
        Ok(())
    })
    .with_name("stopper")
}

/// A hook handling only `kinds` that counts the events it sees, and the count.
pub(crate) fn counting(kinds: impl Into<HookEventTypes>) -> (HookFn, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    let hook = hook_fn(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
    .with_interests(kinds);
    (hook, count)
}
