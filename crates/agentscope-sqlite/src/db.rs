//! The SQL: the schema, and save, load, delete and list on one connection (blocking; the
//! store runs them on tokio's blocking pool). The lease rows' SQL is in `lease`.

use std::path::Path;
use std::time::Duration;

use agentscope_core::Msg;
use agentscope_core::rfc3339;
use agentscope_core::session::{
    AgentState, AgentStateParts, ChangeColumns, SessionError, SessionSummary, StateChange,
};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};
use serde::de::DeserializeOwned;

use crate::lease;

/// The schema this version writes (see the crate docs). `IF NOT EXISTS`: opening a
/// database twice, or from several processes, is harmless, and opening a database of an
/// earlier version adds what it lacks (the leases table; the `recency` column and its
/// index: [`add_recency`]).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agentscope_session_states (
    session_id    TEXT PRIMARY KEY NOT NULL,
    revision      INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    agent         TEXT NOT NULL,
    metadata      TEXT NOT NULL,
    running_tools TEXT NOT NULL,
    hooks         TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    saved_at      TEXT NOT NULL,
    recency       TEXT
);
CREATE TABLE IF NOT EXISTS agentscope_session_messages (
    session_id TEXT NOT NULL,
    position   INTEGER NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
);
CREATE TABLE IF NOT EXISTS agentscope_session_leases (
    session_id  TEXT PRIMARY KEY NOT NULL,
    token       TEXT NOT NULL,
    holder      TEXT NOT NULL,
    expires_at  INTEGER NOT NULL,
    interrupted INTEGER NOT NULL DEFAULT 0
);
";

/// Whether the states table has the `recency` column (databases of earlier versions lack it).
const HAS_RECENCY: &str = "SELECT EXISTS (
    SELECT 1 FROM pragma_table_info('agentscope_session_states') WHERE name = 'recency'
)";

const ADD_RECENCY: &str = "ALTER TABLE agentscope_session_states ADD COLUMN recency TEXT";

/// The index `list_recent` pages through: newest first, then by id.
const RECENCY_INDEX: &str = "CREATE INDEX IF NOT EXISTS agentscope_session_states_recency
    ON agentscope_session_states (recency, session_id)";

/// The rows without a recency key: written before the column existed, or since by a process
/// of an earlier version.
const UNKEYED: &str =
    "SELECT session_id, saved_at FROM agentscope_session_states WHERE recency IS NULL";

const HAS_UNKEYED: &str =
    "SELECT EXISTS (SELECT 1 FROM agentscope_session_states WHERE recency IS NULL)";

const SET_RECENCY: &str = "UPDATE agentscope_session_states SET recency = ?2
    WHERE session_id = ?1 AND recency IS NULL";

/// A page of `list_recent`: `?1`, `?2` the cursor's key and id (`''`, `''`: the first
/// page), `?3`, `?4` the prefix's length and the prefix, `?5` the limit.
const LIST_RECENT: &str = "SELECT recency, session_id, revision, saved_at
    FROM agentscope_session_states
    WHERE (recency, session_id) > (?1, ?2) AND substr(session_id, 1, ?3) = ?4
    ORDER BY recency, session_id LIMIT ?5";

/// The sessions stored only in the previous version's table.
const LEGACY_ONLY: &str = "SELECT session_id FROM agentscope_sessions
    WHERE session_id NOT IN (SELECT session_id FROM agentscope_session_states)";

/// The recency key of a row whose `saved_at` cannot be read: after every real key, so such
/// a row is listed last, where reading it reports it corrupt.
const UNREADABLE_RECENCY: &str = "z";

const HAS_LEGACY_TABLE: &str = "SELECT EXISTS (
    SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agentscope_sessions'
)";

const SELECT_HEAD: &str = "SELECT revision, message_count
    FROM agentscope_session_states WHERE session_id = ?1";

const SELECT_STATE: &str = "SELECT revision, version, agent, metadata, running_tools, hooks,
        message_count, saved_at
    FROM agentscope_session_states WHERE session_id = ?1";

const SELECT_MESSAGES: &str = "SELECT position, message FROM agentscope_session_messages
    WHERE session_id = ?1 ORDER BY position";

const SELECT_LEGACY: &str = "SELECT state FROM agentscope_sessions WHERE session_id = ?1";

const DELETE_MESSAGES_FROM: &str =
    "DELETE FROM agentscope_session_messages WHERE session_id = ?1 AND position >= ?2";

const INSERT_MESSAGE: &str =
    "INSERT INTO agentscope_session_messages (session_id, position, message) VALUES (?1, ?2, ?3)";

const UPSERT_STATE: &str = "INSERT INTO agentscope_session_states
        (session_id, revision, version, agent, metadata, running_tools, hooks, message_count,
         saved_at, recency)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
    ON CONFLICT (session_id) DO UPDATE SET
        revision = excluded.revision,
        version = excluded.version,
        agent = excluded.agent,
        metadata = excluded.metadata,
        running_tools = excluded.running_tools,
        hooks = excluded.hooks,
        message_count = excluded.message_count,
        saved_at = excluded.saved_at,
        recency = excluded.recency";

const DELETE_STATE: &str = "DELETE FROM agentscope_session_states WHERE session_id = ?1";
const DELETE_ALL_MESSAGES: &str = "DELETE FROM agentscope_session_messages WHERE session_id = ?1";
const DELETE_LEGACY: &str = "DELETE FROM agentscope_sessions WHERE session_id = ?1";

const LIST: &str = "SELECT session_id FROM agentscope_session_states ORDER BY session_id";
const LIST_WITH_LEGACY: &str = "SELECT session_id FROM agentscope_session_states
    UNION SELECT session_id FROM agentscope_sessions ORDER BY session_id";

/// Opens a connection for concurrent, durable use: waits up to `busy_timeout` for another
/// process's lock, and syncs every commit (`synchronous = FULL`). Creates nothing but an
/// empty database file. A `reader` connection is `query_only`.
pub(crate) fn connect(
    path: &Path,
    busy_timeout: Duration,
    reader: bool,
) -> Result<Connection, rusqlite::Error> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(busy_timeout)?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    if reader {
        connection.pragma_update(None, "query_only", true)?;
    }
    Ok(connection)
}

/// What opening a database found.
pub(crate) enum Opened {
    /// The database is in WAL mode and has the tables; `legacy`: it also has the table of
    /// the previous version, `agentscope_sessions`.
    Ready { legacy: bool },
    /// The journal mode could not be set to WAL; it is this one.
    NotWal(String),
}

/// Switches the database to WAL mode and creates the tables if needed, waiting up to
/// `busy_timeout` for other processes doing the same.
///
/// SQLite does not call the busy handler for every lock this needs: a connection that
/// finds another switching a new file to WAL mode gets `SQLITE_BUSY` at once, so processes
/// that open a new file at the same moment would fail with "database is locked". This
/// retries with short pauses instead, until `busy_timeout` has passed.
pub(crate) fn init(
    connection: &mut Connection,
    busy_timeout: Duration,
) -> Result<Opened, rusqlite::Error> {
    const PAUSE: Duration = Duration::from_millis(5);
    let deadline = std::time::Instant::now() + busy_timeout;
    loop {
        match try_init(connection) {
            Err(rusqlite::Error::SqliteFailure(error, _))
                if matches!(
                    error.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(PAUSE);
            }
            outcome => return outcome,
        }
    }
}

fn try_init(connection: &mut Connection) -> Result<Opened, rusqlite::Error> {
    let mode: String =
        connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Ok(Opened::NotWal(mode));
    }
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(SCHEMA)?;
    add_recency(&tx)?;
    let legacy: bool = tx.query_row(HAS_LEGACY_TABLE, [], |row| row.get(0))?;
    tx.commit()?;
    Ok(Opened::Ready { legacy })
}

/// Gives a database of an earlier version the `recency` column (the key `list_recent` sorts
/// by: [`SessionSummary::recency_key`] of the row's `saved_at`) and its index, and fills
/// the column in for every row that lacks it ([`key_unkeyed`]).
fn add_recency(tx: &Transaction<'_>) -> Result<(), rusqlite::Error> {
    let has: bool = tx.query_row(HAS_RECENCY, [], |row| row.get(0))?;
    if !has {
        tx.execute(ADD_RECENCY, [])?;
    }
    tx.execute(RECENCY_INDEX, [])?;
    key_unkeyed(tx)?;
    Ok(())
}

/// Writes the recency key of every row that has none, from its `saved_at` (a text that
/// does not read as a time gets a key after every other: the row is listed last, and
/// reported corrupt when it is read). Returns how many rows it keyed.
fn key_unkeyed(tx: &Transaction<'_>) -> Result<usize, rusqlite::Error> {
    let rows: Vec<(String, Value)> = tx
        .prepare(UNKEYED)?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut set = tx.prepare_cached(SET_RECENCY)?;
    for (session, saved_at) in &rows {
        let key = match saved_at {
            Value::Text(text) => rfc3339::parse_saved_at(session, text)
                .map(|at| SessionSummary::recency_key(&at))
                .ok(),
            _ => None,
        };
        let key = key.unwrap_or_else(|| UNREADABLE_RECENCY.to_owned());
        set.execute(rusqlite::params![session, key])?;
    }
    Ok(rows.len())
}

/// Keys the rows a process of an earlier version wrote since (see [`key_unkeyed`]), on the
/// writer.
pub(crate) fn key_rows(connection: &mut Connection, _legacy: bool) -> Result<(), SessionError> {
    let mut run = || -> Result<(), rusqlite::Error> {
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        key_unkeyed(&tx)?;
        tx.commit()
    };
    run().map_err(|error| SessionError::backend(None, "listing sessions", error))
}

/// A change serialised for its rows, before the writer is taken.
pub(crate) struct EncodedChange {
    change: StateChange,
    columns: ChangeColumns,
    /// [`SessionSummary::recency_key`] of the change's `saved_at`.
    recency: String,
}

impl EncodedChange {
    pub(crate) fn new(session: &str, change: &StateChange) -> Result<Self, SessionError> {
        Ok(Self {
            change: change.clone(),
            columns: ChangeColumns::of(session, change)?,
            recency: SessionSummary::recency_key(&change.saved_at),
        })
    }
}

fn encode(session: &str, value: &impl serde::Serialize) -> Result<String, SessionError> {
    serde_json::to_string(value)
        .map_err(|error| SessionError::corrupt(session, format_args!("cannot serialise: {error}")))
}

/// Saves `change` as session `session` in one `BEGIN IMMEDIATE` transaction: checks its
/// fence against the session's lease (if it has one), checks it against the stored
/// revision and message count, deletes the messages it does not keep,
/// inserts the appended ones and writes the session row. With `legacy`, a session stored
/// only in the previous version's table is moved into the new tables by the same
/// transaction. Returns the new revision; on any error nothing is written.
pub(crate) fn save(
    connection: &mut Connection,
    session: &str,
    encoded: &EncodedChange,
    legacy: bool,
) -> Result<u64, SessionError> {
    let db = |error: rusqlite::Error| SessionError::backend(Some(session), "saving", error);
    let change = &encoded.change;
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    if let Some(fence) = &change.fence {
        lease::rows::check_fence(&tx, session, fence)?;
    }
    let head = tx
        .prepare_cached(SELECT_HEAD)
        .and_then(|mut statement| {
            statement
                .query_row([session], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .map_err(db)?;
    let id = session;
    let (revision, stored_messages, migrated) = match head {
        Some((revision, count)) => (
            to_u64(session, "revision", revision)?,
            to_usize(session, "message_count", count)?,
            None,
        ),
        None => match legacy.then(|| load_legacy(&tx, session)).transpose() {
            Ok(Some(Some(state))) => (state.revision, state.messages.len(), Some(state.messages)),
            Ok(_) => (0, 0, None),
            Err(error) => return Err(error.for_save(session)),
        },
    };
    change.check(session, revision, stored_messages)?;

    let kept = to_i64(session, change.kept)?;
    // Always: it also clears rows a damaged database holds past the stored count.
    tx.prepare_cached(DELETE_MESSAGES_FROM)
        .and_then(|mut statement| statement.execute(rusqlite::params![id, kept]))
        .map_err(db)?;
    {
        let mut insert = tx.prepare_cached(INSERT_MESSAGE).map_err(db)?;
        if let Some(messages) = &migrated {
            for (position, msg) in messages.iter().take(change.kept).enumerate() {
                let json = encode(session, msg)?;
                insert
                    .execute(rusqlite::params![id, to_i64(session, position)?, json])
                    .map_err(db)?;
            }
        }
        for (offset, json) in encoded.columns.appended.iter().enumerate() {
            let position = to_i64(session, change.kept + offset)?;
            insert
                .execute(rusqlite::params![id, position, json])
                .map_err(db)?;
        }
    }
    if migrated.is_some() {
        tx.prepare_cached(DELETE_LEGACY)
            .and_then(|mut statement| statement.execute([id]))
            .map_err(db)?;
    }
    let new_revision = change.revision();
    let revision_value = i64::try_from(new_revision).map_err(|_| SessionError::InvalidChange {
        session: session.to_owned(),
        message: format!("revision {new_revision} is out of range"),
    })?;
    let count = to_i64(session, change.kept + change.appended.len())?;
    tx.prepare_cached(UPSERT_STATE)
        .and_then(|mut statement| {
            statement.execute(rusqlite::params![
                id,
                revision_value,
                AgentState::CURRENT_VERSION,
                encoded.columns.agent,
                encoded.columns.metadata,
                encoded.columns.running_tools,
                encoded.columns.hooks,
                count,
                encoded.columns.saved_at,
                encoded.recency,
            ])
        })
        .map_err(db)?;
    tx.commit().map_err(db)?;
    Ok(new_revision)
}

/// Reads session `session` (one read transaction, so the session row and its messages are
/// of one revision); with `legacy`, falls back to the previous version's table.
pub(crate) fn load(
    connection: &mut Connection,
    session: &str,
    legacy: bool,
) -> Result<Option<AgentState>, SessionError> {
    let db = |error: rusqlite::Error| SessionError::backend(Some(session), "loading", error);
    let tx = connection.transaction().map_err(db)?;
    let row = tx
        .prepare_cached(SELECT_STATE)
        .and_then(|mut statement| {
            statement
                .query_row([session], |row| {
                    let mut values = Vec::with_capacity(8);
                    for column in 0..8 {
                        values.push(row.get::<_, Value>(column)?);
                    }
                    Ok(values)
                })
                .optional()
        })
        .map_err(db)?;
    let Some(row) = row else {
        return match legacy {
            true => load_legacy(&tx, session).map_err(|error| error.for_load(session)),
            false => Ok(None),
        };
    };
    let [
        revision,
        version,
        agent,
        metadata,
        running_tools,
        hooks,
        count,
        saved_at,
    ] = <[Value; 8]>::try_from(row)
        .map_err(|_| SessionError::corrupt(session, "the session row does not have 8 columns"))?;

    // The version first: a newer format is reported as such, not as whatever it changed.
    let version =
        AgentState::check_version(session, i128::from(integer(session, "version", &version)?))?;
    let revision = to_u64(
        session,
        "revision",
        integer(session, "revision", &revision)?,
    )?;
    let count = to_usize(
        session,
        "message_count",
        integer(session, "message_count", &count)?,
    )?;
    // Columns are read in the order written: the first damaged one is the one reported.
    let parts = AgentStateParts {
        version,
        revision,
        agent: json(session, "the agent column", (&agent).into())?,
        metadata: json(session, "the metadata column", (&metadata).into())?,
        running_tools: json(session, "the running_tools column", (&running_tools).into())?,
        hooks: json(session, "the hooks column", (&hooks).into())?,
        saved_at: match &saved_at {
            Value::Text(text) => rfc3339::parse_saved_at(session, text)?,
            other => {
                return Err(SessionError::corrupt(
                    session,
                    format_args!(
                        "the saved_at column holds a value of type {}, not text",
                        ValueRef::from(other).data_type()
                    ),
                ));
            }
        },
        messages: message_rows(&tx, session, count)?,
    };
    AgentState::from_parts(session, parts).map(Some)
}

/// The message rows of `session`, which must be numbered 0, 1, 2, ... and be the `count`
/// its session row records.
fn message_rows(
    tx: &Transaction<'_>,
    session: &str,
    count: usize,
) -> Result<Vec<Msg>, SessionError> {
    let db = |error: rusqlite::Error| SessionError::backend(Some(session), "loading", error);
    let mut messages = Vec::with_capacity(count);
    let mut statement = tx.prepare_cached(SELECT_MESSAGES).map_err(db)?;
    let mut rows = statement.query([session]).map_err(db)?;
    while let Some(row) = rows.next().map_err(db)? {
        let position: i64 = row.get(0).map_err(db)?;
        if usize::try_from(position).ok() != Some(messages.len()) {
            return Err(SessionError::corrupt(
                session,
                format_args!(
                    "message rows are not numbered 0, 1, 2, ...: found position {position} \
                     where {} was expected",
                    messages.len()
                ),
            ));
        }
        let what = format!("message {position}");
        let msg: Msg = json(session, &what, row.get_ref(1).map_err(db)?)?;
        messages.push(msg);
    }
    if messages.len() != count {
        return Err(SessionError::corrupt(
            session,
            format_args!(
                "the session row counts {count} messages but {} message rows are stored",
                messages.len()
            ),
        ));
    }
    Ok(messages)
}

/// A read of the previous version's table failed: a database error (reported as part of
/// the operation that read it) or a state that cannot be read.
enum LegacyError {
    Db(rusqlite::Error),
    State(SessionError),
}

impl LegacyError {
    fn for_save(self, session: &str) -> SessionError {
        self.named(session, "saving")
    }

    fn for_load(self, session: &str) -> SessionError {
        self.named(session, "loading")
    }

    fn named(self, session: &str, what: &str) -> SessionError {
        match self {
            LegacyError::Db(error) => SessionError::backend(Some(session), what, error),
            LegacyError::State(error) => error,
        }
    }
}

/// Session `session` as the previous version stored it (whole-state JSON in
/// `agentscope_sessions`). Such a session exists, so its revision is at least 1.
fn load_legacy(tx: &Transaction<'_>, session: &str) -> Result<Option<AgentState>, LegacyError> {
    let value = tx
        .prepare_cached(SELECT_LEGACY)
        .and_then(|mut statement| {
            statement
                .query_row([session], |row| row.get::<_, Value>(0))
                .optional()
        })
        .map_err(LegacyError::Db)?;
    let Some(value) = value else {
        return Ok(None);
    };
    let bytes = match &value {
        Value::Text(text) => text.as_bytes(),
        Value::Blob(bytes) => bytes,
        other => {
            return Err(LegacyError::State(SessionError::corrupt(
                session,
                format_args!(
                    "the state column holds a value of type {}, not JSON text",
                    ValueRef::from(other).data_type()
                ),
            )));
        }
    };
    let mut state = AgentState::decode(session, bytes).map_err(LegacyError::State)?;
    state.revision = state.revision.max(1);
    Ok(Some(state))
}

/// Deletes session `session` from every table; returns whether it existed.
pub(crate) fn delete(
    connection: &mut Connection,
    session: &str,
    legacy: bool,
) -> Result<bool, SessionError> {
    let mut run = || -> Result<bool, rusqlite::Error> {
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut deleted = tx.prepare_cached(DELETE_STATE)?.execute([session])?;
        tx.prepare_cached(DELETE_ALL_MESSAGES)?.execute([session])?;
        if legacy {
            deleted += tx.prepare_cached(DELETE_LEGACY)?.execute([session])?;
        }
        tx.commit()?;
        Ok(deleted > 0)
    };
    run().map_err(|error| SessionError::backend(Some(session), "deleting", error))
}

/// The stored session ids, sorted (byte order, as Rust sorts strings).
pub(crate) fn list(connection: &mut Connection, legacy: bool) -> Result<Vec<String>, SessionError> {
    let run = || -> Result<Vec<String>, rusqlite::Error> {
        let mut statement =
            connection.prepare_cached(if legacy { LIST_WITH_LEGACY } else { LIST })?;
        let ids = statement.query_map([], |row| row.get::<_, String>(0))?;
        ids.collect()
    };
    run().map_err(|error| SessionError::backend(None, "listing sessions", error))
}

/// What a read of `list_recent` found.
pub(crate) enum Recent {
    /// The page.
    Page(Vec<SessionSummary>),
    /// Some rows have no recency key yet (a process of an earlier version saved them): key
    /// them on the writer ([`key_rows`]), then read again.
    Unkeyed,
}

/// The page of `list_recent` (see [`SessionStore::list_recent`]): one indexed query of the
/// states table, in one read transaction; with `legacy`, merged with the sessions stored
/// only in the previous version's table (each of those read whole).
///
/// [`SessionStore::list_recent`]: agentscope_core::session::SessionStore::list_recent
pub(crate) fn list_recent(
    connection: &mut Connection,
    legacy: bool,
    prefix: &str,
    after: Option<&SessionSummary>,
    limit: usize,
) -> Result<Recent, SessionError> {
    let db = |error: rusqlite::Error| SessionError::backend(None, "listing sessions", error);
    // Session ids are ASCII: no id starts with anything else.
    if limit == 0 || !prefix.is_ascii() {
        return Ok(Recent::Page(Vec::new()));
    }
    let tx = connection.transaction().map_err(db)?;
    let unkeyed: bool = tx
        .prepare_cached(HAS_UNKEYED)
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(db)?;
    if unkeyed {
        return Ok(Recent::Unkeyed);
    }
    let (key, id) = match after {
        Some(cursor) => (
            SessionSummary::recency_key(&cursor.saved_at),
            cursor.id.as_str(),
        ),
        None => (String::new(), ""),
    };
    let prefix_len = i64::try_from(prefix.len()).unwrap_or(i64::MAX);
    // (key, id, revision, saved_at), in the listing order.
    let mut rows: Vec<(String, String, i64, Value)> = tx
        .prepare_cached(LIST_RECENT)
        .and_then(|mut statement| {
            statement
                .query_map(
                    rusqlite::params![
                        key,
                        id,
                        prefix_len,
                        prefix,
                        i64::try_from(limit).unwrap_or(i64::MAX)
                    ],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
                )?
                .collect()
        })
        .map_err(db)?;
    if legacy {
        // The sessions only the previous version's table holds, each read whole, in their
        // places among the rows (by the same key).
        let ids: Vec<String> = tx
            .prepare_cached(LEGACY_ONLY)
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get::<_, String>(0))?
                    .collect()
            })
            .map_err(db)?;
        for session in ids.into_iter().filter(|id| id.starts_with(prefix)) {
            let state = load_legacy(&tx, &session).map_err(|error| error.for_load(&session))?;
            if let Some(state) = state {
                let summary = SessionSummary::of(session, &state);
                if after.is_none_or(|cursor| summary.is_after(cursor)) {
                    rows.push((
                        SessionSummary::recency_key(&summary.saved_at),
                        summary.id,
                        i64::try_from(summary.revision).unwrap_or(i64::MAX),
                        Value::Text(rfc3339::format(&summary.saved_at)),
                    ));
                }
            }
        }
        rows.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        rows.truncate(limit);
    }
    let mut page = Vec::with_capacity(rows.len());
    for (_, session, revision, saved_at) in rows {
        let revision = to_u64(&session, "revision", revision)?;
        let saved_at = match &saved_at {
            Value::Text(text) => rfc3339::parse_saved_at(&session, text)?,
            other => {
                return Err(SessionError::corrupt(
                    &session,
                    format_args!(
                        "the saved_at column holds a value of type {}, not text",
                        ValueRef::from(other).data_type()
                    ),
                ));
            }
        };
        page.push(SessionSummary::new(session, revision, saved_at));
    }
    Ok(Recent::Page(page))
}

/// Decodes the JSON in column `what` of session `session`.
fn json<T: DeserializeOwned>(
    session: &str,
    what: &str,
    value: ValueRef<'_>,
) -> Result<T, SessionError> {
    let bytes = match value {
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => bytes,
        other => {
            return Err(SessionError::corrupt(
                session,
                format_args!(
                    "{what} holds a value of type {}, not JSON text",
                    other.data_type()
                ),
            ));
        }
    };
    serde_json::from_slice(bytes).map_err(|error| {
        SessionError::corrupt(session, format_args!("{what} is not valid: {error}"))
    })
}

fn integer(session: &str, what: &str, value: &Value) -> Result<i64, SessionError> {
    match value {
        Value::Integer(value) => Ok(*value),
        other => Err(SessionError::corrupt(
            session,
            format_args!(
                "the {what} column holds a value of type {}, not an integer",
                ValueRef::from(other).data_type()
            ),
        )),
    }
}

fn to_u64(session: &str, what: &str, value: i64) -> Result<u64, SessionError> {
    u64::try_from(value)
        .map_err(|_| SessionError::corrupt(session, format_args!("the {what} {value} is negative")))
}

fn to_usize(session: &str, what: &str, value: i64) -> Result<usize, SessionError> {
    usize::try_from(value).map_err(|_| {
        SessionError::corrupt(session, format_args!("the {what} {value} is out of range"))
    })
}

fn to_i64(session: &str, value: usize) -> Result<i64, SessionError> {
    i64::try_from(value).map_err(|_| SessionError::InvalidChange {
        session: session.to_owned(),
        message: format!("position {value} is out of range"),
    })
}
