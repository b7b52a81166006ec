//! The call events: [`PreCallEvent`] (before anything is stored) and [`PostCallEvent`] (the
//! reply the caller gets).

use crate::hook::meta::{Meta, SystemSlot, input_messages_accessors, system_message_accessors};
use crate::message::Msg;
use crate::tool::InDoubt;

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

    /// Chooses what happens to tool call `id` if it is in doubt in this call (it started in
    /// an earlier call and its result was never stored: [`CallInfo::was_started`]), when its
    /// tool declares no policy of its own ([`Tool::in_doubt`]). The `ToolApprovalHook`
    /// chooses [`InDoubt::Stop`] this way for the calls its policy guards. A later choice for
    /// the same id replaces an earlier one.
    ///
    /// [`CallInfo::was_started`]: crate::CallInfo::was_started
    /// [`Tool::in_doubt`]: crate::Tool::in_doubt
    ///
    /// ```
    /// use agentscope_core::{HookEvent, InDoubt, hook_fn};
    ///
    /// // Stop for every call in doubt whose tool does not say otherwise.
    /// let careful = hook_fn(|event: &mut HookEvent| {
    ///     if let HookEvent::PreCall(e) = event {
    ///         let started: Vec<String> = agentscope_core::pending_tool_uses(e.history())
    ///             .into_iter()
    ///             .filter(|call| e.call().was_started(&call.id))
    ///             .map(|call| call.id.to_string())
    ///             .collect();
    ///         for id in started {
    ///             e.set_in_doubt(id, InDoubt::Stop);
    ///         }
    ///     }
    ///     Ok(())
    /// });
    /// # let _ = careful;
    /// ```
    pub fn set_in_doubt(&mut self, id: impl Into<String>, policy: InDoubt) {
        let id = id.into();
        let choices = &mut self
            .extensions_mut()
            .get_or_insert_with(InDoubtChoices::default)
            .0;
        choices.retain(|(chosen, _)| *chosen != id);
        choices.push((id, policy));
    }
}

/// The in-doubt policies hooks chose at PreCall, by tool call id (in the call's extensions;
/// the engine reads them with `engine::in_doubt_choice`).
#[derive(Debug, Default)]
pub(crate) struct InDoubtChoices(pub(crate) Vec<(String, InDoubt)>);

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
