//! PostgresSessionStore beyond the shared SessionStore contract (which `conformance.rs`
//! checks): the rows as `psql` sees them, incremental saves, migrations (once, under a lock,
//! with instances starting together), schemas kept apart, and bad input: damaged rows,
//! unknown format versions, a wrong password, an unreachable server, a database of another
//! encoding, each failing with a clear error that shows no password and changes nothing;
//! and the recency key `list_recent` pages by: added to a schema of version 1 and filled in
//! for its rows, one index scan per page.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::error::Error as _;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::{AgentState, SessionError, SessionStore, SessionSummary, StateChange};
use agentscope_postgres::{
    DEFAULT_LEASE_TTL, DEFAULT_MAX_CONNECTIONS, DEFAULT_SCHEMA, PostgresFailure,
    PostgresSessionStore, SCHEMA_VERSION,
};
use agentscope_test::messages::texts;
use agentscope_test::session_store::identity;
use agentscope_test::session_store::rich_state;
use support::{PostgresServer, raw};

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
    assert_eq!(
        applied,
        "1 sessions, messages and leases,2 the recency key list_recent pages by"
    );
    assert_eq!(SCHEMA_VERSION, 2);
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

/// Migration 1's tables, as a store of that version left them in schema `old`, with a
/// session row per `(id, revision, saved_at)` (no messages).
const VERSION_1: &str = r#"
CREATE SCHEMA old;
CREATE TABLE old.agentscope_schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
INSERT INTO old.agentscope_schema_migrations (version, name)
    VALUES (1, 'sessions, messages and leases');
CREATE TABLE old.agentscope_session_states (
    session_id    TEXT COLLATE "C" PRIMARY KEY,
    revision      BIGINT NOT NULL,
    version       INTEGER NOT NULL,
    agent         JSON NOT NULL,
    metadata      JSON NOT NULL,
    running_tools JSON NOT NULL,
    hooks         JSON NOT NULL,
    message_count INTEGER NOT NULL,
    saved_at      TEXT NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE TABLE old.agentscope_session_messages (
    session_id TEXT COLLATE "C" NOT NULL
        REFERENCES old.agentscope_session_states (session_id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    message    JSON NOT NULL,
    PRIMARY KEY (session_id, position));
CREATE TABLE old.agentscope_session_leases (
    session_id  TEXT COLLATE "C" PRIMARY KEY,
    token       TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    interrupted BOOLEAN NOT NULL DEFAULT false);
"#;

/// Inserts a session row as an instance of version 1 writes it (no `recency`).
fn version_1_row(session: &str, revision: i64, saved_at: &str) -> String {
    format!(
        "INSERT INTO old.agentscope_session_states (session_id, revision, version, agent, \
         metadata, running_tools, hooks, message_count, saved_at) VALUES ('{session}', \
         {revision}, 1, '{{\"name\":\"a\",\"id\":\"1\"}}', '{{}}', '[]', '{{}}', 0, \
         '{saved_at}')"
    )
}

fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&chrono::Utc)
}

/// A schema of version 1 (no `recency` column): connecting applies migration 2, which adds
/// the column and its index, and keys every row from its `saved_at` (any RFC 3339 form, to
/// the nanosecond; one that does not read as a time is keyed last and reported corrupt when
/// a page reaches it). A row an instance of version 1 saves afterwards is keyed by the next
/// `list_recent`. Over 2,000 sessions, a page is an index scan of the recency index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_schema_of_version_1_gets_the_recency_key_and_lists_by_recency() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let client = raw(&server).await;
    client.batch_execute(VERSION_1).await.unwrap();
    for (session, revision, saved_at) in [
        ("offset", 2, "2026-11-30T11:00:01+01:00"),
        ("nanos", 5, "2026-11-30T10:00:01.000000001Z"),
        ("half", 1, "2026-11-30T10:00:01.5Z"),
        ("micros", 1, "2026-11-30T10:00:01.000001Z"),
        ("broken", 1, "yesterday"),
    ] {
        client
            .batch_execute(&version_1_row(session, revision, saved_at))
            .await
            .unwrap();
    }

    let store = PostgresSessionStore::builder(server.url())
        .schema("old")
        .connect()
        .await
        .unwrap();
    let key = |text: &str| SessionSummary::recency_key(&at(text));
    let recency = |session: &'static str| {
        let client = &client;
        async move {
            client
                .query_one(
                    "SELECT recency FROM old.agentscope_session_states WHERE session_id = $1",
                    &[&session],
                )
                .await
                .unwrap()
                .get::<_, Option<String>>(0)
        }
    };
    assert_eq!(recency("offset").await, Some(key("2026-11-30T10:00:01Z")));
    assert_eq!(
        recency("nanos").await,
        Some(key("2026-11-30T10:00:01.000000001Z"))
    );
    assert_eq!(recency("broken").await.as_deref(), Some("z"));
    let expected = [
        SessionSummary::new("half", 1, at("2026-11-30T10:00:01.5Z")),
        SessionSummary::new("micros", 1, at("2026-11-30T10:00:01.000001Z")),
        SessionSummary::new("nanos", 5, at("2026-11-30T10:00:01.000000001Z")),
        SessionSummary::new("offset", 2, at("2026-11-30T10:00:01Z")),
    ];
    assert_eq!(store.list_recent("", None, 4).await.unwrap(), expected);
    assert_eq!(
        store.list_recent("", Some(&expected[0]), 2).await.unwrap(),
        expected[1..3]
    );
    let error = store.list_recent("", None, 5).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Corrupt { session, .. } if session == "broken"),
        "{error:?}"
    );

    // An instance of version 1 saves a new session: the next page keys it.
    client
        .batch_execute(&version_1_row("late", 1, "2026-12-01T00:00:00Z"))
        .await
        .unwrap();
    assert_eq!(recency("late").await, None);
    assert_eq!(
        store.list_recent("", None, 2).await.unwrap(),
        [
            SessionSummary::new("late", 1, at("2026-12-01T00:00:00Z")),
            expected[0].clone()
        ]
    );
    assert_eq!(recency("late").await, Some(key("2026-12-01T00:00:00Z")));

    // 2,000 sessions more: a page reads the recency index from the cursor on.
    for n in 0..2_000 {
        let state = AgentState::new(identity(), vec![Msg::user("q")]);
        let mut state = state;
        state.saved_at = at("2026-12-02T00:00:00Z") + chrono::Duration::milliseconds(n);
        store
            .save(&format!("s{n:04}"), &StateChange::replace(&state))
            .await
            .unwrap();
    }
    client
        .batch_execute("ANALYZE old.agentscope_session_states")
        .await
        .unwrap();
    let page = store.list_recent("s", None, 10).await.unwrap();
    let ids: Vec<&str> = page.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "s1999", "s1998", "s1997", "s1996", "s1995", "s1994", "s1993", "s1992", "s1991",
            "s1990"
        ]
    );
    let plan: Vec<String> = client
        .query(
            "EXPLAIN SELECT recency, session_id, revision, saved_at \
             FROM old.agentscope_session_states \
             WHERE (recency, session_id) > ($1, $2) AND starts_with(session_id, $3) \
             ORDER BY recency, session_id LIMIT $4",
            &[
                &SessionSummary::recency_key(&page[9].saved_at),
                &"s1990",
                &"s",
                &10i64,
            ],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains("Index Scan using agentscope_session_states_recency")
            && plan.contains("Index Cond: ((ROW(recency, session_id) > ROW("),
        "{plan}"
    );
}
