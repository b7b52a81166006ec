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
//! | `Precent` | sorted set | one `<recency key><id>` member per session, all scored 0, so that their lexical order is newest first ([`SessionSummary::recency_key`]); standalone only |
//! | `Precent-keys` | hash | each session id's current recency key (how a save, a delete or the pruning of an expired session finds its member); standalone only |
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
//!   refreshes the TTL and updates the indexes. It never rewrites the conversation: a step
//!   costs the same at 1,000 messages as at 10. A change appending a `System` message is
//!   refused before any write.
//! - [**load**](SessionStore::load) reads the hash and the whole list at once (one
//!   consistent revision: `MULTI`/`EXEC` standalone, where it spares the server copying the
//!   list into Lua and back; a script in a cluster), checks the version first ([`SessionError::UnsupportedVersion`])
//!   and the rest ([`SessionError::Corrupt`] naming the session and the field), and
//!   [`AgentState::check_for`].
//! - [**delete**](SessionStore::delete) removes both keys and the index entries; it returns
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
//! - [**list_recent**](SessionStore::list_recent): see [below](#listing-by-recency).
//!
//! # Listing by recency
//!
//! Standalone, [`list_recent`](SessionStore::list_recent) reads the prefix's recency index
//! `Precent`, which the save and delete scripts update in the same atomic step as the
//! session (a save moves its member, a delete removes it; the pruning of expired sessions
//! removes theirs). A script walks the index from the cursor's member (`ZRANGEBYLEX`),
//! keeps the members whose ids start with the prefix and reads only their `revision` and
//! `saved_at` (`HMGET`), skipping sessions that expired; a page is one script call, and a
//! script stops after looking at 1,000 members (a long page or a rare prefix takes several
//! calls, so no script holds the server long). The newer sessions of other prefixes are
//! walked past in the index, never read.
//!
//! Sessions saved by a version before the recency index are in `Psessions` only: the first
//! page after an upgrade finds that the two disagree in size and adds each such session to
//! the recency index from its `saved_at` (one that does not read as a time is keyed last,
//! and reported [corrupt](SessionError::Corrupt) when a page reaches it). Sessions that an
//! instance of that version saves again meanwhile keep their old member (their old place)
//! until this version saves them: upgrade every instance before relying on the order.
//!
//! In a cluster there is no recency index: it would live in another hash slot than the
//! sessions, and no script may touch two slots, so it could not be kept atomically with the
//! saves. `list_recent` there `SCAN`s every primary for the prefix's sessions (as `list`
//! does) and reads two fields of each (`HMGET revision saved_at`, 64 at a time), then
//! sorts and pages in memory: exact, and a page costs a pass over the cluster's keys and a
//! small read per session of the prefix (no messages are read).
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
//! - A holder that cannot renew its lease (Redis unreachable, a partition, a stalled
//!   server) stops its call when the lease would have expired, measured from its last
//!   renewal that succeeded: the call's interrupt token is cancelled (the call ends as an
//!   interrupt ends it) and a warning is logged once. Renewing goes on meanwhile: if Redis
//!   answers again and no other call took the session, the stopped call's last save and
//!   release go through; if another call took it, they are refused
//!   ([`SessionError::LeaseLost`]) and the new holder's lease is left alone.
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
//! output, error messages or logs: URLs are shown as `redis://user:<redacted>@host:port`.
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

// One job per module; `use crate::` edges only point down (no cycles):
//   builder    connecting: the settings     -> store, lease, connection, keys, error, endpoint
//   store      RedisSessionStore, its ops   -> cluster, lease, codec, connection, keys, scripts
//   lease      leases, interrupts           -> connection, keys, scripts
//   cluster    listing a cluster (SCAN)     -> keys, error
//   codec      script arguments, replies    -> scripts
//   connection one server or a cluster,     -> keys, error, endpoint
//              and what its failures become
//   keys       key naming, the prefix rule  -> error
//   error      RedisFailure, backend errors -> endpoint
//   scripts    the Lua scripts
//   endpoint   a URL as given and as shown (core's redaction), its secrets
mod builder;
mod cluster;
mod codec;
mod connection;
mod endpoint;
mod error;
mod keys;
mod lease;
mod scripts;
mod store;

/// How long a session lease lives without being renewed, by default (every store's default,
/// from [`agentscope_core::session`]).
pub use agentscope_core::session::DEFAULT_LEASE_TTL;
pub use builder::{DEFAULT_CONNECTION_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT, RedisSessionStoreBuilder};
pub use error::RedisFailure;
pub use keys::DEFAULT_KEY_PREFIX;
pub use store::RedisSessionStore;

// The names the crate docs link to.
#[cfg(doc)]
use agentscope_core::session::{
    AgentState, SessionError, SessionStore, SessionSummary, StateChange, validate_session_id,
};

/// Compiles the README's code blocks with the doc tests, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct Readme;

/// Compiles the scaling guide's code blocks with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/scaling.md")]
struct ScalingGuide;
