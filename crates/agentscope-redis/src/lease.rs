//! Session leases and cross-instance interrupts (see the crate docs, "Leases and
//! interrupts").
//!
//! - A lease is a string key `P{<id>}:lease` holding a random token, set with `SET NX PX`,
//!   renewed by a task every third of its time to live, deleted on release (only by its own
//!   token: [`scripts::RELEASE`]), and checked by every fenced save ([`scripts::SAVE`]). A
//!   holder that cannot renew it before it would expire stops its call
//!   ([`RenewalDeadline`]).
//! - An interrupt marks the lease holding the session (`P{<id>}:interrupt` = its token, for
//!   as long as a lease lives) and publishes the session id on `P` + `interrupts`. Every
//!   store subscribes to that channel (one RESP3 connection per connected store, resubscribed
//!   after a reconnect) and cancels the calls it runs on that session; a holder that missed
//!   the message sees the mark when it next renews.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agentscope_core::CancellationToken;
use agentscope_core::session::{
    DEFAULT_LEASE_TTL, LeaseHandle, RenewalDeadline, Renewed, SessionError, SessionLease,
    keep_renewed, renewal_runtime, validate_session_id,
};
use futures::future::BoxFuture;
use redis::aio::ConnectionManager;
use redis::{PushInfo, PushKind, Value};
use tokio::task::AbortHandle;

use crate::connection::Connection;
use crate::keys::{flag_key, lease_key};
use crate::scripts;

/// The suffix of the interrupt channel's name (after the key prefix).
const CHANNEL_SUFFIX: &str = "interrupts";

/// What every store made from one connect shares for leases.
pub(crate) struct Leases {
    /// How long a lease lives without renewal; `None`: the store takes no leases.
    ttl: Option<Duration>,
    /// The calls of this process that hold leases, for delivering interrupts.
    holders: Arc<Holders>,
    /// The RESP3 connection that receives interrupts (`None` without leases).
    subscriber: Option<ConnectionManager>,
    /// The interrupt channels subscribed to (one per key prefix that took a lease).
    channels: Mutex<HashSet<String>>,
}

/// The lease holders of this process: lease key to (token, the call's interrupt token).
#[derive(Default)]
pub(crate) struct Holders(Mutex<HashMap<String, Vec<(String, CancellationToken)>>>);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Holders {
    fn add(&self, key: &str, token: &str, interrupt: &CancellationToken) {
        lock(&self.0)
            .entry(key.to_owned())
            .or_default()
            .push((token.to_owned(), interrupt.clone()));
    }

    fn remove(&self, key: &str, token: &str) {
        let mut holders = lock(&self.0);
        if let Some(entries) = holders.get_mut(key) {
            entries.retain(|(held, _)| held != token);
            if entries.is_empty() {
                holders.remove(key);
            }
        }
    }

    /// Handles a message of the subscriber connection: an interrupt for a session cancels
    /// the calls of this process holding its lease.
    pub(crate) fn on_push(&self, push: PushInfo) {
        if push.kind != PushKind::Message {
            return;
        }
        let [Value::BulkString(channel), Value::BulkString(session)] = &push.data[..] else {
            return;
        };
        let (Ok(channel), Ok(session)) =
            (std::str::from_utf8(channel), std::str::from_utf8(session))
        else {
            return;
        };
        let Some(prefix) = channel.strip_suffix(CHANNEL_SUFFIX) else {
            return;
        };
        let key = lease_key(prefix, session);
        if let Some(entries) = lock(&self.0).get(&key) {
            for (_, interrupt) in entries {
                interrupt.cancel();
            }
        }
    }
}

/// The interrupt channel of `prefix`.
fn channel(prefix: &str) -> String {
    format!("{prefix}{CHANNEL_SUFFIX}")
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

impl Leases {
    /// Leases living `ttl` (`None`: none are taken), for the calls `holders` of this process,
    /// with interrupts arriving on `subscriber`.
    pub(crate) fn new(
        ttl: Option<Duration>,
        holders: Arc<Holders>,
        subscriber: Option<ConnectionManager>,
    ) -> Self {
        Self {
            ttl,
            holders,
            subscriber,
            channels: Mutex::default(),
        }
    }

    /// How long a lease lives without renewal; `None`: the store takes no leases.
    pub(crate) fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// Takes session `session`'s lease (under `prefix`) for one call (see
    /// [`SessionStore::lease`]).
    ///
    /// [`SessionStore::lease`]: agentscope_core::session::SessionStore::lease
    pub(crate) async fn take(
        &self,
        connection: &Connection,
        prefix: &Arc<str>,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        let Some(ttl) = self.ttl else {
            return Ok(None);
        };
        validate_session_id(session)?;
        let key = lease_key(prefix, session);
        let runtime = renewal_runtime("Redis", session)?;
        self.subscribe_interrupts(connection, prefix).await?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let sent = Instant::now();
        // Registered first, so an interrupt published the moment the lease is taken is seen.
        self.holders.add(&key, &token, interrupt);
        let taken: Option<String> = match redis::cmd("SET")
            .arg(&key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(millis(ttl))
            .query_async(&mut connection.clone())
            .await
        {
            Ok(taken) => taken,
            Err(error) => {
                self.holders.remove(&key, &token);
                return Err(connection.backend(
                    prefix,
                    Some(session),
                    "taking the session's lease",
                    &error,
                ));
            }
        };
        if taken.is_none() {
            self.holders.remove(&key, &token);
            return Err(SessionError::busy(session));
        }
        let renewal = runtime
            .spawn(renew(
                connection.clone(),
                Arc::clone(prefix),
                session.to_owned(),
                token.clone(),
                RenewalDeadline::new(ttl, sent),
                interrupt.clone(),
            ))
            .abort_handle();
        let handle = RedisLease {
            connection: connection.clone(),
            holders: Arc::clone(&self.holders),
            prefix: Arc::clone(prefix),
            session: session.to_owned(),
            token: token.clone(),
            renewal,
            released: false,
        };
        Ok(Some(SessionLease::new(token, handle)))
    }

    /// Interrupts the call holding session `session`'s lease (under `prefix`), wherever it
    /// runs (see [`SessionStore::interrupt`]).
    ///
    /// [`SessionStore::interrupt`]: agentscope_core::session::SessionStore::interrupt
    pub(crate) async fn interrupt(
        &self,
        connection: &Connection,
        prefix: &str,
        session: &str,
    ) -> Result<bool, SessionError> {
        validate_session_id(session)?;
        let key = lease_key(prefix, session);
        let flag = flag_key(prefix, session);
        let fail = |error: redis::RedisError| {
            connection.backend(prefix, Some(session), "interrupting", &error)
        };
        let ttl = self.ttl.unwrap_or(DEFAULT_LEASE_TTL);
        let holder: Option<String> = scripts::INTERRUPT
            .key(&key)
            .key(&flag)
            .arg(millis(ttl))
            .invoke_async(&mut connection.clone())
            .await
            .map_err(fail)?;
        if holder.is_none() {
            return Ok(false);
        }
        let _receivers: i64 = redis::cmd("PUBLISH")
            .arg(channel(prefix))
            .arg(session)
            .query_async(&mut connection.clone())
            .await
            .map_err(fail)?;
        Ok(true)
    }

    /// Subscribes the subscriber connection to `prefix`'s interrupt channel, once.
    async fn subscribe_interrupts(
        &self,
        connection: &Connection,
        prefix: &str,
    ) -> Result<(), SessionError> {
        let Some(subscriber) = &self.subscriber else {
            return Ok(());
        };
        let channel = channel(prefix);
        if lock(&self.channels).contains(&channel) {
            return Ok(());
        }
        subscriber
            .clone()
            .subscribe(&channel)
            .await
            .map_err(|error| {
                connection.backend(prefix, None, "subscribing to the interrupt channel", &error)
            })?;
        lock(&self.channels).insert(channel);
        Ok(())
    }
}

/// Gives a lease back: deletes it if `token` still holds it.
async fn release(
    connection: &Connection,
    prefix: &str,
    session: &str,
    token: &str,
) -> Result<(), SessionError> {
    let key = lease_key(prefix, session);
    let flag = flag_key(prefix, session);
    let _held: i64 = scripts::RELEASE
        .key(&key)
        .key(&flag)
        .arg(token)
        .invoke_async(&mut connection.clone())
        .await
        .map_err(|error| {
            connection.backend(
                prefix,
                Some(session),
                "giving back the session's lease",
                &error,
            )
        })?;
    Ok(())
}

/// Renews a lease every third of its time to live until it is released (the task is then
/// aborted): [`keep_renewed`], every store's loop, with [`renew_once`].
async fn renew(
    connection: Connection,
    prefix: Arc<str>,
    session: String,
    token: String,
    lease: RenewalDeadline,
    interrupt: CancellationToken,
) {
    let ttl = lease.ttl();
    let renew = || renew_once(&connection, &prefix, &session, &token, ttl);
    keep_renewed("agentscope_redis", &session, lease, &interrupt, renew).await;
}

/// Renews the lease once (`RENEW`: only while `token` holds it), reading the interrupt mark.
async fn renew_once(
    connection: &Connection,
    prefix: &str,
    session: &str,
    token: &str,
    ttl: Duration,
) -> Result<Renewed, SessionError> {
    let key = lease_key(prefix, session);
    let flag = flag_key(prefix, session);
    let mut invocation = scripts::RENEW.key(&key);
    invocation.key(&flag).arg(token).arg(millis(ttl));
    let answer = invocation
        .invoke_async::<i64>(&mut connection.clone())
        .await
        .map_err(|error| {
            connection.backend(
                prefix,
                Some(session),
                "renewing the session's lease",
                &error,
            )
        })?;
    Ok(match answer {
        1 => Renewed::Held,
        2 => Renewed::Interrupted,
        _ => Renewed::Lost,
    })
}

/// A lease held by a call; see [`LeaseHandle`].
struct RedisLease {
    connection: Connection,
    holders: Arc<Holders>,
    prefix: Arc<str>,
    session: String,
    token: String,
    renewal: AbortHandle,
    released: bool,
}

impl RedisLease {
    /// Stops renewing and forgets the holder; returns what releasing needs.
    fn stop(&mut self) -> (Connection, Arc<str>, String, String) {
        self.released = true;
        self.renewal.abort();
        let key = lease_key(&self.prefix, &self.session);
        self.holders.remove(&key, &self.token);
        (
            self.connection.clone(),
            Arc::clone(&self.prefix),
            self.session.clone(),
            self.token.clone(),
        )
    }
}

impl LeaseHandle for RedisLease {
    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>> {
        let (connection, prefix, session, token) = self.stop();
        Box::pin(async move { release(&connection, &prefix, &session, &token).await })
    }
}

impl Drop for RedisLease {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // The call was dropped: give the lease back in the background (it expires anyway).
        let (connection, prefix, session, token) = self.stop();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = release(&connection, &prefix, &session, &token).await {
                    tracing::debug!(
                        target: "agentscope_redis",
                        %error,
                        "giving back the lease of a dropped call failed; it expires"
                    );
                }
            });
        }
    }
}
