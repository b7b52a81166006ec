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
//!     saved_at      TEXT NOT NULL               -- RFC 3339, when the change was made
//! );
//! CREATE TABLE agentscope_session_messages (
//!     session_id TEXT NOT NULL,
//!     position   INTEGER NOT NULL,              -- 0, 1, 2, ... oldest first
//!     message    TEXT NOT NULL,                 -- JSON: one Msg
//!     PRIMARY KEY (session_id, position)
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
//! # Concurrency
//!
//! Share one store (clones are cheap handles) between every agent of a process; several
//! processes on one host may open the same file. What the SQLite documentation recommends
//! for that, and what the store does:
//!
//! - **WAL mode** ([`journal_mode=WAL`](https://www.sqlite.org/wal.html)): readers do not
//!   block the writer and the writer does not block readers, so loads run concurrently with
//!   saves. WAL needs shared memory between the processes: use a file on a local file
//!   system, not a network share. [`open`](SqliteSessionStore::open) refuses a database that
//!   cannot use WAL.
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
//! crash and a power loss. A save is one transaction: a crash or an error during a save
//! leaves the previous revision, never a half-applied change.
//!
//! The sync is most of a save's cost (about 0.2 ms on a fast disk; about 2 ms on a slow or
//! busy one), and a process's saves go one at a time, so a store saves some hundreds to a
//! few thousand times a second however many agents use it.
//!
//! # Configuration
//!
//! [`SqliteSessionStore::open`] uses the defaults; [`SqliteSessionStore::builder`] sets the
//! busy timeout and the number of reader connections:
//!
//! ```
//! use std::time::Duration;
//! use agentscope_sqlite::SqliteSessionStore;
//!
//! # let dir = tempfile::tempdir()?;
//! let store = SqliteSessionStore::builder(dir.path().join("sessions.db"))
//!     .busy_timeout(Duration::from_secs(30)) // other processes write long transactions
//!     .max_readers(16)
//!     .open()?;
//! # drop(store);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! See `docs/sessions.md` in the repository for how sessions work and how several service
//! instances share them.
#![warn(missing_docs)]

mod db;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agentscope_core::session::{
    AgentState, SessionError, SessionStore, StateChange, validate_session_id,
};
use futures::future::BoxFuture;
use rusqlite::Connection;
use tokio::sync::{Mutex as AsyncMutex, Semaphore};

/// The table holding one row per session.
pub const STATES_TABLE: &str = "agentscope_session_states";

/// The table holding one row per message.
pub const MESSAGES_TABLE: &str = "agentscope_session_messages";

/// The table of the previous version (whole-state JSON per session), read and migrated
/// when present.
pub const LEGACY_TABLE: &str = "agentscope_sessions";

/// How long a write waits for another process's write to finish before failing with
/// "database is locked", by default.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many connections read at once, by default.
pub const DEFAULT_MAX_READERS: usize = 8;

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
}

/// Opens a [`SqliteSessionStore`] with settings other than the defaults; see
/// [`SqliteSessionStore::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct SqliteSessionStoreBuilder {
    path: PathBuf,
    busy_timeout: Duration,
    max_readers: usize,
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
        } = self;
        let store_error = |error: rusqlite::Error| {
            SessionError::backend(None, format_args!("opening {}", path.display()), error)
        };
        let mut writer = db::connect(&path, busy_timeout, false).map_err(store_error)?;
        let legacy = match db::init(&mut writer).map_err(store_error)? {
            db::Opened::Ready { legacy } => legacy,
            db::Opened::NotWal(mode) => {
                return Err(SessionError::Backend {
                    session: None,
                    message: format!(
                        "opening {}: the database cannot use WAL mode (journal mode is \
                         '{mode}'); use a database file on a local file system",
                        path.display()
                    ),
                    source: None,
                });
            }
        };
        Ok(SqliteSessionStore {
            inner: Arc::new(Inner {
                path,
                busy_timeout,
                max_readers,
                legacy,
                writer: Arc::new(AsyncMutex::new(writer)),
                readers: Arc::new(Semaphore::new(max_readers)),
                idle: Mutex::new(Vec::new()),
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
        run_blocking(session, move || work(&mut writer, legacy)).await
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
        .await
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

/// Runs `job` on tokio's blocking pool inside a tokio runtime, inline otherwise.
async fn run_blocking<T, F>(session: Option<&str>, job: F) -> Result<T, SessionError>
where
    F: FnOnce() -> Result<T, SessionError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(job).await.map_err(|error| {
            SessionError::backend(session, "running the blocking SQLite task", error)
        })?,
        Err(_) => job(),
    }
}

impl SessionStore for SqliteSessionStore {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        Box::pin(async move {
            validate_session_id(session)?;
            // Serialised before queueing for the writer, so the writer only writes.
            let encoded = db::EncodedChange::new(session, change)?;
            let id = session.to_owned();
            self.write(Some(session), move |connection, legacy| {
                db::save(connection, &id, &encoded, legacy)
            })
            .await
        })
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        Box::pin(self.on_session(session, Side::Reader, db::load))
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(self.on_session(session, Side::Writer, db::delete))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        Box::pin(async move { self.read(None, db::list).await })
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
            .finish()
    }
}
