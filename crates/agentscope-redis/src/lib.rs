//! A [`SessionStore`] on Redis, for agentscope-rs.
//!
//! [`RedisSessionStore`] keeps the sessions of every instance of a service in one Redis
//! (standalone, with or without TLS, or a Redis Cluster), so a conversation continues on
//! whichever instance the next request lands on.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use agentscope::prelude::*;
//! use agentscope::session::SessionStore;
//! use agentscope_redis::RedisSessionStore;
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let store = RedisSessionStore::builder("redis://:password@127.0.0.1:6379")
//!     .key_prefix("support-bot:")          // default "agentscope:"
//!     .ttl(Duration::from_secs(7 * 24 * 3600)) // refreshed by every save
//!     .connect()
//!     .await?;
//! let agent = ReActAgent::builder()
//!     .model(ScriptedModel::new([ScriptedResponse::text("Hello!")]))
//!     .session(store.clone(), "chat-1")
//!     .build()?;
//! agent.call("hi").await?;
//!
//! let state = store.load("chat-1").await?.ok_or("saved after the call")?;
//! assert_eq!(state.messages.len(), 2);
//! assert_eq!(store.list().await?, ["chat-1"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Keys
//!
//! With the key prefix `P` (default [`DEFAULT_KEY_PREFIX`], `agentscope:`), session `<id>`
//! is two keys (and two more while a call holds it), and the prefix has one index:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P{<id>}:state` | hash | `revision`, `version`, `agent`, `metadata`, `running_tools`, `hooks`, `saved_at`, `messages` (the count) |
//! | `P{<id>}:messages` | list | one JSON [`Msg`](agentscope_core::Msg) per element, oldest first |
//! | `P{<id>}:lease` | string | the token of the call holding the session (with a TTL) |
//! | `P{<id>}:interrupt` | string | the token of the lease an interrupt was sent to (with a TTL) |
//! | `Psessions` | sorted set | the session ids, scored by expiry time in ms (`+inf`: no TTL); standalone only |
//!
//! Hash fields hold the JSON of the matching [`AgentState`] fields (`saved_at` as RFC 3339
//! with nanoseconds), so sessions can be read with `redis-cli` (`HGETALL`, `LRANGE`). The
//! `{<id>}` is a [hash tag](https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags):
//! in a cluster, both keys of a session are in one hash slot, so one script can change them
//! atomically. Session ids follow [`validate_session_id`]; the prefix must not hold `{` or
//! `}`.
//!
//! # Operations
//!
//! Each operation is one round trip, which Redis runs atomically: a Lua script (loaded
//! into the server's script cache when the store connects and sent with `EVALSHA`; loaded
//! again on `NOSCRIPT`, after a server restart or `SCRIPT FLUSH`), or for a standalone load
//! a `MULTI`/`EXEC` transaction.
//!
//! - [**save**](SessionStore::save) compares the stored revision with the change's
//!   [`base`](StateChange::base) and the stored message count with
//!   [`kept`](StateChange::kept) (a mismatch: nothing written, and the store returns what
//!   [`StateChange::check`] gives, [`SessionError::Conflict`] or
//!   [`SessionError::InvalidChange`]); then drops the messages the change does not keep
//!   (`LTRIM`), appends the new ones (`RPUSH`), writes the hash and the new revision, sets or
//!   refreshes the TTL and updates the index. It never rewrites the conversation: a step
//!   costs the same at 1,000 messages as at 10. A change appending a `System` message is
//!   refused before any write.
//! - [**load**](SessionStore::load) reads the hash and the whole list at once (one
//!   consistent revision: `MULTI`/`EXEC` standalone, where it spares the server copying the
//!   list into Lua and back; a script in a cluster), checks the version first ([`SessionError::UnsupportedVersion`])
//!   and the rest ([`SessionError::Corrupt`] naming the session and the field), and
//!   [`AgentState::check_for`].
//! - [**delete**](SessionStore::delete) removes both keys and the index entry; it returns
//!   whether the state existed.
//! - [**list**](SessionStore::list) never uses `KEYS`. Standalone, it reads the prefix's
//!   index, which the save and delete scripts update in the same atomic step as the session:
//!   one `ZRANGEBYSCORE` of the live entries (the score is the expiry time, so expired
//!   sessions are not listed; saves prune them), costing what the prefix's own sessions
//!   cost, however many other keys the database holds. In a cluster, an index would live in
//!   another hash slot than the sessions, and no script may touch two slots: the store
//!   `SCAN`s every primary for `P{*}:state` hashes instead (`COUNT 1000` a step). That costs
//!   a pass over the cluster's keys, so list sparingly there; a reshard during the scan may
//!   list a session twice (the store removes duplicates) but does not lose one that existed
//!   throughout.
//!
//! # Leases and interrupts
//!
//! Several instances of a service may serve one conversation, one call at a time. An agent
//! bound to a session of this store ([`SessionStore::lease`]) takes the session's **lease**
//! before its call loads anything: `SET P{<id>}:lease <token> NX PX <ttl>`, with a random
//! token. While the call runs, a task renews the lease every third of its time to live
//! ([`lease_ttl`](RedisSessionStoreBuilder::lease_ttl), default [`DEFAULT_LEASE_TTL`], 30 s);
//! the call gives it back when it ends (a script that deletes the key only if it still
//! holds the call's token). So:
//!
//! - A call on a session that another instance is running fails at once with
//!   [`AgentError::Busy`](agentscope_core::AgentError::Busy), before any hook, model or tool
//!   runs and without loading or storing anything.
//! - A holder that died (SIGKILL, a lost host) stops renewing: its session is free again
//!   within the lease's time to live. The next call settles the tools the dead holder left
//!   running (their result says they were interrupted while running, and they are not run
//!   again).
//! - The lease is a fence: every save of the call carries its token
//!   ([`StateChange::fence`]), and the save script refuses it
//!   ([`SessionError::LeaseLost`]) when another token holds the lease, i.e. when the holder
//!   stalled past the time to live and another call took the session. The stalled holder's
//!   renewal notices the loss and cancels its call; its release leaves the new holder's
//!   lease alone. (The saves' compare-and-swap on the revision protects the conversation
//!   even without leases; the fence makes the loss explicit and stops the old call early.)
//!
//! [`interrupt`](SessionStore::interrupt) (or `ReActAgent::interrupt_session`, on any
//! instance) interrupts the call holding a session, wherever it runs: a script marks the
//! holder's lease as interrupted (`P{<id>}:interrupt`), and the session id is published on
//! the channel `P` + `interrupts`. Each store subscribes to that channel on a connection of
//! its own (RESP3, resubscribed after reconnects; in a cluster, through the first seed) and
//! cancels the calls it runs on that session, which then end exactly as a local
//! `interrupt()` ends them. A holder that missed the message (its subscription was
//! reconnecting) sees the mark at its next renewal, within a third of the lease's time to
//! live.
//!
//! [`without_leases`](RedisSessionStoreBuilder::without_leases) turns leases off (and the
//! subscriber connection): then only each process's own busy check and the saves'
//! compare-and-swap coordinate instances.
//!
//! # Time to live
//!
//! [`ttl`](RedisSessionStoreBuilder::ttl) makes sessions expire that long after their last
//! save (`PEXPIREAT` on both keys, set by every save from the server's clock). A save by a
//! store without a TTL removes the session's TTL. Loads do not refresh it.
//!
//! # Connections and failures
//!
//! Standalone, a store holds one multiplexed connection (redis-rs's `ConnectionManager`),
//! which reconnects by itself; clones of a store, and stores made by
//! [`with_key_prefix`](RedisSessionStore::with_key_prefix), share it. A cluster store holds
//! redis-rs's cluster connection (one connection per node, following `MOVED`/`ASK`).
//! Connecting checks the server: [`connect`](RedisSessionStoreBuilder::connect) fails at
//! once on a wrong password, an untrusted certificate or an unreachable server. When a
//! connection drops later, the store reconnects in the background (6 attempts, 100 ms
//! apart at first, doubling up to 1 s, then again at the next operation); operations
//! meanwhile wait for the attempts (about 5 s in all while the server stays away) and then
//! fail with a [`SessionError::Backend`]. Nothing is retried for you: a failed operation
//! returns its error.
//!
//! Redis errors become [`SessionError::Backend`] saying what failed (`saving`, `loading`,
//! ...) and where (the URL without its password), with a [`RedisFailure`] as its source
//! (the server's error code, whether it timed out). A key of a session that holds another
//! type than the store writes (`WRONGTYPE`: something else wrote it) is
//! [`SessionError::Corrupt`] instead. Passwords never appear in `Debug`
//! output, error messages or logs: URLs are shown as `redis://user:***@host:port`.
//! A save whose answer is lost (a timeout, a dropped connection) may or may not have been
//! applied; the next save from the same base then fails with a conflict if it was: load
//! the session again.
//!
//! # Durability
//!
//! What Redis keeps is what the server's persistence keeps: with `appendonly yes` and
//! `appendfsync always` every acknowledged save survives a crash of the server; with the
//! default `everysec`, up to a second of saves may be lost with it; with no persistence, a
//! restart loses everything. Set `maxmemory-policy` to `noeviction`: under any other policy
//! (`allkeys-*`, or `volatile-*` for sessions with a TTL) Redis may evict a session's keys
//! when memory runs out, and a load then reports a corrupt session or none. Tested with
//! Redis 7.0 (standalone, TLS, a 3-node cluster); needs Redis 6.2 or later.
//!
//! # TLS
//!
//! `rediss://` URLs connect with TLS (rustls; the system's root certificates, or
//! [`tls_root_certificate`](RedisSessionStoreBuilder::tls_root_certificate)). If the process
//! has no default rustls crypto provider yet, the first TLS connection installs aws-lc-rs as
//! the default.
//!
//! See `docs/sessions.md` in the repository for how sessions work and how several service
//! instances share them.
#![warn(missing_docs)]

mod codec;
mod error;
mod lease;
mod redact;
mod scripts;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentscope_core::CancellationToken;
use agentscope_core::session::{
    AgentState, SessionError, SessionLease, SessionStore, StateChange, validate_session_id,
};
use futures::future::BoxFuture;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, Pipeline, RedisFuture, Value};

pub use error::RedisFailure;
pub use lease::DEFAULT_LEASE_TTL;

use codec::SaveReply;
use lease::Leases;
use redact::Endpoint;

/// The key prefix stores use unless told otherwise.
pub const DEFAULT_KEY_PREFIX: &str = "agentscope:";

/// How long connecting waits for the server, by default.
pub const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a command waits for its answer, by default.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How many keys one `SCAN` step looks at when a cluster store lists sessions.
const SCAN_COUNT: usize = 1000;

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

/// What every store made from one [`connect`](RedisSessionStoreBuilder::connect) shares.
struct Shared {
    connection: Connection,
    /// The URLs connected to (one, or the cluster's seeds).
    endpoints: Vec<Endpoint>,
    leases: Leases,
}

/// The connection: to one server, or to a cluster.
#[derive(Clone)]
enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(connection) => connection.req_packed_command(cmd),
            Connection::Cluster(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
            Connection::Cluster(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(connection) => connection.get_db(),
            Connection::Cluster(connection) => connection.get_db(),
        }
    }
}

/// Connects a [`RedisSessionStore`] with settings other than the defaults; see
/// [`RedisSessionStore::builder`] and [`RedisSessionStore::cluster_builder`].
#[derive(Clone)]
#[must_use]
pub struct RedisSessionStoreBuilder {
    endpoints: Vec<Endpoint>,
    cluster: bool,
    prefix: String,
    ttl: Option<Duration>,
    connection_timeout: Duration,
    response_timeout: Duration,
    root_certificate: Option<Vec<u8>>,
    lease_ttl: Option<Duration>,
}

impl fmt::Debug for RedisSessionStoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStoreBuilder")
            .field("urls", &self.endpoints)
            .field("cluster", &self.cluster)
            .field("key_prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("connection_timeout", &self.connection_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("tls_root_certificate", &self.root_certificate.is_some())
            .field("lease_ttl", &self.lease_ttl)
            .finish()
    }
}

impl RedisSessionStoreBuilder {
    fn new(endpoints: Vec<Endpoint>, cluster: bool) -> Self {
        Self {
            endpoints,
            cluster,
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            ttl: None,
            connection_timeout: DEFAULT_CONNECTION_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            root_certificate: None,
            lease_ttl: Some(DEFAULT_LEASE_TTL),
        }
    }

    /// The prefix of every key of the store (default [`DEFAULT_KEY_PREFIX`],
    /// `agentscope:`): stores with different prefixes on one Redis never see each other's
    /// sessions (one per tenant, application or environment). Must not hold `{` or `}`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sessions expire this long after their last save (default: never). Every save sets
    /// the expiry anew. Rounded to milliseconds (at least 1 ms).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// How long connecting to a server waits (default [`DEFAULT_CONNECTION_TIMEOUT`], 5 s).
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// How long a command waits for its answer (default [`DEFAULT_RESPONSE_TIMEOUT`],
    /// 10 s). A save that times out may have been applied (see the [crate docs](crate)).
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// For `rediss://`: trust the certificate authority in `pem` (PEM-encoded) instead of
    /// the system's root certificates (a private CA, a self-signed server certificate).
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificate = Some(pem.into());
        self
    }

    /// How long a session's lease lives without being renewed (default
    /// [`DEFAULT_LEASE_TTL`], 30 s; rounded to milliseconds, at least 3 ms). The holder renews
    /// it every third of that while its call runs, so this is how long a session stays busy
    /// after its holder died (a killed process, a lost network), and how long a holder may
    /// stall before another instance may take the session over. See the
    /// [crate docs](crate), "Leases and interrupts".
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = Some(ttl.max(Duration::from_millis(3)));
        self
    }

    /// Takes no leases: agents on this store are then checked for concurrent calls only
    /// within their own process, as with a file store, and concurrent writers from several
    /// instances are caught by the saves' compare-and-swap alone
    /// ([`SessionError::Conflict`]). Interrupting a session through this store still reaches
    /// holders that other (leasing) stores run. Also spares the connection that receives
    /// interrupts.
    pub fn without_leases(mut self) -> Self {
        self.lease_ttl = None;
        self
    }

    /// Connects (and, with a password, authenticates) and returns the store.
    ///
    /// # Errors
    ///
    /// [`SessionError::Backend`] (naming the URL without its password) for an invalid URL or
    /// key prefix, no cluster seed, an unreachable server or cluster, a refused password or
    /// a TLS failure.
    pub async fn connect(self) -> Result<RedisSessionStore, SessionError> {
        let Self {
            endpoints,
            cluster,
            prefix,
            ttl,
            connection_timeout,
            response_timeout,
            root_certificate,
            lease_ttl,
        } = self;
        check_prefix(&prefix)?;
        let Some(first) = endpoints.first() else {
            return Err(config_error(
                "connecting to a Redis Cluster: no seed URL given",
            ));
        };
        let target = match cluster {
            true => format!(
                "connecting to the Redis Cluster at {}",
                endpoints
                    .iter()
                    .map(Endpoint::shown)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            false => format!("connecting to {}", first.shown()),
        };
        let fail = |error: redis::RedisError| error::backend(None, &target, &error, &endpoints);
        if endpoints.iter().any(Endpoint::is_tls) {
            install_crypto_provider();
        }
        let certificates = root_certificate.map(|pem| redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        });
        // Reconnects: 6 attempts, 100 ms apart at first, doubling up to 1 s (the default
        // doubles up to 6.4 s, long after a restarted server is back).
        let manager_config = ConnectionManagerConfig::new()
            .set_max_delay(Duration::from_secs(1))
            .set_connection_timeout(Some(connection_timeout))
            .set_response_timeout(Some(response_timeout));
        let holders = Arc::new(lease::Holders::default());
        // Interrupts arrive on a RESP3 connection of their own (to the first seed in a
        // cluster, whose nodes forward every message), resubscribed after reconnects.
        let subscriber = match lease_ttl {
            None => None,
            Some(_) => {
                let info =
                    redis::IntoConnectionInfo::into_connection_info(first.url()).map_err(fail)?;
                let settings = info
                    .redis_settings()
                    .clone()
                    .set_protocol(redis::ProtocolVersion::RESP3);
                let info = info.set_redis_settings(settings);
                let client = match certificates.clone() {
                    Some(certificates) => redis::Client::build_with_tls(info, certificates),
                    None => redis::Client::open(info),
                }
                .map_err(fail)?;
                let receiver = Arc::clone(&holders);
                let config = manager_config
                    .clone()
                    .set_push_sender(move |push| {
                        receiver.on_push(push);
                        Ok::<(), ()>(())
                    })
                    .set_automatic_resubscription();
                Some(
                    ConnectionManager::new_with_config(client, config)
                        .await
                        .map_err(fail)?,
                )
            }
        };
        let connection = if cluster {
            let mut builder =
                redis::cluster::ClusterClientBuilder::new(endpoints.iter().map(Endpoint::url))
                    .connection_timeout(connection_timeout)
                    .response_timeout(response_timeout);
            if let Some(certificates) = certificates {
                builder = builder.certs(certificates);
            }
            let client = builder.build().map_err(fail)?;
            Connection::Cluster(client.get_async_connection().await.map_err(fail)?)
        } else {
            let client = match certificates {
                Some(certificates) => redis::Client::build_with_tls(first.url(), certificates),
                None => redis::Client::open(first.url()),
            }
            .map_err(fail)?;
            // One plain attempt first: a wrong password, an untrusted certificate or a
            // closed port fails at once (the manager would retry them with backoff).
            let probe = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(connection_timeout))
                .set_response_timeout(Some(response_timeout));
            drop(
                client
                    .get_multiplexed_async_connection_with_config(&probe)
                    .await
                    .map_err(fail)?,
            );
            Connection::Single(
                ConnectionManager::new_with_config(client, manager_config)
                    .await
                    .map_err(fail)?,
            )
        };
        let store = RedisSessionStore {
            shared: Arc::new(Shared {
                connection,
                endpoints,
                leases: Leases {
                    ttl: lease_ttl,
                    holders,
                    subscriber,
                    channels: std::sync::Mutex::default(),
                },
            }),
            prefix: prefix.into(),
            ttl,
        };
        store.load_scripts().await?;
        tracing::debug!(
            target: "agentscope_redis",
            urls = ?store.shared.endpoints,
            cluster,
            prefix = %store.prefix,
            "connected the Redis session store"
        );
        Ok(store)
    }
}

/// Installs aws-lc-rs as the process's default rustls crypto provider, unless one is.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may install one in between: then that one stays, which is fine.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}

fn config_error(message: impl Into<String>) -> SessionError {
    SessionError::Backend {
        session: None,
        message: message.into(),
        source: None,
    }
}

fn check_prefix(prefix: &str) -> Result<(), SessionError> {
    if prefix.contains(['{', '}']) {
        return Err(config_error(format!(
            "invalid key prefix '{prefix}': it must not hold '{{' or '}}' (the session id is \
             the keys' hash tag)"
        )));
    }
    Ok(())
}

impl RedisSessionStore {
    /// Connects to the Redis at `url` (`redis://[user][:password@]host[:port][/db]`,
    /// `rediss://` for TLS) with the default settings.
    ///
    /// ```no_run
    /// use agentscope::session::SessionStore;
    /// use agentscope_redis::RedisSessionStore;
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let store = RedisSessionStore::connect("redis://127.0.0.1:6379").await?;
    /// println!("{:?}", store.list().await?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`RedisSessionStoreBuilder::connect`].
    pub async fn connect(url: impl Into<String>) -> Result<Self, SessionError> {
        Self::builder(url).connect().await
    }

    /// A builder to connect to the Redis at `url` with other settings than
    /// [`connect`](Self::connect)'s defaults.
    pub fn builder(url: impl Into<String>) -> RedisSessionStoreBuilder {
        RedisSessionStoreBuilder::new(vec![Endpoint::new(url)], false)
    }

    /// A builder to connect to a Redis Cluster through `seeds`, URLs of some of its nodes
    /// (the client discovers the others).
    ///
    /// ```no_run
    /// use agentscope_redis::RedisSessionStore;
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let store = RedisSessionStore::cluster_builder([
    ///     "redis://:password@10.0.0.1:7000",
    ///     "redis://:password@10.0.0.2:7000",
    /// ])
    /// .key_prefix("tenant-7:")
    /// .connect()
    /// .await?;
    /// # drop(store);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cluster_builder<I>(seeds: I) -> RedisSessionStoreBuilder
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        RedisSessionStoreBuilder::new(seeds.into_iter().map(Endpoint::new).collect(), true)
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
        matches!(self.shared.connection, Connection::Cluster(_))
    }

    /// The key of session `session`'s state hash: `<prefix>{<session>}:state`.
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidSessionId`] as [`validate_session_id`].
    pub fn state_key(&self, session: &str) -> Result<String, SessionError> {
        validate_session_id(session)?;
        Ok(format!("{}{{{session}}}:state", self.prefix))
    }

    /// The key of session `session`'s message list: `<prefix>{<session>}:messages`.
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidSessionId`] as [`validate_session_id`].
    pub fn messages_key(&self, session: &str) -> Result<String, SessionError> {
        validate_session_id(session)?;
        Ok(format!("{}{{{session}}}:messages", self.prefix))
    }

    /// The key of session `session`'s lease: `<prefix>{<session>}:lease` (a string holding
    /// the token of the call that holds the session; see the [crate docs](crate)).
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidSessionId`] as [`validate_session_id`].
    pub fn lease_key(&self, session: &str) -> Result<String, SessionError> {
        validate_session_id(session)?;
        Ok(lease::lease_key(&self.prefix, session))
    }

    /// How long a lease lives without renewal (`None`: the store takes no leases); see
    /// [`RedisSessionStoreBuilder::lease_ttl`].
    pub fn lease_ttl(&self) -> Option<Duration> {
        self.shared.leases.ttl
    }

    /// The key of the prefix's session index, `<prefix>sessions`; `None` for a cluster
    /// store, which has none (see the [crate docs](crate)).
    pub fn index_key(&self) -> Option<String> {
        (!self.is_cluster()).then(|| format!("{}sessions", self.prefix))
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

    /// A backend error about `session` saying `what` failed, and where; a key of the
    /// session holding another type than the store writes (`WRONGTYPE`) is
    /// [`SessionError::Corrupt`].
    fn backend(
        &self,
        session: Option<&str>,
        what: &str,
        error: &redis::RedisError,
    ) -> SessionError {
        let endpoints = &self.shared.endpoints;
        let place = match self.is_cluster() {
            true => "the Redis Cluster".to_owned(),
            false => endpoints
                .first()
                .map(Endpoint::shown)
                .unwrap_or_default()
                .to_owned(),
        };
        let failure = error::backend(session, format_args!("{what} ({place})"), error, endpoints);
        let wrong_type = std::error::Error::source(&failure)
            .and_then(|source| source.downcast_ref::<RedisFailure>())
            .is_some_and(|failure| failure.code() == Some("WRONGTYPE"));
        match session {
            Some(session) if wrong_type => SessionError::corrupt(
                session,
                format_args!(
                    "{what}: a key of the session holds another type than this store writes \
                     (a hash {} and a list {}): {}",
                    self.state_key(session).unwrap_or_default(),
                    self.messages_key(session).unwrap_or_default(),
                    redact::scrub(&error.to_string(), endpoints)
                ),
            ),
            _ => failure,
        }
    }

    /// The session's keys, with the index for a standalone store.
    fn keys(&self, session: &str) -> Result<Vec<String>, SessionError> {
        let mut keys = vec![
            self.state_key(session)?,
            self.messages_key(session)?,
            lease::lease_key(&self.prefix, session),
            lease::flag_key(&self.prefix, session),
        ];
        keys.extend(self.index_key());
        Ok(keys)
    }

    fn ttl_ms(&self) -> u64 {
        self.ttl.map_or(0, |ttl| {
            u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
        })
    }

    async fn save_change(&self, session: &str, change: &StateChange) -> Result<u64, SessionError> {
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
            SaveReply::Fenced => Err(SessionError::LeaseLost {
                session: session.to_owned(),
            }),
            SaveReply::Refused { revision, messages } => {
                Err(match change.check(session, revision, messages) {
                    Err(error) => error,
                    Ok(()) => SessionError::Backend {
                        session: Some(session.to_owned()),
                        message: format!(
                            "saving: the save script refused the change from revision {} \
                             although revision {revision} with {messages} messages is stored",
                            change.base
                        ),
                        source: None,
                    },
                })
            }
        }
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

    async fn load_state(&self, session: &str) -> Result<Option<AgentState>, SessionError> {
        let keys = self.keys(session)?;
        let fail = |error: redis::RedisError| self.backend(Some(session), "loading", &error);
        let reply: Value = match &self.shared.connection {
            // Standalone: one MULTI/EXEC (the server copies no list into Lua and back).
            Connection::Single(_) => {
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
            Connection::Cluster(_) => scripts::LOAD
                .key(&keys[0])
                .key(&keys[1])
                .invoke_async(&mut self.connection())
                .await
                .map_err(fail)?,
        };
        codec::load_reply(session, reply)
    }

    async fn delete_session(&self, session: &str) -> Result<bool, SessionError> {
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

    async fn list_sessions(&self) -> Result<Vec<String>, SessionError> {
        let mut ids = match (&self.shared.connection, self.index_key()) {
            (Connection::Cluster(connection), _) => self.scan_cluster(connection.clone()).await?,
            (Connection::Single(_), Some(index)) => {
                let ids: Vec<String> = scripts::LIST
                    .key(index)
                    .invoke_async(&mut self.connection())
                    .await
                    .map_err(|error| self.backend(None, "listing sessions", &error))?;
                ids
            }
            (Connection::Single(_), None) => Vec::new(),
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

    /// The ids of the prefix's state hashes on every primary of the cluster.
    async fn scan_cluster(
        &self,
        mut connection: ClusterConnection,
    ) -> Result<Vec<String>, SessionError> {
        let fail = |error: redis::RedisError| self.backend(None, "listing sessions", &error);
        let slots = connection
            .route_command(
                redis::cmd("CLUSTER").arg("SLOTS").clone(),
                RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
            )
            .await
            .map_err(fail)?;
        let primaries = primaries(&slots).ok_or_else(|| {
            config_error("listing sessions: CLUSTER SLOTS answered something unexpected")
        })?;
        let pattern = format!("{}{{*}}:state", glob_escape(&self.prefix));
        let mut ids = Vec::new();
        for (host, port) in primaries {
            let mut cursor = String::from("0");
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(&cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT)
                    .arg("TYPE")
                    .arg("hash");
                let reply = connection
                    .route_command(
                        scan,
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                            host: host.clone(),
                            port,
                        }),
                    )
                    .await
                    .map_err(fail)?;
                let (next, keys): (String, Vec<String>) =
                    redis::from_redis_value(reply).map_err(|error| {
                        config_error(format!("listing sessions: SCAN answered: {error}"))
                    })?;
                ids.extend(keys.iter().filter_map(|key| self.id_of_state_key(key)));
                cursor = next;
                if cursor == "0" {
                    break;
                }
            }
        }
        Ok(ids)
    }

    /// The session id of a state key of this prefix.
    fn id_of_state_key(&self, key: &str) -> Option<String> {
        key.strip_prefix(&*self.prefix)?
            .strip_prefix('{')?
            .strip_suffix("}:state")
            .map(str::to_owned)
    }
}

/// The primaries' addresses in a `CLUSTER SLOTS` reply, without duplicates.
fn primaries(slots: &Value) -> Option<Vec<(String, u16)>> {
    let Value::Array(ranges) = slots else {
        return None;
    };
    let mut nodes = Vec::new();
    for range in ranges {
        let Value::Array(parts) = range else {
            return None;
        };
        let Some(Value::Array(primary)) = parts.get(2) else {
            return None;
        };
        let host = match primary.first()? {
            Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok()?,
            Value::SimpleString(text) => text.clone(),
            _ => return None,
        };
        let port = match primary.get(1)? {
            Value::Int(port) => u16::try_from(*port).ok()?,
            _ => return None,
        };
        if !nodes.contains(&(host.clone(), port)) {
            nodes.push((host, port));
        }
    }
    Some(nodes)
}

/// `text` with the glob characters of Redis patterns escaped.
fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

impl SessionStore for RedisSessionStore {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        Box::pin(self.save_change(session, change))
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        Box::pin(self.load_state(session))
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(self.delete_session(session))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        Box::pin(self.list_sessions())
    }

    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Option<SessionLease>, SessionError>> {
        Box::pin(self.take_lease(session, interrupt))
    }

    fn interrupt<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(self.interrupt_session(session))
    }
}

impl fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field("urls", &self.shared.endpoints)
            .field("cluster", &self.is_cluster())
            .field("key_prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("lease_ttl", &self.shared.leases.ttl)
            .finish()
    }
}

/// Compiles the README's code blocks with the doc tests, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct Readme;

/// Compiles the scaling guide's code blocks with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/scaling.md")]
struct ScalingGuide;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn primaries_of_cluster_slots() {
        let node = |host: &str, port: i64| {
            Value::Array(vec![bulk(host), Value::Int(port), bulk("node-id")])
        };
        let range = |start: i64, end: i64, primary: Value, replica: Value| {
            Value::Array(vec![Value::Int(start), Value::Int(end), primary, replica])
        };
        let slots = Value::Array(vec![
            range(0, 5460, node("127.0.0.1", 7000), node("127.0.0.1", 7003)),
            range(
                5461,
                10922,
                node("127.0.0.1", 7001),
                node("127.0.0.1", 7004),
            ),
            range(
                10923,
                16000,
                node("127.0.0.1", 7002),
                node("127.0.0.1", 7005),
            ),
            range(
                16001,
                16383,
                node("127.0.0.1", 7000),
                node("127.0.0.1", 7003),
            ),
        ]);
        assert_eq!(
            primaries(&slots).unwrap(),
            [
                ("127.0.0.1".to_owned(), 7000),
                ("127.0.0.1".to_owned(), 7001),
                ("127.0.0.1".to_owned(), 7002)
            ]
        );
        assert_eq!(primaries(&Value::Okay), None);
    }

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("app:*?[x]\\"), "app:\\*\\?\\[x\\]\\\\");
        assert_eq!(glob_escape("agentscope:"), "agentscope:");
    }

    #[test]
    fn prefixes_with_braces_are_refused() {
        assert!(check_prefix("agentscope:").is_ok());
        assert!(check_prefix("").is_ok());
        let error = check_prefix("a{b}:").unwrap_err().to_string();
        assert_eq!(
            error,
            "session store: storage backend error: invalid key prefix 'a{b}:': it must not hold \
             '{' or '}' (the session id is the keys' hash tag)"
        );
    }

    #[test]
    fn builder_debug_hides_passwords() {
        let builder = RedisSessionStore::builder("redis://:hunter2hunter2@127.0.0.1:6379")
            .tls_root_certificate(b"pem".to_vec());
        let shown = format!("{builder:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redis://:***@127.0.0.1:6379"), "{shown}");
        let cluster = RedisSessionStore::cluster_builder(["redis://u:pw-secret@a:7000"]);
        assert!(!format!("{cluster:?}").contains("pw-secret"));
    }
}
