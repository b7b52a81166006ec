#![doc = include_str!("../../../README.md")]
#![warn(missing_docs)]

mod agent;
mod builder;
mod config;
mod engine;
mod error;
pub mod hooks;
mod memory;
mod runtime;
pub mod session;
mod stream;
mod system_hooks;
mod toolkit;

pub use agent::{CallInput, ReActAgent};
pub use builder::ReActAgentBuilder;
pub use error::{BuildError, ToolkitError};
pub use memory::InMemoryMemory;
pub use session::{AgentState, JsonFileSessionStore, SessionError, SessionStore};
pub use stream::{AgentStream, Event, EventType, StreamOptions};
pub use system_hooks::SystemHooks;
pub use toolkit::{ToolFn, Toolkit, TypedCall, tool_fn, typed_tool_fn};

pub use agentscope_core::*;

/// The names most programs need: `use agentscope::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AgentError, AgentStream, BuildError, ContentBlock, Event, EventType, GenerateOptions,
        GenerateReason, Hook, HookError, HookEvent, HookEventType, HookEventTypes, Memory, Model,
        Msg, ReActAgent, Role, StreamOptions, Tool, ToolContext, ToolError, ToolOutput,
        ToolResultBlock, ToolUseBlock, Toolkit, hook_fn, tool_fn, typed_tool_fn,
    };
}
