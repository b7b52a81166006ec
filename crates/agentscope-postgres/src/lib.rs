//! A [`SessionStore`] on PostgreSQL, for agentscope-rs.
//!
//! [`PostgresSessionStore`] keeps the sessions of every instance of a service in the
//! PostgreSQL database most services already run, so a conversation continues on whichever
//! instance the next request lands on; one call at a time per session across instances,
//! and any instance can interrupt it.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use agentscope::prelude::*;
//! use agentscope::session::SessionStore;
//! use agentscope_postgres::PostgresSessionStore;
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let store = PostgresSessionStore::builder("postgresql://app@db.internal:5432/app?sslmode=require")
//!     .password(std::env::var("PGPASSWORD")?) // or in the URL; never shown
//!     .schema("support_bot")                  // default "public"; created when missing
//!     .max_connections(32)                    // the pool (default 16)
//!     .lease_ttl(Duration::from_secs(15))     // default 30 s
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
//! # Schema and migrations
//!
//! The store creates its tables itself, in the schema of your choice
//! ([`schema`](PostgresSessionStoreBuilder::schema), default `public`): one row per
//! session, one row per message, one row per leased session.
//!
//! ```sql
//! CREATE TABLE agentscope_session_states (
//!     session_id    TEXT COLLATE "C" PRIMARY KEY,  -- the session id
//!     revision      BIGINT NOT NULL,               -- 1 after the first save, +1 per save
//!     version       INTEGER NOT NULL,              -- the AgentState format version
//!     agent         JSON NOT NULL,                 -- {"name": ..., "id": ...}
//!     metadata      JSON NOT NULL,                 -- the user metadata
//!     running_tools JSON NOT NULL,                 -- tool call ids started, not finished
//!     hooks         JSON NOT NULL,                 -- the hooks' session state
//!     message_count INTEGER NOT NULL,              -- how many message rows it has
//!     saved_at      TEXT NOT NULL,                 -- RFC 3339 (nanoseconds), the change's
//!     updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(), -- the server's time of the save
//!     recency       TEXT COLLATE "C"               -- saved_at as a key sorting newest first
//! );
//! CREATE INDEX agentscope_session_states_recency
//!     ON agentscope_session_states (recency, session_id);
//! CREATE TABLE agentscope_session_messages (
//!     session_id TEXT COLLATE "C" NOT NULL
//!         REFERENCES agentscope_session_states (session_id) ON DELETE CASCADE,
//!     position   INTEGER NOT NULL,                 -- 0, 1, 2, ... oldest first
//!     message    JSON NOT NULL,                    -- one Msg
//!     PRIMARY KEY (session_id, position)
//! );
//! CREATE TABLE agentscope_session_leases (
//!     session_id  TEXT COLLATE "C" PRIMARY KEY,
//!     token       TEXT NOT NULL,                   -- the holder's fence token
//!     expires_at  TIMESTAMPTZ NOT NULL,            -- by the server's clock
//!     interrupted BOOLEAN NOT NULL DEFAULT false
//! );
//! ```
//!
//! Columns hold the JSON of the matching [`AgentState`] fields, byte for byte as serde wrote
//! it, so sessions can be queried with PostgreSQL's JSON operators
//! (`message->'content'`, `metadata::jsonb @> '{"user": "alice"}'`). They are `JSON`, not
//! `JSONB`: `JSONB` rejects the `\u0000` escape, which a tool's output or a user's text may
//! hold, and rewrites numbers and key order; `JSON` keeps the text exactly (cast to `jsonb`
//! in a query, or in an expression index, where you need its operators). Session ids are
//! compared byte by byte (`COLLATE "C"`), so [`list`](SessionStore::list) is sorted as Rust
//! sorts strings. The database must use the UTF-8 encoding (connecting checks it).
//!
//! The tables come from embedded, versioned migrations ([`SCHEMA_VERSION`] is the newest):
//! connecting applies the ones the schema lacks, each once, in a transaction of its own,
//! under a transaction-level advisory lock on the schema (`pg_advisory_xact_lock`), and
//! records it in `agentscope_schema_migrations` (version, name, when). So instances started
//! at the same moment wait for each other and the first applies them; a failed migration
//! leaves nothing behind. The role needs the right to create tables in the schema (and to
//! create the schema, if it does not exist) the first time; afterwards it needs `SELECT`,
//! `INSERT`, `UPDATE` and `DELETE` on the four tables.
//!
//! # Operations
//!
//! - [**save**](SessionStore::save) is one transaction: with a fence, it reads the session's
//!   lease row `FOR SHARE` (refusing the save with [`SessionError::LeaseLost`] when another
//!   call holds a live lease, and keeping any other call from taking the lease until the
//!   save commits); it locks the session row (`SELECT ... FOR UPDATE`; a new session is
//!   inserted `ON CONFLICT DO NOTHING`, so two writers creating it at once are told apart
//!   exactly), checks the change against the stored revision and message count
//!   ([`StateChange::check`]: compare-and-swap, [`SessionError::Conflict`] exactly as every
//!   store reports it), deletes the message rows from [`kept`](StateChange::kept) on,
//!   inserts the appended messages (one statement), updates the session row and commits.
//!   All or nothing: a failure, a dropped connection or a killed process leaves the previous
//!   revision. It never rewrites the conversation: a step costs the same at 1,000 messages as
//!   at 10.
//! - [**load**](SessionStore::load) is one statement (one snapshot): the session row and its
//!   messages aggregated in order. It checks the version first
//!   ([`SessionError::UnsupportedVersion`]), then every column and that the messages are
//!   numbered 0, 1, 2, ... up to the stored count ([`SessionError::Corrupt`] naming the
//!   session and the column), and [`AgentState::check_for`].
//! - [**delete**](SessionStore::delete) deletes the session row; its messages go with it.
//!   A lease of the session stays (the call holding it ends on its own).
//! - [**list**](SessionStore::list) is one indexed query, sorted.
//! - [**list_recent**](SessionStore::list_recent) is one query on the recency index (see
//!   [below](#listing-by-recency)).
//!
//! # Listing by recency
//!
//! [`list_recent`](SessionStore::list_recent) reads `WHERE (recency, session_id) > (cursor)
//! AND starts_with(session_id, prefix) ORDER BY recency, session_id LIMIT n`, an index scan
//! of `agentscope_session_states_recency` that starts at the cursor: a page reads its own
//! rows and walks past, in the index, the newer sessions whose ids do not start with the
//! prefix (PostgreSQL also narrows the scan to the prefix's range of ids); it never reads a
//! message. `recency` is [`SessionSummary::recency_key`] of the row's `saved_at`, written
//! by every save with `saved_at` (the RFC 3339 text, with 0, 3, 6 or 9 fractional digits,
//! does not sort as text, and `TIMESTAMPTZ` keeps microseconds where `saved_at` has
//! nanoseconds).
//!
//! Migration 2 adds the column and its index; connecting then keys every row that has no
//! key, from its `saved_at` (one that does not read as a time is keyed last: a page that
//! reaches that row reports it [corrupt](SessionError::Corrupt)). A row that an instance of
//! an earlier version saves afterwards has no key: the next `list_recent` keys it first. A
//! session such an instance saves again keeps its old key (and its old place in the
//! listing) until this version saves it: upgrade every instance before relying on the
//! order.
//!
//! # Leases and interrupts
//!
//! An agent bound to a session of this store ([`SessionStore::lease`]) takes the session's
//! **lease** before its call loads anything: an upsert of the session's lease row with a
//! random token, which succeeds only when no live lease holds the session (the expiry is
//! compared with the server's `now()`, so the instances' clocks do not matter). While the
//! call runs, a task renews the lease every third of its time to live
//! ([`lease_ttl`](PostgresSessionStoreBuilder::lease_ttl), default [`DEFAULT_LEASE_TTL`],
//! 30 s); the call deletes it when it ends (only if its token still holds it). So:
//!
//! - A call on a session that another instance is running fails at once with
//!   [`AgentError::Busy`](agentscope_core::AgentError::Busy), before any hook, model or tool
//!   runs and without loading or storing anything.
//! - A holder that died (SIGKILL, a lost host) stops renewing: its session is free again
//!   within the lease's time to live. The next call settles the tools the dead holder left
//!   running (their result says they were interrupted while running, and they are not run
//!   again).
//! - A holder that cannot renew (the server or the network away, a connection reset, a
//!   renewal never answered) stops its own call before its lease can expire: when renewals
//!   keep failing until the lease is a tenth of its time to live from expiring, measured
//!   from the last renewal that went through (no renewal is waited for beyond that moment),
//!   the call is interrupted (it ends as `interrupt()` ends it) and a warning is logged
//!   once, so no other instance can take the session while it still runs. The expiry is
//!   measured from when that renewal was sent, no later than the server set it; the tenth
//!   covers a timer that fires late. Renewing goes on: if the server answers again and no
//!   other call took the session, the stopped call's last save and release go through.
//! - The lease is a fence: every save of the call carries its token
//!   ([`StateChange::fence`]) and is refused ([`SessionError::LeaseLost`]) when another call
//!   holds a live lease on the session; the stalled holder's renewal notices the loss and
//!   cancels its call, and its release leaves the new holder's lease alone.
//!
//! [`interrupt`](SessionStore::interrupt) (or `ReActAgent::interrupt_session`, on any
//! instance) interrupts the call holding a session, wherever it runs: one statement marks
//! the live lease as interrupted and sends `<schema>/<session>` on the channel
//! [`INTERRUPT_CHANNEL`] (`pg_notify`); it returns whether a live lease was held. Each store
//! that takes leases keeps one connection of its own, outside the pool, `LISTEN`ing on that
//! channel (opened by its first lease, reconnected in the background when it drops), and
//! cancels the calls it runs on that session, which then end exactly as a local
//! `interrupt()` ends them. A holder that missed the notification (its listener was
//! reconnecting) sees the mark at its next renewal, within a third of the lease's time to
//! live.
//!
//! [`without_leases`](PostgresSessionStoreBuilder::without_leases) turns leases off (and the
//! listening connection): then only each process's own busy check and the saves'
//! compare-and-swap coordinate instances.
//!
//! The rows of leases whose holders died stay until the session's next lease replaces
//! them (a few bytes each).
//!
//! # Connections and failures
//!
//! A store holds a pool of connections (deadpool-postgres, at most
//! [`max_connections`](PostgresSessionStoreBuilder::max_connections), default
//! [`DEFAULT_MAX_CONNECTIONS`], 16), opened on demand and reused; an operation waits for a
//! free one up to [`pool_timeout`](PostgresSessionStoreBuilder::pool_timeout). Connecting
//! checks the server at once: [`connect`](PostgresSessionStoreBuilder::connect) fails on a
//! wrong password, an untrusted certificate or an unreachable server. A connection the
//! server closed (a restart) is dropped from the pool and replaced by a new one at the next
//! operation. Nothing is retried for you: a failed operation returns its error.
//!
//! Errors become [`SessionError::Backend`] saying what failed (`saving`, `loading`, ...) and
//! where (the server without its password), with a [`PostgresFailure`] as its source (the
//! SQLSTATE code, whether the connection failed). Passwords never appear in `Debug` output,
//! error messages or logs: a URL is shown as `postgresql://user:<redacted>@host:port/db`, a
//! `key=value` string with `password=<redacted>`. A save whose commit was sent but whose
//! answer was lost (the connection dropped at that moment) may or may not have been applied;
//! the next save from the same base then fails with a conflict if it was: load the session
//! again.
//!
//! # Durability
//!
//! A save returns once PostgreSQL committed it: with the server's default
//! `synchronous_commit = on`, it survives a crash of the server. Tested with PostgreSQL 15.
//!
//! # TLS
//!
//! `sslmode=require` in the connection string (or
//! [`require_tls`](PostgresSessionStoreBuilder::require_tls), or
//! [`tls_root_certificate`](PostgresSessionStoreBuilder::tls_root_certificate)) connects with
//! TLS (rustls): the server's certificate is verified against the system's root
//! certificates, or the one given, and must name the host, as libpq's `verify-full` does.
//! Without it the connection is plain, also with libpq's default `sslmode=prefer`, which
//! would accept any certificate. The crypto provider is the process's default rustls
//! provider, or aws-lc-rs (the one the workspace's HTTP and Redis clients use).
//!
//! See `docs/sessions.md` in the repository for how sessions work and how several service
//! instances share them.
#![warn(missing_docs)]

// One job per module; `use crate::` edges only point down (no cycles):
//   builder    connecting: the settings     -> store, lease, db, schema, sql, tls, endpoint, error
//   store      PostgresSessionStore, its ops -> lease, codec, db
//   lease      leases, renewal, interrupts  -> listener, db
//   listener   LISTEN for interrupts        -> db, sql, error
//   db         the pool and the statements  -> sql, endpoint, error
//   schema     tables, migrations           -> endpoint, error
//   sql        the statements               -> schema
//   codec      states to rows and back
//   tls        the rustls connector         -> error
//   error      PostgresFailure              -> endpoint
//   endpoint   the connection string as given and as shown (core's redaction)
mod builder;
mod codec;
mod db;
mod endpoint;
mod error;
mod lease;
mod listener;
mod schema;
mod sql;
mod store;
mod tls;

/// How long a session lease lives without being renewed, by default (every store's default,
/// from [`agentscope_core::session`]).
pub use agentscope_core::session::DEFAULT_LEASE_TTL;
pub use builder::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_POOL_TIMEOUT,
    PostgresSessionStoreBuilder,
};
pub use error::PostgresFailure;
pub use schema::{
    DEFAULT_SCHEMA, LEASES_TABLE, MESSAGES_TABLE, MIGRATIONS_TABLE, SCHEMA_VERSION, STATES_TABLE,
};
pub use sql::INTERRUPT_CHANNEL;
pub use store::PostgresSessionStore;

// The names the crate docs link to.
#[cfg(doc)]
use agentscope_core::session::{
    AgentState, SessionError, SessionStore, SessionSummary, StateChange,
};
