//! The tables, and the embedded, versioned migrations that create them (see the crate docs,
//! "Schema and migrations").
//!
//! Each migration runs once per PostgreSQL schema, in a transaction of its own, under a
//! transaction-level advisory lock on that schema: several instances starting at the same
//! moment wait for each other, and the first one applies what is missing. Applied versions
//! are recorded in `agentscope_schema_migrations`.

use agentscope_core::rfc3339;
use agentscope_core::session::{SessionError, SessionSummary};
use deadpool_postgres::Object;

use crate::endpoint::Endpoint;
use crate::error::{backend, config_error};

/// The schema the tables are created in, unless configured.
pub const DEFAULT_SCHEMA: &str = "public";

/// The table holding one row per session.
pub const STATES_TABLE: &str = "agentscope_session_states";

/// The table holding one row per message.
pub const MESSAGES_TABLE: &str = "agentscope_session_messages";

/// The table holding one row per leased session.
pub const LEASES_TABLE: &str = "agentscope_session_leases";

/// The table recording the applied migrations.
pub const MIGRATIONS_TABLE: &str = "agentscope_schema_migrations";

/// The version of the newest migration this build applies.
pub const SCHEMA_VERSION: i32 = 2;

/// The first key of the advisory lock migrations take (the second is the schema's hash).
const MIGRATION_LOCK: i32 = 0x6173_6d67; // "asmg"

/// One migration: its version, what it does, and its SQL, with `{schema}` standing for the
/// quoted schema name.
struct Migration {
    version: i32,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, oldest first. A migration is never changed once released: a change to
/// the tables is a new migration.
const MIGRATIONS: [Migration; 2] = [
    Migration {
        version: 1,
        name: "sessions, messages and leases",
        sql: r#"
CREATE TABLE {schema}.agentscope_session_states (
    session_id    TEXT COLLATE "C" PRIMARY KEY,
    revision      BIGINT NOT NULL,
    version       INTEGER NOT NULL,
    agent         JSON NOT NULL,
    metadata      JSON NOT NULL,
    running_tools JSON NOT NULL,
    hooks         JSON NOT NULL,
    message_count INTEGER NOT NULL,
    saved_at      TEXT NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE {schema}.agentscope_session_messages (
    session_id TEXT COLLATE "C" NOT NULL
        REFERENCES {schema}.agentscope_session_states (session_id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    message    JSON NOT NULL,
    PRIMARY KEY (session_id, position)
);
CREATE TABLE {schema}.agentscope_session_leases (
    session_id  TEXT COLLATE "C" PRIMARY KEY,
    token       TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    interrupted BOOLEAN NOT NULL DEFAULT false
);
"#,
    },
    Migration {
        version: 2,
        name: "the recency key list_recent pages by",
        // The key is `SessionSummary::recency_key` of `saved_at`, which the RFC 3339 text
        // (with 0, 3, 6 or 9 fractional digits) is not ordered as. Existing rows are keyed
        // right after the migrations, in Rust, by `key_unkeyed` (one implementation of the
        // key; a `saved_at` that does not read as a time is keyed last).
        sql: r#"
ALTER TABLE {schema}.agentscope_session_states ADD COLUMN recency TEXT COLLATE "C";
CREATE INDEX agentscope_session_states_recency
    ON {schema}.agentscope_session_states (recency, session_id);
"#,
    },
];

/// The recency key of a row whose `saved_at` cannot be read: after every real key, so such
/// a row is listed last, where reading it reports it corrupt.
pub(crate) const UNREADABLE_RECENCY: &str = "z";

/// Keys the rows of `schema` that have no recency key: every row of a schema just migrated
/// to version 2, and the rows an instance of an earlier version saved since. Each row is
/// keyed only if it still has no key and the same `saved_at` (another instance may key it,
/// or save it, meanwhile). Returns how many rows it keyed.
pub(crate) async fn key_unkeyed(
    client: &Object,
    schema: &str,
    endpoint: &Endpoint,
) -> Result<u64, SessionError> {
    let fail = |error: tokio_postgres::Error| {
        backend(
            None,
            format_args!("keying the sessions of the schema {schema:?} by recency"),
            &error,
            endpoint,
        )
    };
    let states = format!("{}.{STATES_TABLE}", quoted(schema));
    let rows = client
        .query(
            &format!("SELECT session_id, saved_at FROM {states} WHERE recency IS NULL"),
            &[],
        )
        .await
        .map_err(fail)?;
    let set = client
        .prepare_cached(&format!(
            "UPDATE {states} SET recency = $3 \
             WHERE session_id = $1 AND saved_at = $2 AND recency IS NULL"
        ))
        .await
        .map_err(fail)?;
    let mut keyed = 0;
    for row in rows {
        let session: String = row.try_get(0).map_err(fail)?;
        let saved_at: String = row.try_get(1).map_err(fail)?;
        let key = match rfc3339::parse_saved_at(&session, &saved_at) {
            Ok(at) => SessionSummary::recency_key(&at),
            Err(_) => UNREADABLE_RECENCY.to_owned(),
        };
        keyed += client
            .execute(&set, &[&session, &saved_at, &key])
            .await
            .map_err(fail)?;
    }
    Ok(keyed)
}

/// Checks a schema name: 1 to 63 bytes of lowercase ASCII letters, digits and `_`, not
/// starting with a digit, so it needs no quoting rules to be read right and fits
/// PostgreSQL's identifiers.
pub(crate) fn check_schema(schema: &str) -> Result<(), SessionError> {
    let valid = !schema.is_empty()
        && schema.len() <= 63
        && !schema.starts_with(|c: char| c.is_ascii_digit())
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match valid {
        true => Ok(()),
        false => Err(config_error(format!(
            "invalid PostgreSQL schema name {schema:?}: use 1 to 63 lowercase ASCII letters, \
             digits and '_', not starting with a digit"
        ))),
    }
}

/// `schema` quoted as an identifier (it holds no `"`: [`check_schema`]).
pub(crate) fn quoted(schema: &str) -> String {
    format!("\"{schema}\"")
}

/// Applies the migrations `schema` lacks; returns the versions applied now.
pub(crate) async fn migrate(
    client: &mut Object,
    schema: &str,
    endpoint: &Endpoint,
) -> Result<Vec<i32>, SessionError> {
    let fail = |error: tokio_postgres::Error| {
        backend(
            None,
            format_args!("migrating the schema {schema:?}"),
            &error,
            endpoint,
        )
    };
    let name = quoted(schema);
    let mut applied = Vec::new();
    for migration in &MIGRATIONS {
        let tx = client.transaction().await.map_err(fail)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2))",
            &[&MIGRATION_LOCK, &schema],
        )
        .await
        .map_err(fail)?;
        // Created only when missing: `CREATE SCHEMA IF NOT EXISTS` needs the right to create
        // schemas even when the schema exists.
        let exists = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
                &[&schema],
            )
            .await
            .map_err(fail)?;
        if !exists.get::<_, bool>(0) {
            tx.batch_execute(&format!("CREATE SCHEMA {name}"))
                .await
                .map_err(fail)?;
        }
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {name}.{MIGRATIONS_TABLE} (
                version    INTEGER PRIMARY KEY,
                name       TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )"
        ))
        .await
        .map_err(fail)?;
        let done = tx
            .query_one(
                &format!(
                    "SELECT EXISTS (SELECT 1 FROM {name}.{MIGRATIONS_TABLE} WHERE version = $1)"
                ),
                &[&migration.version],
            )
            .await
            .map_err(fail)?;
        if done.get::<_, bool>(0) {
            tx.rollback().await.map_err(fail)?;
            continue;
        }
        tx.batch_execute(&migration.sql.replace("{schema}", &name))
            .await
            .map_err(fail)?;
        tx.execute(
            &format!("INSERT INTO {name}.{MIGRATIONS_TABLE} (version, name) VALUES ($1, $2)"),
            &[&migration.version, &migration.name],
        )
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        tracing::info!(
            target: "agentscope_postgres",
            schema,
            version = migration.version,
            name = migration.name,
            "applied a session store migration"
        );
        applied.push(migration.version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names() {
        for ok in ["public", "agentscope", "tenant_7", "_x", &"a".repeat(63)] {
            assert!(check_schema(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Public",
            "7tenant",
            "a-b",
            "a.b",
            "a\"b",
            &"a".repeat(64),
        ] {
            assert!(check_schema(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_schema("a-b").unwrap_err().to_string(),
            "session store: storage backend error: invalid PostgreSQL schema name \"a-b\": use \
             1 to 63 lowercase ASCII letters, digits and '_', not starting with a digit"
        );
    }

    #[test]
    fn migrations_are_numbered_in_order() {
        assert!(MIGRATIONS.iter().all(|m| m.sql.contains("{schema}")));
        let versions: Vec<i32> = MIGRATIONS.iter().map(|m| m.version).collect();
        let expected: Vec<i32> = (1..=SCHEMA_VERSION).collect();
        assert_eq!(versions, expected);
    }
}
