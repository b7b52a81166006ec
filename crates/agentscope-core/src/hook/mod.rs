//! Hooks: the [`Hook`] trait, the twelve events it handles, the call they belong to, and the
//! priority-sorted [`HookChain`] that runs them.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the [`Hook`] trait |
//! | `erased.rs` | type-erased hooks: [`BoxedHook`], closures as hooks ([`hook_fn`]) |
//! | `chain.rs` | [`HookChain`]: priority order, one list per kind, the dispatch rules |
//! | `kinds.rs` | the kinds ([`HookEventType`]) and sets of kinds ([`HookEventTypes`]) |
//! | `context.rs` | the call: `CallContext` (the engine's), [`CallInfo`], [`CallId`], [`Extensions`] |
//! | `event.rs` | the closed [`HookEvent`] enum |
//! | `meta.rs` | what the twelve events share (their call, its extensions, the accessors) |
//! | `call.rs`, `reasoning.rs`, `acting.rs`, `summary.rs`, `error.rs` | the twelve events, by stage |
//!
//! The dispatch rules are documented on the [`Hook`] trait.

mod acting;
mod call;
mod chain;
mod context;
mod erased;
mod error;
mod event;
pub(crate) mod kinds;
pub(crate) mod meta;
mod reasoning;
mod summary;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use acting::{ActingChunkEvent, PostActingEvent, PreActingEvent};
pub(crate) use call::InDoubtChoices;
pub use call::{PostCallEvent, PreCallEvent};
pub use chain::{HookChain, HookInfo};
pub use context::{AgentInfo, CallContext, CallId, CallInfo, Extensions, ParseCallIdError};
pub use erased::{BoxedHook, HookFn, hook_fn};
pub use error::ErrorEvent;
pub use event::{ChainedEvent, HookEvent, TypedEvent};
pub use kinds::{HookEventType, HookEventTypes};
pub use reasoning::{PostReasoningEvent, PreReasoningEvent, ReasoningChunkEvent};
pub use summary::{PostSummaryEvent, PreSummaryEvent, SummaryChunkEvent};

use crate::error::HookError;

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
///
/// # Dispatch rules
///
/// - Pre*/Post* events are **chained**: hooks run one after another in priority order (lower
///   first, ties in registration order), each seeing the event as the previous hook left it.
///   An `Err` stops the chain and fails the call.
/// - Chunk events and [`ErrorEvent`] are **notifications**: every interested hook receives
///   them in priority order; an `Err` is logged with `tracing` and affects neither the call
///   nor the other hooks. A tool's progress chunk ([`ActingChunkEvent`]) as the last hook
///   leaves it is what the stream gets; one a hook skipped or failed on is withheld.
/// - A panic inside a hook is caught and treated as that hook's `Err`.
/// - A hook whose [`interests`](Hook::interests) exclude a kind is never invoked for it and
///   costs nothing: the chain keeps one list of hooks per kind.
/// - A hook that received a call's PostCall does not also receive its ErrorEvent (when a
///   later PostCall hook fails the call).
pub trait Hook: Send + Sync + 'static {
    /// Handles one event. See [the dispatch rules](Hook#dispatch-rules) for what an `Err` does.
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

/// Identifies a registered hook, for removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HookId(u64);

impl HookId {
    /// A new id, unique in this process.
    fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        HookId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl fmt::Display for HookId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hook#{}", self.0)
    }
}
