//! SqliteSessionStore beyond the shared SessionStore contract (which `conformance.rs` checks
//! with `agentscope_test::session_store`): two handles on one file, the row as the sqlite3
//! shell sees it, WAL mode, and bad input: corrupt rows, unknown format versions, database
//! errors and files that are not databases, each failing with a clear error and changing
//! nothing stored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore};
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::session_store::rich_state;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use rusqlite::Connection;
use serde_json::json;

fn open() -> (tempfile::TempDir, std::path::PathBuf, SqliteSessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).unwrap();
    (dir, path, store)
}

fn state(messages: Vec<Msg>) -> AgentState {
    AgentState::new(AgentIdentity::new("assistant", "agent-1"), messages)
        .with_metadata_entry("user", json!({"id": 7, "name": "Alice"}))
}

/// A second handle on the same file (another process) reads exactly what the first saved:
/// a state with every content block kind.
#[tokio::test]
async fn another_handle_on_the_file_reads_what_was_saved() {
    let (_dir, path, store) = open();
    let state = rich_state();
    store.save("blocks", &state).await.unwrap();
    let other = SqliteSessionStore::open(&path).unwrap();
    assert_eq!(other.load("blocks").await.unwrap(), Some(state));
    assert_eq!(other.list().await.unwrap(), ["blocks"]);
}

/// The row as the sqlite3 shell sees it: the version, the JSON of `AgentState::encode` and
/// `saved_at` in RFC 3339; the file is in WAL mode.
#[tokio::test]
async fn the_row_holds_the_encoded_state() {
    let (_dir, path, store) = open();
    assert_eq!(store.path(), path);
    let first = state(vec![Msg::user("1")]);
    let second = state(vec![Msg::user("2")]);
    store.save("a", &first).await.unwrap();
    store.save("a", &second).await.unwrap();

    let connection = Connection::open(&path).unwrap();
    let count: u32 = connection
        .query_row("SELECT COUNT(*) FROM agentscope_sessions", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(count, 1);
    let (version, json, saved_at): (u32, String, String) = connection
        .query_row(
            "SELECT version, state, saved_at FROM agentscope_sessions WHERE session_id = 'a'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!(version, 1);
    assert_eq!(json.as_bytes(), second.encode("a").unwrap());
    assert_eq!(saved_at, second.saved_at.to_rfc3339());
    let mode: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

/// Corrupt rows and unknown versions fail the load naming the session; the row stays as it
/// was, and an agent bound to the session fails before any hook runs.
#[tokio::test]
async fn bad_rows_fail_with_the_session_named_and_are_kept() {
    let (_dir, path, store) = open();
    store
        .save("s1", &state(vec![Msg::user("hi")]))
        .await
        .unwrap();
    let connection = Connection::open(&path).unwrap();
    let set = |sql: &str| {
        connection
            .execute(
                &format!("UPDATE agentscope_sessions SET state = {sql} WHERE session_id = 's1'"),
                [],
            )
            .unwrap();
    };
    let stored = || -> rusqlite::types::Value {
        connection
            .query_row(
                "SELECT state FROM agentscope_sessions WHERE session_id = 's1'",
                [],
                |row| row.get(0),
            )
            .unwrap()
    };
    let cases = [
        (
            "'{\"version\": 1, \"agent\": {\"name\"'",
            "session 's1' is corrupt: not a valid agent state: EOF while parsing an object at line 1 column 31",
        ),
        (
            "'{\"version\": 3}'",
            "session 's1' has state format version 3; this build reads version 1",
        ),
        (
            "'[1, 2, 3]'",
            "session 's1' is corrupt: not a valid agent state: the JSON is not an object",
        ),
        (
            "CAST('{\"version\": 5}' AS BLOB)",
            "session 's1' has state format version 5; this build reads version 1",
        ),
        (
            "x'00ff'",
            "session 's1' is corrupt: not a valid agent state: the JSON is not an object",
        ),
    ];
    let model = ScriptedModel::new([]);
    let recorder = RecordingHook::new(0);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .hook(recorder.clone())
        .session(store.clone(), "s1")
        .build()
        .unwrap();
    for (sql, expected) in cases {
        set(sql);
        let before = stored();
        let err = store.load("s1").await.unwrap_err();
        assert_eq!(err.to_string(), expected);
        assert_eq!(err.session(), Some("s1"));
        let err = agent.call("next").await.unwrap_err();
        assert_eq!(err.to_string(), format!("session error: {expected}"));
        assert_eq!(stored(), before, "a failed load changes nothing");
        assert!(recorder.events().is_empty());
        assert!(agent.memory().is_empty());
    }
    assert_eq!(model.request_count(), 0);
    assert_eq!(store.list().await.unwrap(), ["s1"]);
}

#[tokio::test]
async fn database_errors_name_the_session() {
    let (_dir, path, store) = open();
    store
        .save("s1", &state(vec![Msg::user("hi")]))
        .await
        .unwrap();
    Connection::open(&path)
        .unwrap()
        .execute("DROP TABLE agentscope_sessions", [])
        .unwrap();
    assert_eq!(
        store.load("s1").await.unwrap_err().to_string(),
        "session 's1': storage backend error: loading: no such table: agentscope_sessions"
    );
    assert_eq!(
        store
            .save("s1", &state(Vec::new()))
            .await
            .unwrap_err()
            .to_string(),
        "session 's1': storage backend error: saving: no such table: agentscope_sessions"
    );
    assert_eq!(
        store.list().await.unwrap_err().to_string(),
        "session store: storage backend error: listing sessions: no such table: agentscope_sessions"
    );
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::text("never")]))
        .session(store, "s1")
        .build()
        .unwrap();
    let err = agent.call("hi").await.unwrap_err();
    assert!(matches!(&err, AgentError::Session(error) if error.session() == Some("s1")));
    assert_eq!(
        err.to_string(),
        "session error: session 's1': storage backend error: loading: no such table: agentscope_sessions"
    );
}

/// A file that is not a database is reported and left alone.
#[test]
fn opening_a_file_that_is_not_a_database_fails_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let content = "These are my notes, not a database. ".repeat(100);
    fs::write(&path, &content).unwrap();
    let err = SqliteSessionStore::open(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "session store: storage backend error: opening {}: file is not a database",
            path.display()
        )
    );
    assert_eq!(err.session(), None);
    assert_eq!(fs::read_to_string(&path).unwrap(), content);

    let missing_dir = dir.path().join("no/such/dir/sessions.db");
    let err = SqliteSessionStore::open(&missing_dir).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "session store: storage backend error: opening {0}: unable to open database file: {0}",
            missing_dir.display()
        )
    );
}

/// The store works without a tokio runtime (inline), e.g. under `futures::executor`.
#[test]
fn works_without_a_tokio_runtime() {
    let (_dir, _path, store) = open();
    futures::executor::block_on(async {
        let state = state(vec![Msg::user("hi")]);
        store.save("s", &state).await.unwrap();
        assert_eq!(store.load("s").await.unwrap(), Some(state));
    });
    assert!(format!("{store:?}").starts_with("SqliteSessionStore { path: "));
}
