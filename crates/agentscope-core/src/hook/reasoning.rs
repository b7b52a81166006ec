//! The reasoning events: [`PreReasoningEvent`] and [`PostReasoningEvent`] around each model
//! call of the loop, and [`ReasoningChunkEvent`] for each streamed chunk.

use std::sync::Arc;

use crate::conversation::check_goto;
use crate::error::HookError;
use crate::hook::meta::{
    Meta, SystemSlot, generate_options_accessors, input_messages_accessors,
    system_message_accessors,
};
use crate::message::Msg;
use crate::model::GenerateOptions;

/// Fired before each model call of the loop.
///
/// Changes apply to this model call only: `input_messages` is a copy of memory, and the
/// system message is a fresh copy of the call's frozen base, so per-iteration appends never
/// accumulate. The model receives `[system message] ++ input_messages`.
#[derive(Debug, Clone)]
pub struct PreReasoningEvent {
    pub(crate) meta: Meta,
    pub(crate) input: Vec<Msg>,
    pub(crate) system: SystemSlot,
    pub(crate) model_name: Arc<str>,
    /// Shared with the agent's settings until a hook changes it: the event stays small and
    /// building it copies nothing.
    pub(crate) options: Arc<GenerateOptions>,
    pub(crate) iteration: usize,
    pub(crate) context_exceeded: bool,
}

impl PreReasoningEvent {
    /// Whether the model refused this step's previous request as too long for its context
    /// window ([`ModelError::is_context_length`](crate::ModelError::is_context_length)). The
    /// engine then runs PreReasoning once more with this set, and context hooks must shrink
    /// the input (compact now, whatever their thresholds say); a second refusal fails the
    /// call.
    pub fn context_exceeded(&self) -> bool {
        self.context_exceeded
    }

    system_message_accessors!();

    input_messages_accessors!(
        "The messages the model will get after the system message (a copy of memory).",
        "Replaces the messages for this model call (memory is not changed)."
    );
    generate_options_accessors!("this model call");

    /// The model's name.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The iteration, starting at 0 for each call.
    pub fn iteration(&self) -> usize {
        self.iteration
    }
}

/// Fired after each model call of the loop, before its message is stored.
///
/// The reasoning message as the last hook leaves it is stored in memory and decides what
/// happens next: `stop_agent()` returns it to the caller (its tool calls stay pending);
/// `goto_reasoning(msgs)` stores `msgs` and calls the model again; otherwise its tool calls
/// run, or it is the answer when it has none. Stop wins over goto.
#[derive(Debug, Clone)]
pub struct PostReasoningEvent {
    pub(crate) meta: Meta,
    pub(crate) message: Msg,
    pub(crate) model_name: Arc<str>,
    pub(crate) iteration: usize,
    pub(crate) stop: bool,
    pub(crate) goto: Option<Vec<Msg>>,
    /// The hook that made the last `goto_reasoning` request (set by the chain).
    pub(crate) goto_by: Option<Arc<str>>,
    /// Whether `goto_reasoning` was called since the chain last attributed a request.
    pub(crate) goto_unattributed: bool,
    /// The first hook that called `stop_agent` (set by the chain).
    pub(crate) stop_by: Option<Arc<str>>,
}

impl PostReasoningEvent {
    /// The model's message.
    pub fn reasoning_message(&self) -> &Msg {
        &self.message
    }

    /// Replaces the message that is stored and acted on.
    pub fn set_reasoning_message(&mut self, message: Msg) {
        self.message = message;
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The iteration, starting at 0 for each call.
    pub fn iteration(&self) -> usize {
        self.iteration
    }

    /// Ends the call after this message is stored; its tool calls stay pending and run when
    /// the agent is called again with no input.
    pub fn stop_agent(&mut self) {
        self.stop = true;
    }

    /// Whether a hook called [`stop_agent`](Self::stop_agent).
    pub fn is_stop_requested(&self) -> bool {
        self.stop
    }

    /// The name of the first hook that called [`stop_agent`](Self::stop_agent), when the
    /// event went through a hook chain; `None` without a request.
    pub fn stop_requested_by(&self) -> Option<&str> {
        self.stop_by.as_deref().filter(|_| self.stop)
    }

    /// Called by the chain after `hook` handled the event: a first stop request is that
    /// hook's.
    pub(super) fn attribute_stop(&mut self, hook: &Arc<str>) {
        if self.stop && self.stop_by.is_none() {
            self.stop_by = Some(Arc::clone(hook));
        }
    }

    /// Stores `messages` after this message and calls the model again (without counting an
    /// iteration; capped by `max_goto_reasoning`).
    ///
    /// Validated at once (the engine's `check_goto`): when the reasoning
    /// message has tool calls, `messages` must carry a result for every one of them, and no
    /// message may have the `System` role.
    ///
    /// # Errors
    ///
    /// [`HookError::InvalidGoto`] saying which rule `messages` break; nothing is requested.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use agentscope_core::engine::{events, CallContext};
    /// use agentscope_core::{AgentInfo, Msg};
    /// # let call = CallContext::new(Arc::new(AgentInfo::new("a", "1")));
    /// # let mut event = events::post_reasoning(call.info(), Msg::assistant("Done?"), "m", 0);
    /// // In a hook, at PostReasoning:
    /// event.goto_reasoning(vec![Msg::user("Check your answer once more.")])?;
    /// assert!(event.is_goto_requested());
    /// # Ok::<(), agentscope_core::HookError>(())
    /// ```
    pub fn goto_reasoning(&mut self, messages: Vec<Msg>) -> Result<(), HookError> {
        check_goto(&self.message, &messages).map_err(HookError::InvalidGoto)?;
        self.goto = Some(messages);
        self.goto_unattributed = true;
        Ok(())
    }

    /// The name of the hook whose `goto_reasoning` request stands (the last one made),
    /// when the event went through a hook chain; `None` without a request.
    pub fn goto_requested_by(&self) -> Option<&str> {
        self.goto.as_ref().and(self.goto_by.as_deref())
    }

    /// Called by the chain after `hook` handled the event: a request made meanwhile is
    /// that hook's.
    pub(super) fn attribute_goto(&mut self, hook: &Arc<str>) {
        if self.goto_unattributed {
            self.goto_unattributed = false;
            self.goto_by = Some(Arc::clone(hook));
        }
    }

    /// Whether a hook called [`goto_reasoning`](Self::goto_reasoning).
    pub fn is_goto_requested(&self) -> bool {
        self.goto.is_some()
    }

    /// The messages of the requested goto.
    pub fn goto_messages(&self) -> Option<&[Msg]> {
        self.goto.as_deref()
    }
}

/// A streamed model chunk during reasoning (a notification: hooks cannot change it).
#[derive(Debug, Clone)]
pub struct ReasoningChunkEvent {
    pub(crate) meta: Meta,
    pub(crate) model_name: Arc<str>,
    pub(crate) chunk: Msg,
    pub(crate) accumulated: Msg,
}

impl ReasoningChunkEvent {
    /// What this chunk added (text, thinking or tool-call fragments).
    pub fn incremental_chunk(&self) -> &Msg {
        &self.chunk
    }

    /// The message so far (text and thinking merged, tool calls assembled).
    pub fn accumulated(&self) -> &Msg {
        &self.accumulated
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AgentInfo;
    use crate::block::{ToolResultBlock, ToolUseBlock};
    use crate::engine::{CallContext, events};
    use crate::message::Role;
    use serde_json::json;

    fn call() -> CallContext {
        CallContext::new(Arc::new(AgentInfo::new("a", "id-1")))
    }

    #[test]
    fn append_system_content_creates_or_appends() {
        let call = call();
        let mut event = events::pre_reasoning(
            call.info(),
            vec![],
            None,
            "m",
            GenerateOptions::default(),
            0,
        );
        event.append_system_content("first");
        assert_eq!(event.system_message().unwrap().text(), "first");
        assert_eq!(event.system_message().unwrap().name, "system");
        event.append_system_content("second");
        assert_eq!(event.system_message().unwrap().text(), "first\nsecond");
        event.set_system_message(Some(Msg::user("coerced")));
        assert_eq!(event.system_message().unwrap().role, Role::System);
        event.set_system_message(None);
        assert!(event.system_message().is_none());
    }

    #[test]
    fn rejected_gotos_request_nothing() {
        let mut reasoning = Msg::assistant("");
        reasoning
            .content
            .push(ToolUseBlock::new("c1", "calc", json!({})).into());
        let call = call();
        let mut event = events::post_reasoning(call.info(), reasoning, "m", 0);
        let err = event.goto_reasoning(vec![]).unwrap_err();
        assert!(matches!(err, HookError::InvalidGoto(_)), "{err:?}");
        assert!(!event.is_goto_requested());
        event
            .goto_reasoning(vec![Msg::tool_result(ToolResultBlock::text(
                "c1", "calc", "1",
            ))])
            .unwrap();
        assert!(event.is_goto_requested());
    }
}
