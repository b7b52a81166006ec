//! The [`Hook`] trait and the priority-sorted [`HookChain`] that dispatches events to hooks.
//!
//! # Dispatch rules
//!
//! - Pre*/Post* events are **chained**: hooks run one after another in priority order (lower
//!   first, ties in registration order), each seeing the event as the previous hook left it.
//!   An `Err` stops the chain and fails the call.
//! - Chunk events and [`ErrorEvent`](crate::ErrorEvent) are **notifications**: every
//!   interested hook receives them in priority order; an `Err` is logged with `tracing` and
//!   affects neither the call nor the other hooks.
//! - A panic inside a hook is caught and treated as that hook's `Err`.
//! - A hook whose [`interests`](Hook::interests) exclude a kind is never invoked for it and
//!   costs nothing: the chain keeps one list of hooks per kind.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::error::{AgentError, HookError};
use crate::event::{HookEvent, HookEventType, HookEventTypes};

/// The default hook priority.
pub const DEFAULT_PRIORITY: i32 = 100;

/// Observes and steers an agent's lifecycle.
///
/// Implement [`on_event`](Hook::on_event) (an `async fn` is fine) and match the event
/// exhaustively; override [`priority`](Hook::priority) to run earlier or later and
/// [`interests`](Hook::interests) to receive only some kinds.
///
/// ```
/// use agentscope_core::{Hook, HookError, HookEvent, HookEventType, HookEventTypes};
///
/// /// Adds the current date to every reasoning step's system message.
/// struct DateHook;
///
/// impl Hook for DateHook {
///     async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
///         if let HookEvent::PreReasoning(e) = event {
///             e.append_system_content("Today is 2026-11-30.");
///         }
///         Ok(())
///     }
///
///     fn priority(&self) -> i32 {
///         50
///     }
///
///     fn interests(&self) -> HookEventTypes {
///         HookEventType::PreReasoning.into()
///     }
/// }
/// ```
///
/// `priority`, `interests` and `name` are read once, when the hook is registered.
pub trait Hook: Send + Sync + 'static {
    /// Handles one event. See the module docs for what an `Err` does.
    fn on_event(&self, event: &mut HookEvent)
    -> impl Future<Output = Result<(), HookError>> + Send;

    /// Lower runs first; the default is 100. Ties keep registration order.
    fn priority(&self) -> i32 {
        DEFAULT_PRIORITY
    }

    /// The event kinds this hook wants; it is never invoked for the others.
    fn interests(&self) -> HookEventTypes {
        HookEventTypes::ALL
    }

    /// A name for error messages and [`HookChain::order`]; the type name by default.
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }
}

impl<H: Hook> Hook for Arc<H> {
    fn on_event(
        &self,
        event: &mut HookEvent,
    ) -> impl Future<Output = Result<(), HookError>> + Send {
        (**self).on_event(event)
    }

    fn priority(&self) -> i32 {
        (**self).priority()
    }

    fn interests(&self) -> HookEventTypes {
        (**self).interests()
    }

    fn name(&self) -> &str {
        (**self).name()
    }
}

/// The private dyn-compatible twin of [`Hook`], blanket-implemented for every hook.
trait DynHook: Send + Sync + 'static {
    fn on_event_boxed<'a>(
        &'a self,
        event: &'a mut HookEvent,
    ) -> BoxFuture<'a, Result<(), HookError>>;
}

impl<H: Hook> DynHook for H {
    fn on_event_boxed<'a>(
        &'a self,
        event: &'a mut HookEvent,
    ) -> BoxFuture<'a, Result<(), HookError>> {
        Box::pin(self.on_event(event))
    }
}

/// How an erased hook is called: synchronous hooks directly, without a future.
#[derive(Clone)]
enum Handler {
    Sync(Arc<SyncHookFn>),
    Async(Arc<dyn DynHook>),
}

type SyncHookFn = dyn Fn(&mut HookEvent) -> Result<(), HookError> + Send + Sync;

/// A hook made from a synchronous closure; build one with [`hook_fn`].
///
/// Synchronous hooks are dispatched without allocating.
#[must_use]
#[derive(Clone)]
pub struct HookFn {
    f: Arc<SyncHookFn>,
    priority: i32,
    interests: HookEventTypes,
    name: Cow<'static, str>,
}

/// Builds a hook from a synchronous closure.
///
/// ```
/// use agentscope_core::{hook_fn, HookEvent, HookEventType};
///
/// let logger = hook_fn(|event: &mut HookEvent| {
///     println!("{} for {}", event.event_type(), event.agent().name());
///     Ok(())
/// })
/// .with_priority(10)
/// .with_interests(HookEventType::PreCall | HookEventType::PostCall)
/// .with_name("logger");
/// ```
///
/// For hooks that need to `.await`, implement [`Hook`] on a type.
pub fn hook_fn<F>(f: F) -> HookFn
where
    F: Fn(&mut HookEvent) -> Result<(), HookError> + Send + Sync + 'static,
{
    HookFn {
        f: Arc::new(f),
        priority: DEFAULT_PRIORITY,
        interests: HookEventTypes::ALL,
        name: Cow::Borrowed("hook_fn"),
    }
}

impl HookFn {
    /// Sets the priority (default 100).
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the event kinds the hook receives (default all).
    pub fn with_interests(mut self, interests: impl Into<HookEventTypes>) -> Self {
        self.interests = interests.into();
        self
    }

    /// Sets the name (default `"hook_fn"`).
    pub fn with_name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = name.into();
        self
    }
}

impl fmt::Debug for HookFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookFn")
            .field("name", &self.name)
            .field("priority", &self.priority)
            .field("interests", &self.interests)
            .finish_non_exhaustive()
    }
}

impl Hook for HookFn {
    fn on_event(
        &self,
        event: &mut HookEvent,
    ) -> impl Future<Output = Result<(), HookError>> + Send {
        std::future::ready((self.f)(event))
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn interests(&self) -> HookEventTypes {
        self.interests
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A type-erased, cheaply clonable [`Hook`], for keeping hooks of different types together.
///
/// ```
/// use agentscope_core::{hook_fn, BoxedHook};
///
/// let hooks: Vec<BoxedHook> = vec![
///     BoxedHook::new(hook_fn(|_| Ok(())).with_name("a")),
///     BoxedHook::new(hook_fn(|_| Ok(())).with_name("b")),
/// ];
/// assert_eq!(hooks[1].name(), "b");
/// ```
#[derive(Clone)]
pub struct BoxedHook {
    handler: Handler,
    priority: i32,
    interests: HookEventTypes,
    name: Arc<str>,
}

impl BoxedHook {
    /// Erases `hook`, reading its priority, interests and name once.
    pub fn new<H: Hook>(hook: H) -> Self {
        let any: &dyn Any = &hook;
        if let Some(boxed) = any.downcast_ref::<BoxedHook>() {
            return boxed.clone();
        }
        let sync = any.downcast_ref::<HookFn>().map(|f| Arc::clone(&f.f));
        let (priority, interests, name) =
            (hook.priority(), hook.interests(), Arc::from(hook.name()));
        Self {
            handler: match sync {
                Some(f) => Handler::Sync(f),
                None => Handler::Async(Arc::new(hook)),
            },
            priority,
            interests,
            name,
        }
    }

    /// The hook's priority.
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// The hook's interests.
    pub fn interests(&self) -> HookEventTypes {
        self.interests
    }

    /// The hook's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

#[inline]
fn invoke_sync(f: &SyncHookFn, event: &mut HookEvent) -> Result<(), HookError> {
    catch_unwind(AssertUnwindSafe(|| f(event)))
        .unwrap_or_else(|payload| Err(HookError::panicked(&*payload)))
}

async fn invoke_async(hook: &Arc<dyn DynHook>, event: &mut HookEvent) -> Result<(), HookError> {
    // `let` moves the reference in, making the closure `FnOnce` so the future may keep it.
    let start = move || {
        let event = event;
        hook.on_event_boxed(event)
    };
    match catch_unwind(AssertUnwindSafe(start)) {
        Ok(future) => AssertUnwindSafe(future)
            .catch_unwind()
            .await
            .unwrap_or_else(|payload| Err(HookError::panicked(&*payload))),
        Err(payload) => Err(HookError::panicked(&*payload)),
    }
}

impl fmt::Debug for BoxedHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxedHook")
            .field("name", &self.name)
            .field("priority", &self.priority)
            .field("interests", &self.interests)
            .finish_non_exhaustive()
    }
}

impl Hook for BoxedHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        match &self.handler {
            Handler::Sync(f) => f(event),
            Handler::Async(hook) => hook.on_event_boxed(event).await,
        }
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn interests(&self) -> HookEventTypes {
        self.interests
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// Identifies a registered hook, for removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HookId(u64);

impl HookId {
    /// A new id, unique in this process.
    pub fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        HookId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl fmt::Display for HookId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hook#{}", self.0)
    }
}

/// A chained dispatch that failed: the error, and the hooks that had received the event.
#[derive(Debug, Clone)]
pub struct DispatchFailure {
    /// The error ([`AgentError::Hook`] naming the failing hook).
    pub error: AgentError,
    /// The hooks that received the event, in order, the failing one last.
    pub reached: Vec<HookId>,
}

/// One entry of [`HookChain::order`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookInfo {
    /// The hook's id.
    pub id: HookId,
    /// The hook's name.
    pub name: String,
    /// The hook's priority.
    pub priority: i32,
    /// The kinds the hook receives.
    pub interests: HookEventTypes,
}

impl fmt::Display for HookInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>5}  {}  ", self.priority, self.name)?;
        if self.interests == HookEventTypes::ALL {
            f.write_str("(all events)")
        } else {
            write!(f, "{:?}", self.interests)
        }
    }
}

#[derive(Clone)]
struct Entry {
    id: HookId,
    hook: BoxedHook,
}

/// Hooks sorted by priority, with one list per event kind.
///
/// Cloning is cheap (hooks are shared). The agent keeps one chain and snapshots it at the
/// start of each call, so runtime changes apply from the next call on.
///
/// ```
/// use agentscope_core::{hook_fn, HookChain};
///
/// let mut chain = HookChain::new();
/// chain.push(hook_fn(|_| Ok(())).with_name("late").with_priority(200));
/// chain.push(hook_fn(|_| Ok(())).with_name("early").with_priority(10));
/// let names: Vec<_> = chain.order().into_iter().map(|h| h.name).collect();
/// assert_eq!(names, ["early", "late"]);
/// ```
#[derive(Clone, Default)]
pub struct HookChain {
    entries: Vec<Entry>,
    by_kind: [Arc<[(HookId, BoxedHook)]>; 12],
    interests: HookEventTypes,
}

impl HookChain {
    /// An empty chain.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `hook` after every hook whose priority is lower or equal.
    pub fn push<H: Hook>(&mut self, hook: H) -> HookId {
        let id = HookId::next();
        self.insert(id, BoxedHook::new(hook));
        id
    }

    /// Registers every hook of `other` (keeping their ids), in `other`'s order.
    pub fn extend_from(&mut self, other: &HookChain) {
        for entry in &other.entries {
            self.insert(entry.id, entry.hook.clone());
        }
    }

    fn insert(&mut self, id: HookId, hook: BoxedHook) {
        let at = self
            .entries
            .partition_point(|entry| entry.hook.priority <= hook.priority);
        self.entries.insert(at, Entry { id, hook });
        self.reindex();
    }

    /// Removes a hook; returns whether it was registered.
    pub fn remove(&mut self, id: HookId) -> bool {
        let before = self.entries.len();
        self.entries.retain(|entry| entry.id != id);
        let removed = self.entries.len() != before;
        if removed {
            self.reindex();
        }
        removed
    }

    /// Removes every hook.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.reindex();
    }

    fn reindex(&mut self) {
        self.interests = HookEventTypes::NONE;
        for kind in HookEventType::ALL {
            let hooks: Vec<(HookId, BoxedHook)> = self
                .entries
                .iter()
                .filter(|entry| entry.hook.interests.contains(kind))
                .map(|entry| (entry.id, entry.hook.clone()))
                .collect();
            if !hooks.is_empty() {
                self.interests = self.interests.with(kind);
            }
            self.by_kind[kind.index()] = hooks.into();
        }
    }

    /// The number of hooks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the chain has no hooks.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The hooks in execution order.
    pub fn order(&self) -> Vec<HookInfo> {
        self.entries
            .iter()
            .map(|entry| HookInfo {
                id: entry.id,
                name: entry.hook.name.to_string(),
                priority: entry.hook.priority,
                interests: entry.hook.interests,
            })
            .collect()
    }

    /// Whether any hook wants `kind`. The engine skips building events nobody wants.
    pub fn is_interested(&self, kind: HookEventType) -> bool {
        self.interests.contains(kind)
    }

    /// The union of all hooks' interests.
    pub fn interests(&self) -> HookEventTypes {
        self.interests
    }

    /// Runs a chained (Pre*/Post*) event through the interested hooks in order.
    ///
    /// The first `Err` (or panic) stops the chain and is returned as [`AgentError::Hook`]
    /// naming the hook. A hook that replaces the event with one of another kind fails the
    /// same way.
    pub async fn dispatch(&self, event: &mut HookEvent) -> Result<(), AgentError> {
        self.dispatch_tracked(event)
            .await
            .map_err(|failure| failure.error)
    }

    /// [`dispatch`](Self::dispatch), telling on failure which hooks had received the event
    /// (the failing one included), so that they can be spared a second, contradicting
    /// event (the engine does not send ErrorEvent to hooks that already saw PostCall).
    pub async fn dispatch_tracked(&self, event: &mut HookEvent) -> Result<(), DispatchFailure> {
        let kind = event.event_type();
        let hooks = &self.by_kind[kind.index()];
        for (position, (_, hook)) in hooks.iter().enumerate() {
            let result = match &hook.handler {
                Handler::Sync(f) => invoke_sync(&**f, event),
                Handler::Async(h) => invoke_async(h, event).await,
            };
            let result = match result {
                Ok(()) if event.event_type() != kind => Err(HookError::InvalidModification {
                    message: format!(
                        "the hook replaced the {kind} event with a {} event",
                        event.event_type()
                    ),
                }),
                other => other,
            };
            if let Err(source) = result {
                return Err(DispatchFailure {
                    error: AgentError::Hook {
                        hook: hook.name.to_string(),
                        event: kind,
                        source,
                    },
                    reached: hooks[..=position].iter().map(|(id, _)| *id).collect(),
                });
            }
        }
        Ok(())
    }

    /// Delivers a notification (chunk or error event) to every interested hook in order.
    /// Errors and panics are logged and otherwise ignored.
    pub async fn notify(&self, event: &mut HookEvent) {
        self.notify_except(event, &[]).await;
    }

    /// [`notify`](Self::notify), skipping the hooks in `except`.
    pub async fn notify_except(&self, event: &mut HookEvent, except: &[HookId]) {
        let kind = event.event_type();
        for (id, hook) in self.by_kind[kind.index()].iter() {
            if except.contains(id) {
                continue;
            }
            let result = match &hook.handler {
                Handler::Sync(f) => invoke_sync(&**f, event),
                Handler::Async(h) => invoke_async(h, event).await,
            };
            if let Err(error) = result {
                tracing::warn!(
                    hook = %hook.name,
                    event = %kind,
                    %error,
                    "hook failed while handling a notification; ignored"
                );
            }
        }
    }
}

impl fmt::Debug for HookChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.order()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{PostCallEvent, ReasoningChunkEvent};
    use crate::{AgentInfo, Msg};
    use futures::executor::block_on;
    use std::sync::Mutex;

    fn post_call() -> HookEvent {
        PostCallEvent::new(Arc::new(AgentInfo::new("a", "1")), Msg::assistant("x")).into()
    }

    fn chunk() -> HookEvent {
        ReasoningChunkEvent::new(
            Arc::new(AgentInfo::new("a", "1")),
            "m",
            Msg::assistant("x"),
            Msg::assistant("x"),
        )
        .into()
    }

    fn recorder(log: &Arc<Mutex<Vec<String>>>, name: &'static str, priority: i32) -> HookFn {
        let log = Arc::clone(log);
        hook_fn(move |_| {
            log.lock().unwrap().push(name.to_owned());
            Ok(())
        })
        .with_priority(priority)
        .with_name(name)
    }

    struct AsyncAppend(&'static str);

    impl Hook for AsyncAppend {
        async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
            if let HookEvent::PostCall(e) = event {
                let text = format!("{}{}", e.final_message().text(), self.0);
                e.set_final_message(Msg::assistant(text));
            }
            Ok(())
        }
    }

    #[test]
    fn order_is_priority_then_registration() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut chain = HookChain::new();
        chain.push(recorder(&log, "c", 100));
        chain.push(recorder(&log, "a", 10));
        chain.push(recorder(&log, "d", 100));
        chain.push(recorder(&log, "b", 10));
        block_on(chain.dispatch(&mut post_call())).unwrap();
        assert_eq!(*log.lock().unwrap(), ["a", "b", "c", "d"]);
    }

    #[test]
    fn modifications_chain_through_async_hooks() {
        let mut chain = HookChain::new();
        chain.push(AsyncAppend("1"));
        chain.push(AsyncAppend("2"));
        let mut event = post_call();
        block_on(chain.dispatch(&mut event)).unwrap();
        let HookEvent::PostCall(e) = event else {
            unreachable!()
        };
        assert_eq!(e.final_message().text(), "x12");
    }

    #[test]
    fn error_stops_the_chain_and_names_the_hook() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut chain = HookChain::new();
        chain.push(hook_fn(|_| Err(HookError::msg("nope"))).with_name("failing"));
        chain.push(recorder(&log, "after", 200));
        let err = block_on(chain.dispatch(&mut post_call())).unwrap_err();
        match err {
            AgentError::Hook {
                hook,
                event,
                source,
            } => {
                assert_eq!(hook, "failing");
                assert_eq!(event, HookEventType::PostCall);
                assert_eq!(source.to_string(), "nope");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(log.lock().unwrap().is_empty());
    }

    #[test]
    fn notifications_reach_everyone_despite_errors_and_panics() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut chain = HookChain::new();
        chain.push(hook_fn(|_| Err(HookError::msg("nope"))).with_priority(1));
        chain.push(hook_fn(|_| panic!("boom")).with_priority(2));
        chain.push(recorder(&log, "last", 3));
        block_on(chain.notify(&mut chunk()));
        assert_eq!(*log.lock().unwrap(), ["last"]);
    }

    #[test]
    fn panics_become_errors() {
        struct Panicking;
        impl Hook for Panicking {
            async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
                panic!("async boom")
            }
        }
        let mut chain = HookChain::new();
        chain.push(Panicking);
        let err = block_on(chain.dispatch(&mut post_call())).unwrap_err();
        let source = err.hook_error().unwrap();
        assert!(matches!(source, HookError::Panicked { message } if message == "async boom"));

        let mut chain = HookChain::new();
        chain.push(hook_fn(|_| panic!("sync boom")));
        let err = block_on(chain.dispatch(&mut post_call())).unwrap_err();
        assert!(err.to_string().contains("sync boom"), "{err}");
    }

    #[test]
    fn uninterested_hooks_are_never_invoked() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut chain = HookChain::new();
        chain.push(recorder(&log, "chunks-only", 1).with_interests(HookEventTypes::CHUNKS));
        assert!(!chain.is_interested(HookEventType::PostCall));
        assert!(chain.is_interested(HookEventType::ReasoningChunk));
        block_on(chain.dispatch(&mut post_call())).unwrap();
        assert!(log.lock().unwrap().is_empty());
        block_on(chain.notify(&mut chunk()));
        assert_eq!(*log.lock().unwrap(), ["chunks-only"]);
    }

    #[test]
    fn replacing_the_event_kind_is_rejected() {
        let mut chain = HookChain::new();
        chain.push(hook_fn(|event| {
            *event = chunk();
            Ok(())
        }));
        let err = block_on(chain.dispatch(&mut post_call())).unwrap_err();
        assert!(matches!(
            err.hook_error(),
            Some(HookError::InvalidModification { .. })
        ));
    }

    #[test]
    fn remove_and_boxed_hooks() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut chain = HookChain::new();
        let a = chain.push(recorder(&log, "a", 1));
        chain.push(BoxedHook::new(recorder(&log, "b", 2)));
        assert!(chain.remove(a));
        assert!(!chain.remove(a));
        block_on(chain.dispatch(&mut post_call())).unwrap();
        assert_eq!(*log.lock().unwrap(), ["b"]);
        assert_eq!(chain.len(), 1);
    }

    #[test]
    fn boxed_hook_runs_through_hook_trait() {
        let boxed = BoxedHook::new(AsyncAppend("!"));
        let mut event = post_call();
        block_on(Hook::on_event(&boxed, &mut event)).unwrap();
        let HookEvent::PostCall(e) = event else {
            unreachable!()
        };
        assert_eq!(e.final_message().text(), "x!");
        let sync = BoxedHook::new(hook_fn(|_| Err(HookError::msg("s"))));
        assert!(block_on(Hook::on_event(&sync, &mut post_call())).is_err());
    }
}
