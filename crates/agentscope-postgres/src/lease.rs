//! Session leases and cross-instance interrupts (see the crate docs, "Leases and
//! interrupts").
//!
//! - A lease is a row of `agentscope_session_leases`: the session, a random token, when it
//!   expires (by the server's clock) and whether it was interrupted. It is taken with an
//!   upsert that only succeeds when no live lease holds the session, renewed by a task every
//!   third of its time to live, deleted on release (only by its own token), and checked by
//!   every fenced save.
//! - A holder that cannot renew (the server or the network is away) stops its call before
//!   the lease expires, a tenth of its time to live before, measured from the last renewal
//!   that went through ([`RenewalDeadline`]): another instance may take the session then.
//! - An interrupt marks the live lease of the session and notifies every store
//!   (`pg_notify`); the store running the call cancels it ([`Listener`]). A holder that
//!   missed the notification reads the mark when it next renews.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope_core::CancellationToken;
use agentscope_core::session::{
    LeaseHandle, RenewalDeadline, Renewed, SessionError, SessionLease, keep_renewed,
    renewal_runtime, validate_session_id,
};
use futures::future::BoxFuture;
use tokio::task::AbortHandle;

use crate::db::Db;
use crate::listener::{Holders, Listener};

/// What a store has for leases.
pub(crate) struct Leases {
    /// How long a lease lives without renewal; `None`: the store takes no leases.
    ttl: Option<Duration>,
    /// The calls of this process that hold leases of this store, for delivering interrupts.
    holders: Arc<Holders>,
    listener: Listener,
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

impl Leases {
    /// Leases living `ttl` (`None`: none are taken).
    pub(crate) fn new(ttl: Option<Duration>) -> Self {
        let holders = Arc::new(Holders::default());
        Self {
            ttl,
            listener: Listener::new(Arc::clone(&holders)),
            holders,
        }
    }

    /// How long a lease lives without renewal; `None`: the store takes no leases.
    pub(crate) fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// Takes session `session`'s lease for one call (see [`SessionStore::lease`]).
    ///
    /// [`SessionStore::lease`]: agentscope_core::session::SessionStore::lease
    pub(crate) async fn take(
        &self,
        db: &Arc<Db>,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        let Some(ttl) = self.ttl else {
            return Ok(None);
        };
        validate_session_id(session)?;
        let runtime = renewal_runtime("PostgreSQL", session)?;
        self.listener.ensure_started(db).await?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        // Registered first, so an interrupt sent the moment the lease is taken is seen.
        self.holders.add(session, &token, interrupt);
        let sent = Instant::now();
        let taken = async {
            let what = "taking the session's lease";
            let client = db.client(Some(session), what).await?;
            let statement = db
                .prepare(&client, &db.sql.take_lease, Some(session), what)
                .await?;
            client
                .query_opt(&statement, &[&session, &token, &millis(ttl)])
                .await
                .map_err(|error| db.fail(Some(session), what, &error))
        }
        .await;
        match taken {
            Ok(Some(_)) => {}
            Ok(None) => {
                self.holders.remove(session, &token);
                return Err(SessionError::busy(session));
            }
            Err(error) => {
                self.holders.remove(session, &token);
                return Err(error);
            }
        }
        let renewal = runtime
            .spawn(renew(
                Arc::clone(db),
                session.to_owned(),
                token.clone(),
                RenewalDeadline::new(ttl, sent).with_stop_margin(ttl / STOP_MARGIN_DIVISOR),
                interrupt.clone(),
            ))
            .abort_handle();
        let handle = PostgresLease {
            db: Arc::clone(db),
            holders: Arc::clone(&self.holders),
            session: session.to_owned(),
            token: token.clone(),
            renewal,
            released: false,
        };
        Ok(Some(SessionLease::new(token, handle)))
    }

    /// Interrupts the call holding session `session`'s lease, wherever it runs (see
    /// [`SessionStore::interrupt`]).
    ///
    /// [`SessionStore::interrupt`]: agentscope_core::session::SessionStore::interrupt
    pub(crate) async fn interrupt(&self, db: &Db, session: &str) -> Result<bool, SessionError> {
        validate_session_id(session)?;
        let what = "interrupting";
        let client = db.client(Some(session), what).await?;
        let statement = db
            .prepare(&client, &db.sql.interrupt, Some(session), what)
            .await?;
        let payload = format!("{}/{session}", db.schema);
        let marked = client
            .query(&statement, &[&session, &payload])
            .await
            .map_err(|error| db.fail(Some(session), what, &error))?;
        Ok(!marked.is_empty())
    }
}

async fn renew_once(
    db: &Db,
    session: &str,
    token: &str,
    ttl: Duration,
) -> Result<Renewed, SessionError> {
    let what = "renewing the session's lease";
    let client = db.client(Some(session), what).await?;
    let statement = db
        .prepare(&client, &db.sql.renew_lease, Some(session), what)
        .await?;
    let row = client
        .query_opt(&statement, &[&session, &token, &millis(ttl)])
        .await
        .map_err(|error| db.fail(Some(session), what, &error))?;
    let Some(row) = row else {
        return Ok(Renewed::Lost);
    };
    match row.try_get(0) {
        Ok(true) => Ok(Renewed::Interrupted),
        Ok(false) => Ok(Renewed::Held),
        Err(error) => Err(db.fail(Some(session), what, &error)),
    }
}

/// How much earlier than its lease would expire a holder that could not renew stops its
/// call: a tenth of the time to live. The expiry is measured from when the last renewal
/// that went through was sent, which is no later than the server's `now()` for it; the
/// margin keeps a timer that fires late, or a task scheduled late on a busy host, from
/// stopping the call after the server's expiry instead of before.
const STOP_MARGIN_DIVISOR: u32 = 10;

/// Renews a lease every third of its time to live until it is released (the task is then
/// aborted): [`keep_renewed`], every store's loop, with [`renew_once`]. The lease's
/// [`RenewalDeadline`] stops the call [`STOP_MARGIN_DIVISOR`] early: the expiry is the
/// server's.
async fn renew(
    db: Arc<Db>,
    session: String,
    token: String,
    lease: RenewalDeadline,
    interrupt: CancellationToken,
) {
    let ttl = lease.ttl();
    let renew = || renew_once(&db, &session, &token, ttl);
    keep_renewed("agentscope_postgres", &session, lease, &interrupt, renew).await;
}

/// Gives a lease back: deletes it if `token` still holds it.
async fn release(db: &Db, session: &str, token: &str) -> Result<(), SessionError> {
    let what = "giving back the session's lease";
    let client = db.client(Some(session), what).await?;
    let statement = db
        .prepare(&client, &db.sql.release_lease, Some(session), what)
        .await?;
    client
        .execute(&statement, &[&session, &token])
        .await
        .map_err(|error| db.fail(Some(session), what, &error))?;
    Ok(())
}

/// A lease held by a call; see [`LeaseHandle`].
struct PostgresLease {
    db: Arc<Db>,
    holders: Arc<Holders>,
    session: String,
    token: String,
    renewal: AbortHandle,
    released: bool,
}

impl PostgresLease {
    /// Stops renewing and forgets the holder; returns what releasing needs.
    fn stop(&mut self) -> (Arc<Db>, String, String) {
        self.released = true;
        self.renewal.abort();
        self.holders.remove(&self.session, &self.token);
        (
            Arc::clone(&self.db),
            self.session.clone(),
            self.token.clone(),
        )
    }
}

impl LeaseHandle for PostgresLease {
    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>> {
        let (db, session, token) = self.stop();
        Box::pin(async move { release(&db, &session, &token).await })
    }
}

impl Drop for PostgresLease {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // The call was dropped: give the lease back in the background (it expires anyway).
        let (db, session, token) = self.stop();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = release(&db, &session, &token).await {
                    tracing::debug!(
                        target: "agentscope_postgres",
                        %error,
                        "giving back the lease of a dropped call failed; it expires"
                    );
                }
            });
        }
    }
}
