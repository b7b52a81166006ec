//! Databases written by the previous version (one row of whole-state JSON per session in
//! `agentscope_sessions`, created here by raw SQL in that shape): their sessions load, list
//! and delete; the first save of one moves it into the new tables in the same transaction,
//! and nothing stored before is lost. And databases of the version before session leases
//! (the two tables of today without `agentscope_session_leases`): opening one adds the
//! leases table, and everything stored stays as it was. And databases of the version before
//! `list_recent` (no `recency` column): opening one adds and fills it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use agentscope::prelude::*;
use agentscope::session::{
    AgentIdentity, AgentState, SessionError, SessionStore, SessionSummary, StateChange,
};
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::session_store::rich_state;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use rusqlite::Connection;
use serde_json::json;

/// The previous version's schema, as it created it.
const OLD_SCHEMA: &str = "
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS agentscope_sessions (
    session_id TEXT PRIMARY KEY NOT NULL,
    version    INTEGER NOT NULL,
    state      TEXT NOT NULL,
    saved_at   TEXT NOT NULL
);";

/// The JSON the previous version stored for `state`: no revision (it had none).
fn old_json(state: &AgentState) -> String {
    let mut value = serde_json::to_value(state).unwrap();
    value.as_object_mut().unwrap().remove("revision");
    serde_json::to_string(&value).unwrap()
}

/// Writes a database as the previous version did, holding `sessions`.
fn old_database(path: &Path, sessions: &[(&str, &AgentState)]) {
    let connection = Connection::open(path).unwrap();
    connection.execute_batch(OLD_SCHEMA).unwrap();
    for (session, state) in sessions {
        insert_old_row(&connection, session, &old_json(state));
    }
}

fn insert_old_row(connection: &Connection, session: &str, json: &str) {
    connection
        .execute(
            "INSERT INTO agentscope_sessions (session_id, version, state, saved_at) \
             VALUES (?1, 1, ?2, '2026-11-30T10:00:01+00:00')",
            rusqlite::params![session, json],
        )
        .unwrap();
}

fn old_rows(path: &Path) -> Vec<String> {
    let connection = Connection::open(path).unwrap();
    let mut statement = connection
        .prepare("SELECT session_id FROM agentscope_sessions ORDER BY session_id")
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn new_message_rows(path: &Path, session: &str) -> i64 {
    let connection = Connection::open(path).unwrap();
    connection
        .query_row(
            "SELECT COUNT(*) FROM agentscope_session_messages WHERE session_id = ?1",
            [session],
            |row| row.get(0),
        )
        .unwrap()
}

fn with_revision(mut state: AgentState, revision: u64) -> AgentState {
    state.revision = revision;
    state
}

fn chat() -> AgentState {
    AgentState::new(
        AgentIdentity::new("assistant", "agent-old"),
        vec![Msg::user("Hi, I am Alice."), Msg::assistant("Hello Alice!")],
    )
    .with_metadata_entry("user", json!("alice"))
}

/// Old sessions are listed with the new ones, load as revision 1, and an agent continuing
/// one migrates it on its first save: every old message is kept, in order, and the old row
/// is gone.
#[tokio::test]
async fn old_sessions_load_and_move_to_the_new_tables_on_their_first_save() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let rich = rich_state();
    let chat = chat();
    old_database(&path, &[("old-chat", &chat), ("old-rich", &rich)]);

    let store = SqliteSessionStore::open(&path).unwrap();
    store
        .save("new", &StateChange::replace(&chat))
        .await
        .unwrap();
    assert_eq!(store.list().await.unwrap(), ["new", "old-chat", "old-rich"]);
    assert_eq!(
        store.load("old-rich").await.unwrap(),
        Some(with_revision(rich.clone(), 1))
    );
    assert_eq!(
        store.load("old-chat").await.unwrap(),
        Some(with_revision(chat.clone(), 1))
    );

    // An agent continues the old conversation.
    let model = ScriptedModel::new([ScriptedResponse::text("You are Alice.")]);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .session(store.clone(), "old-chat")
        .build()
        .unwrap();
    agent.call("Who am I?").await.unwrap();
    assert_eq!(
        &model.requests()[0].messages[..2],
        &chat.messages[..],
        "the model saw the old conversation"
    );
    assert_eq!(old_rows(&path), ["old-rich"], "the old row moved");
    assert_eq!(new_message_rows(&path, "old-chat"), 4);
    let migrated = store.load("old-chat").await.unwrap().unwrap();
    assert_eq!(&migrated.messages[..2], &chat.messages[..]);
    assert_eq!(migrated.messages, agent.memory().messages());
    assert!(migrated.revision >= 2);
    assert_eq!(migrated.metadata, chat.metadata);
    // Another handle, opened after the move, reads the same.
    let other = SqliteSessionStore::open(&path).unwrap();
    assert_eq!(other.load("old-chat").await.unwrap(), Some(migrated));

    // An old session is an existing one: a save expecting no session is a conflict, and
    // changes nothing.
    let err = store
        .save("old-rich", &StateChange::replace(&chat))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SessionError::Conflict { session, expected: 0, found: 1 } if session == "old-rich"),
        "{err:?}"
    );
    assert_eq!(old_rows(&path), ["old-rich"]);
    // A save from revision 1 that keeps part of it moves it, keeping what it keeps.
    let keep_three = StateChange::new(1, 3, vec![Msg::user("more")], rich.agent.clone());
    assert_eq!(store.save("old-rich", &keep_three).await.unwrap(), 2);
    assert!(old_rows(&path).is_empty());
    let moved = store.load("old-rich").await.unwrap().unwrap();
    assert_eq!(&moved.messages[..3], &rich.messages[..3]);
    assert_eq!(moved.messages[3].text(), "more");
    assert_eq!(moved.messages.len(), 4);
    assert_eq!(moved.revision, 2);
    assert_eq!(store.list().await.unwrap(), ["new", "old-chat", "old-rich"]);
}

/// Deleting an old session removes its old row.
#[tokio::test]
async fn old_sessions_can_be_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    old_database(&path, &[("a", &chat()), ("b", &chat())]);
    let store = SqliteSessionStore::open(&path).unwrap();
    assert!(store.delete("a").await.unwrap());
    assert!(!store.delete("a").await.unwrap());
    assert_eq!(old_rows(&path), ["b"]);
    assert_eq!(store.load("a").await.unwrap(), None);
    assert_eq!(store.list().await.unwrap(), ["b"]);
    // The id is free again: a new session starts at revision 1.
    assert_eq!(
        store
            .save("a", &StateChange::replace(&chat()))
            .await
            .unwrap(),
        1
    );
}

/// An old row that cannot be read fails load and save naming the session and stays as it
/// was (nothing is migrated, nothing lost); it can be deleted.
#[tokio::test]
async fn unreadable_old_rows_fail_and_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    old_database(&path, &[]);
    let connection = Connection::open(&path).unwrap();
    insert_old_row(
        &connection,
        "truncated",
        r#"{"version": 1, "agent": {"name""#,
    );
    insert_old_row(&connection, "newer", r#"{"version": 2, "whatever": true}"#);
    let store = SqliteSessionStore::open(&path).unwrap();
    let cases = [
        (
            "truncated",
            "session 'truncated' is corrupt: not a valid agent state: EOF while parsing an \
             object at line 1 column 31",
        ),
        (
            "newer",
            "session 'newer' has state format version 2; this build reads version 1",
        ),
    ];
    for (session, expected) in cases {
        assert_eq!(store.load(session).await.unwrap_err().to_string(), expected);
        let change = StateChange::new(1, 0, vec![Msg::user("x")], AgentIdentity::new("a", "1"));
        assert_eq!(
            store.save(session, &change).await.unwrap_err().to_string(),
            expected
        );
        assert_eq!(new_message_rows(&path, session), 0);
    }
    assert_eq!(old_rows(&path), ["newer", "truncated"]);
    assert_eq!(store.list().await.unwrap(), ["newer", "truncated"]);
    assert!(store.delete("truncated").await.unwrap());
    assert_eq!(old_rows(&path), ["newer"]);
}

/// The schema of the version before session leases, as it created it.
const PRE_LEASE_SCHEMA: &str = "
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS agentscope_session_states (
    session_id    TEXT PRIMARY KEY NOT NULL,
    revision      INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    agent         TEXT NOT NULL,
    metadata      TEXT NOT NULL,
    running_tools TEXT NOT NULL,
    hooks         TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    saved_at      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS agentscope_session_messages (
    session_id TEXT NOT NULL,
    position   INTEGER NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
);
INSERT INTO agentscope_session_states VALUES
    ('chat', 3, 1, '{\"name\":\"assistant\",\"id\":\"agent-old\"}', '{\"user\":\"alice\"}',
     '[]', '{}', 2, '2026-11-30T10:00:01+00:00');
";

fn tables(path: &Path) -> Vec<String> {
    let connection = Connection::open(path).unwrap();
    let mut statement = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A database of the version before leases: opening it adds the leases table, its session
/// loads as stored, and an agent continues it under a lease (taken and given back).
#[tokio::test]
async fn a_database_without_the_leases_table_gets_it_and_keeps_its_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let connection = Connection::open(&path).unwrap();
    connection.execute_batch(PRE_LEASE_SCHEMA).unwrap();
    let chat = chat();
    for (position, msg) in chat.messages.iter().enumerate() {
        connection
            .execute(
                "INSERT INTO agentscope_session_messages VALUES ('chat', ?1, ?2)",
                rusqlite::params![
                    i64::try_from(position).unwrap(),
                    serde_json::to_string(msg).unwrap()
                ],
            )
            .unwrap();
    }
    drop(connection);
    assert_eq!(
        tables(&path),
        ["agentscope_session_messages", "agentscope_session_states"]
    );

    let store = SqliteSessionStore::open(&path).unwrap();
    assert_eq!(
        tables(&path),
        [
            "agentscope_session_leases",
            "agentscope_session_messages",
            "agentscope_session_states"
        ]
    );
    let mut expected = chat;
    expected.revision = 3;
    expected.saved_at = "2026-11-30T10:00:01Z".parse().unwrap();
    assert_eq!(store.load("chat").await.unwrap(), Some(expected.clone()));

    let model = ScriptedModel::new([ScriptedResponse::text("You are Alice.")]);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .session(store.clone(), "chat")
        .build()
        .unwrap();
    agent.call("Who am I?").await.unwrap();
    assert_eq!(&model.requests()[0].messages[..2], &expected.messages[..]);
    let stored = store.load("chat").await.unwrap().unwrap();
    assert_eq!(stored.revision, 4);
    assert_eq!(
        stored.messages.iter().map(Msg::text).collect::<Vec<_>>(),
        [
            "Hi, I am Alice.",
            "Hello Alice!",
            "Who am I?",
            "You are Alice."
        ]
    );
    let leases: i64 = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM agentscope_session_leases",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(leases, 0, "the call's lease was given back");
    // Opening it again changes nothing.
    drop(SqliteSessionStore::open(&path).unwrap());
    assert_eq!(store.load("chat").await.unwrap(), Some(stored));
}

/// The recency key a row holds, `None` for NULL.
fn recency(path: &Path, session: &str) -> Option<String> {
    Connection::open(path)
        .unwrap()
        .query_row(
            "SELECT recency FROM agentscope_session_states WHERE session_id = ?1",
            [session],
            |row| row.get(0),
        )
        .unwrap()
}

fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&chrono::Utc)
}

/// Inserts a session row as a process of the previous version writes it (no `recency`),
/// with no messages.
fn insert_unkeyed_row(connection: &Connection, session: &str, revision: i64, saved_at: &str) {
    connection
        .execute(
            "INSERT INTO agentscope_session_states (session_id, revision, version, agent, \
             metadata, running_tools, hooks, message_count, saved_at) \
             VALUES (?1, ?2, 1, '{\"name\":\"a\",\"id\":\"1\"}', '{}', '[]', '{}', 0, ?3)",
            rusqlite::params![session, revision, saved_at],
        )
        .unwrap();
}

/// A database of the version before `list_recent` (no `recency` column): opening it adds
/// the column and its index and keys every row from its `saved_at` text (any RFC 3339
/// form, to the nanosecond); a row whose `saved_at` cannot be read is listed last and
/// reported corrupt when a page reaches it. Rows that a process of that version saves
/// afterwards are keyed by the next `list_recent`. Sessions still in the table of the
/// version before (`agentscope_sessions`) are listed too, in their place.
#[tokio::test]
async fn a_database_without_the_recency_column_gets_it_and_lists_by_recency() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let connection = Connection::open(&path).unwrap();
    connection.execute_batch(PRE_LEASE_SCHEMA).unwrap();
    connection.execute_batch(OLD_SCHEMA).unwrap();
    for (session, revision, saved_at) in [
        ("offset", 2, "2026-11-30T11:00:01+01:00"),
        ("nanos", 5, "2026-11-30T10:00:01.000000001Z"),
        ("half", 1, "2026-11-30T10:00:01.5Z"),
        ("broken", 1, "yesterday"),
    ] {
        insert_unkeyed_row(&connection, session, revision, saved_at);
    }
    // A session of the version before that, in its own table: saved at 10:00:01.25.
    let mut legacy = chat();
    legacy.saved_at = at("2026-11-30T10:00:01.25Z");
    insert_old_row(&connection, "legacy", &old_json(&legacy));
    drop(connection);

    let store = SqliteSessionStore::open(&path).unwrap();
    let key = |text: &str| SessionSummary::recency_key(&at(text));
    assert_eq!(recency(&path, "offset"), Some(key("2026-11-30T10:00:01Z")));
    assert_eq!(
        recency(&path, "nanos"),
        Some(key("2026-11-30T10:00:01.000000001Z"))
    );
    assert_eq!(recency(&path, "broken").as_deref(), Some("z"));

    // "chat" (the pre-lease schema's row) was saved at 10:00:01+00:00, with "offset".
    let expected = [
        SessionSummary::new("half", 1, at("2026-11-30T10:00:01.5Z")),
        SessionSummary::new("legacy", 1, at("2026-11-30T10:00:01.25Z")),
        SessionSummary::new("nanos", 5, at("2026-11-30T10:00:01.000000001Z")),
        SessionSummary::new("chat", 3, at("2026-11-30T10:00:01Z")),
        SessionSummary::new("offset", 2, at("2026-11-30T10:00:01Z")),
    ];
    assert_eq!(store.list_recent("", None, 5).await.unwrap(), expected);
    assert_eq!(
        store.list_recent("", Some(&expected[1]), 2).await.unwrap(),
        expected[2..4]
    );
    assert_eq!(
        store.list_recent("le", None, 5).await.unwrap(),
        expected[1..2]
    );
    let error = store.list_recent("", None, 6).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Corrupt { session, .. } if session == "broken"),
        "{error:?}"
    );
    assert!(
        error.to_string().starts_with(
            "session 'broken' is corrupt: saved_at 'yesterday' is not an RFC 3339 time"
        ),
        "{error}"
    );

    // A process of the previous version saves a new session: the next page keys it.
    let connection = Connection::open(&path).unwrap();
    insert_unkeyed_row(&connection, "late", 1, "2026-12-01T00:00:00Z");
    drop(connection);
    assert_eq!(recency(&path, "late"), None);
    let front = store.list_recent("", None, 2).await.unwrap();
    assert_eq!(
        front,
        [
            SessionSummary::new("late", 1, at("2026-12-01T00:00:00Z")),
            expected[0].clone()
        ]
    );
    assert_eq!(recency(&path, "late"), Some(key("2026-12-01T00:00:00Z")));
    // Opening it again changes nothing.
    drop(SqliteSessionStore::open(&path).unwrap());
    assert_eq!(recency(&path, "late"), Some(key("2026-12-01T00:00:00Z")));
}
