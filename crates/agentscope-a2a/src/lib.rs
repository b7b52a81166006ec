//! Serve agentscope-rs agents to other agents over [A2A](https://a2a-protocol.org) 1.0, the
//! Agent2Agent protocol, and call remote agents, on the official A2A Rust SDK (`a2a-lf`,
//! `a2a-server-lf`).
//!
//! - [`A2a`] holds one agent (a factory of a configured [`ReActAgentBuilder`]), the
//!   session store and the card's details, and gives an axum [`Router`](axum::Router) to
//!   mount in your own app, beside the AG-UI routes of `agentscope-server`.
//! - **The agent card** (`/.well-known/agent-card.json`) is generated from the agent: its
//!   name, a skill per tool, streaming, and the JSON-RPC and HTTP+JSON interfaces at the
//!   configured URL with protocol version 1.0.
//! - **A task is one call** of the agent; **a context is a session** in the store
//!   (`<agent>.<contextId>`), so a second message in a context continues the conversation,
//!   on any instance sharing the store and after a restart. Tasks are stored in the same
//!   store.
//! - `SendMessage` answers with the finished task (the reply as its `reply` artifact and
//!   its status message, the turn in its history); `SendStreamingMessage` streams the task,
//!   then `working` status updates (text deltas, tool calls, tool progress and results, told
//!   apart by the `agentscope.kind` metadata), then the reply artifact, then the terminal
//!   status. `GetTask`, `ListTasks`, `CancelTask` (an interrupt of the running call) and
//!   `SubscribeToTask` are served too, on any instance sharing the store (a task running
//!   elsewhere is canceled through the store and followed through it).
//! - **Approvals as `input-required`**: with [`A2aBuilder::approval`], a tool call that
//!   needs a decision ends the task asking for it; the next message on the task decides,
//!   and the stopped call resumes.
//!
//! - **Calling remote agents**: [`RemoteAgent`] is any A2A 1.0 agent, found from its card,
//!   as a local [`Agent`](agentscope::Agent) (in a `MsgHub`, a pipeline, an `AgentTool`),
//!   on the SDK's types with HTTP of its own (credentials only to the origins the user
//!   named, every request and stream bounded); [`RemoteAgentTool`] is the same agent as a
//!   tool whose questions (`input-required`) suspend the tool call until they are answered.
//!
//! The concept mapping is in `docs/a2a.md`.
//!
//! ```
//! use agentscope::prelude::*;
//! use agentscope_a2a::A2a;
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//!
//! let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
//! let a2a = A2a::builder()
//!     .agent(move || ReActAgent::builder().name("assistant").model(model.clone()))
//!     .url("http://127.0.0.1:3000/a2a")
//!     .description("Answers questions.")
//!     .build()?;
//! let app: axum::Router = axum::Router::new().nest("/a2a", a2a.router());
//! # let _ = app;
//! # Ok::<(), agentscope_a2a::BuildError>(())
//! ```
//!
//! [`ReActAgentBuilder`]: agentscope::ReActAgentBuilder
#![warn(missing_docs, missing_debug_implementations)]

// One job per module; `use crate::` edges only point down the list (no cycles):
//   builder  -> card, routes             A2aBuilder, BuildError: checks the options once
//   routes   -> handler, stream, version A2a, the router (the handler, the SDK's routers)
//   stream   -> handler                  SendStreamingMessage on JSON-RPC, events written once
//   handler  -> listing, live, turn, task, convert
//                                        every A2A method, on the serving core
//   listing  -> live, task               ListTasks: newest first, paged in the store
//   live                                 the tasks this instance runs, followed live
//   turn     -> approvals, task, convert what a message does to its context; events as updates
//   task     -> approvals, convert       tasks as views of served runs; task ids
//   approvals -> convert                 input-required: the question, the decisions
//   card                                 the agent card, from the agent
//   version                              the A2A-Version header on HTTP+JSON
//   remote   -> convert                  calling remote agents: RemoteAgent, RemoteAgentTool
//   convert                              A2A messages and parts <-> Msg
mod approvals;
mod builder;
mod card;
mod convert;
mod handler;
mod listing;
mod live;
mod remote;
mod routes;
mod stream;
mod task;
mod turn;
mod version;

pub use agentscope_serving::Retention;
pub use builder::{A2aBuilder, BuildError};
pub use remote::{InDoubtCall, RemoteAgent, RemoteAgentBuilder, RemoteAgentTool, RemoteError};
pub use routes::A2a;

/// The A2A guide's code blocks, compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/a2a.md")]
struct A2aGuide;
