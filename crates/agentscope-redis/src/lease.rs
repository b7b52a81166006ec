//! Session leases and cross-instance interrupts (see the crate docs, "Leases and
//! interrupts").
//!
//! - A lease is a string key `P{<id>}:lease` holding a random token, set with `SET NX PX`,
//!   renewed by a task every third of its time to live, deleted on release (only by its own
//!   token: [`scripts::RELEASE`]), and checked by every fenced save ([`scripts::SAVE`]).
//! - An interrupt marks the lease holding the session (`P{<id>}:interrupt` = its token, for
//!   as long as a lease lives) and publishes the session id on `P` + `interrupts`. Every
//!   store subscribes to that channel (one RESP3 connection per connected store, resubscribed
//!   after a reconnect) and cancels the calls it runs on that session; a holder that missed
//!   the message sees the mark when it next renews.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agentscope_core::CancellationToken;
use agentscope_core::session::{LeaseHandle, SessionError, SessionLease};
use futures::future::BoxFuture;
use redis::aio::ConnectionManager;
use redis::{PushInfo, PushKind, Value};
use tokio::task::AbortHandle;

use crate::{RedisSessionStore, scripts};

/// How long a lease lives without being renewed, unless configured.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// The suffix of the interrupt channel's name (after the key prefix).
const CHANNEL_SUFFIX: &str = "interrupts";

/// What every store made from one connect shares for leases.
pub(crate) struct Leases {
    /// How long a lease lives without renewal; `None`: the store takes no leases.
    pub(crate) ttl: Option<Duration>,
    /// The calls of this process that hold leases, for delivering interrupts.
    pub(crate) holders: Arc<Holders>,
    /// The RESP3 connection that receives interrupts (`None` without leases).
    pub(crate) subscriber: Option<ConnectionManager>,
    /// The interrupt channels subscribed to (one per key prefix that took a lease).
    pub(crate) channels: Mutex<HashSet<String>>,
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

/// The lease key of `session` under `prefix` (the id is checked by the caller).
pub(crate) fn lease_key(prefix: &str, session: &str) -> String {
    format!("{prefix}{{{session}}}:lease")
}

/// The interrupt flag key of `session` under `prefix`.
pub(crate) fn flag_key(prefix: &str, session: &str) -> String {
    format!("{prefix}{{{session}}}:interrupt")
}

/// The interrupt channel of `prefix`.
pub(crate) fn channel(prefix: &str) -> String {
    format!("{prefix}{CHANNEL_SUFFIX}")
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

impl RedisSessionStore {
    /// Takes session `session`'s lease for one call (see [`SessionStore::lease`]).
    ///
    /// [`SessionStore::lease`]: agentscope_core::session::SessionStore::lease
    pub(crate) async fn take_lease(
        &self,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        let leases = &self.shared.leases;
        let Some(ttl) = leases.ttl else {
            return Ok(None);
        };
        let key = self.lease_key(session)?;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(SessionError::Backend {
                session: Some(session.to_owned()),
                message: "taking the session's lease: the Redis store runs on a tokio runtime, \
                          and none is running"
                    .to_owned(),
                source: None,
            });
        };
        self.subscribe_interrupts().await?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        // Registered first, so an interrupt published the moment the lease is taken is seen.
        leases.holders.add(&key, &token, interrupt);
        let taken: Option<String> = match redis::cmd("SET")
            .arg(&key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(millis(ttl))
            .query_async(&mut self.connection())
            .await
        {
            Ok(taken) => taken,
            Err(error) => {
                leases.holders.remove(&key, &token);
                return Err(self.backend(Some(session), "taking the session's lease", &error));
            }
        };
        if taken.is_none() {
            leases.holders.remove(&key, &token);
            return Err(SessionError::Busy {
                session: session.to_owned(),
            });
        }
        let renewal = runtime
            .spawn(renew(
                self.clone(),
                session.to_owned(),
                token.clone(),
                ttl,
                interrupt.clone(),
            ))
            .abort_handle();
        let handle = RedisLease {
            store: self.clone(),
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
    pub(crate) async fn interrupt_session(&self, session: &str) -> Result<bool, SessionError> {
        let key = self.lease_key(session)?;
        let flag = flag_key(&self.prefix, session);
        let fail = |error: redis::RedisError| self.backend(Some(session), "interrupting", &error);
        let ttl = self.shared.leases.ttl.unwrap_or(DEFAULT_LEASE_TTL);
        let holder: Option<String> = scripts::INTERRUPT
            .key(&key)
            .key(&flag)
            .arg(millis(ttl))
            .invoke_async(&mut self.connection())
            .await
            .map_err(fail)?;
        if holder.is_none() {
            return Ok(false);
        }
        let _receivers: i64 = redis::cmd("PUBLISH")
            .arg(channel(&self.prefix))
            .arg(session)
            .query_async(&mut self.connection())
            .await
            .map_err(fail)?;
        Ok(true)
    }

    /// Subscribes the store's subscriber connection to its prefix's interrupt channel, once.
    async fn subscribe_interrupts(&self) -> Result<(), SessionError> {
        let leases = &self.shared.leases;
        let Some(subscriber) = &leases.subscriber else {
            return Ok(());
        };
        let channel = channel(&self.prefix);
        if lock(&leases.channels).contains(&channel) {
            return Ok(());
        }
        subscriber
            .clone()
            .subscribe(&channel)
            .await
            .map_err(|error| self.backend(None, "subscribing to the interrupt channel", &error))?;
        lock(&leases.channels).insert(channel);
        Ok(())
    }

    /// Gives a lease back: deletes it if `token` still holds it.
    async fn release_lease(&self, session: &str, token: &str) -> Result<(), SessionError> {
        let key = lease_key(&self.prefix, session);
        let flag = flag_key(&self.prefix, session);
        let _held: i64 = scripts::RELEASE
            .key(&key)
            .key(&flag)
            .arg(token)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|error| {
                self.backend(Some(session), "giving back the session's lease", &error)
            })?;
        Ok(())
    }
}

/// Renews a lease every third of its time to live until it is released (the task is then
/// aborted). An interrupt mark, or the lease lost to another holder, cancels the call.
async fn renew(
    store: RedisSessionStore,
    session: String,
    token: String,
    ttl: Duration,
    interrupt: CancellationToken,
) {
    let key = lease_key(&store.prefix, &session);
    let flag = flag_key(&store.prefix, &session);
    loop {
        tokio::time::sleep(ttl / 3).await;
        let renewed: Result<i64, _> = scripts::RENEW
            .key(&key)
            .key(&flag)
            .arg(&token)
            .arg(millis(ttl))
            .invoke_async(&mut store.connection())
            .await;
        match renewed {
            Ok(1) => {}
            Ok(2) => interrupt.cancel(),
            Ok(_) => {
                tracing::warn!(
                    target: "agentscope_redis",
                    session = %session,
                    "the session's lease expired and another call took it; stopping this call \
                     (its saves are refused)"
                );
                interrupt.cancel();
                return;
            }
            Err(error) => tracing::warn!(
                target: "agentscope_redis",
                session = %session,
                error = %store.backend(Some(&session), "renewing the session's lease", &error),
                "renewing a session lease failed; trying again"
            ),
        }
    }
}

/// A lease held by a call; see [`LeaseHandle`].
struct RedisLease {
    store: RedisSessionStore,
    session: String,
    token: String,
    renewal: AbortHandle,
    released: bool,
}

impl RedisLease {
    /// Stops renewing and forgets the holder; returns what releasing needs.
    fn stop(&mut self) -> (RedisSessionStore, String, String) {
        self.released = true;
        self.renewal.abort();
        let key = lease_key(&self.store.prefix, &self.session);
        self.store.shared.leases.holders.remove(&key, &self.token);
        (self.store.clone(), self.session.clone(), self.token.clone())
    }
}

impl LeaseHandle for RedisLease {
    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>> {
        let (store, session, token) = self.stop();
        Box::pin(async move { store.release_lease(&session, &token).await })
    }
}

impl Drop for RedisLease {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // The call was dropped: give the lease back in the background (it expires anyway).
        let (store, session, token) = self.stop();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = store.release_lease(&session, &token).await {
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
