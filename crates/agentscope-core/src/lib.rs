//! The data model and seams of agentscope-rs, for authors of hooks, tools, models and session
//! stores.
//!
//! This crate holds what every part of an agent agrees on, and no runtime:
//!
//! - **Messages**: [`Msg`] and its blocks ([`ContentBlock`], [`TextBlock`],
//!   [`ThinkingBlock`], [`RedactedThinkingBlock`], [`ToolUseBlock`], [`ToolResultBlock`],
//!   [`ImageBlock`]), why a reply
//!   ended ([`GenerateReason`]), and the shared types a message is made of
//!   ([`SharedString`], [`Content`], [`Metadata`], [`ToolInput`]).
//! - **Hooks**: the [`Hook`] trait, the closed [`HookEvent`] enum and its twelve event
//!   structs, the kinds a hook listens to ([`HookEventType`], [`HookEventTypes`]), closures
//!   as hooks ([`hook_fn`]), the priority-sorted [`HookChain`], and the call every event
//!   belongs to ([`CallInfo`], [`CallId`], [`AgentInfo`], per-call [`Extensions`]).
//! - **Models**: the [`Model`] seam, its request and streamed response ([`ModelRequest`],
//!   [`ChatResponse`], [`ChatStream`], [`ChatAccumulator`]) and the options
//!   ([`GenerateOptions`], [`ToolChoice`], [`ResponseFormat`]).
//! - **Tools**: the [`Tool`] seam, what a running tool gets ([`ToolContext`]) and returns
//!   ([`ToolOutput`]), and live tool lists ([`ToolSource`]).
//! - **Memory**: the [`Memory`] seam.
//! - **Errors**, one enum per seam: [`AgentError`], [`HookError`], [`ModelError`],
//!   [`ToolError`], [`ConversationError`].
//! - **Retries**: when a failed model request is sent again, for every client and layer
//!   ([`RetryPolicy`]).
//! - **Sessions**: the session store seam, in [`session`].
//! - **Trace context across processes**: the seam an OpenTelemetry integration fills, in
//!   [`propagation`].
//! - **What every crate that stores, sends or holds secrets writes the same way**: secrets
//!   out of `Debug` output, logs and errors ([`redact`]), timestamps ([`rfc3339`]), one-line
//!   error text ([`error_chain`]).
//!
//! Applications depend on the `agentscope` crate, which re-exports these names next to the
//! engine.
//!
//! # What is stable
//!
//! Everything this documentation shows (and the crate's `public-api.txt` lists) follows the
//! crate's version. The `engine` module, what the `agentscope` crate's engine alone needs to
//! build and run the events, is public only because the engine is another crate; it is
//! hidden, unlisted and may change in any release.
#![warn(missing_docs)]

mod accumulate;
mod block;
mod cancel;
mod content;
mod conversation;
#[doc(hidden)]
pub mod engine;
mod error;
mod hook;
mod memory;
mod message;
mod metadata;
mod model;
pub mod propagation;
pub mod redact;
mod retry;
pub mod rfc3339;
pub mod session;
mod text;
mod tool;
mod tool_input;

pub use accumulate::ChatAccumulator;
pub use block::{
    ContentBlock, ImageBlock, RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolResultBlock,
    ToolUseBlock,
};
pub use cancel::{CancellationToken, Cancelled};
pub use content::Content;
pub use conversation::{ConversationError, pending_tool_uses};
pub use error::{AgentError, ErrorSource, HookError, ModelError, ToolError, error_chain};
pub use hook::{
    ActingChunkEvent, AgentInfo, BoxedHook, CallId, CallInfo, DEFAULT_PRIORITY, ErrorEvent,
    Extensions, Hook, HookChain, HookEvent, HookEventType, HookEventTypes, HookFn, HookId,
    HookInfo, ParseCallIdError, PostActingEvent, PostCallEvent, PostReasoningEvent,
    PostSummaryEvent, PreActingEvent, PreCallEvent, PreReasoningEvent, PreSummaryEvent,
    ReasoningChunkEvent, SummaryChunkEvent, hook_fn,
};
pub use memory::Memory;
pub use message::{GenerateReason, Msg, MsgBuilder, Role};
pub use metadata::Metadata;
pub use model::{
    BoxedModel, ChatResponse, ChatStream, ChatUsage, GenerateOptions, Model, ModelRequest,
    ResponseFormat, ToolChoice, ToolSchema,
};
pub use retry::RetryPolicy;
pub use text::SharedString;
pub use tool::{BoxedTool, InDoubt, Tool, ToolContext, ToolKind, ToolOutput, ToolSource};
pub use tool_input::ToolInput;
