//! The summary events at the iteration limit: [`PreSummaryEvent`], [`PostSummaryEvent`] and
//! [`SummaryChunkEvent`].

use std::sync::Arc;

use crate::hook::meta::{
    Meta, SystemSlot, generate_options_accessors, input_messages_accessors,
    system_message_accessors,
};
use crate::message::Msg;
use crate::model::GenerateOptions;

/// Fired before the summary model call at the iteration limit.
#[derive(Debug, Clone)]
pub struct PreSummaryEvent {
    pub(crate) meta: Meta,
    pub(crate) input: Vec<Msg>,
    pub(crate) system: SystemSlot,
    /// Shared with the agent's settings until a hook changes it: the event stays small and
    /// building it copies nothing.
    pub(crate) options: Arc<GenerateOptions>,
    pub(crate) max_iterations: usize,
    pub(crate) current_iteration: usize,
}

impl PreSummaryEvent {
    system_message_accessors!();

    input_messages_accessors!(
        "The messages the model will get after the system message: memory plus the summary \
         hint (a user message that is not stored).",
        "Replaces the messages for the summary call."
    );
    generate_options_accessors!("the summary call");

    /// The agent's iteration limit.
    pub fn max_iterations(&self) -> usize {
        self.max_iterations
    }

    /// How many iterations ran.
    pub fn current_iteration(&self) -> usize {
        self.current_iteration
    }
}

/// Fired after the summary; the summary message is stored and returned.
#[derive(Debug, Clone)]
pub struct PostSummaryEvent {
    pub(crate) meta: Meta,
    pub(crate) message: Msg,
}

impl PostSummaryEvent {
    /// The summary.
    pub fn summary_message(&self) -> &Msg {
        &self.message
    }

    /// Replaces the summary that is stored and returned.
    pub fn set_summary_message(&mut self, message: Msg) {
        self.message = message;
    }
}

/// A streamed summary chunk (a notification).
#[derive(Debug, Clone)]
pub struct SummaryChunkEvent {
    pub(crate) meta: Meta,
    pub(crate) chunk: Msg,
    pub(crate) accumulated: Msg,
}

impl SummaryChunkEvent {
    /// What this chunk added.
    pub fn incremental_chunk(&self) -> &Msg {
        &self.chunk
    }

    /// The summary so far.
    pub fn accumulated(&self) -> &Msg {
        &self.accumulated
    }
}
