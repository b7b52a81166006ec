//! The closed [`HookEvent`] enum and what its twelve event structs share: the call they
//! belong to, the call's extensions while hooks handle them, their creation time, and the
//! system-message slot of the Pre* events.
//!
//! What each event lets a hook do is encoded in its type: a setter exists only where a change
//! has an effect, and each value has one source of truth.
//!
//! | Event | Read | Change | Control |
//! |---|---|---|---|
//! | [`PreCallEvent`] | new input, history, system message | input, system message | |
//! | [`PostCallEvent`] | final message | final message (what the caller gets) | |
//! | [`PreReasoningEvent`] | memory copy, system message, model, options, iteration | messages, options, system message (this iteration only) | |
//! | [`PostReasoningEvent`] | reasoning message, model, iteration | reasoning message | stop, goto |
//! | [`ReasoningChunkEvent`] | delta, accumulated, model | | |
//! | [`PreActingEvent`] | tool call | tool call (same id) | skip with a result |
//! | [`PostActingEvent`] | tool call, result | result (memory and stream) | stop |
//! | [`ActingChunkEvent`] | tool call, progress chunk | chunk (what the stream gets) | skip |
//! | [`PreSummaryEvent`] | messages, system message, options, limits | as PreReasoning | |
//! | [`PostSummaryEvent`] | summary message | summary message | |
//! | [`SummaryChunkEvent`] | delta, accumulated | | |
//! | [`ErrorEvent`] | the error | | |
//!
//! Every event also exposes the call it belongs to ([`call`](PreCallEvent::call),
//! [`call_id`](PreCallEvent::call_id), [`agent`](PreCallEvent::agent)) and the call's
//! [`extensions`](PreCallEvent::extensions_mut), where hooks keep per-call state.

use chrono::{DateTime, Utc};

use crate::hook::acting::{ActingChunkEvent, PostActingEvent, PreActingEvent};
use crate::hook::call::{PostCallEvent, PreCallEvent};
use crate::hook::context::{AgentInfo, CallId, CallInfo, Extensions};
use crate::hook::error::ErrorEvent;
use crate::hook::kinds::HookEventType;
use crate::hook::meta::{Meta, event_meta_accessors};
use crate::hook::reasoning::{PostReasoningEvent, PreReasoningEvent, ReasoningChunkEvent};
use crate::hook::summary::{PostSummaryEvent, PreSummaryEvent, SummaryChunkEvent};

macro_rules! each_event {
    ($event:expr, $e:ident => $body:expr) => {
        match $event {
            HookEvent::PreCall($e) => $body,
            HookEvent::PostCall($e) => $body,
            HookEvent::PreReasoning($e) => $body,
            HookEvent::PostReasoning($e) => $body,
            HookEvent::ReasoningChunk($e) => $body,
            HookEvent::PreActing($e) => $body,
            HookEvent::PostActing($e) => $body,
            HookEvent::ActingChunk($e) => $body,
            HookEvent::PreSummary($e) => $body,
            HookEvent::PostSummary($e) => $body,
            HookEvent::SummaryChunk($e) => $body,
            HookEvent::Error($e) => $body,
        }
    };
}

impl HookEvent {
    /// The event's kind.
    pub fn event_type(&self) -> HookEventType {
        match self {
            HookEvent::PreCall(_) => HookEventType::PreCall,
            HookEvent::PostCall(_) => HookEventType::PostCall,
            HookEvent::PreReasoning(_) => HookEventType::PreReasoning,
            HookEvent::PostReasoning(_) => HookEventType::PostReasoning,
            HookEvent::ReasoningChunk(_) => HookEventType::ReasoningChunk,
            HookEvent::PreActing(_) => HookEventType::PreActing,
            HookEvent::PostActing(_) => HookEventType::PostActing,
            HookEvent::ActingChunk(_) => HookEventType::ActingChunk,
            HookEvent::PreSummary(_) => HookEventType::PreSummary,
            HookEvent::PostSummary(_) => HookEventType::PostSummary,
            HookEvent::SummaryChunk(_) => HookEventType::SummaryChunk,
            HookEvent::Error(_) => HookEventType::Error,
        }
    }

    /// The call the event belongs to.
    pub fn call(&self) -> &CallInfo {
        &self.meta().call
    }

    /// The id of the call the event belongs to.
    pub fn call_id(&self) -> CallId {
        self.meta().call.id()
    }

    /// The agent the event belongs to.
    pub fn agent(&self) -> &AgentInfo {
        self.meta().call.agent()
    }

    /// The call's extensions (see [`Extensions`]).
    pub fn extensions(&self) -> &Extensions {
        &self.meta().extensions
    }

    /// The call's extensions, mutably.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.meta_mut().extensions
    }

    /// The event's time: read from the clock the first time it is asked for (during the
    /// event's dispatch), and the same on every later ask and in clones.
    pub fn timestamp(&self) -> DateTime<Utc> {
        self.meta().timestamp()
    }

    fn meta(&self) -> &Meta {
        each_event!(self, e => &e.meta)
    }

    pub(crate) fn meta_mut(&mut self) -> &mut Meta {
        each_event!(self, e => &mut e.meta)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// One of the twelve event structs, as the engine moves it in and out of a [`HookEvent`]
/// (a hook uses the enum's variants instead). Sealed: the set of events is closed.
#[doc(hidden)]
pub trait TypedEvent: Sized + Send + sealed::Sealed + 'static {
    /// The event as a [`HookEvent`].
    fn into_event(self) -> HookEvent;

    /// Unwraps `event`, or gives it back when it is of another kind.
    ///
    /// # Errors
    ///
    /// `event` itself when it is not of this kind.
    #[allow(
        clippy::result_large_err,
        reason = "the event goes back to the caller as it came, unboxed: it is the hot path of every dispatch"
    )]
    fn from_event(event: HookEvent) -> Result<Self, HookEvent>;
}

/// One of the eight chained events (Pre*/Post*): hooks run on it in order and may change it
/// or fail the call. An engine's entry point for it is `engine::chain`.
#[doc(hidden)]
pub trait ChainedEvent: TypedEvent {
    /// The event's kind.
    const KIND: HookEventType;

    /// The event back from a [`HookEvent`] that went through
    /// [`engine::chain_in_place`](crate::engine::chain_in_place).
    ///
    /// # Errors
    ///
    /// [`AgentError::Hook`](crate::AgentError::Hook) when `event` is of another kind (the
    /// chain rejects hooks that change an event's kind, so after the chain this means the
    /// caller built another kind of event).
    fn from_chained(event: HookEvent) -> Result<Self, crate::AgentError> {
        Self::from_event(event).map_err(|other| crate::AgentError::Hook {
            hook: "the hook chain".to_owned(),
            event: Self::KIND,
            source: crate::HookError::InvalidModification {
                message: format!("the chain returned a {} event", other.event_type()),
            },
        })
    }
}

/// Marks the chained events (see [`ChainedEvent`]).
macro_rules! chained_events {
    ($($variant:ident($ty:ident)),* $(,)?) => {
        $(impl ChainedEvent for $ty {
            const KIND: HookEventType = HookEventType::$variant;
        })*
    };
}

/// Declares the closed `HookEvent` enum over the twelve event structs, with the
/// conversions between them.
macro_rules! hook_events {
    ($(#[$meta:meta])* $($variant:ident($ty:ident)),* $(,)?) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        #[allow(clippy::large_enum_variant)]
        pub enum HookEvent {
            $(#[doc = concat!("See [`", stringify!($ty), "`].")]
            $variant($ty),)*
        }

        $(impl $ty {
            event_meta_accessors!();
        }

        impl sealed::Sealed for $ty {}

        impl TypedEvent for $ty {
            fn into_event(self) -> HookEvent {
                HookEvent::$variant(self)
            }

            fn from_event(event: HookEvent) -> Result<Self, HookEvent> {
                match event {
                    HookEvent::$variant(inner) => Ok(inner),
                    other => Err(other),
                }
            }
        }

        )*
    };
}

hook_events!(
/// One moment of an agent call, as hooks see it.
///
/// The enum is closed: match it exhaustively and the compiler tells you when you forgot one.
///
/// ```
/// use agentscope_core::HookEvent;
///
/// fn describe(event: &HookEvent) -> String {
///     match event {
///         HookEvent::PreCall(e) => format!("call with {} new messages", e.input_messages().len()),
///         HookEvent::PostCall(e) => format!("reply: {}", e.final_message().text()),
///         HookEvent::PreReasoning(e) => format!("reasoning #{}", e.iteration()),
///         HookEvent::PostReasoning(e) => format!("model said: {}", e.reasoning_message().text()),
///         HookEvent::ReasoningChunk(e) => format!("delta: {}", e.incremental_chunk().text()),
///         HookEvent::PreActing(e) => format!("calling {}", e.tool_use().name),
///         HookEvent::PostActing(e) => format!("{} returned", e.tool_use().name),
///         HookEvent::ActingChunk(e) => format!("{} progress", e.tool_use().name),
///         HookEvent::PreSummary(_) => "summarising".to_owned(),
///         HookEvent::PostSummary(e) => format!("summary: {}", e.summary_message().text()),
///         HookEvent::SummaryChunk(_) => "summary delta".to_owned(),
///         HookEvent::Error(e) => format!("failed: {}", e.error()),
///     }
/// }
/// ```
    PreCall(PreCallEvent),
    PostCall(PostCallEvent),
    PreReasoning(PreReasoningEvent),
    PostReasoning(PostReasoningEvent),
    ReasoningChunk(ReasoningChunkEvent),
    PreActing(PreActingEvent),
    PostActing(PostActingEvent),
    ActingChunk(ActingChunkEvent),
    PreSummary(PreSummaryEvent),
    PostSummary(PostSummaryEvent),
    SummaryChunk(SummaryChunkEvent),
    Error(ErrorEvent),
);

chained_events!(
    PreCall(PreCallEvent),
    PostCall(PostCallEvent),
    PreReasoning(PreReasoningEvent),
    PostReasoning(PostReasoningEvent),
    PreActing(PreActingEvent),
    PostActing(PostActingEvent),
    PreSummary(PreSummaryEvent),
    PostSummary(PostSummaryEvent),
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Msg;
    use crate::engine::{CallContext, events};
    use std::sync::Arc;

    #[test]
    fn hook_event_accessors() {
        let call = CallContext::new(Arc::new(AgentInfo::new("a", "id-1")));
        let mut event =
            TypedEvent::into_event(events::post_call(call.info(), Msg::assistant("hi")));
        assert_eq!(event.event_type(), HookEventType::PostCall);
        assert_eq!(event.agent().name(), "a");
        assert_eq!(event.agent().id(), "id-1");
        assert_eq!(event.call_id(), call.id());
        let before = Utc::now();
        let at = event.timestamp();
        assert!(before <= at && at <= Utc::now());
        // Read once: later asks and clones see the same time.
        assert_eq!(event.timestamp(), at);
        assert_eq!(event.clone().timestamp(), at);
        event.extensions_mut().insert(7_u32);
        assert_eq!(event.extensions().get::<u32>(), Some(&7));
        // A clone is a snapshot of the data: the extensions stay with the call.
        assert!(event.clone().extensions().is_empty());
    }
}
