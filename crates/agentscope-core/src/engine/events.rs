//! Building the twelve events and taking them apart: what an engine does with an event
//! before and after its hooks ran. Hooks only ever receive events, so none of this is on the
//! event types themselves.

use std::sync::Arc;

use crate::block::{ToolResultBlock, ToolUseBlock};
use crate::error::AgentError;
use crate::hook::meta::{Meta, SystemSlot};
use crate::hook::{
    ActingChunkEvent, CallInfo, ErrorEvent, PostActingEvent, PostCallEvent, PostReasoningEvent,
    PostSummaryEvent, PreActingEvent, PreCallEvent, PreReasoningEvent, PreSummaryEvent,
    ReasoningChunkEvent, SummaryChunkEvent,
};
use crate::message::Msg;
use crate::model::GenerateOptions;

/// PreCall of a call with `input_messages`, on `history` (memory before the call), with the
/// call's seeded system message.
pub fn pre_call(
    call: &Arc<CallInfo>,
    input_messages: Vec<Msg>,
    history: Vec<Msg>,
    system_message: Option<Msg>,
) -> PreCallEvent {
    PreCallEvent {
        meta: Meta::new(call),
        input: input_messages,
        history,
        system: SystemSlot(system_message),
        observation: false,
    }
}

/// The PreCall an agent's `observe()` fires: the observed messages as the input,
/// [`is_observation`](PreCallEvent::is_observation) set, no system message.
pub fn observation(call: &Arc<CallInfo>, observed: Vec<Msg>, history: Vec<Msg>) -> PreCallEvent {
    PreCallEvent {
        observation: true,
        ..pre_call(call, observed, history, None)
    }
}

/// PostCall with the reply the caller will get.
pub fn post_call(call: &Arc<CallInfo>, final_message: Msg) -> PostCallEvent {
    PostCallEvent {
        meta: Meta::new(call),
        final_message,
    }
}

/// PreReasoning before model call number `iteration` (from 0) of the call.
pub fn pre_reasoning(
    call: &Arc<CallInfo>,
    input_messages: Vec<Msg>,
    system_message: Option<Msg>,
    model_name: impl Into<Arc<str>>,
    generate_options: impl Into<Arc<GenerateOptions>>,
    iteration: usize,
) -> PreReasoningEvent {
    PreReasoningEvent {
        meta: Meta::new(call),
        input: input_messages,
        system: SystemSlot(system_message),
        model_name: model_name.into(),
        options: generate_options.into(),
        iteration,
        context_exceeded: false,
    }
}

/// Marks `event` as the one retry of a model call the provider refused for exceeding its
/// context window (see [`PreReasoningEvent::context_exceeded`]).
pub fn mark_context_exceeded(event: &mut PreReasoningEvent) {
    event.context_exceeded = true;
}

/// PostReasoning with the model's message.
pub fn post_reasoning(
    call: &Arc<CallInfo>,
    reasoning_message: Msg,
    model_name: impl Into<Arc<str>>,
    iteration: usize,
) -> PostReasoningEvent {
    PostReasoningEvent {
        meta: Meta::new(call),
        message: reasoning_message,
        model_name: model_name.into(),
        iteration,
        stop: false,
        goto: None,
        goto_by: None,
        goto_unattributed: false,
        stop_by: None,
    }
}

/// A ReasoningChunk: what the chunk added and the message so far.
pub fn reasoning_chunk(
    call: &Arc<CallInfo>,
    model_name: impl Into<Arc<str>>,
    incremental_chunk: Msg,
    accumulated: Msg,
) -> ReasoningChunkEvent {
    ReasoningChunkEvent {
        meta: Meta::new(call),
        model_name: model_name.into(),
        chunk: incremental_chunk,
        accumulated,
    }
}

/// PreActing for one pending tool call.
pub fn pre_acting(call: &Arc<CallInfo>, tool_use: ToolUseBlock) -> PreActingEvent {
    PreActingEvent {
        meta: Meta::new(call),
        tool_use,
        skip: None,
        skip_by: None,
        skip_unattributed: false,
    }
}

/// PostActing with a tool call's result.
pub fn post_acting(
    call: &Arc<CallInfo>,
    tool_use: ToolUseBlock,
    tool_result: ToolResultBlock,
) -> PostActingEvent {
    PostActingEvent {
        meta: Meta::new(call),
        tool_use,
        result: tool_result,
        stop: false,
        stop_by: None,
    }
}

/// An ActingChunk: a progress chunk a running tool emitted. Its parts are the chunk as the
/// hooks left it, `None` when one skipped it (or failed on it): the stream gets nothing.
pub fn acting_chunk(
    call: &Arc<CallInfo>,
    tool_use: Arc<ToolUseBlock>,
    chunk: ToolResultBlock,
) -> ActingChunkEvent {
    ActingChunkEvent {
        meta: Meta::new(call),
        tool_use,
        chunk,
        skip: false,
    }
}

/// PreSummary before the summary model call at the iteration limit.
pub fn pre_summary(
    call: &Arc<CallInfo>,
    input_messages: Vec<Msg>,
    system_message: Option<Msg>,
    generate_options: impl Into<Arc<GenerateOptions>>,
    max_iterations: usize,
    current_iteration: usize,
) -> PreSummaryEvent {
    PreSummaryEvent {
        meta: Meta::new(call),
        input: input_messages,
        system: SystemSlot(system_message),
        options: generate_options.into(),
        max_iterations,
        current_iteration,
    }
}

/// PostSummary with the summary message.
pub fn post_summary(call: &Arc<CallInfo>, summary_message: Msg) -> PostSummaryEvent {
    PostSummaryEvent {
        meta: Meta::new(call),
        message: summary_message,
    }
}

/// A SummaryChunk: what the chunk added and the summary so far.
pub fn summary_chunk(
    call: &Arc<CallInfo>,
    incremental_chunk: Msg,
    accumulated: Msg,
) -> SummaryChunkEvent {
    SummaryChunkEvent {
        meta: Meta::new(call),
        chunk: incremental_chunk,
        accumulated,
    }
}

/// The ErrorEvent of a call that failed with `error`.
pub fn error(call: &Arc<CallInfo>, error: AgentError) -> ErrorEvent {
    ErrorEvent {
        meta: Meta::new(call),
        error,
    }
}

/// What an engine takes back out of an event once its hooks ran: the values as the last
/// hook left them.
#[doc(hidden)]
pub trait EventParts: Sized {
    /// The event's values.
    type Parts;

    /// Takes the event apart.
    fn into_parts(self) -> Self::Parts;
}

/// `impl EventParts for $event { type Parts = $parts; ... }`, the parts read from its fields.
macro_rules! event_parts {
    ($($event:ty => $parts:ty: |$e:ident| $body:expr;)*) => {
        $(impl EventParts for $event {
            type Parts = $parts;

            fn into_parts(self) -> $parts {
                let $e = self;
                $body
            }
        })*
    };
}

event_parts! {
    PreCallEvent => (Vec<Msg>, Option<Msg>): |e| (e.input, e.system.0);
    PostCallEvent => Msg: |e| e.final_message;
    PreReasoningEvent => (Vec<Msg>, Option<Msg>, GenerateOptions):
        |e| (e.input, e.system.0, Arc::unwrap_or_clone(e.options));
    PostReasoningEvent => (Msg, bool, Option<Vec<Msg>>): |e| (e.message, e.stop, e.goto);
    ReasoningChunkEvent => (Msg, Msg): |e| (e.chunk, e.accumulated);
    PreActingEvent => (ToolUseBlock, Option<ToolResultBlock>): |e| (e.tool_use, e.skip);
    PostActingEvent => (ToolResultBlock, bool): |e| (e.result, e.stop);
    ActingChunkEvent => Option<ToolResultBlock>: |e| (!e.skip).then_some(e.chunk);
    PreSummaryEvent => (Vec<Msg>, Option<Msg>, GenerateOptions):
        |e| (e.input, e.system.0, Arc::unwrap_or_clone(e.options));
    PostSummaryEvent => Msg: |e| e.message;
    SummaryChunkEvent => (Msg, Msg): |e| (e.chunk, e.accumulated);
    ErrorEvent => AgentError: |e| e.error;
}
