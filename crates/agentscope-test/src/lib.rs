//! Test support for agentscope-rs.
//!
//! - [`ScriptedModel`]: a model that plays scripted responses (text, thinking, tool calls,
//!   chunked streams, errors, delays) and records every request it receives;
//! - [`RecordingHook`]: a hook that records every event it sees;
//! - [`tools`]: small real tools (a calculator, echo, failing, panicking, slow, progress and
//!   suspending tools) that record their calls;
//! - [`session_store`]: a conformance suite every `SessionStore` implementation must pass,
//!   and (feature `agents`) scenarios with real agents that stores shared by several
//!   instances run;
//! - [`messages`]: messages reduced to what tests compare (rows, texts, speakers);
//! - [`conversation`]: realistic conversation messages for session-store benchmarks;
//! - [`http`]: a local HTTP server that plays scripted replies, for testing model clients;
//! - [`model_conformance`]: the scenarios every model client must decode as
//!   [`ScriptedModel`] plays them;
//! - [`process`]: a copy of the test binary as a worker process;
//! - [`bench`](mod@bench): the median every benchmark reports;
//! - [`components`]: the real programs some tests start (redis-server, PostgreSQL, Node,
//!   Chromium) and the rule when one is missing (ignored with the reason; under CI, a
//!   failure).
//!
//! Use them to test your own hooks and tools against the real engine:
//!
//! ```
//! use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
//!
//! let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
//! let hook = RecordingHook::new(100);
//! // ReActAgent::builder().model(model.clone()).hook(hook.clone()).build()?
//! assert_eq!(model.remaining(), 1);
//! assert!(hook.events().is_empty());
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod bench;
pub mod components;
pub mod conversation;
pub mod http;
pub mod ledger;
pub mod messages;
pub mod model_conformance;
pub mod process;
mod recording;
mod scripted;
pub mod session_store;
pub mod tools;

pub use recording::RecordingHook;
pub use scripted::{ScriptedChunk, ScriptedModel, ScriptedResponse};
