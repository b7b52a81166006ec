//! The call events: [`PreCallEvent`] (before anything is stored) and [`PostCallEvent`] (the
//! reply the caller gets).

use crate::hook::meta::{Meta, SystemSlot, input_messages_accessors, system_message_accessors};
use crate::message::Msg;

/// Fired once at the start of a call, before anything is stored.
///
/// Hooks may change the new input and the system message; the system message as PreCall
/// leaves it is frozen as the base for the whole call (each PreReasoning starts from a fresh
/// copy of it). Input messages must not have the `System` role: the call fails if they do.
///
/// An agent's `observe()` fires it too, with the observed messages as the input and
/// [`is_observation`](Self::is_observation) set: what the hooks leave is stored, and nothing
/// else happens (no reasoning, no PostCall; the system message is not used). So a hook that
/// redacts input redacts observed messages as well; one that must not act on observations
/// checks the flag.
#[derive(Debug, Clone)]
pub struct PreCallEvent {
    pub(crate) meta: Meta,
    pub(crate) input: Vec<Msg>,
    pub(crate) history: Vec<Msg>,
    pub(crate) system: SystemSlot,
    pub(crate) observation: bool,
}

impl PreCallEvent {
    /// Whether the agent is observing the input messages (`observe()`: they are stored and
    /// not replied to) rather than starting a call.
    pub fn is_observation(&self) -> bool {
        self.observation
    }

    system_message_accessors!();

    input_messages_accessors!(
        "The new messages of this call (empty when resuming).",
        "Replaces the new messages of this call."
    );

    /// The agent's memory before this call (read-only).
    pub fn history(&self) -> &[Msg] {
        &self.history
    }
}

/// Fired once when a call completed; the final message is what the caller gets.
///
/// Changing it does not change memory, which keeps the loop's message.
#[derive(Debug, Clone)]
pub struct PostCallEvent {
    pub(crate) meta: Meta,
    pub(crate) final_message: Msg,
}

impl PostCallEvent {
    /// The reply.
    pub fn final_message(&self) -> &Msg {
        &self.final_message
    }

    /// Replaces the reply the caller gets.
    pub fn set_final_message(&mut self, message: Msg) {
        self.final_message = message;
    }
}
