//! PostgresSessionStore beyond the shared SessionStore contract (which `conformance.rs`
//! checks): the rows as `psql` sees them, incremental saves, migrations (once, under a lock,
//! with instances starting together), schemas kept apart, and bad input: damaged rows,
//! unknown format versions, a wrong password, an unreachable server, a database of another
//! encoding, each failing with a clear error that shows no password and changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::error::Error as _;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionError, SessionStore, StateChange};
use agentscope_postgres::{
    DEFAULT_LEASE_TTL, DEFAULT_MAX_CONNECTIONS, DEFAULT_SCHEMA, PostgresFailure,
    PostgresSessionStore, SCHEMA_VERSION,
};
use agentscope_test::messages::texts;
use agentscope_test::session_store::rich_state;
use support::{PostgresServer, raw};

fn identity() -> AgentIdentity {
    AgentIdentity::new("assistant", "agent-1")
}

/// `state` as stored at `revision`.
fn at_revision(mut state: AgentState, revision: u64) -> AgentState {
    state.revision = revision;
    state
}

/// The message rows of `session` in schema `public`, as (position, JSON text).
async fn message_rows(client: &tokio_postgres::Client, session: &str) -> Vec<(i32, String)> {
    client
        .query(
            "SELECT position, message::text FROM agentscope_session_messages \
             WHERE session_id = $1 ORDER BY position",
            &[&session],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// The rows hold exactly the JSON serde wrote (a NUL escape included, which `JSONB` would
/// refuse), the session row its revision and count; another store on the server reads the
/// state back; ids are listed in byte order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn the_rows_hold_the_json_serde_wrote() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = support::store(&server).await;
    assert_eq!(store.schema(), DEFAULT_SCHEMA);
    assert_eq!(store.lease_ttl(), Some(DEFAULT_LEASE_TTL));
    assert_eq!(store.max_connections(), DEFAULT_MAX_CONNECTIONS);
    let state = rich_state();
    assert_eq!(
        store
            .save("blocks", &StateChange::replace(&state))
            .await
            .unwrap(),
        1
    );
    let client = raw(&server).await;
    let rows = message_rows(&client, "blocks").await;
    let expected: Vec<(i32, String)> = state
        .messages
        .iter()
        .enumerate()
        .map(|(i, msg)| (i as i32, serde_json::to_string(msg).unwrap()))
        .collect();
    assert_eq!(rows, expected);
    assert!(rows[0].1.contains("\\u0000 nul"), "{}", rows[0].1);
    let head = client
        .query_one(
            "SELECT revision, version, message_count, saved_at, agent::text, \
             running_tools::text FROM agentscope_session_states WHERE session_id = 'blocks'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(head.get::<_, i64>(0), 1);
    assert_eq!(head.get::<_, i32>(1), 1);
    assert_eq!(head.get::<_, i32>(2), state.messages.len() as i32);
    assert_eq!(head.get::<_, String>(3), "2021-03-04T05:06:07.123456789Z");
    assert_eq!(
        head.get::<_, String>(4),
        r#"{"name":"assistant ✓","id":"agent-7f3c9a"}"#
    );
    assert_eq!(head.get::<_, String>(5), r#"["call-4","ütf-8 ✓"]"#);
    // The JSON operators work on it (on messages without a NUL: PostgreSQL's operators
    // refuse to turn `\u0000` into text).
    let tokens: String = client
        .query_one(
            "SELECT message->'metadata'->'usage'->>'input_tokens' \
             FROM agentscope_session_messages WHERE session_id = 'blocks' AND position = 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tokens, "120");

    let other = support::store(&server).await;
    assert_eq!(
        other.load("blocks").await.unwrap(),
        Some(at_revision(state.clone(), 1))
    );
    for id in ["b", "B", "a_", "A", "a-", "a.b"] {
        let one = AgentState::new(identity(), vec![Msg::user(id)]);
        store.save(id, &StateChange::replace(&one)).await.unwrap();
    }
    assert_eq!(
        other.list().await.unwrap(),
        ["A", "B", "a-", "a.b", "a_", "b", "blocks"]
    );
}

/// A step writes only its change: the kept rows stay as they are, the rows past `kept` go,
/// the appended ones are added after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_step_writes_only_its_change() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = support::store(&server).await;
    let client = raw(&server).await;
    let first = StateChange::new(
        0,
        0,
        vec![Msg::user("1"), Msg::assistant("2"), Msg::user("3")],
        identity(),
    );
    store.save("s", &first).await.unwrap();
    // Each row version's transaction id (`xmin`): a row rewritten by the step gets a new one.
    let xmin = |rows: Vec<tokio_postgres::Row>| -> Vec<(i32, String)> {
        rows.iter().map(|row| (row.get(0), row.get(1))).collect()
    };
    let versions_before = xmin(
        client
            .query(
                "SELECT position, xmin::text FROM agentscope_session_messages \
                 WHERE session_id = 's' ORDER BY position",
                &[],
            )
            .await
            .unwrap(),
    );
    let step = StateChange::new(1, 2, vec![Msg::assistant("4"), Msg::user("5")], identity());
    assert_eq!(store.save("s", &step).await.unwrap(), 2);
    let versions_after = xmin(
        client
            .query(
                "SELECT position, xmin::text FROM agentscope_session_messages \
                 WHERE session_id = 's' ORDER BY position",
                &[],
            )
            .await
            .unwrap(),
    );
    // Rows 0 and 1 were kept untouched (same row versions); 2 was replaced, 3 is new.
    assert_eq!(versions_after[..2], versions_before[..2]);
    assert_ne!(versions_after[2], versions_before[2]);
    assert_eq!(versions_after.len(), 4);
    let loaded = store.load("s").await.unwrap().unwrap();
    assert_eq!(texts(&loaded.messages), ["1", "2", "4", "5"]);
    assert_eq!(loaded.revision, 2);

    // A stale step changes nothing.
    let stale = StateChange::new(1, 0, vec![Msg::user("x")], identity());
    assert!(matches!(
        store.save("s", &stale).await,
        Err(SessionError::Conflict {
            expected: 1,
            found: 2,
            ..
        })
    ));
    assert_eq!(store.load("s").await.unwrap().unwrap(), loaded);
    // Deleting removes the messages with the session.
    assert!(store.delete("s").await.unwrap());
    assert!(message_rows(&client, "s").await.is_empty());
}

/// Migrations: applied once and recorded; eight instances connecting to a new schema at
/// the same moment all succeed (they wait for each other on the advisory lock); schemas
/// keep their sessions apart; an invalid schema name is refused before connecting.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn migrations_run_once_even_when_instances_start_together() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let url = server.url();
    let connects: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move {
                PostgresSessionStore::builder(url)
                    .schema("tenant_a")
                    .connect()
                    .await
            })
        })
        .collect();
    let mut stores = Vec::new();
    for connect in connects {
        stores.push(connect.await.unwrap().unwrap());
    }
    let applied = server.psql(
        "SELECT string_agg(version::text || ' ' || name, ',' ORDER BY version) \
         FROM tenant_a.agentscope_schema_migrations",
    );
    assert_eq!(applied, "1 sessions, messages and leases");
    assert_eq!(SCHEMA_VERSION, 1);
    let tables = server.psql(
        "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables \
         WHERE schemaname = 'tenant_a'",
    );
    assert_eq!(
        tables,
        "agentscope_schema_migrations,agentscope_session_leases,agentscope_session_messages,\
         agentscope_session_states"
    );

    let tenant_b = PostgresSessionStore::builder(&url)
        .schema("tenant_b")
        .connect()
        .await
        .unwrap();
    let state = AgentState::new(identity(), vec![Msg::user("a's")]);
    stores[0]
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();
    assert_eq!(stores[7].list().await.unwrap(), ["s"]);
    assert!(tenant_b.list().await.unwrap().is_empty());
    assert_eq!(tenant_b.load("s").await.unwrap(), None);

    let error = PostgresSessionStore::builder(&url)
        .schema("Tenant-C")
        .connect()
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "session store: storage backend error: invalid PostgreSQL schema name \"Tenant-C\": \
         use 1 to 63 lowercase ASCII letters, digits and '_', not starting with a digit"
    );
}

/// Damaged rows are `Corrupt` (naming the session and what is wrong), a newer format is
/// `UnsupportedVersion`; nothing is changed by reading them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn damaged_rows_are_reported_naming_the_session() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = support::store(&server).await;
    let client = raw(&server).await;
    let state = AgentState::new(identity(), vec![Msg::user("1"), Msg::assistant("2")]);
    let cases: [(&str, &str, &str); 6] = [
        (
            "version",
            "UPDATE agentscope_session_states SET version = 9 WHERE session_id = $1",
            "session 'version' has state format version 9; this build reads version 1",
        ),
        (
            "message",
            "UPDATE agentscope_session_messages SET message = '{\"role\": 5}' \
             WHERE session_id = $1 AND position = 1",
            "session 'message' is corrupt: message 1 is not valid: expected value at line 1 \
             column 10",
        ),
        (
            "agent",
            "UPDATE agentscope_session_states SET agent = '[]' WHERE session_id = $1",
            "session 'agent' is corrupt: the agent column is not valid: invalid length 0, \
             expected struct AgentIdentity with 2 elements at line 1 column 2",
        ),
        (
            "missing",
            "DELETE FROM agentscope_session_messages WHERE session_id = $1 AND position = 1",
            "session 'missing' is corrupt: the session row counts 2 messages but 1 message rows \
             are stored",
        ),
        (
            "gap",
            "UPDATE agentscope_session_messages SET position = 5 \
             WHERE session_id = $1 AND position = 1",
            "session 'gap' is corrupt: message rows are not numbered 0, 1, 2, ...: found \
             position 5 where 1 was expected",
        ),
        (
            "saved",
            "UPDATE agentscope_session_states SET saved_at = 'yesterday' WHERE session_id = $1",
            "session 'saved' is corrupt: saved_at 'yesterday' is not an RFC 3339 time: \
             premature end of input",
        ),
    ];
    for (session, damage, expected) in cases {
        store
            .save(session, &StateChange::replace(&state))
            .await
            .unwrap();
        client.execute(damage, &[&session]).await.unwrap();
        let error = store.load(session).await.unwrap_err();
        assert_eq!(error.session(), Some(session));
        assert_eq!(error.to_string(), expected, "{session}");
        match session {
            "version" => assert!(matches!(
                error,
                SessionError::UnsupportedVersion {
                    found: 9,
                    supported: 1,
                    ..
                }
            )),
            _ => assert!(matches!(error, SessionError::Corrupt { .. }), "{error:?}"),
        }
        // Reading changed nothing: the same error again.
        assert_eq!(
            store.load(session).await.unwrap_err().to_string(),
            error.to_string()
        );
    }
}

/// A wrong password: a clear error that says so, shows no password (in the message, the
/// source or `Debug`), and is an authentication error; the right one connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_wrong_password_is_reported_without_any_password() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    const WRONG: &str = "wrong-Pa55-w0rd";
    for builder in [
        PostgresSessionStore::builder(server.password_url(WRONG)),
        PostgresSessionStore::builder(format!(
            "host=127.0.0.1 port={} user={} dbname=postgres",
            server.port(),
            PostgresServer::PASSWORD_USER
        ))
        .password(WRONG),
    ] {
        let error = builder.connect().await.unwrap_err();
        let shown = format!("{error} | {error:?}");
        assert!(!shown.contains(WRONG), "{shown}");
        assert!(!shown.contains(PostgresServer::PASSWORD), "{shown}");
        assert!(
            shown.contains("password authentication failed for user"),
            "{shown}"
        );
        let failure = error
            .source()
            .and_then(|source| source.downcast_ref::<PostgresFailure>())
            .unwrap();
        assert_eq!(failure.code(), Some("28P01"));
        assert!(failure.is_authentication_error());
        assert!(!failure.is_connection_error());
    }
    let store = PostgresSessionStore::connect(server.password_url(PostgresServer::PASSWORD))
        .await
        .unwrap();
    let shown = format!("{store:?}");
    assert!(!shown.contains(PostgresServer::PASSWORD), "{shown}");
    assert!(
        shown.contains(&format!(
            "postgresql://{}:<redacted>@127.0.0.1:{}/postgres",
            PostgresServer::PASSWORD_USER,
            server.port()
        )),
        "{shown}"
    );
    assert!(store.list().await.unwrap().is_empty());
}

/// A server that is not there fails the connect at once, as a connection error; a database
/// whose encoding is not UTF-8 is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn unreachable_servers_and_other_encodings_are_refused() {
    let Some(mut server) = PostgresServer::start() else {
        return;
    };
    server.psql(
        "CREATE DATABASE latin ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0",
    );
    let error = PostgresSessionStore::connect(format!(
        "postgresql://postgres@127.0.0.1:{}/latin",
        server.port()
    ))
    .await
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the database's encoding is LATIN1, not UTF8"),
        "{error}"
    );

    let url = server.url();
    server.stop();
    let started = Instant::now();
    let error = PostgresSessionStore::builder(&url)
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        error
            .to_string()
            .starts_with("session store: storage backend error: connecting (postgresql://"),
        "{error}"
    );
    let failure = error
        .source()
        .and_then(|source| source.downcast_ref::<PostgresFailure>())
        .unwrap();
    assert!(failure.is_connection_error(), "{failure:?}");
}
