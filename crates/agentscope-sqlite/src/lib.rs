//! A [`SessionStore`] on SQLite, for agentscope-rs.
//!
//! [`SqliteSessionStore`] keeps every session of an application in one SQLite database file.
//! SQLite is compiled in (rusqlite's `bundled` feature), so no system library is needed.
//!
//! ```
//! use agentscope::prelude::*;
//! use agentscope::session::SessionStore;
//! use agentscope_sqlite::SqliteSessionStore;
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//!
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("sessions.db");
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let store = SqliteSessionStore::open(&path)?;
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
//! # Schema
//!
//! One row per session, and one row per message, so that a save writes only what changed:
//!
//! ```sql
//! CREATE TABLE agentscope_session_states (
//!     session_id    TEXT PRIMARY KEY NOT NULL,  -- the session id
//!     revision      INTEGER NOT NULL,           -- 1 after the first save, +1 per save
//!     version       INTEGER NOT NULL,           -- the AgentState format version
//!     agent         TEXT NOT NULL,              -- JSON: {"name": ..., "id": ...}
//!     metadata      TEXT NOT NULL,              -- JSON object: the user metadata
//!     running_tools TEXT NOT NULL,              -- JSON array of tool call ids
//!     hooks         TEXT NOT NULL,              -- JSON object: the hooks' session state
//!     message_count INTEGER NOT NULL,           -- how many message rows the session has
//!     saved_at      TEXT NOT NULL,              -- RFC 3339, when the change was made
//!     recency       TEXT                        -- saved_at as a key sorting newest first
//! );
//! CREATE INDEX agentscope_session_states_recency
//!     ON agentscope_session_states (recency, session_id);
//! CREATE TABLE agentscope_session_messages (
//!     session_id TEXT NOT NULL,
//!     position   INTEGER NOT NULL,              -- 0, 1, 2, ... oldest first
//!     message    TEXT NOT NULL,                 -- JSON: one Msg
//!     PRIMARY KEY (session_id, position)
//! );
//! CREATE TABLE agentscope_session_leases (      -- one row per running call
//!     session_id  TEXT PRIMARY KEY NOT NULL,
//!     token       TEXT NOT NULL,                -- the lease's random fence token
//!     holder      TEXT NOT NULL,                -- who holds it, for people: "pid 4242"
//!     expires_at  INTEGER NOT NULL,             -- Unix time in ms, unless renewed
//!     interrupted INTEGER NOT NULL DEFAULT 0    -- 1: interrupt the holder's call
//! );
//! ```
//!
//! Columns hold the JSON of the matching [`AgentState`] fields, so sessions can be inspected
//! with the `sqlite3` shell and its JSON functions. Session ids follow
//! [`validate_session_id`].
//!
//! A [save](SessionStore::save) is one `BEGIN IMMEDIATE` transaction: read the session's
//! revision and message count, check the [`StateChange`] against them
//! ([`StateChange::check`]: compare-and-swap on the revision), delete the message rows at
//! positions from [`kept`](StateChange::kept) on, insert the appended messages, update the
//! session row, commit. An agent step appends a few messages, so a step costs the same with
//! 1,000 stored messages as with 10 (the `session_step` benchmark measures it). A
//! [load](SessionStore::load) reads the session row and its messages in one read
//! transaction (one consistent revision), and checks the result with
//! [`AgentState::check_for`]; a column or message that does not decode is
//! [`SessionError::Corrupt`] naming the session.
//!
//! ## Listing by recency
//!
//! [`list_recent`](SessionStore::list_recent) is one query on the index
//! `agentscope_session_states_recency`: `WHERE (recency, session_id) > (cursor) AND` the
//! prefix, `ORDER BY recency, session_id LIMIT n`. `recency` is
//! [`SessionSummary::recency_key`] of the row's `saved_at`, written by every save in the
//! same statement as `saved_at` (RFC 3339 text with 0, 3, 6 or 9 fractional digits does not
//! sort as text, so the column itself cannot be the index). A page reads its own rows and
//! walks past, in the index only, the newer sessions whose ids do not start with the
//! prefix; it never reads a message.
//!
//! A database of the version before `list_recent` gets the column and the index when a
//! store opens it, and every row its key, from its `saved_at`, in the same transaction
//! (a `saved_at` that does not read as a time is keyed last: a page that reaches that row
//! reports it [corrupt](SessionError::Corrupt)). A row saved afterwards by a process of
//! that version has no key: the next `list_recent` keys it first. A session that such a
//! process saves again keeps its old key (and its old place in the listing) until this
//! version saves it: upgrade every process before relying on the order. Sessions still in
//! the previous version's table (below) are read whole at every page, and listed in their
//! places.
//!
//! ## Databases of the previous version
//!
//! The previous version kept each session as one row of whole-state JSON in the table
//! `agentscope_sessions (session_id, version, state, saved_at)`. A database that has that
//! table keeps working, and nothing stored in it is lost: a session found only there is
//! loaded from it (with revision 1, or the revision its JSON holds), is listed and can be
//! deleted, and its first save moves it into the new tables in the same transaction (its
//! old row is deleted). The old table itself is left in place; once it is empty you may drop
//! it, then reopen the stores (a store notes when it opens whether the table exists).
//! Stop processes running the previous version before upgrading: they would keep writing
//! the old table only.
//!
//! A database of the version before session leases (the first two tables only) gets the
//! leases table when a store opens it, and everything stored in it stays as it was. Stop
//! processes of that version before upgrading too: they take no leases, so their calls
//! would run beside the leased ones (their saves' compare-and-swap still protects the
//! conversation).
//!
//! # Leases and interrupts
//!
//! An agent bound to a session of this store takes the session's **lease** before its call
//! loads anything ([`SessionStore::lease`]), and gives it back after the call's last save:
//! one row of `agentscope_session_leases`, written in one `BEGIN IMMEDIATE` transaction
//! that succeeds only when the session has no lease or its lease expired. So:
//!
//! - **One call at a time per session, across the processes on the database.** A call on a
//!   session that another call (of this process or another) is running fails at once with
//!   [`AgentError::Busy`](agentscope_core::AgentError::Busy), before any hook runs and
//!   before the model is asked, without loading or storing anything.
//! - **Renewal.** While the call runs, a thread of the store (one per store, running only
//!   while it holds leases, on a connection of its own) renews the lease every third of its
//!   time to live ([`lease_ttl`](SqliteSessionStoreBuilder::lease_ttl), default
//!   [`DEFAULT_LEASE_TTL`], 30 s), all the leases due in one transaction. Expiries are
//!   wall-clock times: every process on the database shares the host's clock.
//! - **A killed holder** (SIGKILL, a crash) stops renewing: its session is free again once
//!   the lease expires, at most the time to live later. The next call settles the tool
//!   calls the dead call left running (their result says they were interrupted while
//!   running; they are not run again). A call dropped in this process (its future or
//!   stream dropped) gives its lease back at once, in the background; the next lease taken
//!   through the same store deletes it first if it is still there.
//! - **Fencing.** Every save of the call carries its lease's token ([`StateChange::fence`])
//!   and the save's transaction checks it against the lease row: a save fenced by a lease
//!   that is not the session's (given back, or expired and taken by another call) is
//!   refused with [`SessionError::LeaseLost`] and writes nothing.
//! - **A holder that cannot renew stops its call.** When the holder finds its lease taken
//!   by another call, or cannot renew it before it would have expired, measured from its
//!   last renewal that went through (the database locked by another process beyond that
//!   moment, say: a renewal never waits for a lock longer), it cancels the call's interrupt
//!   token, so the call ends as an interrupt ends it, and logs a warning once (`tracing`,
//!   target `agentscope_sqlite`). It goes on renewing: if no other call took the session,
//!   the stopped call's last save and its release go through once the database answers.
//! - **Interrupts across processes.** [`interrupt`](SessionStore::interrupt) (or
//!   `ReActAgent::interrupt_session`, through any store on the database) marks the lease
//!   row; the holder's store reads the marks every [`INTERRUPT_POLL`] (100 ms) and cancels
//!   the call, which ends exactly as a local `interrupt()` ends it. A holder using the same
//!   store value is cancelled at once. It returns whether a lease that has not expired
//!   holds the session.
//!
//! A leased call costs two more small write transactions (take and give back) than the
//! same call without a lease, neither of which waits for the disk (lease rows are written
//! with `synchronous = NORMAL`, see [Durability](#durability)), and each store holding leases makes one renewal transaction
//! per third of the time to live and reads the interrupt marks ten times a second.
//! [`without_leases`](SqliteSessionStoreBuilder::without_leases) turns leases off: calls
//! on one session then run side by side, and the loser of a race fails with
//! [`SessionError::Conflict`] at its first save (its tools not run).
//!
//! # Concurrency
//!
//! Share one store (clones are cheap handles) between every agent of a process; several
//! processes on one host may open the same file. Calls on one session take turns through
//! its [lease](#leases-and-interrupts); saves are compare-and-swap besides. What the SQLite
//! documentation recommends for several writers, and what the store does:
//!
//! - **WAL mode** ([`journal_mode=WAL`](https://www.sqlite.org/wal.html)): readers do not
//!   block the writer and the writer does not block readers, so loads run concurrently with
//!   saves. WAL needs shared memory between the processes: use a file on a local file
//!   system, not a network share. [`open`](SqliteSessionStore::open) refuses a database that
//!   cannot use WAL. Switching a new file to WAL gets `SQLITE_BUSY` at once, without the
//!   busy timeout, when another process is doing the same: `open` retries it for up to the
//!   busy timeout, so processes that open one new file at the same moment all open it.
//! - **One writer at a time.** SQLite lets one connection write at a time, whatever the
//!   number of connections. Connections that find the database locked retry with sleeps of
//!   up to 100 ms until their [busy timeout](https://www.sqlite.org/c3ref/busy_timeout.html)
//!   expires: with hundreds of writers in one process that polling is slow and unfair, and
//!   writers failed with "database is locked". So every write of a store goes through **one
//!   writer connection behind a first-come-first-served async mutex**: writers of the process
//!   queue without polling and never contend for SQLite's lock among themselves (1,000
//!   agents saving at once all succeed; see `tests/many_agents.rs`). Waiting for the mutex
//!   takes no thread.
//! - **`BEGIN IMMEDIATE`** for writes ([transactions](https://www.sqlite.org/lang_transaction.html)):
//!   the write lock is taken at the start, where the busy timeout applies, instead of
//!   upgrading a read transaction midway, which fails at once with `SQLITE_BUSY` when another
//!   process wrote in between.
//! - **A busy timeout** ([`BUSY_TIMEOUT`] by default, [`busy_timeout`](SqliteSessionStoreBuilder::busy_timeout)):
//!   only other processes' writers can hold the lock now, and a store waits for them that
//!   long before failing with a [`SessionError::Backend`] error ("database is locked").
//! - **A pool of reader connections** ([`DEFAULT_MAX_READERS`] by default,
//!   [`max_readers`](SqliteSessionStoreBuilder::max_readers)): at most that many loads and
//!   lists run at once (others wait, taking no thread); connections are opened on demand and
//!   kept for reuse.
//!
//! SQLite work never blocks the async runtime: it runs on tokio's blocking thread pool when
//! called inside a tokio runtime (at most one writer plus the readers at a time), and inline
//! otherwise (under `futures::executor`, for example).
//!
//! # Durability
//!
//! Every connection uses `synchronous = FULL`: in WAL mode, each commit syncs the
//! write-ahead log to disk before returning, so a save that returned `Ok` survives a process
//! crash and a power loss. Lease rows alone (taken, renewed, given back, marked
//! interrupted) are committed with `synchronous = NORMAL`, which survives a process crash
//! but not a power loss: a lease only matters while its holder runs, and a power loss ends
//! the holder too (a lost release leaves a lease that expires). The next save's sync covers
//! them. A save is one transaction: a crash or an error during a save
//! leaves the previous revision, never a half-applied change.
//!
//! The sync is most of a save's cost (about 0.2 ms on a fast disk; about 2 ms on a slow or
//! busy one), and a process's saves go one at a time, so a store saves some hundreds to a
//! few thousand times a second however many agents use it.
//!
//! # Configuration
//!
//! [`SqliteSessionStore::open`] uses the defaults; [`SqliteSessionStore::builder`] sets the
//! busy timeout, the number of reader connections and the lease's time to live:
//!
//! ```
//! use std::time::Duration;
//! use agentscope_sqlite::SqliteSessionStore;
//!
//! # let dir = tempfile::tempdir()?;
//! let store = SqliteSessionStore::builder(dir.path().join("sessions.db"))
//!     .busy_timeout(Duration::from_secs(30)) // other processes write long transactions
//!     .max_readers(16)
//!     .lease_ttl(Duration::from_secs(10)) // a crashed process blocks its sessions 10 s at most
//!     .open()?;
//! assert_eq!(store.lease_ttl(), Some(Duration::from_secs(10)));
//! # drop(store);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! See `docs/sessions.md` in the repository for how sessions work and how several service
//! instances share them.
#![warn(missing_docs)]

mod db;
mod lease;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agentscope_core::CancellationToken;
#[cfg(doc)]
use agentscope_core::session::SessionStore;
use agentscope_core::session::{
    AgentState, AsyncSessionStore, SessionError, SessionLease, SessionSummary, StateChange,
    clamp_lease_ttl, run_blocking, validate_session_id,
};
use rusqlite::Connection;
use tokio::sync::{Mutex as AsyncMutex, Semaphore};

/// The table holding one row per session.
pub const STATES_TABLE: &str = "agentscope_session_states";

/// The table holding one row per message.
pub const MESSAGES_TABLE: &str = "agentscope_session_messages";

/// The table holding one row per session lease (a call running on the session).
pub const LEASES_TABLE: &str = "agentscope_session_leases";

/// The table of the previous version (whole-state JSON per session), read and migrated
/// when present.
pub const LEGACY_TABLE: &str = "agentscope_sessions";

/// How long a write waits for another process's write to finish before failing with
/// "database is locked", by default.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many connections read at once, by default.
pub const DEFAULT_MAX_READERS: usize = 8;

/// How long a session lease lives without being renewed, by default (every store's default,
/// from [`agentscope_core::session`]): a call killed with its process keeps its session busy
/// that long at most.
pub use agentscope_core::session::DEFAULT_LEASE_TTL;

/// How often a process holding session leases looks for interrupts that another process
/// marked (see [`SessionStore::interrupt`]).
pub const INTERRUPT_POLL: Duration = Duration::from_millis(100);

/// A [`SessionStore`] keeping sessions in a SQLite database file.
///
/// See the [crate docs](crate) for the schema, concurrency and durability. A cheap `Clone`
/// handle: clones share the connections. Open the store once per process and give clones
/// to every agent; several processes may open the same file.
#[derive(Clone)]
pub struct SqliteSessionStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    busy_timeout: Duration,
    max_readers: usize,
    /// Whether the database has the previous version's table.
    legacy: bool,
    /// The one connection every write of this store goes through.
    writer: Arc<AsyncMutex<Connection>>,
    /// One permit per reader connection that may be in use.
    readers: Arc<Semaphore>,
    /// Reader connections not in use.
    idle: Mutex<Vec<Connection>>,
    /// The leases the store holds; `None`: it takes none.
    leases: Option<Arc<lease::Keeper>>,
}

/// Opens a [`SqliteSessionStore`] with settings other than the defaults; see
/// [`SqliteSessionStore::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct SqliteSessionStoreBuilder {
    path: PathBuf,
    busy_timeout: Duration,
    max_readers: usize,
    lease_ttl: Option<Duration>,
}

impl SqliteSessionStoreBuilder {
    /// How long a connection waits for another process's lock before failing with
    /// "database is locked" (default [`BUSY_TIMEOUT`], 5 s). Writers of the same store never
    /// wait on this: they queue for the store's one writer connection.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// How many connections may read (load, list) at once (default
    /// [`DEFAULT_MAX_READERS`], 8; `0` counts as 1). More loads wait for a connection. The
    /// writer connection is one more.
    pub fn max_readers(mut self, readers: usize) -> Self {
        self.max_readers = readers.max(1);
        self
    }

    /// How long a session lease lives without being renewed (default
    /// [`DEFAULT_LEASE_TTL`], 30 s; rounded down to milliseconds, at least 3 ms, at most
    /// a year: [`clamp_lease_ttl`]): how long
    /// a call killed with its process keeps its session busy, at most. The holder renews
    /// its leases every third of it, and stops its call when it could not renew one before
    /// it would have expired (see [Leases and interrupts](crate#leases-and-interrupts)).
    /// Every process on the database should use the same value.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = Some(clamp_lease_ttl(ttl));
        self
    }

    /// Takes no session leases: agents on the store then rely on the saves'
    /// compare-and-swap alone (a second call on a session runs, and the loser of the race
    /// fails with [`SessionError::Conflict`] at its first save), and
    /// [`interrupt`](SessionStore::interrupt) reaches no call.
    pub fn without_leases(mut self) -> Self {
        self.lease_ttl = None;
        self
    }

    /// Opens (or creates) the database, switches it to WAL mode and creates the tables if
    /// needed. Blocking: call it at start-up (or in `spawn_blocking`).
    ///
    /// # Errors
    ///
    /// [`SessionError::Backend`] (naming the file) when the file cannot be opened or created,
    /// is not a SQLite database, or cannot use WAL mode. An existing file is never
    /// overwritten.
    pub fn open(self) -> Result<SqliteSessionStore, SessionError> {
        let Self {
            path,
            busy_timeout,
            max_readers,
            lease_ttl,
        } = self;
        let store_error = |error: rusqlite::Error| {
            SessionError::backend(None, format_args!("opening {}", path.display()), error)
        };
        let mut writer = db::connect(&path, busy_timeout, false).map_err(store_error)?;
        let legacy = match db::init(&mut writer, busy_timeout).map_err(store_error)? {
            db::Opened::Ready { legacy } => legacy,
            db::Opened::NotWal(mode) => {
                return Err(SessionError::backend_message(
                    None,
                    format_args!(
                        "opening {}: the database cannot use WAL mode (journal mode is \
                         '{mode}'); use a database file on a local file system",
                        path.display()
                    ),
                ));
            }
        };
        let leases = lease_ttl.map(|ttl| lease::Keeper::new(path.clone(), busy_timeout, ttl));
        Ok(SqliteSessionStore {
            inner: Arc::new(Inner {
                path,
                busy_timeout,
                max_readers,
                legacy,
                writer: Arc::new(AsyncMutex::new(writer)),
                readers: Arc::new(Semaphore::new(max_readers)),
                idle: Mutex::new(Vec::new()),
                leases,
            }),
        })
    }
}

impl SqliteSessionStore {
    /// Opens (or creates) the database at `path` with the default settings, switches it to
    /// WAL mode and creates the tables if needed. Blocking: call it at start-up (or in
    /// `spawn_blocking`).
    ///
    /// ```
    /// use agentscope::session::SessionStore;
    /// use agentscope_sqlite::SqliteSessionStore;
    ///
    /// # let dir = tempfile::tempdir()?;
    /// let store = SqliteSessionStore::open(dir.path().join("sessions.db"))?;
    /// let again = SqliteSessionStore::open(store.path())?; // another handle, e.g. another process
    /// # futures::executor::block_on(async {
    /// assert!(again.list().await?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`SqliteSessionStoreBuilder::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SessionError> {
        Self::builder(path).open()
    }

    /// A builder to open the database at `path` with other settings than
    /// [`open`](Self::open)'s defaults.
    pub fn builder(path: impl AsRef<Path>) -> SqliteSessionStoreBuilder {
        SqliteSessionStoreBuilder {
            path: path.as_ref().to_path_buf(),
            busy_timeout: BUSY_TIMEOUT,
            max_readers: DEFAULT_MAX_READERS,
            lease_ttl: Some(DEFAULT_LEASE_TTL),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The busy timeout of the store's connections.
    pub fn busy_timeout(&self) -> Duration {
        self.inner.busy_timeout
    }

    /// How many connections may read at once.
    pub fn max_readers(&self) -> usize {
        self.inner.max_readers
    }

    /// How long the store's session leases live without renewal; `None`: it takes none
    /// ([`without_leases`](SqliteSessionStoreBuilder::without_leases)).
    pub fn lease_ttl(&self) -> Option<Duration> {
        self.inner.leases.as_ref().map(|keeper| keeper.ttl())
    }

    /// Runs `job` on session `session`, its id checked first, on the connection `side` says.
    async fn on_session<T: Send + 'static>(
        &self,
        session: &str,
        side: Side,
        job: fn(&mut Connection, &str, bool) -> Result<T, SessionError>,
    ) -> Result<T, SessionError> {
        validate_session_id(session)?;
        let id = session.to_owned();
        let work = move |connection: &mut Connection, legacy| job(connection, &id, legacy);
        match side {
            Side::Reader => self.read(Some(session), work).await,
            Side::Writer => self.write(Some(session), work).await,
        }
    }

    /// Runs `work` on the writer connection, after the writes queued before it.
    async fn write<T, F>(&self, session: Option<&str>, work: F) -> Result<T, SessionError>
    where
        F: FnOnce(&mut Connection, bool) -> Result<T, SessionError> + Send + 'static,
        T: Send + 'static,
    {
        let legacy = self.inner.legacy;
        let mut writer = Arc::clone(&self.inner.writer).lock_owned().await;
        // The guard moves into the job: the writer is released when the work is done, even
        // if this future is dropped meanwhile.
        run_blocking(session, move || work(&mut writer, legacy)).await?
    }

    /// Runs `work` on a reader connection, opening one if none is idle.
    async fn read<T, F>(&self, session: Option<&str>, work: F) -> Result<T, SessionError>
    where
        F: FnOnce(&mut Connection, bool) -> Result<T, SessionError> + Send + 'static,
        T: Send + 'static,
    {
        let permit = Arc::clone(&self.inner.readers)
            .acquire_owned()
            .await
            .map_err(|error| SessionError::backend(session, "waiting for a connection", error))?;
        let inner = Arc::clone(&self.inner);
        let owned = session.map(str::to_owned);
        run_blocking(session, move || {
            let _permit = permit;
            let mut connection = match inner.idle().pop() {
                Some(connection) => connection,
                None => db::connect(&inner.path, inner.busy_timeout, true).map_err(|error| {
                    SessionError::backend(
                        owned.as_deref(),
                        format_args!("opening {}", inner.path.display()),
                        error,
                    )
                })?,
            };
            let result = work(&mut connection, inner.legacy);
            inner.idle().push(connection);
            result
        })
        .await?
    }
}

/// Which connection a job runs on.
#[derive(Clone, Copy)]
enum Side {
    /// A reader, one of several at once.
    Reader,
    /// The writer, after the writes queued before.
    Writer,
}

impl Inner {
    fn idle(&self) -> MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AsyncSessionStore for SqliteSessionStore {
    async fn save(&self, session: &str, change: &StateChange) -> Result<u64, SessionError> {
        validate_session_id(session)?;
        // Serialised before queueing for the writer, so the writer only writes.
        let encoded = db::EncodedChange::new(session, change)?;
        let id = session.to_owned();
        self.write(Some(session), move |connection, legacy| {
            db::save(connection, &id, &encoded, legacy)
        })
        .await
    }

    async fn load(&self, session: &str) -> Result<Option<AgentState>, SessionError> {
        self.on_session(session, Side::Reader, db::load).await
    }

    async fn delete(&self, session: &str) -> Result<bool, SessionError> {
        self.on_session(session, Side::Writer, db::delete).await
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        self.read(None, db::list).await
    }

    /// One indexed query of [`STATES_TABLE`] (by its `recency` column, then the id), in one
    /// read transaction: it reads the page's rows and skips, in the index, the newer rows
    /// whose ids do not start with `prefix`; see [Listing by recency](crate#listing-by-recency).
    ///
    /// # Errors
    ///
    /// The database could not be read; a listed row whose `saved_at` or revision cannot be
    /// read is [`SessionError::Corrupt`] naming its session.
    async fn list_recent(
        &self,
        prefix: &str,
        after: Option<&SessionSummary>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, SessionError> {
        let read = || {
            let prefix = prefix.to_owned();
            let after = after.cloned();
            move |connection: &mut Connection, legacy| {
                db::list_recent(connection, legacy, &prefix, after.as_ref(), limit)
            }
        };
        match self.read(None, read()).await? {
            db::Recent::Page(page) => Ok(page),
            // Rows saved by a process of an earlier version: key them, then read again.
            db::Recent::Unkeyed => {
                self.write(None, db::key_rows).await?;
                match self.read(None, read()).await? {
                    db::Recent::Page(page) => Ok(page),
                    db::Recent::Unkeyed => Err(SessionError::backend_message(
                        None,
                        "listing sessions: rows without a recency key were saved again while \
                         they were keyed (a process of an earlier version writes the database)",
                    )),
                }
            }
        }
    }

    /// Takes the session's lease (a row of [`LEASES_TABLE`]) for one call; see
    /// [Leases and interrupts](crate#leases-and-interrupts).
    ///
    /// # Errors
    ///
    /// [`SessionError::Busy`] while another call (of any process on the database) holds a
    /// lease on the session that has not expired; an invalid id; the database could not be
    /// written (locked by another process beyond the busy timeout, say).
    async fn lease(
        &self,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        self.take_lease(session, interrupt).await
    }

    /// Interrupts the call holding the session's lease, in any process on the database:
    /// marks the lease, which its holder reads within [`INTERRUPT_POLL`] (a holder using
    /// this store is cancelled at once). Returns whether a lease that has not expired holds
    /// the session.
    ///
    /// # Errors
    ///
    /// An invalid id; the database could not be written.
    async fn interrupt(&self, session: &str) -> Result<bool, SessionError> {
        self.interrupt_holder(session).await
    }
}

impl fmt::Debug for SqliteSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteSessionStore")
            .field("path", &self.inner.path)
            .field("busy_timeout", &self.inner.busy_timeout)
            .field("max_readers", &self.inner.max_readers)
            .field("idle_readers", &self.inner.idle().len())
            .field("legacy_table", &self.inner.legacy)
            .field("lease_ttl", &self.lease_ttl())
            .finish()
    }
}
