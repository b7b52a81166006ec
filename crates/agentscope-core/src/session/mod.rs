//! The session seam: where agent states live between calls and processes.
//!
//! - [`AgentState`] is what is stored: an agent's memory, its name and id, user metadata and a
//!   format version.
//! - [`SessionStore`] is where states live, by session id. The `agentscope` crate binds an
//!   agent to a session (`ReActAgentBuilder::session`) and ships a JSON-file store; other
//!   crates ship other stores (`agentscope-sqlite`), depending on this crate only.
//! - [`SessionError`] is what stores report; [`validate_session_id`] the id rules the
//!   built-in stores share.

mod error;
mod state;

use std::sync::Arc;

use futures::future::BoxFuture;

pub use error::{MAX_SESSION_ID_LEN, SessionError, validate_session_id};
pub use state::{AgentIdentity, AgentState, InvalidState};

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
/// use agentscope_core::session::{AgentState, SessionError, SessionStore, validate_session_id};
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
/// # use agentscope_core::session::AgentIdentity;
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

/// Forwards the store methods through a smart pointer (`Arc<S>`, `Box<S>`).
macro_rules! forward_session_store {
    ($($pointer:ident),*) => {$(
        impl<S: SessionStore + ?Sized> SessionStore for $pointer<S> {
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
    )*};
}

forward_session_store!(Arc, Box);
