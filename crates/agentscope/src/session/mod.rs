//! Durable sessions: save an agent's conversation and resume it in another process.
//!
//! - [`AgentState`] is what is stored: the agent's memory (pending tool calls and suspended
//!   results included), its name and id, user metadata, the revision, the tool calls
//!   running, the hooks' [`HookState`] and a format version; see its JSON
//!   shape. A save writes a [`StateChange`] from a revision, compare-and-swap. Take one with [`ReActAgent::save_state`](crate::ReActAgent::save_state), give one
//!   with [`ReActAgentBuilder::state`](crate::ReActAgentBuilder::state) or
//!   [`ReActAgent::load_state`](crate::ReActAgent::load_state).
//! - [`SessionStore`] is where states live, by session id: [`JsonFileSessionStore`] (an
//!   append-only JSON Lines log per session) here, `SqliteSessionStore` in the
//!   `agentscope-sqlite` crate, or your own (Postgres, Redis, ...).
//! - [`ReActAgentBuilder::session`](crate::ReActAgentBuilder::session) binds an agent to one
//!   session of a store: every call loads the session before anything else happens and
//!   saves what changed at every step (after a reasoning message with tool calls, before
//!   and after each tool, at the end), so a dropped call or a killed process leaves a
//!   resumable session.
//!
//! ```
//! use agentscope::prelude::*;
//! use agentscope::session::SessionStore;
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//!
//! # let dir = std::env::temp_dir().join(format!("agentscope-doc-mod-{}", std::process::id()));
//! # futures::executor::block_on(async {
//! let store = JsonFileSessionStore::new(&dir);
//!
//! // Process 1.
//! let agent = ReActAgent::builder()
//!     .model(ScriptedModel::new([ScriptedResponse::text("Hi Alice!")]))
//!     .session(store.clone(), "chat-1")
//!     .build()?;
//! agent.call("Hi, I am Alice.").await?;
//!
//! // Process 2, after a restart: a new agent on the same session continues the conversation.
//! let model = ScriptedModel::new([ScriptedResponse::text("You are Alice.")]);
//! let agent = ReActAgent::builder()
//!     .model(model.clone())
//!     .session(store.clone(), "chat-1")
//!     .build()?;
//! agent.call("Who am I?").await?;
//! assert_eq!(model.requests()[0].messages.len(), 3); // the first exchange + the question
//! assert_eq!(store.load("chat-1").await?.map(|s| s.messages.len()), Some(4));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
//!
//! See `docs/sessions.md` for what is stored, how to pick a store, and how several service
//! instances share sessions.

mod binding;
mod durability;
#[cfg(feature = "json-store")]
mod json_file;
pub(crate) mod save_queue;

pub(crate) use binding::{Current, SessionBinding, Synced, check_sessionless};
pub use durability::Durability;
pub(crate) use durability::refuses as durability_refuses;
#[cfg(feature = "json-store")]
#[cfg_attr(docsrs, doc(cfg(feature = "json-store")))]
pub use json_file::JsonFileSessionStore;
pub(crate) use save_queue::SaveQueue;

pub use agentscope_core::session::{
    AgentIdentity, AgentState, HookState, InvalidState, LeaseHandle, MAX_SESSION_ID_LEN,
    SessionError, SessionLease, SessionStore, SessionSummary, StateChange, validate_session_id,
};
