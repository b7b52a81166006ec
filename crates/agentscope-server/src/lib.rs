//! Serve agentscope-rs agents to user interfaces over [AG-UI](https://docs.ag-ui.com) 1.0,
//! the Agent-User Interaction protocol: a run is a `POST` of a `RunAgentInput`, answered
//! with the run's events as server-sent events, which the official TypeScript client
//! (`@ag-ui/client`, used by CopilotKit) and the web chat page shipped here consume.
//!
//! - [`AgUi`] holds the agents ([`AgentSpec`]), the session store and the options, and gives
//!   an axum [`Router`](axum::Router) to mount in your own app.
//! - **Threads are sessions**: a run's `threadId` names a session in the store (JSON files
//!   by default), so a reload, a second browser or another instance continues the same
//!   conversation. A second run on a busy thread gets `409`.
//! - **Human in the loop**: tool calls that need approval end the run with AG-UI's
//!   interrupt outcome; the next run answers with `resume` (approve, approve with edited
//!   arguments, reject) and the stopped call continues. A client that disconnects cancels
//!   the run, and the engine's durability rules keep an approved tool from running twice.
//! - **Calls in doubt**: a tool call that was running when the process died or the client
//!   went away may or may not have happened. The thread lists it as a `tool_in_doubt`
//!   interrupt, which a person (or the application) answers: done with the result they
//!   checked, retry with the same idempotency key, or fail.
//! - **No stuck threads**: every pending tool call is an interrupt that `resume` answers, or
//!   needs no answer and runs on a run without new messages; `GET
//!   /agents/{agent}/threads/{thread}` says which (`"awaits"`).
//! - Production basics: an optional bearer token, CORS, a body size limit, JSON errors,
//!   a `tracing` span per run (continuing the caller's trace from a W3C `traceparent` when
//!   `agentscope-otel` is installed), and a graceful shutdown that interrupts running calls.
//! - Each run ends with a `CUSTOM "timeline"` event (its model and tool steps with their
//!   times and tokens, and what hooks decided), which the web chat draws.
//!
//! The event mapping and the HTTP routes are documented in `docs/serving.md` and on
//! [`AgUi::router`].
//!
//! ```
//! use agentscope::prelude::*;
//! use agentscope_server::{AgUi, AgentSpec};
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//!
//! let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]).cycling();
//! let agui = AgUi::builder()
//!     .agent(
//!         "assistant",
//!         AgentSpec::new(move || ReActAgent::builder().model(model.clone()))
//!             .approval(ApprovalPolicy::tools(["delete_files"])),
//!     )
//!     .bearer_token("change-me")
//!     .build()?;
//! let app: axum::Router = agui.router();
//! # let _ = app;
//! # Ok::<(), agentscope_server::BuildError>(())
//! ```
#![warn(missing_docs, missing_debug_implementations)]

// One job per module; `use crate::` edges only point down the list (no cycles):
//   builder  -> routes, state                AgUiBuilder, BuildError: checks the options once
//   routes   -> run, assets, state, interrupts, mapping, error
//                                            AgUi, the router, thread history
//   run      -> resume, interrupts, state, mapping, timeline, protocol, error
//                                            one run: input decided under the thread's lease,
//                                            the event stream, its outcome
//   resume   -> timeline, protocol, error    a resume's answers: checked, then applied
//   timeline                                 a run's steps and decisions, for the web chat
//   interrupts -> mapping, protocol          approval and in-doubt interrupts
//   assets                                   the chat page's files and their routes
//   state    -> error                        the served agents (the serving core), the store
//   mapping  -> protocol                     agent events and messages -> AG-UI
//   protocol                                 AG-UI 1.0 wire types
//   error                                    ApiError: JSON errors before a stream starts
// What a served run is (its record with the session, what a thread awaits, the orphan rule,
// retention, the bearer token) is agentscope-serving's.
mod assets;
mod builder;
mod error;
mod interrupts;
mod mapping;
pub mod protocol;
mod resume;
mod routes;
mod run;
mod state;
mod timeline;

pub use agentscope_serving::{AgentSpec, Retention};
pub use builder::{AgUiBuilder, BuildError, DEFAULT_MAX_BODY_BYTES};
pub use error::ApiError;
pub use routes::AgUi;

/// The serving guide's code blocks, compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/serving.md")]
struct ServingGuide;
