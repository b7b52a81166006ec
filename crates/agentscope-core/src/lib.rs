//! Data model and seams of agentscope-rs.
//!
//! This crate holds what every part of an agent agrees on, and no runtime:
//!
//! - messages: [`Msg`], [`ContentBlock`] and the block types, [`GenerateReason`];
//! - the rules of a conversation's shape, with one error type: [`conversation`];
//! - the hook model ([`hook`]): the closed [`HookEvent`] enum and its twelve event structs,
//!   the call they belong to ([`CallContext`], [`CallId`], per-call [`Extensions`]), the
//!   [`Hook`] trait, [`hook_fn`] and the priority-sorted [`HookChain`];
//! - the seams the engine calls: [`Model`], [`Tool`], [`Memory`], and the session seam
//!   ([`session`]: [`SessionStore`](session::SessionStore), [`AgentState`](session::AgentState));
//! - one error enum per seam: [`HookError`], [`ModelError`], [`ToolError`], [`AgentError`],
//!   [`SessionError`](session::SessionError);
//! - the rules every crate shares, each in one place: [`RetryPolicy`] (when a failed model
//!   request is sent again) and [`redact`] (secrets out of what people read).
//!
//! Most users depend on the `agentscope` crate, which re-exports all of this next to the
//! engine.
#![warn(missing_docs)]

mod accumulate;
mod cancel;
mod content;
pub mod conversation;
mod error;
pub mod hook;
mod memory;
mod message;
mod metadata;
mod model;
pub mod redact;
mod retry;
pub mod rfc3339;
pub mod session;
mod text;
mod tool;
mod tool_input;

pub use accumulate::ChatAccumulator;
pub use cancel::{CancellationToken, Cancelled};
pub use content::Content;
pub use conversation::ConversationError;
pub use error::{AgentError, ErrorSource, HookError, ModelError, ToolError};
pub use hook::{
    ActingChunkEvent, AgentInfo, BoxedHook, CallContext, CallId, CallInfo, Chained,
    DEFAULT_PRIORITY, ErrorEvent, Event, Extensions, Hook, HookChain, HookEvent, HookEventType,
    HookEventTypes, HookFn, HookId, HookInfo, ParseCallIdError, PostActingEvent, PostCallEvent,
    PostReasoningEvent, PostSummaryEvent, PreActingEvent, PreCallEvent, PreReasoningEvent,
    PreSummaryEvent, ReasoningChunkEvent, SummaryChunkEvent, hook_fn,
};
pub use memory::Memory;
pub use message::{
    ContentBlock, FINISH_REASON_KEY, GENERATE_REASON_KEY, GenerateReason, ImageBlock, Msg,
    MsgBuilder, Role, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock,
};
pub use metadata::Metadata;
pub use model::{
    BoxedModel, ChatResponse, ChatStream, ChatUsage, GenerateOptions, Model, ModelRequest,
    ResponseFormat, ToolChoice, ToolSchema,
};
pub use retry::RetryPolicy;
pub use session::HookState;
pub use text::SharedString;
pub use tool::{
    BoxedTool, ProgressReceiver, ProgressSender, Tool, ToolContext, ToolKind, ToolOutput,
    ToolProgress, progress_channel,
};
pub use tool_input::ToolInput;
