//! Session leases (see the crate docs, "Leases and interrupts"): the store's
//! [`SessionStore::lease`](agentscope_core::session::SessionStore::lease) and
//! [`interrupt`](agentscope_core::session::SessionStore::interrupt), and the lease's handle,
//! [`SqliteLease`], that gives it back.
//!
//! - [`rows`]: the SQL on the lease rows (take, renew, give back, mark, the fence check);
//! - [`renewal_thread`]: the [`Keeper`], the thread of a store that renews its leases,
//!   delivers interrupts and gives back dropped calls' leases.
//!
//! A lease is taken on the writer connection ([`rows::take`]), then kept by the store's
//! [`Keeper`].

mod renewal_thread;
pub(crate) mod rows;

use std::sync::Arc;
use std::time::Instant;

use agentscope_core::CancellationToken;
use agentscope_core::session::{LeaseHandle, SessionError, SessionLease, validate_session_id};
use futures::future::BoxFuture;

use crate::SqliteSessionStore;
pub(crate) use renewal_thread::Keeper;

impl SqliteSessionStore {
    /// Takes session `session`'s lease for the call that `interrupt` stops (`None` when
    /// the store takes no leases).
    pub(crate) async fn take_lease(
        &self,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        let Some(keeper) = self.inner.leases.clone() else {
            return Ok(None);
        };
        validate_session_id(session)?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let ttl = keeper.ttl();
        let sent = Instant::now();
        let (id, held) = (session.to_owned(), token.clone());
        let dropped = keeper.dropped_on(session);
        let taken = self
            .write(Some(session), move |connection, _| {
                rows::take(connection, &id, &held, &rows::holder(), ttl, &dropped)
            })
            .await?;
        if !taken {
            return Err(SessionError::busy(session));
        }
        let handle = SqliteLease {
            store: self.clone(),
            keeper: Arc::clone(&keeper),
            session: session.to_owned(),
            token: token.clone(),
            released: false,
        };
        // Dropping the handle gives the lease back if it cannot be kept.
        keeper.hold(session, &token, interrupt, sent)?;
        Ok(Some(SessionLease::new(token, handle)))
    }

    /// Interrupts the call holding session `session`'s lease, in whichever process: marks
    /// the lease (its holder's keeper polls the marks) and cancels a holder of this store
    /// at once.
    pub(crate) async fn interrupt_holder(&self, session: &str) -> Result<bool, SessionError> {
        validate_session_id(session)?;
        if self.inner.leases.is_none() {
            return Ok(false);
        }
        let id = session.to_owned();
        let marked = self
            .write(Some(session), move |connection, _| {
                rows::interrupt(connection, &id)
            })
            .await?;
        let local = self
            .inner
            .leases
            .as_ref()
            .is_some_and(|keeper| keeper.interrupt(session));
        Ok(marked || local)
    }
}

/// The handle of a [`SessionLease`] of the SQLite store.
struct SqliteLease {
    store: SqliteSessionStore,
    keeper: Arc<Keeper>,
    session: String,
    token: String,
    released: bool,
}

impl LeaseHandle for SqliteLease {
    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>> {
        self.released = true;
        self.keeper.forget(&self.token);
        let store = self.store.clone();
        let (session, token) = (self.session.clone(), self.token.clone());
        Box::pin(async move {
            let id = session.clone();
            store
                .write(Some(&session), move |connection, _| {
                    rows::release(connection, &id, &token)
                })
                .await
        })
    }
}

impl Drop for SqliteLease {
    fn drop(&mut self) {
        if !self.released {
            // The call was dropped: the keeper gives the lease back in the background.
            self.keeper.give_back(
                std::mem::take(&mut self.session),
                std::mem::take(&mut self.token),
            );
        }
    }
}
