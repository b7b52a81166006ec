//! Data model and seams of agentscope-rs.
//!
//! This crate holds what every part of an agent agrees on, and no runtime:
//!
//! - messages: [`Msg`], [`ContentBlock`] and the block types, [`GenerateReason`];
//! - the hook model: the closed [`HookEvent`] enum and its twelve event structs, the
//!   [`Hook`] trait, [`hook_fn`] and the priority-sorted [`HookChain`];
//! - the seams the engine calls: [`Model`], [`Tool`], [`Memory`];
//! - one error enum per seam: [`HookError`], [`ModelError`], [`ToolError`], [`AgentError`].
//!
//! Most users depend on the `agentscope` crate, which re-exports all of this next to the
//! engine.
#![warn(missing_docs)]

mod accumulate;
mod error;
mod event;
mod hook;
mod memory;
mod message;
mod model;
mod text;
mod tool;

pub use accumulate::ChatAccumulator;
pub use error::{AgentError, ErrorSource, HookError, ModelError, ToolError, panic_message};
pub use event::{
    ActingChunkEvent, AgentInfo, ErrorEvent, HookEvent, HookEventType, HookEventTypes,
    PostActingEvent, PostCallEvent, PostReasoningEvent, PostSummaryEvent, PreActingEvent,
    PreCallEvent, PreReasoningEvent, PreSummaryEvent, ReasoningChunkEvent, SummaryChunkEvent,
    check_tool_results, system_injection_message, validate_goto,
};
pub use hook::{
    BoxedHook, DEFAULT_PRIORITY, DispatchFailure, Hook, HookChain, HookFn, HookId, HookInfo,
    hook_fn,
};
pub use memory::Memory;
pub use message::{
    ContentBlock, GENERATE_REASON_KEY, GenerateReason, ImageBlock, Msg, MsgBuilder, Role,
    TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock,
};
pub use model::{
    BoxedModel, ChatResponse, ChatStream, ChatUsage, GenerateOptions, Model, ModelRequest,
    ResponseFormat, ToolChoice, ToolSchema,
};
pub use text::SharedString;
pub use tool::{
    BoxedTool, CancellationToken, Cancelled, ProgressSender, Tool, ToolContext, ToolOutput,
    ToolProgress, progress_channel,
};
