//! Durable sessions: save an agent's conversation and resume it in another process.
//!
//! - [`AgentState`] is what is stored: the agent's memory (pending tool calls and suspended
//!   results included), its name and id, user metadata and a format version; see its JSON
//!   shape. Take one with [`ReActAgent::save_state`](crate::ReActAgent::save_state), give one
//!   with [`ReActAgentBuilder::state`](crate::ReActAgentBuilder::state) or
//!   [`ReActAgent::load_state`](crate::ReActAgent::load_state).
//! - [`SessionStore`] is where states live, by session id: [`JsonFileSessionStore`] (one JSON
//!   file per session, written atomically) here, `SqliteSessionStore` in the
//!   `agentscope-sqlite` crate, or your own (Postgres, Redis, ...).
//! - [`ReActAgentBuilder::session`](crate::ReActAgentBuilder::session) binds an agent to one
//!   session of a store: every call loads the session before anything else happens and saves
//!   it after the call if the call changed memory.
//!
//! ```
//! use agentscope::prelude::*;
//! use agentscope::session::{JsonFileSessionStore, SessionStore};
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
mod error;
mod json_file;
mod state;

use std::sync::Arc;

use futures::future::BoxFuture;

pub(crate) use binding::{SessionBinding, Synced, lock};
pub use error::{MAX_SESSION_ID_LEN, SessionError, validate_session_id};
pub use json_file::JsonFileSessionStore;
pub use state::{AgentIdentity, AgentState};

/// Where agent states live, by session id.
///
/// Object-safe (use `Arc<dyn SessionStore>`) and async: each method returns a boxed future
/// (a store is called twice per agent call; the allocation is nothing next to the I/O).
/// Implementations must be safe to call concurrently, from several agents and tasks.
///
/// # Contract
///
/// - [`save`](Self::save) replaces the session's state atomically: a failed or interrupted
///   save leaves the previous state loadable (or no state, if there was none).
/// - [`load`](Self::load) returns `Ok(None)` for a session that does not exist, and never
///   changes what is stored. A state it cannot read is an error naming the session
///   ([`SessionError::Corrupt`], [`SessionError::UnsupportedVersion`]);
///   [`AgentState::decode`] does that for stores that keep the JSON of
///   [`AgentState::encode`].
/// - [`delete`](Self::delete) returns whether the session existed.
/// - [`list`](Self::list) returns the ids of the stored sessions, sorted.
/// - Session ids: the built-in stores accept the ids [`validate_session_id`] accepts and
///   reject others with [`SessionError::InvalidSessionId`]; do the same in yours unless you
///   have a reason not to, so sessions can move between stores.
///
/// # Implementing a store
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::Mutex;
///
/// use agentscope::session::{AgentState, SessionError, SessionStore, validate_session_id};
/// use futures::future::{BoxFuture, FutureExt};
///
/// /// Keeps the encoded states in a map (a stand-in for a remote key-value store).
/// #[derive(Default)]
/// struct MapStore(Mutex<BTreeMap<String, Vec<u8>>>);
///
/// impl SessionStore for MapStore {
///     fn save<'a>(&'a self, session: &'a str, state: &'a AgentState)
///         -> BoxFuture<'a, Result<(), SessionError>> {
///         async move {
///             validate_session_id(session)?;
///             let bytes = state.encode(session)?;
///             self.0.lock().unwrap().insert(session.to_owned(), bytes);
///             Ok(())
///         }
///         .boxed()
///     }
///
///     fn load<'a>(&'a self, session: &'a str)
///         -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
///         async move {
///             validate_session_id(session)?;
///             let bytes = self.0.lock().unwrap().get(session).cloned();
///             bytes.map(|bytes| AgentState::decode(session, &bytes)).transpose()
///         }
///         .boxed()
///     }
///
///     fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
///         async move { Ok(self.0.lock().unwrap().remove(session).is_some()) }.boxed()
///     }
///
///     fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
///         async move { Ok(self.0.lock().unwrap().keys().cloned().collect()) }.boxed()
///     }
/// }
///
/// # use agentscope::session::AgentIdentity;
/// # futures::executor::block_on(async {
/// let store = MapStore::default();
/// let state = AgentState::new(AgentIdentity::new("assistant", "a1"), Vec::new());
/// store.save("s1", &state).await?;
/// assert_eq!(store.load("s1").await?, Some(state));
/// # Ok::<(), SessionError>(())
/// # }).unwrap();
/// ```
pub trait SessionStore: Send + Sync + 'static {
    /// Stores `state` as session `session`, replacing what was stored.
    ///
    /// # Errors
    ///
    /// An invalid id, or a failed write; the previous state is then still stored.
    fn save<'a>(
        &'a self,
        session: &'a str,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<(), SessionError>>;

    /// The state stored as session `session`, `None` if there is none.
    ///
    /// # Errors
    ///
    /// An invalid id, a failed read, or a stored state that cannot be read (corrupt or of
    /// another format version); nothing stored is changed.
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>>;

    /// Deletes session `session`; returns whether it existed.
    ///
    /// # Errors
    ///
    /// An invalid id or a failed delete.
    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>>;

    /// The ids of all stored sessions, sorted.
    ///
    /// # Errors
    ///
    /// The store could not be read.
    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>>;
}

impl<S: SessionStore + ?Sized> SessionStore for Arc<S> {
    fn save<'a>(
        &'a self,
        session: &'a str,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        (**self).save(session, state)
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        (**self).load(session)
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        (**self).delete(session)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        (**self).list()
    }
}

impl<S: SessionStore + ?Sized> SessionStore for Box<S> {
    fn save<'a>(
        &'a self,
        session: &'a str,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        (**self).save(session, state)
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        (**self).load(session)
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        (**self).delete(session)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        (**self).list()
    }
}

/// Runs blocking file work on tokio's blocking pool inside a tokio runtime, inline
/// otherwise (the engine itself does not require tokio).
async fn run_blocking<T, F>(session: Option<&str>, work: F) -> Result<T, SessionError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(work)
            .await
            .map_err(|error| SessionError::io(session, "running the blocking file task", error)),
        Err(_) => Ok(work()),
    }
}
