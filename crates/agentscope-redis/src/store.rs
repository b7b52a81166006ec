//! [`RedisSessionStore`]: the handle, its operations (save, load, delete, list) and its
//! [`SessionStore`] impl (through [`AsyncSessionStore`]). Connecting is the builder's (`builder.rs`), leases are
//! `lease.rs`'s, listing a cluster is `cluster.rs`'s.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentscope_core::CancellationToken;
use agentscope_core::rfc3339;
#[cfg(doc)]
use agentscope_core::session::SessionStore;
use agentscope_core::session::{
    AgentState, AsyncSessionStore, SessionError, SessionLease, SessionSummary, StateChange,
    validate_session_id,
};
use redis::Value;

use crate::codec::{self, SaveReply};
use crate::connection::Connection;
use crate::keys::{self, check_prefix};
use crate::lease::Leases;
use crate::{cluster, scripts};

/// A [`SessionStore`] keeping sessions in Redis.
///
/// See the [crate docs](crate) for the keys, the operations, TTLs and failures. A cheap
/// `Clone` handle: clones share the connection. Connect once per process and give clones
/// to every agent.
#[derive(Clone)]
pub struct RedisSessionStore {
    shared: Arc<Shared>,
    prefix: Arc<str>,
    ttl: Option<Duration>,
}

/// What every store made from one [`connect`](crate::RedisSessionStoreBuilder::connect)
/// shares.
struct Shared {
    connection: Connection,
    leases: Leases,
}

impl RedisSessionStore {
    /// A store on `connection` that has just been made, after loading the scripts.
    pub(crate) async fn new(
        connection: Connection,
        leases: Leases,
        prefix: String,
        ttl: Option<Duration>,
    ) -> Result<Self, SessionError> {
        let store = Self {
            shared: Arc::new(Shared { connection, leases }),
            prefix: prefix.into(),
            ttl,
        };
        store.load_scripts().await?;
        Ok(store)
    }

    /// A store on the same connection with another key prefix: another tenant's sessions.
    ///
    /// # Errors
    ///
    /// [`SessionError::Backend`] when the prefix holds `{` or `}`.
    pub fn with_key_prefix(&self, prefix: impl Into<String>) -> Result<Self, SessionError> {
        let prefix = prefix.into();
        check_prefix(&prefix)?;
        Ok(Self {
            shared: Arc::clone(&self.shared),
            prefix: prefix.into(),
            ttl: self.ttl,
        })
    }

    /// A store on the same connection and prefix whose saves set `ttl` (`None`: saves
    /// remove the sessions' TTL).
    #[must_use]
    pub fn with_ttl(&self, ttl: Option<Duration>) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            prefix: Arc::clone(&self.prefix),
            ttl,
        }
    }

    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The time to live of sessions after a save, if any.
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// Whether the store is connected to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.shared.connection.is_cluster()
    }

    /// The key of session `session`'s state hash: `<prefix>{<session>}:state`.
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidSessionId`] as [`validate_session_id`].
    pub fn state_key(&self, session: &str) -> Result<String, SessionError> {
        validate_session_id(session)?;
        Ok(keys::state_key(&self.prefix, session))
    }

    /// The key of session `session`'s message list: `<prefix>{<session>}:messages`.
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidSessionId`] as [`validate_session_id`].
    pub fn messages_key(&self, session: &str) -> Result<String, SessionError> {
        validate_session_id(session)?;
        Ok(keys::messages_key(&self.prefix, session))
    }

    /// The key of session `session`'s lease: `<prefix>{<session>}:lease` (a string holding
    /// the token of the call that holds the session; see the [crate docs](crate)).
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidSessionId`] as [`validate_session_id`].
    pub fn lease_key(&self, session: &str) -> Result<String, SessionError> {
        validate_session_id(session)?;
        Ok(keys::lease_key(&self.prefix, session))
    }

    /// How long a lease lives without renewal (`None`: the store takes no leases); see
    /// [`RedisSessionStoreBuilder::lease_ttl`](crate::RedisSessionStoreBuilder::lease_ttl).
    pub fn lease_ttl(&self) -> Option<Duration> {
        self.shared.leases.ttl()
    }

    /// The key of the prefix's session index, `<prefix>sessions`; `None` for a cluster
    /// store, which has none (see the [crate docs](crate)).
    pub fn index_key(&self) -> Option<String> {
        (!self.is_cluster()).then(|| keys::index_key(&self.prefix))
    }

    /// Loads the scripts into the server's script cache (every primary, in a cluster), so
    /// that their first calls need no `NOSCRIPT` round trip.
    async fn load_scripts(&self) -> Result<(), SessionError> {
        let mut connection = self.connection();
        for script in [
            &*scripts::SAVE,
            &*scripts::LOAD,
            &*scripts::DELETE,
            &*scripts::LIST,
            &*scripts::LIST_RECENT,
            &*scripts::KEY_SESSION,
            &*scripts::RENEW,
            &*scripts::RELEASE,
            &*scripts::INTERRUPT,
        ] {
            script
                .load_async(&mut connection)
                .await
                .map_err(|error| self.backend(None, "loading the Lua scripts", &error))?;
        }
        Ok(())
    }

    fn connection(&self) -> Connection {
        self.shared.connection.clone()
    }

    /// A backend error about `session` saying `what` failed, and where (see
    /// [`Connection::backend`]).
    fn backend(
        &self,
        session: Option<&str>,
        what: &str,
        error: &redis::RedisError,
    ) -> SessionError {
        self.shared
            .connection
            .backend(&self.prefix, session, what, error)
    }

    /// The key of the prefix's recency index, `<prefix>recent` (a sorted set of
    /// `<recency key><id>` members, see [`list_recent`](SessionStore::list_recent)); `None`
    /// for a cluster store, which has none (see the [crate docs](crate)).
    pub fn recent_key(&self) -> Option<String> {
        (!self.is_cluster()).then(|| keys::recent_key(&self.prefix))
    }

    /// The session's keys, with the indexes for a standalone store.
    fn keys(&self, session: &str) -> Result<Vec<String>, SessionError> {
        let mut keys = vec![
            self.state_key(session)?,
            self.messages_key(session)?,
            keys::lease_key(&self.prefix, session),
            keys::flag_key(&self.prefix, session),
        ];
        if !self.is_cluster() {
            keys.push(keys::index_key(&self.prefix));
            keys.push(keys::recent_key(&self.prefix));
            keys.push(keys::recent_keys_key(&self.prefix));
        }
        Ok(keys)
    }

    fn ttl_ms(&self) -> u64 {
        self.ttl.map_or(0, |ttl| {
            u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
        })
    }

    /// The stored revision and message count of a session (`(0, 0)`: none).
    async fn head(&self, session: &str, keys: &[String]) -> Result<(u64, usize), SessionError> {
        let (revision, messages): (Option<u64>, usize) = redis::pipe()
            .hget(&keys[0], "revision")
            .llen(&keys[1])
            .query_async(&mut self.connection())
            .await
            .map_err(|error| self.backend(Some(session), "reading the revision", &error))?;
        Ok(match revision {
            Some(revision) => (revision, messages),
            None => (0, 0),
        })
    }
}

/// How many sessions one `list_recent` script finds at most, and how many members of the
/// recency index it looks at at most: each script runs alone on the server, so a long
/// page (or a rare prefix) is several short scripts.
const RECENT_BATCH: usize = 1000;

/// The recency key of a session whose `saved_at` cannot be read (or that is gone): after
/// every real key, so it is listed last, where reading it reports it corrupt.
const UNREADABLE_RECENCY: &str = "zzzzzzzzzzzzzzzzzzzzzzzz";

impl RedisSessionStore {
    /// Standalone: pages through the recency index (see [`scripts::LIST_RECENT`]).
    async fn recent_indexed(
        &self,
        prefix: &str,
        after: Option<&SessionSummary>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, SessionError> {
        let fail = |error: redis::RedisError| self.backend(None, "listing sessions", &error);
        let first = match after {
            Some(cursor) => format!(
                "({}{}",
                SessionSummary::recency_key(&cursor.saved_at),
                cursor.id
            ),
            None => "-".to_owned(),
        };
        let recent = keys::recent_key(&self.prefix);
        let recent_keys = keys::recent_keys_key(&self.prefix);
        let index = keys::index_key(&self.prefix);
        let mut keyed = false;
        let mut start = first.clone();
        let mut page: Vec<SessionSummary> = Vec::new();
        loop {
            let wanted = (limit - page.len()).min(RECENT_BATCH);
            let (unkeyed, resume, found): (i64, Option<String>, Vec<Value>) = scripts::LIST_RECENT
                .key(&recent)
                .key(&recent_keys)
                .key(&index)
                .arg(&start)
                .arg(wanted)
                .arg(prefix)
                .arg(&*self.prefix)
                .arg(RECENT_BATCH)
                .invoke_async(&mut self.connection())
                .await
                .map_err(fail)?;
            if unkeyed == 1 && !keyed {
                // Sessions saved by a version before the recency index: key them, then
                // start again.
                self.key_unkeyed().await?;
                keyed = true;
                start.clone_from(&first);
                page.clear();
                continue;
            }
            let short = found.len() / 3 < wanted;
            let (found, last) = codec::recent_page(&self.prefix, found)?;
            page.extend(found);
            if page.len() >= limit {
                break;
            }
            match (resume, last) {
                (Some(member), _) => start = format!("({member}"),
                (None, Some(member)) if !short => start = format!("({member}"),
                // The index is exhausted.
                _ => break,
            }
        }
        Ok(page)
    }

    /// Standalone: adds the sessions the prefix's index lists and the recency index does
    /// not (saved by a version before it) to the recency index, each from its `saved_at`
    /// (see [`scripts::KEY_SESSION`]).
    async fn key_unkeyed(&self) -> Result<(), SessionError> {
        let fail = |error: redis::RedisError| self.backend(None, "listing sessions", &error);
        let index = keys::index_key(&self.prefix);
        let recent = keys::recent_key(&self.prefix);
        let recent_keys = keys::recent_keys_key(&self.prefix);
        let mut connection = self.connection();
        let (ids, keyed): (Vec<String>, Vec<String>) = redis::pipe()
            .zrange(&index, 0, -1)
            .hkeys(&recent_keys)
            .query_async(&mut connection)
            .await
            .map_err(fail)?;
        let keyed: std::collections::HashSet<String> = keyed.into_iter().collect();
        let mut added = 0usize;
        for id in ids {
            if keyed.contains(&id) || validate_session_id(&id).is_err() {
                continue;
            }
            let state = keys::state_key(&self.prefix, &id);
            let saved_at: Option<String> = redis::cmd("HGET")
                .arg(&state)
                .arg("saved_at")
                .query_async(&mut connection)
                .await
                .map_err(fail)?;
            let key = saved_at
                .as_deref()
                .and_then(|text| rfc3339::parse_saved_at(&id, text).ok())
                .map_or_else(
                    || UNREADABLE_RECENCY.to_owned(),
                    |at| SessionSummary::recency_key(&at),
                );
            let done: i64 = scripts::KEY_SESSION
                .key(&index)
                .key(&recent)
                .key(&recent_keys)
                .key(&state)
                .arg(&id)
                .arg(saved_at.as_deref().unwrap_or(""))
                .arg(&key)
                .invoke_async(&mut connection)
                .await
                .map_err(fail)?;
            added += usize::try_from(done).unwrap_or_default();
        }
        tracing::info!(
            target: "agentscope_redis",
            prefix = %self.prefix,
            sessions = added,
            "added sessions saved before the recency index to it"
        );
        Ok(())
    }

    /// A cluster: every session's `revision` and `saved_at`, found by `SCAN` (as
    /// [`list`](SessionStore::list)), paged in memory.
    async fn recent_scanned(
        &self,
        prefix: &str,
        after: Option<&SessionSummary>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, SessionError> {
        use futures::StreamExt;

        let fail = |error: redis::RedisError| self.backend(None, "listing sessions", &error);
        let mut ids = AsyncSessionStore::list(self).await?;
        ids.retain(|id| id.starts_with(prefix));
        let heads: Vec<Result<Option<SessionSummary>, SessionError>> = futures::stream::iter(ids)
            .map(|id| async move {
                let state = keys::state_key(&self.prefix, &id);
                let (revision, saved_at): (Value, Value) = redis::cmd("HMGET")
                    .arg(&state)
                    .arg("revision")
                    .arg("saved_at")
                    .query_async(&mut self.connection())
                    .await
                    .map_err(fail)?;
                match revision {
                    // Gone since it was listed.
                    Value::Nil => Ok(None),
                    revision => codec::summary(id, &revision, &saved_at).map(Some),
                }
            })
            .buffer_unordered(64)
            .collect()
            .await;
        let mut summaries = Vec::with_capacity(heads.len());
        for head in heads {
            summaries.extend(head?);
        }
        Ok(SessionSummary::page(summaries, prefix, after, limit))
    }
}

impl AsyncSessionStore for RedisSessionStore {
    async fn save(&self, session: &str, change: &StateChange) -> Result<u64, SessionError> {
        let keys = self.keys(session)?;
        if let Err(invalid) = change.check(session, change.base, change.kept) {
            // The change itself cannot be stored (a system message): nothing is sent. Report
            // what `check` gives against the stored state, as the contract says.
            let (revision, messages) = self.head(session, &keys).await?;
            return Err(change
                .check(session, revision, messages)
                .err()
                .unwrap_or(invalid));
        }
        let args = codec::save_args(session, change, self.ttl_ms())?;
        let mut invocation = scripts::SAVE.prepare_invoke();
        for key in &keys {
            invocation.key(key.as_str());
        }
        for arg in &args {
            invocation.arg(arg.as_slice());
        }
        let reply: Value = invocation
            .invoke_async(&mut self.connection())
            .await
            .map_err(|error| self.backend(Some(session), "saving", &error))?;
        match codec::save_reply(session, reply)? {
            SaveReply::Saved(revision) => Ok(revision),
            SaveReply::Fenced => Err(SessionError::lease_lost(session)),
            SaveReply::Refused { revision, messages } => {
                Err(match change.check(session, revision, messages) {
                    Err(error) => error,
                    Ok(()) => SessionError::backend_message(
                        Some(session),
                        format_args!(
                            "saving: the save script refused the change from revision {} \
                             although revision {revision} with {messages} messages is stored",
                            change.base
                        ),
                    ),
                })
            }
        }
    }

    async fn load(&self, session: &str) -> Result<Option<AgentState>, SessionError> {
        let keys = self.keys(session)?;
        let fail = |error: redis::RedisError| self.backend(Some(session), "loading", &error);
        let reply: Value = match self.is_cluster() {
            // Standalone: one MULTI/EXEC (the server copies no list into Lua and back).
            false => {
                let (exists, fields, messages): (i64, Value, Value) = redis::pipe()
                    .atomic()
                    .exists(&keys[0])
                    .cmd("HMGET")
                    .arg(&keys[0])
                    .arg(&scripts::STATE_FIELDS[..])
                    .lrange(&keys[1], 0, -1)
                    .query_async(&mut self.connection())
                    .await
                    .map_err(fail)?;
                match exists {
                    0 => Value::Nil,
                    _ => Value::Array(vec![fields, messages]),
                }
            }
            // A cluster: a script (both keys are in one slot, so one node runs it).
            true => scripts::LOAD
                .key(&keys[0])
                .key(&keys[1])
                .invoke_async(&mut self.connection())
                .await
                .map_err(fail)?,
        };
        codec::load_reply(session, reply)
    }

    async fn delete(&self, session: &str) -> Result<bool, SessionError> {
        let keys = self.keys(session)?;
        let mut invocation = scripts::DELETE.prepare_invoke();
        for key in &keys {
            invocation.key(key.as_str());
        }
        invocation.arg(session);
        let existed: i64 = invocation
            .invoke_async(&mut self.connection())
            .await
            .map_err(|error| self.backend(Some(session), "deleting", &error))?;
        Ok(existed == 1)
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        let fail = |error: redis::RedisError| self.backend(None, "listing sessions", &error);
        let mut ids = match (self.shared.connection.as_cluster(), self.index_key()) {
            (Some(cluster), _) => cluster::session_ids(cluster.clone(), &self.prefix, fail).await?,
            (None, Some(index)) => {
                let ids: Vec<String> = scripts::LIST
                    .key(index)
                    .invoke_async(&mut self.connection())
                    .await
                    .map_err(fail)?;
                ids
            }
            (None, None) => Vec::new(),
        };
        ids.retain(|id| {
            let valid = validate_session_id(id).is_ok();
            if !valid {
                tracing::warn!(
                    target: "agentscope_redis",
                    prefix = %self.prefix,
                    id = %id,
                    "ignoring an invalid session id in the Redis session index"
                );
            }
            valid
        });
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// Standalone: the recency index, read from the cursor on by a script that reads the
    /// `revision` and `saved_at` of the page's sessions only. A cluster: a `SCAN` of every
    /// primary and those two fields of every session of the prefix. See
    /// [Listing by recency](crate#listing-by-recency).
    ///
    /// # Errors
    ///
    /// Redis could not be reached or refused a command; a listed session whose revision or
    /// `saved_at` cannot be read is [`SessionError::Corrupt`] naming it.
    async fn list_recent(
        &self,
        prefix: &str,
        after: Option<&SessionSummary>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, SessionError> {
        // Session ids are ASCII: no id starts with anything else.
        if limit == 0 || !prefix.is_ascii() {
            return Ok(Vec::new());
        }
        match self.shared.connection.as_cluster() {
            Some(_) => self.recent_scanned(prefix, after, limit).await,
            None => self.recent_indexed(prefix, after, limit).await,
        }
    }

    async fn lease(
        &self,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        let shared = &self.shared;
        shared
            .leases
            .take(&shared.connection, &self.prefix, session, interrupt)
            .await
    }

    async fn interrupt(&self, session: &str) -> Result<bool, SessionError> {
        let shared = &self.shared;
        shared
            .leases
            .interrupt(&shared.connection, &self.prefix, session)
            .await
    }
}

impl fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field("urls", &self.shared.connection.endpoints())
            .field("cluster", &self.is_cluster())
            .field("key_prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("lease_ttl", &self.shared.leases.ttl())
            .finish()
    }
}
