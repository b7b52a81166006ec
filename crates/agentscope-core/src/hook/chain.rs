//! [`HookChain`]: hooks sorted by priority with one list per event kind, and the rules that
//! run an event through them (see [the dispatch rules](super::Hook#dispatch-rules)).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::error::{AgentError, HookError};
use crate::hook::erased::{BoxedHook, Handler, invoke_sync};
use crate::hook::{
    CallContext, ChainedEvent, Hook, HookEvent, HookEventType, HookEventTypes, HookId,
};

/// The chained rule (Pre*/Post* events): the hooks interested in `$kind` run in order on
/// `$event` (a `&mut HookEvent`) and the first failure stops the chain. Evaluates to `None`,
/// or the failing hook's position and its error.
///
/// The dispatch rules are macros, expanded in the async fn that runs them, rather than an
/// `async fn` they call: each nested `async fn` is one more state machine to enter and leave
/// per event, which measured about 80 instructions per event (ten events per call).
macro_rules! run_chained {
    ($chain:expr, $event:expr, $kind:expr) => {{
        // `$event` (a `&mut HookEvent` expression, evaluated at each use) is not bound to a
        // local: an owned event stays a direct access in the caller's state machine.
        let kind: HookEventType = $kind;
        // A hook may replace the event, but not with one of another kind; comparing
        // discriminants tells without a match per hook.
        let discriminant = std::mem::discriminant(&*$event);
        let mut failed = None;
        for (position, (_, hook)) in $chain.by_kind[kind.index()].iter().enumerate() {
            // The failure stays boxed (one word) until it is reported.
            let failure = match &hook.handler {
                Handler::Sync(f) => invoke_sync(&**f, $event).err().map(Box::new),
                Handler::Async(h) => h.on_event_dyn($event).await.err(),
            };
            // Which hook decided: goto and stop after reasoning, a skip before acting, a
            // stop after acting (the engine and tracing name it).
            match &mut *$event {
                HookEvent::PostReasoning(event) => {
                    event.attribute_goto(&hook.name);
                    event.attribute_stop(&hook.name);
                }
                HookEvent::PreActing(event) => event.attribute_skip(&hook.name),
                HookEvent::PostActing(event) => event.attribute_stop(&hook.name),
                _ => {}
            }
            let source = match failure {
                None if std::mem::discriminant(&*$event) == discriminant => continue,
                None => HookError::InvalidModification {
                    message: format!(
                        "the hook replaced the {kind} event with a {} event",
                        $event.event_type()
                    ),
                },
                Some(error) => *error,
            };
            let error = AgentError::Hook {
                hook: hook.name.to_string(),
                event: kind,
                source,
            };
            failed = Some((position, error));
            break;
        }
        failed
    }};
}

/// The notification rule (chunk events, ErrorEvent): every hook interested in `$kind` but
/// those in `$skip` runs on `$event`, in order; failures are logged (see `run_chained`).
macro_rules! run_notification {
    ($chain:expr, $event:expr, $kind:expr, $skip:expr) => {{
        let event: &mut HookEvent = $event;
        let kind: HookEventType = $kind;
        let skip: &[HookId] = $skip;
        for (id, hook) in $chain.by_kind[kind.index()].iter() {
            if skip.contains(id) {
                continue;
            }
            let result = match &hook.handler {
                Handler::Sync(f) => invoke_sync(&**f, event),
                Handler::Async(h) => h.on_event_dyn(event).await.map_err(|error| *error),
            };
            report_notification(hook, kind, event, result);
        }
    }};
}

/// One entry of [`HookChain::order`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The kinds whose interested hooks are all synchronous (`hook_fn`): their
    /// notifications run as a plain loop, without a future per dispatch.
    sync_only: HookEventTypes,
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
        self.remove_where(|entry| entry.id == id) > 0
    }

    /// Removes every hook named `name` (names need not be unique); returns how many.
    ///
    /// ```
    /// use agentscope_core::{hook_fn, HookChain};
    ///
    /// let mut chain = HookChain::new();
    /// chain.push(hook_fn(|_| Ok(())).with_name("audit"));
    /// chain.push(hook_fn(|_| Ok(())).with_name("audit").with_priority(5));
    /// chain.push(hook_fn(|_| Ok(())).with_name("metrics"));
    /// assert_eq!(chain.remove_named("audit"), 2);
    /// assert_eq!(chain.order().len(), 1);
    /// ```
    pub fn remove_named(&mut self, name: &str) -> usize {
        self.remove_where(|entry| &*entry.hook.name == name)
    }

    /// Removes every hook that receives `kind` (whatever else it receives); returns how
    /// many. To stop delivering one kind and keep the hooks' other kinds, use
    /// [`clear_kind`](Self::clear_kind).
    pub fn remove_interested_in(&mut self, kind: HookEventType) -> usize {
        self.remove_where(|entry| entry.hook.interests.contains(kind))
    }

    /// Stops delivering `kind` to any hook (AgentScope Python's `clear_instance_hooks` of one
    /// hook type): a hook that received only `kind` is removed, one that also receives other
    /// kinds keeps them. Returns how many hooks no longer receive `kind`.
    ///
    /// ```
    /// use agentscope_core::{hook_fn, HookChain, HookEventType as K};
    ///
    /// let mut chain = HookChain::new();
    /// chain.push(hook_fn(|_| Ok(())).with_name("pre").with_interests(K::PreCall));
    /// chain.push(hook_fn(|_| Ok(())).with_name("both").with_interests(K::PreCall | K::PostCall));
    /// assert_eq!(chain.clear_kind(K::PreCall), 2);
    /// assert!(!chain.is_interested(K::PreCall));
    /// let left: Vec<_> = chain.order().into_iter().map(|h| (h.name, h.interests)).collect();
    /// assert_eq!(left, [("both".to_owned(), K::PostCall.into())]);
    /// ```
    pub fn clear_kind(&mut self, kind: HookEventType) -> usize {
        self.narrow(kind, |_| true)
    }

    /// Stops delivering `kind` to the hooks named `name` (AgentScope Python's
    /// `remove_instance_hook(hook_type, hook_name)`): each is removed if `kind` was all it
    /// received. Returns how many hooks no longer receive `kind`.
    pub fn remove_named_for(&mut self, name: &str, kind: HookEventType) -> usize {
        self.narrow(kind, |entry| &*entry.hook.name == name)
    }

    fn narrow(&mut self, kind: HookEventType, selected: impl Fn(&Entry) -> bool) -> usize {
        let mut narrowed = 0;
        for entry in &mut self.entries {
            if entry.hook.interests.contains(kind) && selected(entry) {
                entry.hook.interests = entry.hook.interests.without(kind);
                narrowed += 1;
            }
        }
        self.entries
            .retain(|entry| !entry.hook.interests.is_empty());
        if narrowed > 0 {
            self.reindex();
        }
        narrowed
    }

    fn remove_where(&mut self, doomed: impl Fn(&Entry) -> bool) -> usize {
        let before = self.entries.len();
        self.entries.retain(|entry| !doomed(entry));
        let removed = before - self.entries.len();
        if removed > 0 {
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
        self.sync_only = HookEventTypes::NONE;
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
            if hooks
                .iter()
                .all(|(_, hook)| matches!(hook.handler, Handler::Sync(_)))
            {
                self.sync_only = self.sync_only.with(kind);
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

    /// The hooks of type `H`, in execution order, with their ids: to find a hook the chain
    /// holds (a built-in hook's settings, say) and to replace or [`remove`](Self::remove) it.
    /// A hook wrapped in another type (an `Arc<H>`, your own wrapper) is not an `H`; a hook
    /// made with [`hook_fn`](crate::hook_fn) is a closure, never found this way.
    ///
    /// ```
    /// use agentscope_core::{hook_fn, Hook, HookChain, HookError, HookEvent};
    ///
    /// struct Audit(&'static str);
    ///
    /// impl Hook for Audit {
    ///     async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let mut chain = HookChain::new();
    /// chain.push(hook_fn(|_| Ok(())));
    /// let id = chain.push(Audit("payments"));
    /// let found: Vec<_> = chain.of_type::<Audit>().map(|(id, audit)| (id, audit.0)).collect();
    /// assert_eq!(found, [(id, "payments")]);
    /// ```
    pub fn of_type<H: Hook>(&self) -> impl Iterator<Item = (HookId, &H)> {
        self.entries
            .iter()
            .filter_map(|entry| Some((entry.id, entry.hook.downcast_ref::<H>()?)))
    }

    /// Whether any hook wants `kind`. The engine skips building events nobody wants.
    pub fn is_interested(&self, kind: HookEventType) -> bool {
        self.interests.contains(kind)
    }

    /// The union of all hooks' interests.
    pub fn interests(&self) -> HookEventTypes {
        self.interests
    }

    /// The chained rule for an event held by value: [`engine::chain`](crate::engine::chain)
    /// documents it.
    pub(crate) fn chain<'a, E: ChainedEvent>(
        &'a self,
        event: E,
        call: &'a mut CallContext,
    ) -> impl Future<Output = Result<E, AgentError>> + Send + 'a {
        // Wrapped before the future is made, so the future holds the event once.
        let mut event: HookEvent = event.into_event();
        async move {
            self.chain_in_place(&mut event, call).await?;
            E::from_chained(event)
        }
    }

    /// The chained rule for an event held in place:
    /// [`engine::chain_in_place`](crate::engine::chain_in_place) documents it.
    pub(crate) async fn chain_in_place(
        &self,
        event: &mut HookEvent,
        call: &mut CallContext,
    ) -> Result<(), AgentError> {
        let kind = event.event_type();
        if !self.interests.contains(kind) {
            return Ok(());
        }
        std::mem::swap(&mut event.meta_mut().extensions, call.extensions_mut());
        let failed = run_chained!(self, &mut *event, kind);
        std::mem::swap(&mut event.meta_mut().extensions, call.extensions_mut());
        if let Some((failed_at, error)) = failed {
            if kind == HookEventType::PostCall {
                // Every hook up to the failing one received PostCall: none of them gets the
                // call's ErrorEvent.
                let hooks = &self.by_kind[kind.index()];
                call.saw_post_call = hooks[..=failed_at].iter().map(|(id, _)| *id).collect();
            }
            return Err(error);
        }
        Ok(())
    }

    /// The notification rule: [`engine::notify`](crate::engine::notify) documents it.
    pub(crate) async fn notify(&self, event: &mut HookEvent, call: &mut CallContext) {
        let kind = event.event_type();
        if !self.interests.contains(kind) {
            return;
        }
        std::mem::swap(&mut event.meta_mut().extensions, call.extensions_mut());
        let skip: &[HookId] = match kind {
            HookEventType::Error => &call.saw_post_call,
            _ => &[],
        };
        if self.sync_only.contains(kind) {
            // Chunk events with `hook_fn` hooks: `run_notification!`'s rule as a plain loop,
            // with nothing to await (expanding the macro here measured 14 instructions more
            // per streamed chunk).
            for (id, hook) in self.by_kind[kind.index()].iter() {
                if let Handler::Sync(f) = &hook.handler
                    && !skip.contains(id)
                {
                    let result = invoke_sync(&**f, event);
                    report_notification(hook, kind, event, result);
                }
            }
        } else {
            run_notification!(self, event, kind, skip);
        }
        std::mem::swap(&mut event.meta_mut().extensions, call.extensions_mut());
    }

    /// Runs `event` through the hooks interested in its kind, by the kind's rule (see the
    /// [dispatch rules](Hook#dispatch-rules)), without a call: for testing hooks and chains.
    ///
    /// # Errors
    ///
    /// For a chained event, the first hook `Err` (or panic) as [`AgentError::Hook`] naming
    /// the hook; notifications never fail.
    pub async fn dispatch(&self, event: &mut HookEvent) -> Result<(), AgentError> {
        let kind = event.event_type();
        if !self.interests.contains(kind) {
            return Ok(());
        }
        if kind.is_notification() {
            run_notification!(self, event, kind, &[]);
            return Ok(());
        }
        match run_chained!(self, &mut *event, kind) {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }
}

/// A notification's rule for a hook's failure: logged, never returned; a progress chunk a
/// hook failed on is withheld from the stream (a failing redaction hook is never bypassed).
#[inline(always)]
fn report_notification(
    hook: &BoxedHook,
    kind: HookEventType,
    event: &mut HookEvent,
    result: Result<(), HookError>,
) {
    if let Err(error) = result {
        notification_failed(hook, kind, event, error);
    }
}

/// Out of line: the success path of a chunk notification is one branch per hook.
#[cold]
#[inline(never)]
fn notification_failed(
    hook: &BoxedHook,
    kind: HookEventType,
    event: &mut HookEvent,
    error: HookError,
) {
    tracing::warn!(
        hook = %hook.name,
        event = %kind,
        %error,
        "hook failed while handling a notification; ignored"
    );
    if let HookEvent::ActingChunk(chunk) = event {
        chunk.skip();
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
    use crate::engine::{CallContext, events};
    use crate::hook::TypedEvent;
    use crate::hook::{BoxedHook, HookFn, PostCallEvent, PreCallEvent, hook_fn};
    use crate::{AgentInfo, Msg};
    use futures::executor::block_on;
    use std::sync::Mutex;

    fn call() -> CallContext {
        CallContext::new(Arc::new(AgentInfo::new("a", "1")))
    }

    fn post_call() -> HookEvent {
        events::post_call(call().info(), Msg::assistant("x")).into_event()
    }

    fn chunk() -> HookEvent {
        events::reasoning_chunk(call().info(), "m", Msg::assistant("x"), Msg::assistant("x"))
            .into_event()
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
        block_on(chain.dispatch(&mut chunk())).unwrap();
        assert_eq!(*log.lock().unwrap(), ["last"]);
    }

    /// A hook that records its name, asynchronously.
    struct AsyncRecorder(Arc<Mutex<Vec<String>>>, &'static str);

    impl Hook for AsyncRecorder {
        async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
            self.0.lock().unwrap().push(self.1.to_owned());
            Ok(())
        }

        fn priority(&self) -> i32 {
            5
        }
    }

    /// `notify` runs a chain of synchronous hooks as a plain loop and a chain with an async
    /// hook through `run`: the rule is the same (failures and panics are logged, every other
    /// hook runs in order, and hooks that saw PostCall don't get the ErrorEvent).
    #[test]
    fn notify_has_one_rule_for_sync_only_and_mixed_chains() {
        for with_async in [false, true] {
            let log = Arc::new(Mutex::new(Vec::new()));
            let mut chain = HookChain::new();
            let first = chain.push(recorder(&log, "first", 1));
            chain.push(hook_fn(|_| Err(HookError::msg("nope"))).with_priority(2));
            chain.push(hook_fn(|_| panic!("boom")).with_priority(3));
            chain.push(recorder(&log, "last", 4));
            if with_async {
                chain.push(AsyncRecorder(Arc::clone(&log), "async"));
            }
            let expected_all: &[&str] = match with_async {
                false => &["first", "last"],
                true => &["first", "last", "async"],
            };

            let mut call = call();
            block_on(chain.notify(&mut chunk(), &mut call));
            assert_eq!(*log.lock().unwrap(), expected_all, "async: {with_async}");

            log.lock().unwrap().clear();
            call.saw_post_call = vec![first];
            let mut error: HookEvent =
                events::error(call.info(), AgentError::invalid_input("x")).into_event();
            block_on(chain.notify(&mut error, &mut call));
            assert_eq!(
                *log.lock().unwrap(),
                &expected_all[1..],
                "async: {with_async}"
            );
        }
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
        block_on(chain.dispatch(&mut chunk())).unwrap();
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
    fn chain_in_place_runs_the_chained_rule_where_the_event_is() {
        let mut chain = HookChain::new();
        chain.push(hook_fn(|event| {
            if let HookEvent::PostCall(post) = event {
                post.set_final_message(Msg::assistant("changed"));
            }
            Ok(())
        }));
        chain.push(hook_fn(|_| Err(HookError::msg("second hook refuses"))));
        let mut call = call();
        let mut event = TypedEvent::into_event(events::post_call(call.info(), Msg::assistant("x")));
        let err = block_on(chain.chain_in_place(&mut event, &mut call)).unwrap_err();
        let AgentError::Hook {
            hook, event: kind, ..
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(*kind, HookEventType::PostCall);
        assert_eq!(*hook, chain.order()[1].name);
        // `chain` is the same rule.
        let typed = events::post_call(call.info(), Msg::assistant("x"));
        let typed_err = block_on(chain.chain(typed, &mut call)).unwrap_err();
        assert_eq!(typed_err.to_string(), err.to_string());
        // The first hook's change stays in the caller's event.
        let post = PostCallEvent::from_chained(event).unwrap();
        assert_eq!(post.final_message().text(), "changed");
    }

    #[test]
    fn from_chained_names_the_kind_it_expected() {
        let err = PreCallEvent::from_chained(post_call()).unwrap_err();
        let AgentError::Hook { event, source, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(*event, HookEventType::PreCall);
        assert_eq!(
            source.to_string(),
            HookError::InvalidModification {
                message: "the chain returned a PostCall event".to_owned()
            }
            .to_string()
        );
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

    #[test]
    fn chain_lends_the_call_extensions_to_each_event() {
        struct Seen(Vec<&'static str>);
        let mut chain = HookChain::new();
        chain.push(hook_fn(|event: &mut HookEvent| {
            let kind = event.event_type().as_str();
            event
                .extensions_mut()
                .get_or_insert_with(|| Seen(Vec::new()))
                .0
                .push(kind);
            Ok(())
        }));
        let mut call = call();
        let pre = events::pre_call(call.info(), vec![], vec![], None);
        block_on(chain.chain(pre, &mut call)).unwrap();
        let post = events::post_call(call.info(), Msg::assistant("x"));
        let post = block_on(chain.chain(post, &mut call)).unwrap();
        assert!(
            post.extensions().is_empty(),
            "the call keeps its extensions"
        );
        assert_eq!(
            call.extensions().get::<Seen>().unwrap().0,
            ["PreCall", "PostCall"]
        );
    }

    #[test]
    fn hooks_that_saw_post_call_do_not_get_the_error() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut chain = HookChain::new();
        chain.push(recorder(&log, "early", 1));
        chain.push(
            hook_fn(|event: &mut HookEvent| match event {
                HookEvent::PostCall(_) => Err(HookError::msg("rejects the reply")),
                _ => Ok(()),
            })
            .with_name("failing")
            .with_priority(2),
        );
        chain.push(recorder(&log, "late", 3));
        let mut call = call();
        let post = events::post_call(call.info(), Msg::assistant("x"));
        let err = block_on(chain.chain(post, &mut call)).unwrap_err();
        assert_eq!(log.lock().unwrap().drain(..).collect::<Vec<_>>(), ["early"]);
        let mut error = events::error(call.info(), err).into_event();
        block_on(chain.notify(&mut error, &mut call));
        assert_eq!(*log.lock().unwrap(), ["late"]);
    }
}
