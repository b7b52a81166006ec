//! What the twelve event structs share: [`Meta`] (the call they belong to, the call's
//! extensions while hooks handle them, their creation time), the system-message slot of the
//! Pre* events, and the accessor macros that give every event the same methods.

use std::fmt;
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};

use crate::block::ContentBlock;
use crate::hook::context::{CallInfo, Extensions};
use crate::message::{Msg, Role};

/// What every event carries: its call, the call's extensions (lent by the chain while hooks
/// run), and its time, read from the clock when first asked for (most events are never
/// asked, and a clock read per chunk was a measurable part of streaming).
pub(crate) struct Meta {
    pub(crate) call: Arc<CallInfo>,
    pub(crate) extensions: Extensions,
    timestamp: OnceLock<DateTime<Utc>>,
}

impl Meta {
    pub(crate) fn new(call: &Arc<CallInfo>) -> Self {
        Self {
            call: Arc::clone(call),
            extensions: Extensions::new(),
            timestamp: OnceLock::new(),
        }
    }

    /// The event's time: the first time any hook (or clone) asked for it.
    pub(crate) fn timestamp(&self) -> DateTime<Utc> {
        *self.timestamp.get_or_init(Utc::now)
    }
}

/// A clone is a snapshot of the event's data: the call's extensions stay with the call.
impl Clone for Meta {
    fn clone(&self) -> Self {
        Self {
            call: Arc::clone(&self.call),
            extensions: Extensions::new(),
            timestamp: OnceLock::from(self.timestamp()),
        }
    }
}

impl fmt::Debug for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Meta")
            .field("call", &self.call.id())
            .field("agent", &self.call.agent().name())
            .field("extensions", &self.extensions.len())
            .field("timestamp", &self.timestamp.get())
            .finish()
    }
}

/// The system-message part shared by PreCall, PreReasoning and PreSummary.
#[derive(Debug, Clone, Default)]
pub(crate) struct SystemSlot(pub(crate) Option<Msg>);

impl SystemSlot {
    pub(crate) fn set(&mut self, message: Option<Msg>) {
        self.0 = message.map(|mut msg| {
            msg.role = Role::System;
            msg
        });
    }

    pub(crate) fn append(&mut self, block: ContentBlock) {
        match &mut self.0 {
            Some(msg) => msg.content.push(block),
            None => self.0 = Some(Msg::new(Role::System, "system", vec![block])),
        }
    }
}

/// The accessors every event has (see the module docs).
macro_rules! event_meta_accessors {
    () => {
        /// The call this event belongs to.
        pub fn call(&self) -> &$crate::CallInfo {
            &self.meta.call
        }

        /// The id of the call this event belongs to.
        pub fn call_id(&self) -> $crate::CallId {
            self.meta.call.id()
        }

        /// The agent this event belongs to.
        pub fn agent(&self) -> &$crate::AgentInfo {
            self.meta.call.agent()
        }

        /// The call's extensions: per-call state that hooks stored at earlier events.
        pub fn extensions(&self) -> &$crate::Extensions {
            &self.meta.extensions
        }

        /// The call's extensions, to store per-call state for later events of the call.
        pub fn extensions_mut(&mut self) -> &mut $crate::Extensions {
            &mut self.meta.extensions
        }

        /// The event's time: read from the clock the first time it is asked for (during
        /// the event's dispatch), and the same on every later ask and in clones.
        pub fn timestamp(&self) -> ::chrono::DateTime<::chrono::Utc> {
            self.meta.timestamp()
        }
    };
}

/// The system-message accessors of PreCall, PreReasoning and PreSummary.
macro_rules! system_message_accessors {
    () => {
        /// The system message the model will get (`None` when there is none).
        pub fn system_message(&self) -> Option<&$crate::Msg> {
            self.system.0.as_ref()
        }

        /// Replaces the system message (`None` removes it). The message's role is set to
        /// `System`.
        pub fn set_system_message(&mut self, message: Option<$crate::Msg>) {
            self.system.set(message);
        }

        /// Appends a block to the system message (text: a `&str`, `String` or
        /// [`SharedString`](crate::SharedString); or any [`ContentBlock`](crate::ContentBlock)),
        /// creating one named `"system"` when there is none.
        ///
        /// The OpenAI and Anthropic clients send a system message's text blocks only (their
        /// APIs take text there); other blocks are for models and hooks that read them.
        pub fn append_system_content(&mut self, content: impl Into<$crate::ContentBlock>) {
            self.system.append(content.into());
        }
    };
}

/// The input-message accessors of PreCall, PreReasoning and PreSummary, with each event's
/// own docs for what the messages are and what replacing them changes.
macro_rules! input_messages_accessors {
    ($get:literal, $set:literal) => {
        #[doc = $get]
        pub fn input_messages(&self) -> &[$crate::Msg] {
            &self.input
        }

        #[doc = $set]
        pub fn set_input_messages(&mut self, messages: Vec<$crate::Msg>) {
            self.input = messages;
        }
    };
}

/// The generation-option accessors of PreReasoning and PreSummary; `$call` names the model
/// call in the docs. The options stay shared with the agent's settings until a hook changes
/// them.
macro_rules! generate_options_accessors {
    ($call:literal) => {
        #[doc = concat!("The generation options for ", $call, ".")]
        pub fn generate_options(&self) -> &$crate::GenerateOptions {
            &self.options
        }

        #[doc = concat!("Replaces the generation options for ", $call, ".")]
        pub fn set_generate_options(&mut self, options: $crate::GenerateOptions) {
            self.options = ::std::sync::Arc::new(options);
        }

        #[doc = concat!(
                    "The generation options for ",
                    $call,
                    ", to change in place (copied from the agent's settings on the first change)."
                )]
        pub fn generate_options_mut(&mut self) -> &mut $crate::GenerateOptions {
            ::std::sync::Arc::make_mut(&mut self.options)
        }
    };
}

pub(crate) use {
    event_meta_accessors, generate_options_accessors, input_messages_accessors,
    system_message_accessors,
};
