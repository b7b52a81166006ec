#![doc = include_str!("../../../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod admission;
mod agent;
mod agent_trait;
mod builder;
mod call_ids;
mod call_state;
mod config;
#[cfg(feature = "context")]
#[cfg_attr(docsrs, doc(cfg(feature = "context")))]
pub mod context;
mod engine;
mod error;
pub mod hooks;
mod in_doubt;
pub mod interrupt;
mod memory;
pub mod model_layers;
#[cfg(feature = "multi-agent")]
#[cfg_attr(docsrs, doc(cfg(feature = "multi-agent")))]
pub mod multi_agent;
mod runtime;
pub mod session;
mod stream;
mod sync;
mod system_hooks;
mod toolkit;
#[cfg(feature = "schema")]
mod typed_tool;

// The agent and its engine.
pub use admission::{Admission, Refusal};
pub use agent::{CallInput, ReActAgent};
pub use agent_trait::Agent;
pub use builder::ReActAgentBuilder;
pub use engine::reply::{Reasoning, Reply, ReplyContext};
pub use error::BuildError;
pub use in_doubt::InDoubtResolution;
pub use stream::{AgentStream, Event, EventType, StreamOptions};

// Messages.
pub use agentscope_core::{
    Content, ContentBlock, GenerateReason, ImageBlock, Metadata, Msg, MsgBuilder,
    RedactedThinkingBlock, Role, SharedString, TextBlock, ThinkingBlock, ToolInput,
    ToolResultBlock, ToolUseBlock,
};

// Hooks and the twelve events.
pub use agentscope_core::{
    ActingChunkEvent, AgentInfo, BoxedHook, CallId, CallInfo, DEFAULT_PRIORITY, ErrorEvent,
    Extensions, Hook, HookChain, HookEvent, HookEventType, HookEventTypes, HookFn, HookId,
    HookInfo, ParseCallIdError, PostActingEvent, PostCallEvent, PostReasoningEvent,
    PostSummaryEvent, PreActingEvent, PreCallEvent, PreReasoningEvent, PreSummaryEvent,
    ReasoningChunkEvent, SummaryChunkEvent, hook_fn, pending_tool_uses,
};
pub use system_hooks::SystemHooks;

// Trace context across processes (filled by an OpenTelemetry integration).
pub use agentscope_core::propagation;

// Models.
pub use agentscope_core::{
    BoxedModel, ChatAccumulator, ChatResponse, ChatStream, ChatUsage, GenerateOptions, Model,
    ModelRequest, ResponseFormat, RetryPolicy, ToolChoice, ToolSchema,
};

// Tools.
pub use agentscope_core::{
    BoxedTool, InDoubt, Tool, ToolContext, ToolKind, ToolOutput, ToolSource,
};
pub use error::ToolkitError;
pub use toolkit::{ToolFn, Toolkit, tool_fn};
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub use typed_tool::{TypedCall, typed_tool_fn};

// Memory, cancellation and errors.
pub use agentscope_core::{
    AgentError, CancellationToken, Cancelled, ConversationError, ErrorSource, HookError, Memory,
    ModelError, ToolError,
};
pub use memory::InMemoryMemory;

/// The names most programs need, and the names the guides use without a path:
/// `use agentscope::prelude::*;`. Each is the same item as at its home (the crate root,
/// [`hooks`], [`session`], [`multi_agent`]).
///
/// [`Agent`] is not in it: its `call` and `stream` take a [`CallInput`], and with the trait in
/// scope `agent.call(msg)` on an `Arc<ReActAgent>` resolves to the trait's method (through
/// `impl Agent for Arc<A>`) and stops compiling. Import `agentscope::Agent` where you use the
/// trait.
pub mod prelude {
    pub use crate::hooks::{ApprovalPolicy, ToolApprovalHook};
    #[cfg(feature = "multi-agent")]
    pub use crate::multi_agent::{AgentTool, MsgHub};
    #[cfg(feature = "json-store")]
    pub use crate::session::JsonFileSessionStore;
    #[cfg(feature = "schema")]
    pub use crate::typed_tool_fn;
    pub use crate::{
        AgentError, AgentStream, BuildError, ContentBlock, Event, EventType, GenerateOptions,
        GenerateReason, Hook, HookError, HookEvent, HookEventType, HookEventTypes, Memory, Model,
        Msg, ReActAgent, ReActAgentBuilder, Role, StreamOptions, Tool, ToolContext, ToolError,
        ToolOutput, ToolResultBlock, ToolSource, ToolUseBlock, Toolkit, hook_fn, tool_fn,
    };
}

/// The guides in `docs/` hold Rust code blocks; these items make `cargo test` compile and run
/// them, so the guides cannot drift from the API.
#[cfg(doctest)]
mod guides {
    #[doc = include_str!("../../../docs/hooks.md")]
    struct Hooks;
    #[doc = include_str!("../../../docs/streaming.md")]
    struct Streaming;
    #[doc = include_str!("../../../docs/sessions.md")]
    struct Sessions;
    #[doc = include_str!("../../../docs/hitl.md")]
    struct Hitl;
    #[cfg(feature = "context")]
    #[doc = include_str!("../../../docs/context.md")]
    struct Context;
    #[cfg(feature = "multi-agent")]
    #[doc = include_str!("../../../docs/multi-agent.md")]
    struct MultiAgent;
    #[doc = include_str!("../../../docs/migrating.md")]
    struct Migrating;
}
