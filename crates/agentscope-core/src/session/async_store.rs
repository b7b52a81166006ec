//! [`AsyncSessionStore`]: a [`SessionStore`] written with `async fn`s, forwarded once.

use std::future::Future;

use futures::future::BoxFuture;

use crate::CancellationToken;

use super::{AgentState, SessionError, SessionLease, SessionStore, SessionSummary, StateChange};

/// A [`SessionStore`] written with `async fn`s: implement this, and the store implements
/// [`SessionStore`] (object-safe, boxed futures) through the one forwarding impl of this
/// crate, so a store writes only what it does differently.
///
/// The methods, their contract and their provided behaviour are [`SessionStore`]'s:
/// [`list_recent`](Self::list_recent) lists and loads every session unless overridden;
/// [`lease`](Self::lease) and [`interrupt`](Self::interrupt) do nothing unless the store
/// coordinates instances. Each future must be `Send` (the compiler checks it where the
/// store is used as a [`SessionStore`]).
///
/// Implement one of the two traits, not both: a type implementing this one already
/// implements [`SessionStore`].
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::Mutex;
///
/// use agentscope_core::session::{
///     AgentIdentity, AgentState, AsyncSessionStore, SessionError, SessionStore, StateChange,
///     validate_session_id,
/// };
///
/// /// Keeps the states in a map (a stand-in for a remote key-value store).
/// #[derive(Default)]
/// struct MapStore(Mutex<BTreeMap<String, AgentState>>);
///
/// impl AsyncSessionStore for MapStore {
///     async fn save(&self, session: &str, change: &StateChange) -> Result<u64, SessionError> {
///         validate_session_id(session)?;
///         let mut map = self.0.lock().unwrap();
///         let state = change.apply(session, map.get(session).cloned())?;
///         let revision = state.revision;
///         map.insert(session.to_owned(), state);
///         Ok(revision)
///     }
///
///     async fn load(&self, session: &str) -> Result<Option<AgentState>, SessionError> {
///         validate_session_id(session)?;
///         Ok(self.0.lock().unwrap().get(session).cloned())
///     }
///
///     async fn delete(&self, session: &str) -> Result<bool, SessionError> {
///         Ok(self.0.lock().unwrap().remove(session).is_some())
///     }
///
///     async fn list(&self) -> Result<Vec<String>, SessionError> {
///         Ok(self.0.lock().unwrap().keys().cloned().collect())
///     }
/// }
///
/// # futures::executor::block_on(async {
/// // A `SessionStore`, as an agent takes it.
/// let store: std::sync::Arc<dyn SessionStore> = std::sync::Arc::new(MapStore::default());
/// let state = AgentState::new(AgentIdentity::new("assistant", "a1"), Vec::new());
/// assert_eq!(store.save("s1", &StateChange::replace(&state)).await?, 1);
/// assert_eq!(store.list().await?, ["s1"]);
/// assert!(store.lease("s1", &Default::default()).await?.is_none());
/// # Ok::<(), SessionError>(())
/// # }).unwrap();
/// ```
pub trait AsyncSessionStore: Sized + Send + Sync + 'static {
    /// As [`SessionStore::save`].
    ///
    /// # Errors
    ///
    /// As [`SessionStore::save`].
    fn save(
        &self,
        session: &str,
        change: &StateChange,
    ) -> impl Future<Output = Result<u64, SessionError>> + Send;

    /// As [`SessionStore::load`].
    ///
    /// # Errors
    ///
    /// As [`SessionStore::load`].
    fn load(
        &self,
        session: &str,
    ) -> impl Future<Output = Result<Option<AgentState>, SessionError>> + Send;

    /// As [`SessionStore::delete`].
    ///
    /// # Errors
    ///
    /// As [`SessionStore::delete`].
    fn delete(&self, session: &str) -> impl Future<Output = Result<bool, SessionError>> + Send;

    /// As [`SessionStore::list`].
    ///
    /// # Errors
    ///
    /// As [`SessionStore::list`].
    fn list(&self) -> impl Future<Output = Result<Vec<String>, SessionError>> + Send;

    /// As [`SessionStore::list_recent`], and provided the same way (every session listed and
    /// loaded: override it when the store can sort in its database).
    ///
    /// # Errors
    ///
    /// As [`SessionStore::list_recent`].
    fn list_recent(
        &self,
        prefix: &str,
        after: Option<&SessionSummary>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<SessionSummary>, SessionError>> + Send {
        super::recent_by_loading(self, prefix, after, limit)
    }

    /// As [`SessionStore::lease`]; provided: `Ok(None)`, the store does not coordinate
    /// instances.
    ///
    /// # Errors
    ///
    /// As [`SessionStore::lease`].
    fn lease(
        &self,
        session: &str,
        interrupt: &CancellationToken,
    ) -> impl Future<Output = Result<Option<SessionLease>, SessionError>> + Send {
        let _ = (session, interrupt);
        std::future::ready(Ok(None))
    }

    /// As [`SessionStore::interrupt`]; provided: `Ok(false)`, the store does not coordinate
    /// instances.
    ///
    /// # Errors
    ///
    /// As [`SessionStore::interrupt`].
    fn interrupt(&self, session: &str) -> impl Future<Output = Result<bool, SessionError>> + Send {
        let _ = session;
        std::future::ready(Ok(false))
    }
}

/// The one forwarding of the workspace: every [`AsyncSessionStore`] is a [`SessionStore`].
impl<T: AsyncSessionStore> SessionStore for T {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        Box::pin(AsyncSessionStore::save(self, session, change))
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        Box::pin(AsyncSessionStore::load(self, session))
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(AsyncSessionStore::delete(self, session))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        Box::pin(AsyncSessionStore::list(self))
    }

    fn list_recent<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a SessionSummary>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, SessionError>> {
        Box::pin(AsyncSessionStore::list_recent(self, prefix, after, limit))
    }

    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Option<SessionLease>, SessionError>> {
        Box::pin(AsyncSessionStore::lease(self, session, interrupt))
    }

    fn interrupt<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(AsyncSessionStore::interrupt(self, session))
    }
}

/// A boxed store is a store (`Box<dyn SessionStore>`): through this trait, as every type
/// that is not a shared pointer (`Arc<S>` implements [`SessionStore`] directly).
impl<S: SessionStore + ?Sized> AsyncSessionStore for Box<S> {
    async fn save(&self, session: &str, change: &StateChange) -> Result<u64, SessionError> {
        (**self).save(session, change).await
    }

    async fn load(&self, session: &str) -> Result<Option<AgentState>, SessionError> {
        (**self).load(session).await
    }

    async fn delete(&self, session: &str) -> Result<bool, SessionError> {
        (**self).delete(session).await
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        (**self).list().await
    }

    async fn list_recent(
        &self,
        prefix: &str,
        after: Option<&SessionSummary>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, SessionError> {
        (**self).list_recent(prefix, after, limit).await
    }

    async fn lease(
        &self,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        (**self).lease(session, interrupt).await
    }

    async fn interrupt(&self, session: &str) -> Result<bool, SessionError> {
        (**self).interrupt(session).await
    }
}
