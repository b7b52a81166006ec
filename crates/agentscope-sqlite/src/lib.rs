//! A [`SessionStore`] on SQLite, for agentscope-rs.
//!
//! [`SqliteSessionStore`] keeps every session of an application in one SQLite database file:
//! one row per session in the table `agentscope_sessions`. SQLite is compiled in (rusqlite's
//! `bundled` feature), so no system library is needed.
//!
//! - **Durable**: each save is one transaction in WAL mode with `synchronous = FULL`: after
//!   `save` returns, the session survives a process crash and a power loss; a crash during a
//!   save leaves the previous state.
//! - **Concurrent**: any number of agents, tasks and processes on one host may use the same
//!   file. WAL lets readers run while one writer writes; writers wait for each other (up to
//!   [`BUSY_TIMEOUT`]) instead of failing, and every save replaces one row atomically, so
//!   saves of different sessions never lose each other's updates.
//! - **Not blocking the runtime**: SQLite work runs on tokio's blocking thread pool when
//!   called inside a tokio runtime (inline otherwise), on a small pool of connections.
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
//! See `docs/sessions.md` in the repository for how sessions work and how several service
//! instances share them.
#![warn(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentscope_core::session::{AgentState, SessionError, SessionStore, validate_session_id};
use futures::future::BoxFuture;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

/// The table holding the sessions.
pub const TABLE: &str = "agentscope_sessions";

/// How long a write waits for another connection's write to finish before failing with
/// "database is locked".
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many idle connections a store keeps open for reuse.
const MAX_IDLE_CONNECTIONS: usize = 8;

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS agentscope_sessions (
    session_id TEXT PRIMARY KEY NOT NULL,
    version    INTEGER NOT NULL,
    state      TEXT NOT NULL,
    saved_at   TEXT NOT NULL
)";

const UPSERT: &str = "INSERT INTO agentscope_sessions (session_id, version, state, saved_at)
    VALUES (?1, ?2, ?3, ?4)
    ON CONFLICT (session_id) DO UPDATE SET
        version = excluded.version, state = excluded.state, saved_at = excluded.saved_at";

/// A [`SessionStore`] keeping sessions in a SQLite database file.
///
/// The table (created by [`open`](Self::open) if missing):
///
/// ```sql
/// CREATE TABLE agentscope_sessions (
///     session_id TEXT PRIMARY KEY NOT NULL,  -- the session id
///     version    INTEGER NOT NULL,           -- the AgentState format version
///     state      TEXT NOT NULL,              -- the AgentState as JSON
///     saved_at   TEXT NOT NULL               -- RFC 3339, when the state was taken
/// )
/// ```
///
/// The `state` column holds the JSON of [`AgentState`] (the same format as the files of
/// `JsonFileSessionStore`, compact), so sessions can be inspected with the `sqlite3` shell
/// and its JSON functions, and moved between stores. Session ids follow
/// [`validate_session_id`].
///
/// A cheap `Clone` handle: clones share the connections. Open the store once per process and
/// give clones to every agent; several processes may open the same file.
#[derive(Clone)]
pub struct SqliteSessionStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl SqliteSessionStore {
    /// Opens (or creates) the database at `path`, switches it to WAL mode and creates the
    /// table if needed. Blocking: call it at start-up (or in `spawn_blocking`).
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
    /// [`SessionError::Backend`] (naming the file) when the file cannot be opened or created,
    /// is not a SQLite database, or cannot use WAL mode. An existing file is never
    /// overwritten.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SessionError> {
        let path = path.as_ref().to_path_buf();
        let store_error = |error: rusqlite::Error| {
            SessionError::backend(None, format_args!("opening {}", path.display()), error)
        };
        let connection = connect(&path).map_err(store_error)?;
        let mode: String = connection
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(store_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(SessionError::Backend {
                session: None,
                message: format!(
                    "opening {}: the database cannot use WAL mode (journal mode is '{mode}'); \
                     use a database file on a local file system",
                    path.display()
                ),
                source: None,
            });
        }
        connection.execute(CREATE_TABLE, []).map_err(store_error)?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                idle: Mutex::new(vec![connection]),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `work` on a pooled connection, off the async runtime's worker threads.
    async fn with_connection<T, F>(&self, session: Option<&str>, work: F) -> Result<T, SessionError>
    where
        F: FnOnce(&Connection) -> Result<T, SessionError> + Send + 'static,
        T: Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let owned = session.map(str::to_owned);
        let job = move || {
            let connection = match inner.checkout() {
                Some(connection) => connection,
                None => connect(&inner.path).map_err(|error| {
                    SessionError::backend(
                        owned.as_deref(),
                        format_args!("opening {}", inner.path.display()),
                        error,
                    )
                })?,
            };
            let result = work(&connection);
            inner.checkin(connection);
            result
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle.spawn_blocking(job).await.map_err(|error| {
                SessionError::backend(session, "running the blocking SQLite task", error)
            })?,
            Err(_) => job(),
        }
    }
}

impl Inner {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn checkout(&self) -> Option<Connection> {
        self.idle().pop()
    }

    fn checkin(&self, connection: Connection) {
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE_CONNECTIONS {
            idle.push(connection);
        }
    }
}

/// Opens a connection configured for concurrent, durable use. Never creates anything but an
/// empty database file.
fn connect(path: &Path) -> Result<Connection, rusqlite::Error> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    Ok(connection)
}

impl SessionStore for SqliteSessionStore {
    fn save<'a>(
        &'a self,
        session: &'a str,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            validate_session_id(session)?;
            let json = String::from_utf8(state.encode(session)?)
                .map_err(|error| SessionError::corrupt(session, error))?;
            let id = session.to_owned();
            let version = state.version;
            let saved_at = state.saved_at.to_rfc3339();
            self.with_connection(Some(session), move |connection| {
                connection
                    .execute(UPSERT, params![id, version, json, saved_at])
                    .map(drop)
                    .map_err(|error| SessionError::backend(Some(&id), "saving", error))
            })
            .await
        })
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        Box::pin(async move {
            validate_session_id(session)?;
            let id = session.to_owned();
            let bytes = self
                .with_connection(Some(session), move |connection| {
                    connection
                        .query_row(
                            "SELECT state FROM agentscope_sessions WHERE session_id = ?1",
                            [&id],
                            |row| {
                                Ok(match row.get_ref(0)? {
                                    ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
                                        Ok(bytes.to_vec())
                                    }
                                    other => Err(other.data_type()),
                                })
                            },
                        )
                        .optional()
                        .map_err(|error| SessionError::backend(Some(&id), "loading", error))
                })
                .await?;
            match bytes {
                None => Ok(None),
                Some(Ok(bytes)) => AgentState::decode(session, &bytes).map(Some),
                Some(Err(kind)) => Err(SessionError::corrupt(
                    session,
                    format_args!("the state column holds a value of type {kind}, not JSON text"),
                )),
            }
        })
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(async move {
            validate_session_id(session)?;
            let id = session.to_owned();
            self.with_connection(Some(session), move |connection| {
                connection
                    .execute(
                        "DELETE FROM agentscope_sessions WHERE session_id = ?1",
                        [&id],
                    )
                    .map(|deleted| deleted > 0)
                    .map_err(|error| SessionError::backend(Some(&id), "deleting", error))
            })
            .await
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        Box::pin(async move {
            self.with_connection(None, |connection| {
                let list = || -> Result<Vec<String>, rusqlite::Error> {
                    let mut statement = connection.prepare(
                        "SELECT session_id FROM agentscope_sessions ORDER BY session_id",
                    )?;
                    let ids = statement.query_map([], |row| row.get::<_, String>(0))?;
                    ids.collect()
                };
                list().map_err(|error| SessionError::backend(None, "listing sessions", error))
            })
            .await
        })
    }
}

impl fmt::Debug for SqliteSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteSessionStore")
            .field("path", &self.inner.path)
            .field("idle_connections", &self.inner.idle().len())
            .finish()
    }
}
