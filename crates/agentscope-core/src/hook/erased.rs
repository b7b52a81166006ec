//! Type-erased hooks: the private dyn-compatible twin of [`Hook`], [`BoxedHook`], and
//! synchronous closures as hooks ([`hook_fn`], dispatched without a future).

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use stackfuture::StackFuture;

use crate::error::HookError;
use crate::hook::{DEFAULT_PRIORITY, Hook, HookEvent, HookEventTypes};

/// The bytes an async hook's future may take to be stored inline, without a heap
/// allocation; larger futures are boxed. A guarded `async fn` hook that awaits nothing takes
/// 32 (a test checks it fits).
const INLINE_FUTURE_BYTES: usize = 48;

/// An async hook's future, guarded against panics, stored inline when it fits. Its error is
/// boxed so that polling it returns one word through the function pointer instead of a
/// whole `HookError` through memory.
pub(crate) type HookFuture<'a> = StackFuture<'a, Result<(), Box<HookError>>, INLINE_FUTURE_BYTES>;

/// The private dyn-compatible twin of [`Hook`], blanket-implemented for every hook.
pub(crate) trait DynHook: Send + Sync + 'static {
    /// Starts the hook; a panic, while starting or while polling, becomes its `Err`.
    fn on_event_dyn<'a>(&'a self, event: &'a mut HookEvent) -> HookFuture<'a>;

    /// The hook itself, to find hooks of a type ([`HookChain::of_type`](crate::HookChain::of_type)).
    fn as_any(&self) -> &dyn Any;
}

impl<H: Hook> DynHook for H {
    fn on_event_dyn<'a>(&'a self, event: &'a mut HookEvent) -> HookFuture<'a> {
        // `let` moves the reference in, making the closure `FnOnce` so the future may keep it.
        let start = move || {
            let event = event;
            self.on_event(event)
        };
        match catch_unwind(AssertUnwindSafe(start)) {
            Ok(future) => HookFuture::from_or_box(guarded(future)),
            Err(payload) => HookFuture::from(std::future::ready(Err(panicked(payload)))),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `future` with a panic while polling turned into its error, and the error boxed.
fn guarded<F>(future: F) -> Guarded<F>
where
    F: Future<Output = Result<(), HookError>> + Send,
{
    Guarded { future }
}

pin_project_lite::pin_project! {
    /// See [`guarded`]: one layer around the hook's future (a `catch_unwind` per poll).
    struct Guarded<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future<Output = Result<(), HookError>>> Future for Guarded<F> {
    type Output = Result<(), Box<HookError>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.project().future;
        match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Ok(()))) => Poll::Ready(Ok(())),
            Ok(Poll::Ready(Err(error))) => Poll::Ready(Err(Box::new(error))),
            Err(payload) => Poll::Ready(Err(panicked(payload))),
        }
    }
}

fn panicked(payload: Box<dyn Any + Send>) -> Box<HookError> {
    Box::new(HookError::panicked(&*payload))
}

/// How an erased hook is called: synchronous hooks directly, without a future.
#[derive(Clone)]
pub(crate) enum Handler {
    Sync(Arc<SyncHookFn>),
    Async(Arc<dyn DynHook>),
}

pub(crate) type SyncHookFn = dyn Fn(&mut HookEvent) -> Result<(), HookError> + Send + Sync;

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

/// A hook shows its name, priority and interests (not its closure or its boxed hook).
macro_rules! debug_hook_meta {
    ($ty:ident) => {
        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("name", &self.name)
                    .field("priority", &self.priority)
                    .field("interests", &self.interests)
                    .finish_non_exhaustive()
            }
        }
    };
}

/// The `priority`, `interests` and `name` of a `Hook` impl for a type that keeps them in
/// fields of those names ([`HookFn`], [`BoxedHook`]).
macro_rules! hook_meta_from_fields {
    () => {
        fn priority(&self) -> i32 {
            self.priority
        }

        fn interests(&self) -> HookEventTypes {
            self.interests
        }

        fn name(&self) -> &str {
            &self.name
        }
    };
}

debug_hook_meta!(HookFn);

impl Hook for HookFn {
    fn on_event(
        &self,
        event: &mut HookEvent,
    ) -> impl Future<Output = Result<(), HookError>> + Send {
        std::future::ready((self.f)(event))
    }

    hook_meta_from_fields!();
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
    pub(crate) handler: Handler,
    pub(crate) priority: i32,
    pub(crate) interests: HookEventTypes,
    pub(crate) name: Arc<str>,
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

    /// The erased hook, when it is an `H` (a hook made with [`hook_fn`] is a closure, and is
    /// never found this way).
    pub(crate) fn downcast_ref<H: Hook>(&self) -> Option<&H> {
        match &self.handler {
            Handler::Async(hook) => hook.as_any().downcast_ref(),
            Handler::Sync(_) => None,
        }
    }
}

#[inline]
pub(crate) fn invoke_sync(f: &SyncHookFn, event: &mut HookEvent) -> Result<(), HookError> {
    catch_unwind(AssertUnwindSafe(|| f(event)))
        .unwrap_or_else(|payload| Err(HookError::panicked(&*payload)))
}

debug_hook_meta!(BoxedHook);

impl Hook for BoxedHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        match &self.handler {
            Handler::Sync(f) => f(event),
            Handler::Async(hook) => hook.on_event_dyn(event).await.map_err(|error| *error),
        }
    }

    hook_meta_from_fields!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{CallContext, events};
    use crate::hook::TypedEvent;
    use crate::{AgentInfo, Msg};
    use futures::executor::block_on;

    fn event() -> HookEvent {
        let call = CallContext::new(Arc::new(AgentInfo::new("a", "1")));
        events::post_call(call.info(), Msg::assistant("x")).into_event()
    }

    struct Noop;

    impl Hook for Noop {
        async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
            Ok(())
        }
    }

    /// An `async fn` hook that awaits nothing runs without a heap allocation: this fails if
    /// the guard around it grows past the inline space.
    #[test]
    fn a_plain_async_hook_future_is_stored_inline() {
        let mut event = event();
        let future = guarded(Noop.on_event(&mut event));
        assert!(HookFuture::has_space_for_val(&future));
        assert!(HookFuture::has_alignment_for_val(&future));
    }

    /// A hook whose future does not fit inline is boxed, and behaves the same.
    #[test]
    fn a_large_hook_future_is_boxed_and_still_runs() {
        struct Large;
        impl Hook for Large {
            async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
                let scratch = [7u8; 256];
                futures::future::ready(()).await;
                if let HookEvent::PostCall(e) = event {
                    let text = format!("{}{}", e.final_message().text(), scratch[255]);
                    e.set_final_message(Msg::assistant(text));
                }
                Err(HookError::msg("large"))
            }
        }
        let mut event = event();
        let future = guarded(Large.on_event(&mut event));
        assert!(!HookFuture::has_space_for_val(&future));
        drop(future);
        let error = block_on(Large.on_event_dyn(&mut event)).unwrap_err();
        assert_eq!(error.to_string(), "large");
        let HookEvent::PostCall(e) = event else {
            unreachable!()
        };
        assert_eq!(e.final_message().text(), "x7");
    }
}
