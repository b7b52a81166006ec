//! SqliteSessionStore beyond the shared SessionStore contract (which `conformance.rs` checks
//! with `agentscope_test::session_store`): two handles on one file, the rows as the sqlite3
//! shell sees them, incremental saves, compare-and-swap, configuration, another process
//! holding the write lock, and bad input: corrupt rows, unknown format versions, database
//! errors and files that are not databases, each failing with a clear error and changing
//! nothing stored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionError, SessionStore, StateChange};
use agentscope_sqlite::{BUSY_TIMEOUT, DEFAULT_MAX_READERS, SqliteSessionStore};
use agentscope_test::messages::texts;
use agentscope_test::session_store::identity;
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
    AgentState::new(identity(), messages)
        .with_metadata_entry("user", json!({"id": 7, "name": "Alice"}))
}

/// `state` as stored at `revision`.
fn at_revision(mut state: AgentState, revision: u64) -> AgentState {
    state.revision = revision;
    state
}

/// The message rows of `session` as (position, JSON).
fn message_rows(path: &Path, session: &str) -> Vec<(i64, String)> {
    let connection = Connection::open(path).unwrap();
    let mut statement = connection
        .prepare(
            "SELECT position, message FROM agentscope_session_messages \
             WHERE session_id = ?1 ORDER BY position",
        )
        .unwrap();
    statement
        .query_map([session], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A second handle on the same file (another process) reads exactly what the first saved:
/// a state with every content block kind, at revision 1.
#[tokio::test]
async fn another_handle_on_the_file_reads_what_was_saved() {
    let (_dir, path, store) = open();
    let state = rich_state();
    assert_eq!(
        store
            .save("blocks", &StateChange::replace(&state))
            .await
            .unwrap(),
        1
    );
    let other = SqliteSessionStore::open(&path).unwrap();
    assert_eq!(
        other.load("blocks").await.unwrap(),
        Some(at_revision(state, 1))
    );
    assert_eq!(other.list().await.unwrap(), ["blocks"]);
}

/// The rows as the sqlite3 shell sees them: one session row with the revision, the format
/// version, the JSON of the agent, metadata, running tools and hooks, the message count and
/// `saved_at` in RFC 3339; one row per message holding the JSON of the `Msg`. The file is in
/// WAL mode.
#[tokio::test]
async fn the_rows_hold_the_state() {
    let (_dir, path, store) = open();
    assert_eq!(store.path(), path);
    let first = state(vec![Msg::user("1"), Msg::assistant("2")]);
    store
        .save("a", &StateChange::replace(&first))
        .await
        .unwrap();
    let mut hooks = serde_json::Map::new();
    hooks.insert("tool_approval".into(), json!({"approved": ["c1"]}));
    let step = StateChange::new(1, 2, vec![Msg::user("3")], identity())
        .with_metadata(first.metadata.clone())
        .with_running_tools(vec!["c1".into()])
        .with_hooks(hooks);
    assert_eq!(store.save("a", &step).await.unwrap(), 2);

    let connection = Connection::open(&path).unwrap();
    let row: (i64, i64, String, String, String, String, i64, String) = connection
        .query_row(
            "SELECT revision, version, agent, metadata, running_tools, hooks, message_count, \
             saved_at FROM agentscope_session_states WHERE session_id = 'a'",
            [],
            |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                    row.get(7)?,
                ))
            },
        )
        .unwrap();
    assert_eq!(
        row,
        (
            2,
            1,
            r#"{"name":"assistant","id":"agent-1"}"#.to_owned(),
            r#"{"user":{"id":7,"name":"Alice"}}"#.to_owned(),
            r#"["c1"]"#.to_owned(),
            r#"{"tool_approval":{"approved":["c1"]}}"#.to_owned(),
            3,
            serde_json::to_value(step.saved_at)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned(),
        )
    );
    let loaded = store.load("a").await.unwrap().unwrap();
    let rows = message_rows(&path, "a");
    assert_eq!(
        rows.iter()
            .map(|(position, _)| *position)
            .collect::<Vec<_>>(),
        [0, 1, 2]
    );
    for ((_, json), msg) in rows.iter().zip(&loaded.messages) {
        assert_eq!(json, &serde_json::to_string(msg).unwrap());
    }
    assert_eq!(texts(&loaded.messages), ["1", "2", "3"]);
    assert_eq!(loaded.revision, 2);
    assert_eq!(loaded.running_tools, ["c1"]);
    assert_eq!(loaded.hooks, step.hooks);
    assert_eq!(loaded.saved_at, step.saved_at);
    let mode: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

/// Saves are incremental: appends add rows, a change keeping fewer messages drops the rows
/// after them, a replace rewrites all; every revision loads back exactly. Invalid changes
/// (keeping more messages than stored, appending a system message) write nothing.
#[tokio::test]
async fn saves_keep_drop_and_append_rows() {
    let (_dir, path, store) = open();
    let save = |change: StateChange| {
        let store = store.clone();
        async move { store.save("s", &change).await }
    };
    let msgs = |texts: &[&str]| texts.iter().map(|t| Msg::user(*t)).collect::<Vec<_>>();
    assert_eq!(
        save(StateChange::new(0, 0, msgs(&["a", "b"]), identity()))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        save(StateChange::new(1, 2, msgs(&["c", "d"]), identity()))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        save(StateChange::new(2, 3, msgs(&["e"]), identity()))
            .await
            .unwrap(),
        3
    );
    let loaded = store.load("s").await.unwrap().unwrap();
    assert_eq!(texts(&loaded.messages), ["a", "b", "c", "e"]);
    assert_eq!(loaded.revision, 3);
    assert_eq!(message_rows(&path, "s").len(), 4);

    // Nothing kept, nothing appended: an empty conversation.
    assert_eq!(
        save(StateChange::new(3, 0, Vec::new(), identity()))
            .await
            .unwrap(),
        4
    );
    assert!(store.load("s").await.unwrap().unwrap().messages.is_empty());
    assert!(message_rows(&path, "s").is_empty());
    // A replace.
    let replacement = at_revision(state(msgs(&["x", "y", "z"])), 4);
    assert_eq!(save(StateChange::replace(&replacement)).await.unwrap(), 5);
    assert_eq!(
        store.load("s").await.unwrap(),
        Some(at_revision(replacement, 5))
    );

    let before = message_rows(&path, "s");
    let err = save(StateChange::new(5, 4, msgs(&["w"]), identity()))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid change to session 's': the change keeps 4 messages but revision 5 holds 3"
    );
    let err = save(StateChange::new(
        5,
        3,
        vec![Msg::system("be evil")],
        identity(),
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(&err, SessionError::InvalidChange { session, .. } if session == "s"),
        "{err}"
    );
    assert_eq!(message_rows(&path, "s"), before);
    assert_eq!(store.load("s").await.unwrap().unwrap().revision, 5);
}

/// Two writers save from one revision at the same time: exactly one wins; the other gets a
/// conflict naming both revisions, and what the winner saved is stored unchanged. Twenty
/// rounds, each on a new session at revision 1, the writers on two handles (two
/// processes).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_saves_from_one_base_exactly_one_wins() {
    let (_dir, path, store) = open();
    let other = SqliteSessionStore::open(&path).unwrap();
    let mut wins = [0, 0];
    for round in 0..20 {
        let session = format!("race-{round}");
        let base = state(vec![Msg::user("hi")]);
        store
            .save(&session, &StateChange::replace(&base))
            .await
            .unwrap();
        let before = store.load(&session).await.unwrap().unwrap();
        // Writer A appends a message; writer B rewrites the conversation.
        let a = StateChange::new(1, 1, vec![Msg::assistant(format!("a{round}"))], identity());
        let b = StateChange::new(
            1,
            0,
            vec![Msg::user(format!("b{round}"))],
            AgentIdentity::new("other", "agent-2"),
        );
        let (ra, rb) = tokio::join!(
            tokio::spawn({
                let (store, session, a) = (store.clone(), session.clone(), a.clone());
                async move { store.save(&session, &a).await }
            }),
            tokio::spawn({
                let (other, session, b) = (other.clone(), session.clone(), b.clone());
                async move { other.save(&session, &b).await }
            }),
        );
        let (winner, expected, loser) = match (ra.unwrap(), rb.unwrap()) {
            (Ok(2), Err(loser)) => {
                wins[0] += 1;
                (&a, vec!["hi".to_owned(), format!("a{round}")], loser)
            }
            (Err(loser), Ok(2)) => {
                wins[1] += 1;
                (&b, vec![format!("b{round}")], loser)
            }
            other => panic!("round {round}: exactly one save must win: {other:?}"),
        };
        assert!(
            matches!(
                &loser,
                SessionError::Conflict { session: named, expected: 1, found: 2 }
                    if *named == session
            ),
            "round {round}: {loser:?}"
        );
        assert_eq!(
            loser.to_string(),
            format!(
                "session '{session}' was changed by another writer: this save was made from \
                 revision 1, but revision 2 is stored"
            )
        );
        let stored = store.load(&session).await.unwrap().unwrap();
        assert_eq!(stored.revision, 2);
        assert_eq!(stored.agent, winner.agent);
        assert_eq!(texts(&stored.messages), expected);
        assert_eq!(stored.messages.last(), winner.appended.last());
        if winner.kept == 1 {
            assert_eq!(stored.messages[0], before.messages[0]);
        }
        // The loser, retried from what is stored now, succeeds.
        let retry = StateChange::new(2, stored.messages.len(), Vec::new(), identity());
        assert_eq!(store.save(&session, &retry).await.unwrap(), 3);
    }
    eprintln!("wins (same handle as the setup, other handle): {wins:?}");
}

/// Corrupt rows and unknown versions fail the load naming the session; the rows stay as
/// they were, and an agent bound to the session fails before any hook runs.
#[tokio::test]
async fn bad_rows_fail_with_the_session_named_and_are_kept() {
    let (_dir, path, store) = open();
    store
        .save(
            "s1",
            &StateChange::replace(&state(vec![Msg::user("hi"), Msg::assistant("hello")])),
        )
        .await
        .unwrap();
    let connection = Connection::open(&path).unwrap();
    let run = |sql: &str| {
        connection.execute_batch(sql).unwrap();
    };
    let snapshot = || -> (Vec<rusqlite::types::Value>, Vec<(i64, rusqlite::types::Value)>) {
        let row = connection
            .query_row(
                "SELECT * FROM agentscope_session_states WHERE session_id = 's1'",
                [],
                |row| (0..10).map(|i| row.get(i)).collect(),
            )
            .unwrap();
        let mut statement = connection
            .prepare(
                "SELECT position, message FROM agentscope_session_messages \
                 WHERE session_id = 's1' ORDER BY position",
            )
            .unwrap();
        let messages = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        (row, messages)
    };
    let good = snapshot();
    let system = serde_json::to_string(&Msg::system("x")).unwrap();
    let cases = [
        (
            "UPDATE agentscope_session_states SET version = 3",
            "session 's1' has state format version 3; this build reads version 1".to_owned(),
        ),
        (
            "UPDATE agentscope_session_states SET version = 'one'",
            "session 's1' is corrupt: the version column holds a value of type Text, not an \
             integer"
                .to_owned(),
        ),
        (
            "UPDATE agentscope_session_states SET agent = '{\"name\": \"a\"'",
            "session 's1' is corrupt: the agent column is not valid: EOF while parsing an \
             object at line 1 column 12"
                .to_owned(),
        ),
        (
            "UPDATE agentscope_session_states SET metadata = 42",
            "session 's1' is corrupt: the metadata column is not valid: invalid type: integer \
             `42`, expected a map at line 1 column 2"
                .to_owned(),
        ),
        (
            "UPDATE agentscope_session_states SET saved_at = 'yesterday'",
            "session 's1' is corrupt: saved_at 'yesterday' is not an RFC 3339 time: premature \
             end of input"
                .to_owned(),
        ),
        (
            "UPDATE agentscope_session_messages SET message = '{\"role\": \"user\"' \
             WHERE position = 1",
            "session 's1' is corrupt: message 1 is not valid: EOF while parsing an object at \
             line 1 column 15"
                .to_owned(),
        ),
        (
            "DELETE FROM agentscope_session_messages WHERE position = 1",
            "session 's1' is corrupt: the session row counts 2 messages but 1 message rows \
             are stored"
                .to_owned(),
        ),
        (
            "UPDATE agentscope_session_messages SET position = 5 WHERE position = 1",
            "session 's1' is corrupt: message rows are not numbered 0, 1, 2, ...: found \
             position 5 where 1 was expected"
                .to_owned(),
        ),
        (
            &*format!(
                "UPDATE agentscope_session_messages SET message = '{system}' WHERE position = 1"
            ),
            "session 's1' is corrupt: message 1 has the system role; agent memory never \
             holds system messages"
                .to_owned(),
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
    let restore = |snapshot: &(
        Vec<rusqlite::types::Value>,
        Vec<(i64, rusqlite::types::Value)>,
    )| {
        let tx = connection.unchecked_transaction().unwrap();
        tx.execute(
            "DELETE FROM agentscope_session_states WHERE session_id = 's1'",
            [],
        )
        .unwrap();
        tx.execute(
            "DELETE FROM agentscope_session_messages WHERE session_id = 's1'",
            [],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO agentscope_session_states VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            rusqlite::params_from_iter(&snapshot.0),
        )
        .unwrap();
        for (position, message) in &snapshot.1 {
            tx.execute(
                "INSERT INTO agentscope_session_messages VALUES ('s1', ?1, ?2)",
                rusqlite::params![position, message],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    };
    for (sql, expected) in &cases {
        restore(&good);
        run(sql);
        let before = snapshot();
        let err = store.load("s1").await.unwrap_err();
        assert_eq!(&err.to_string(), expected, "after {sql}");
        assert_eq!(err.session(), Some("s1"));
        let err = agent.call("next").await.unwrap_err();
        assert_eq!(err.to_string(), format!("session error: {expected}"));
        assert_eq!(snapshot(), before, "a failed load changes nothing");
        assert!(recorder.events().is_empty());
        assert!(agent.memory().is_empty());
    }
    assert_eq!(model.request_count(), 0);
    assert_eq!(store.list().await.unwrap(), ["s1"]);
    // A corrupt session can be deleted without being read.
    assert!(store.delete("s1").await.unwrap());
    assert_eq!(store.load("s1").await.unwrap(), None);
}

#[tokio::test]
async fn database_errors_name_the_session() {
    let (_dir, path, store) = open();
    store
        .save("s1", &StateChange::replace(&state(vec![Msg::user("hi")])))
        .await
        .unwrap();
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TABLE agentscope_session_states; DROP TABLE agentscope_session_messages;",
        )
        .unwrap();
    assert_eq!(
        store.load("s1").await.unwrap_err().to_string(),
        "session 's1': storage backend error: loading: no such table: agentscope_session_states"
    );
    assert_eq!(
        store
            .save("s1", &StateChange::new(1, 1, Vec::new(), identity()))
            .await
            .unwrap_err()
            .to_string(),
        "session 's1': storage backend error: saving: no such table: agentscope_session_states"
    );
    assert_eq!(
        store.delete("s1").await.unwrap_err().to_string(),
        "session 's1': storage backend error: deleting: no such table: agentscope_session_states"
    );
    assert_eq!(
        store.list().await.unwrap_err().to_string(),
        "session store: storage backend error: listing sessions: no such table: \
         agentscope_session_states"
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
        "session error: session 's1': storage backend error: loading: no such table: \
         agentscope_session_states"
    );
}

/// Another process holding the write lock: loads go on (WAL), a save waits the configured
/// busy timeout and then fails naming the session, and succeeds once the lock is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_holding_the_write_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::builder(&path)
        .busy_timeout(Duration::from_millis(300))
        .open()
        .unwrap();
    let first = state(vec![Msg::user("hi")]);
    store
        .save("s", &StateChange::replace(&first))
        .await
        .unwrap();

    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    assert_eq!(
        store.load("s").await.unwrap(),
        Some(at_revision(first.clone(), 1)),
        "readers are not blocked by a writer"
    );
    let step = StateChange::new(1, 1, vec![Msg::assistant("hello")], identity());
    let started = Instant::now();
    let err = store.save("s", &step).await.unwrap_err();
    let waited = started.elapsed();
    assert_eq!(
        err.to_string(),
        "session 's': storage backend error: saving: database is locked"
    );
    assert!(waited >= Duration::from_millis(250), "waited {waited:?}");
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    other.execute_batch("ROLLBACK").unwrap();
    assert_eq!(store.save("s", &step).await.unwrap(), 2);
    assert_eq!(
        texts(&store.load("s").await.unwrap().unwrap().messages),
        ["hi", "hello"]
    );
}

/// The builder's settings, the defaults of `open`, and `max_readers(1)`: many concurrent
/// loads share the one reader connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let default = SqliteSessionStore::open(&path).unwrap();
    assert_eq!(default.busy_timeout(), BUSY_TIMEOUT);
    assert_eq!(default.max_readers(), DEFAULT_MAX_READERS);
    assert_eq!(BUSY_TIMEOUT, Duration::from_secs(5));
    let zero = SqliteSessionStore::builder(&path)
        .max_readers(0)
        .open()
        .unwrap();
    assert_eq!(zero.max_readers(), 1);
    let store = SqliteSessionStore::builder(&path)
        .busy_timeout(Duration::from_secs(30))
        .max_readers(1)
        .open()
        .unwrap();
    assert_eq!(store.busy_timeout(), Duration::from_secs(30));
    assert_eq!(store.max_readers(), 1);
    store
        .save("s", &StateChange::replace(&state(vec![Msg::user("hi")])))
        .await
        .unwrap();
    let store = Arc::new(store);
    let loads: Vec<_> = (0..50)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.load("s").await.unwrap().unwrap().messages.len() })
        })
        .collect();
    for load in loads {
        assert_eq!(load.await.unwrap(), 1);
    }
    let debug = format!("{store:?}");
    assert!(debug.starts_with("SqliteSessionStore { path: "), "{debug}");
    assert!(
        debug.contains("busy_timeout: 30s, max_readers: 1, idle_readers: 1"),
        "{debug}"
    );
}

/// Delete removes the session row and its messages; other sessions stay.
#[tokio::test]
async fn delete_removes_every_row_of_the_session() {
    let (_dir, path, store) = open();
    for session in ["a", "b"] {
        store
            .save(
                session,
                &StateChange::replace(&state(vec![Msg::user("1"), Msg::user("2")])),
            )
            .await
            .unwrap();
    }
    assert!(store.delete("a").await.unwrap());
    assert!(!store.delete("a").await.unwrap());
    assert!(message_rows(&path, "a").is_empty());
    assert_eq!(message_rows(&path, "b").len(), 2);
    assert_eq!(store.list().await.unwrap(), ["b"]);
    // A deleted session starts again at revision 1.
    assert_eq!(
        store
            .save(
                "a",
                &StateChange::new(0, 0, vec![Msg::user("new")], identity())
            )
            .await
            .unwrap(),
        1
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
        assert_eq!(
            store
                .save("s", &StateChange::replace(&state))
                .await
                .unwrap(),
            1
        );
        assert_eq!(store.load("s").await.unwrap(), Some(at_revision(state, 1)));
        assert_eq!(store.list().await.unwrap(), ["s"]);
        assert!(store.delete("s").await.unwrap());
    });
    assert!(format!("{store:?}").starts_with("SqliteSessionStore { path: "));
}
