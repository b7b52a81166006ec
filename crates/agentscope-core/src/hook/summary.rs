//! The summary events at the iteration limit: [`PreSummaryEvent`], [`PostSummaryEvent`] and
//! [`SummaryChunkEvent`].

use std::sync::Arc;

use crate::hook::context::CallInfo;
use crate::hook::meta::{Meta, SystemSlot, event_meta_accessors, system_message_accessors};
use crate::message::Msg;
use crate::model::GenerateOptions;

/// Fired before the summary model call at the iteration limit.
#[derive(Debug, Clone)]
pub struct PreSummaryEvent {
    pub(super) meta: Meta,
    input: Vec<Msg>,
    system: SystemSlot,
    /// Shared with the agent's settings until a hook changes it: the event stays small and
    /// building it copies nothing.
    options: Arc<GenerateOptions>,
    max_iterations: usize,
    current_iteration: usize,
}

impl PreSummaryEvent {
    /// Creates the event.
    pub fn new(
        call: &Arc<CallInfo>,
        input_messages: Vec<Msg>,
        system_message: Option<Msg>,
        generate_options: impl Into<Arc<GenerateOptions>>,
        max_iterations: usize,
        current_iteration: usize,
    ) -> Self {
        Self {
            meta: Meta::new(call),
            input: input_messages,
            system: SystemSlot(system_message),
            options: generate_options.into(),
            max_iterations,
            current_iteration,
        }
    }

    event_meta_accessors!();
    system_message_accessors!();

    /// The messages the model will get after the system message: memory plus the summary
    /// hint (a user message that is not stored).
    pub fn input_messages(&self) -> &[Msg] {
        &self.input
    }

    /// Replaces the messages for the summary call.
    pub fn set_input_messages(&mut self, messages: Vec<Msg>) {
        self.input = messages;
    }

    /// The generation options for the summary call.
    pub fn generate_options(&self) -> &GenerateOptions {
        &self.options
    }

    /// Replaces the generation options for the summary call.
    pub fn set_generate_options(&mut self, options: GenerateOptions) {
        self.options = Arc::new(options);
    }

    /// The generation options for the summary call, to change in place (copied from the
    /// agent's settings on the first change).
    pub fn generate_options_mut(&mut self) -> &mut GenerateOptions {
        Arc::make_mut(&mut self.options)
    }

    /// The agent's iteration limit.
    pub fn max_iterations(&self) -> usize {
        self.max_iterations
    }

    /// How many iterations ran.
    pub fn current_iteration(&self) -> usize {
        self.current_iteration
    }

    /// Takes the messages, system message and options.
    pub fn into_parts(self) -> (Vec<Msg>, Option<Msg>, GenerateOptions) {
        (
            self.input,
            self.system.0,
            Arc::unwrap_or_clone(self.options),
        )
    }
}

/// Fired after the summary; the summary message is stored and returned.
#[derive(Debug, Clone)]
pub struct PostSummaryEvent {
    pub(super) meta: Meta,
    message: Msg,
}

impl PostSummaryEvent {
    /// Creates the event.
    pub fn new(call: &Arc<CallInfo>, summary_message: Msg) -> Self {
        Self {
            meta: Meta::new(call),
            message: summary_message,
        }
    }

    event_meta_accessors!();

    /// The summary.
    pub fn summary_message(&self) -> &Msg {
        &self.message
    }

    /// Replaces the summary that is stored and returned.
    pub fn set_summary_message(&mut self, message: Msg) {
        self.message = message;
    }

    /// Takes the summary.
    pub fn into_summary_message(self) -> Msg {
        self.message
    }
}

/// A streamed summary chunk (a notification).
#[derive(Debug, Clone)]
pub struct SummaryChunkEvent {
    pub(super) meta: Meta,
    chunk: Msg,
    accumulated: Msg,
}

impl SummaryChunkEvent {
    /// Creates the event.
    pub fn new(call: &Arc<CallInfo>, incremental_chunk: Msg, accumulated: Msg) -> Self {
        Self {
            meta: Meta::new(call),
            chunk: incremental_chunk,
            accumulated,
        }
    }

    event_meta_accessors!();

    /// What this chunk added.
    pub fn incremental_chunk(&self) -> &Msg {
        &self.chunk
    }

    /// The summary so far.
    pub fn accumulated(&self) -> &Msg {
        &self.accumulated
    }

    /// Takes the chunk and the accumulated message.
    pub fn into_parts(self) -> (Msg, Msg) {
        (self.chunk, self.accumulated)
    }
}
