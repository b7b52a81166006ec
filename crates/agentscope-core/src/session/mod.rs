//! The session seam: where agent states live between calls and processes.
//!
//! - [`AgentState`] is what is stored: an agent's memory, its name and id, user metadata and a
//!   format version.
//! - [`SessionStore`] is where states live, by session id. The `agentscope` crate binds an
//!   agent to a session (`ReActAgentBuilder::session`) and ships a JSON-file store; other
//!   crates ship other stores (`agentscope-sqlite`), depending on this crate only.
//! - [`SessionError`] is what stores report; [`validate_session_id`] the id rules the
//!   built-in stores share.
//! - [`SessionSummary`] is one line of [`SessionStore::list_recent`]: a session's id,
//!   revision and `saved_at`, and the order listings follow.
//! - What every store shares, so a store writes only what differs: [`AsyncSessionStore`]
//!   (the store as `async fn`s, forwarded to [`SessionStore`] once), the lease defaults
//!   ([`DEFAULT_LEASE_TTL`], [`MIN_LEASE_TTL`], [`MAX_LEASE_TTL`], [`clamp_lease_ttl`]), the
//!   renewal rule and loop ([`RenewalDeadline`], [`keep_renewed`]), the errors
//!   ([`SessionError::busy`], [`SessionError::lease_lost`], [`SessionError::backend`]), the
//!   blocking hand-off ([`run_blocking`]) and a change as JSON columns ([`ChangeColumns`]).
//!   `docs/sessions.md`, "Writing a store", walks through them; the conformance suite
//!   (`agentscope_test::session_store`, with its lease checks) holds a store to them.

mod async_store;
mod blocking;
mod change;
mod columns;
mod error;
mod hook_state;
mod lease;
mod renewal;
mod renewal_loop;
mod state;
mod summary;

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::CancellationToken;

pub use async_store::AsyncSessionStore;
pub use blocking::run_blocking;
pub use change::StateChange;
pub use columns::ChangeColumns;
pub use error::{MAX_SESSION_ID_LEN, SessionError, validate_session_id};
pub use hook_state::HookState;
pub use lease::{LeaseHandle, SessionLease};
pub use renewal::{
    DEFAULT_LEASE_TTL, MAX_LEASE_TTL, MIN_LEASE_TTL, RenewalDeadline, clamp_lease_ttl,
};
pub use renewal_loop::{Renewed, keep_renewed, renewal_runtime};
pub use state::{AgentIdentity, AgentState, AgentStateParts, InvalidState};
pub use summary::SessionSummary;

/// Where agent states live, by session id.
///
/// Object-safe (use `Arc<dyn SessionStore>`) and async: each method returns a boxed future
/// (a store is called twice per agent call; the allocation is nothing next to the I/O).
/// Implementations must be safe to call concurrently, from several agents and tasks.
///
/// # Contract
///
/// - [`save`](Self::save) applies a [`StateChange`] atomically and compare-and-swap: only if
///   the stored revision is the change's [`base`](StateChange::base) (otherwise
///   [`SessionError::Conflict`], nothing written), and all or nothing (a failed or
///   interrupted save, even a killed process, leaves the previous revision loadable). It
///   returns the new revision, `base + 1`. Two writers racing from one revision: exactly one
///   succeeds. A store should write only the change (append the messages), so a save costs
///   the same in a long conversation as in a short one.
/// - [`load`](Self::load) returns `Ok(None)` for a session that does not exist, and never
///   changes what is stored. The state it returns carries its
///   [`revision`](AgentState::revision). A state it cannot read is an error naming the session
///   ([`SessionError::Corrupt`], [`SessionError::UnsupportedVersion`]);
///   [`AgentState::decode`] does that for stores that keep the JSON of
///   [`AgentState::encode`].
/// - [`delete`](Self::delete) returns whether the session existed.
/// - [`list`](Self::list) returns the ids of the stored sessions, sorted.
/// - [`list_recent`](Self::list_recent) pages through the sessions most recently saved
///   first ([`SessionSummary`]'s order). The provided method loads every session to do it:
///   a store that can sort in its database should override it (see the method).
/// - [`lease`](Self::lease) and [`interrupt`](Self::interrupt) are for stores shared by
///   several instances of a service: a store that implements them makes one call at a time
///   run on a session across all instances, and lets any instance interrupt it. The
///   provided methods do nothing (an agent's own busy check is then the only one).
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
/// use agentscope_core::session::{
///     AgentState, SessionError, SessionStore, StateChange, validate_session_id,
/// };
/// use futures::future::{BoxFuture, FutureExt};
///
/// /// Keeps the encoded states in a map (a stand-in for a remote key-value store).
/// #[derive(Default)]
/// struct MapStore(Mutex<BTreeMap<String, Vec<u8>>>);
///
/// impl SessionStore for MapStore {
///     fn save<'a>(&'a self, session: &'a str, change: &'a StateChange)
///         -> BoxFuture<'a, Result<u64, SessionError>> {
///         async move {
///             validate_session_id(session)?;
///             // Load, apply and write under one lock: that makes the save atomic.
///             let mut map = self.0.lock().unwrap();
///             let stored = map.get(session).map(|bytes| AgentState::decode(session, bytes));
///             let state = change.apply(session, stored.transpose()?)?;
///             map.insert(session.to_owned(), state.encode(session)?);
///             Ok(state.revision)
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
/// assert_eq!(store.save("s1", &StateChange::replace(&state)).await?, 1);
/// assert_eq!(store.load("s1").await?.map(|s| s.revision), Some(1));
/// // A second writer that also started from "no session" is refused.
/// let err = store.save("s1", &StateChange::replace(&state)).await.unwrap_err();
/// assert!(matches!(err, SessionError::Conflict { expected: 0, found: 1, .. }));
/// // The provided `list_recent` lists, loads and sorts: right for any store, slow for many
/// // sessions (a store with an ordered index overrides it).
/// let recent = store.list_recent("", None, 10).await?;
/// assert_eq!((recent[0].id.as_str(), recent[0].revision), ("s1", 1));
/// # Ok::<(), SessionError>(())
/// # }).unwrap();
/// ```
pub trait SessionStore: Send + Sync + 'static {
    /// Applies `change` to session `session` if its stored revision is still
    /// `change.base`; returns the new revision.
    ///
    /// # Errors
    ///
    /// An invalid id; [`SessionError::Conflict`] when another writer saved first;
    /// [`SessionError::InvalidChange`] (see [`StateChange::check`]); a failed write. In every
    /// case nothing was written (the previous revision is still stored), except that an
    /// [`Io`](SessionError::Io) or [`Backend`](SessionError::Backend) failure at the very end
    /// may come after the write took effect (a commit whose acknowledgement was lost, an
    /// error after a file's rename): an agent then loads the session and counts the save as
    /// done if it holds the change ([`StateChange::is_applied_in`]).
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>>;

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

    /// The sessions whose ids start with `prefix`, most recently saved first, at most `limit`,
    /// continuing after `after` (the last summary of the previous page; `None` for the first).
    ///
    /// Each [`SessionSummary`] holds the session's id and, exactly as [`load`](Self::load)
    /// returns them, its revision and `saved_at` (the [`StateChange::saved_at`] of its last
    /// save, not the store's clock). The order is `saved_at` descending, then the id
    /// ascending (byte order) for sessions saved at the same instant
    /// ([`SessionSummary::cmp_recent`]); a page holds the sessions strictly after `after` in
    /// that order ([`SessionSummary::is_after`]; only `after`'s `saved_at` and id count).
    /// `limit` 0 returns an empty page.
    ///
    /// ```
    /// # use agentscope_core::session::{SessionError, SessionStore, SessionSummary};
    /// # async fn walk(store: &dyn SessionStore) -> Result<(), SessionError> {
    /// // Every "task-" session, ten at a time, newest first.
    /// let mut after: Option<SessionSummary> = None;
    /// loop {
    ///     let page = store.list_recent("task-", after.as_ref(), 10).await?;
    ///     for summary in &page {
    ///         println!("{} (revision {}, saved {})", summary.id, summary.revision, summary.saved_at);
    ///     }
    ///     match page.last() {
    ///         Some(last) if page.len() == 10 => after = Some(last.clone()),
    ///         _ => break,
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Paging while sessions change
    ///
    /// Pages are read one at a time, not from one snapshot. A session neither saved nor
    /// deleted during a walk is listed exactly once, in its place: no page repeats or skips
    /// it. A session saved between two pages takes its new place, normally the front, which
    /// the walk has passed: it may be missed (if the walk had not reached it yet), or, when
    /// the save carries an older `saved_at` that moves it back ([`StateChange::replace`] of
    /// an old state), seen twice. A session deleted meanwhile is not listed once it is gone.
    /// Start a new walk to see the sessions saved since.
    ///
    /// # The provided method
    ///
    /// Correct for any store, and slow: it [`list`](Self::list)s every session, then
    /// [`load`](Self::load)s each one whose id matches, whole, to read its revision and
    /// `saved_at`, and pages them in memory ([`SessionSummary::page`]): a page costs a load
    /// of every matching session. The built-in stores override it to page in their
    /// database, reading about `limit` sessions' summaries beyond an index scan; a store of
    /// your own with an ordered index should too, keeping
    /// [`SessionSummary::recency_key`] next to each session, and run the conformance suite
    /// (`agentscope_test::session_store`) against it.
    ///
    /// # Errors
    ///
    /// The store could not be read; a session whose summary cannot be read (the provided
    /// method: a session [`load`](Self::load) reports as corrupt) is an error naming it.
    fn list_recent<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a SessionSummary>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, SessionError>> {
        Box::pin(recent_by_loading(self, prefix, after, limit))
    }

    /// Claims session `session` for one call, across every instance sharing the store, and
    /// delivers [`interrupt`](Self::interrupt)s for it by cancelling `interrupt`.
    ///
    /// An agent bound to the session calls this before it loads the session (before any hook
    /// runs), saves with the lease's [`fence`](SessionLease::fence), and releases it when the
    /// call ends. `Ok(None)` means the store does not coordinate instances (the provided
    /// method).
    ///
    /// A store that leases must: refuse a second lease while one is held
    /// ([`SessionError::Busy`]); keep the lease while its holder lives (renewing it) and let it
    /// expire when the holder dies; refuse a save fenced by a lease that another holder has
    /// replaced ([`SessionError::LeaseLost`]); cancel `interrupt` when any instance calls
    /// [`interrupt`](Self::interrupt) for the session while the lease is held; and cancel it
    /// when the holder loses the lease, so the call stops instead of running on while
    /// another instance may hold the session: when it finds that another holder has it, and
    /// when it could not renew it before it would have expired, measured from its last
    /// successful renewal (a store that renews leases in the background follows
    /// [`RenewalDeadline`]; one that renews each lease in a task of its own can run
    /// [`keep_renewed`]).
    ///
    /// # Errors
    ///
    /// [`SessionError::Busy`] while another call holds the session; an invalid id; the store
    /// could not be reached.
    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Option<SessionLease>, SessionError>> {
        let _ = (session, interrupt);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Interrupts the call that holds session `session`'s lease, on whichever instance runs
    /// it (that call then ends as a local `interrupt()` ends it). Returns whether a call was
    /// holding the session. The provided method returns `Ok(false)`: the store does not
    /// coordinate instances.
    ///
    /// # Errors
    ///
    /// An invalid id; the store could not be reached.
    fn interrupt<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        let _ = session;
        Box::pin(std::future::ready(Ok(false)))
    }
}

/// A shared store is a store (`Arc<dyn SessionStore>`, what agents hold); a boxed one is
/// too, through [`AsyncSessionStore`].
impl<S: SessionStore + ?Sized> SessionStore for Arc<S> {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        (**self).save(session, change)
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

    fn list_recent<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a SessionSummary>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, SessionError>> {
        (**self).list_recent(prefix, after, limit)
    }

    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Option<SessionLease>, SessionError>> {
        (**self).lease(session, interrupt)
    }

    fn interrupt<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        (**self).interrupt(session)
    }
}

/// The provided [`SessionStore::list_recent`]: lists every session, loads each one whose id
/// starts with `prefix`, and pages them in memory.
async fn recent_by_loading<S: SessionStore + ?Sized>(
    store: &S,
    prefix: &str,
    after: Option<&SessionSummary>,
    limit: usize,
) -> Result<Vec<SessionSummary>, SessionError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for id in store.list().await? {
        if !id.starts_with(prefix) {
            continue;
        }
        // Gone since it was listed: not listed.
        if let Some(state) = store.load(&id).await? {
            let summary = SessionSummary::of(id, &state);
            if after.is_none_or(|cursor| summary.is_after(cursor)) {
                found.push(summary);
            }
        }
    }
    Ok(SessionSummary::page(found, prefix, after, limit))
}
