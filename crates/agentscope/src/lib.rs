#![doc = include_str!("../../../README.md")]
#![warn(missing_docs)]

mod agent;
mod agent_trait;
mod builder;
mod config;
pub mod context;
mod engine;
mod error;
pub mod hooks;
mod memory;
pub mod model_layers;
pub mod multi_agent;
mod runtime;
pub mod session;
mod stream;
mod system_hooks;
mod toolkit;

pub use agent::{CallInput, ReActAgent};
pub use agent_trait::Agent;
pub use builder::ReActAgentBuilder;
#[cfg(feature = "tiktoken")]
pub use context::TiktokenCounter;
pub use context::{
    CompactionReport, ContextWindowHook, ContextWindows, EstimatedTokens, Summarizer, TokenCounter,
    ToolResultStash,
};
pub use engine::reply::{Reasoning, Reply, ReplyContext};
pub use error::{BuildError, ToolkitError};
pub use memory::InMemoryMemory;
pub use multi_agent::{AgentTool, MsgHub, MultiAgentError, UserAgent};
pub use session::{AgentState, JsonFileSessionStore, SessionError, SessionStore};
pub use stream::{AgentStream, Event, EventType, StreamOptions};
pub use system_hooks::SystemHooks;
pub use toolkit::{ToolFn, ToolSource, Toolkit, TypedCall, tool_fn, typed_tool_fn};

pub use agentscope_core::*;

/// The names most programs need: `use agentscope::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AgentError, AgentStream, BuildError, ContentBlock, Event, EventType, GenerateOptions,
        GenerateReason, Hook, HookError, HookEvent, HookEventType, HookEventTypes, Memory, Model,
        Msg, ReActAgent, Role, StreamOptions, Tool, ToolContext, ToolError, ToolOutput,
        ToolResultBlock, ToolSource, ToolUseBlock, Toolkit, hook_fn, tool_fn, typed_tool_fn,
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
    #[doc = include_str!("../../../docs/context.md")]
    struct Context;
    #[doc = include_str!("../../../docs/multi-agent.md")]
    struct MultiAgent;
    #[doc = include_str!("../../../docs/migrating.md")]
    struct Migrating;
}
