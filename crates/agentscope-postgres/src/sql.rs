//! The statements of one store, written once for its schema when it connects (prepared per
//! connection, and cached there by the pool).
//!
//! JSON columns are sent as text and cast (`$n::text::json`, which the server checks) and
//! read back as text (`column::text`), so that the stored JSON is exactly what serde wrote.

use crate::schema::{LEASES_TABLE, MESSAGES_TABLE, STATES_TABLE, quoted};

/// The channel interrupts are sent on (`NOTIFY`), with `<schema>/<session>` as payload.
pub const INTERRUPT_CHANNEL: &str = "agentscope_session_interrupts";

/// Every statement of a store on one schema.
#[derive(Debug)]
pub(crate) struct Statements {
    /// `$1` session, `$2` fence: whether the fence may save (locks the lease row until the
    /// end of the save's transaction, so no other call takes the lease meanwhile). No row:
    /// no lease is held.
    pub(crate) fence: String,
    /// `$1` session: the stored revision and message count, the row locked.
    pub(crate) head: String,
    /// A new session's row, unless one exists: `$1` session, `$2` revision, `$3` format
    /// version, `$4` agent, `$5` metadata, `$6` running tools, `$7` hooks, `$8` message
    /// count, `$9` saved_at, `$10` its recency key. Returns a row when it inserted.
    pub(crate) insert_state: String,
    /// The same parameters: updates the session's row.
    pub(crate) update_state: String,
    /// `$1` session, `$2` kept: deletes the messages from position `kept` on.
    pub(crate) delete_messages_from: String,
    /// `$1` session, `$2` the first position, `$3` the messages' JSON (text array).
    pub(crate) insert_messages: String,
    /// `$1` session: the row and every message (positions and JSON, in order), in one
    /// statement, so of one snapshot.
    pub(crate) load: String,
    /// `$1` session: deletes the row (its messages go with it).
    pub(crate) delete: String,
    /// The session ids, sorted by byte value (the column's collation is `C`).
    pub(crate) list: String,
    /// Whether any session row has no recency key (saved by an instance of an earlier
    /// version).
    pub(crate) has_unkeyed: String,
    /// A page of `list_recent`: `$1`, `$2` the cursor's recency key and id (`''`, `''`: the
    /// first page), `$3` the prefix, `$4` the limit. Rows of (key, id, revision, saved_at).
    pub(crate) list_recent: String,
    /// `$1` session, `$2` token, `$3` time to live in ms: takes the lease if nobody holds a
    /// live one. Returns a row when taken.
    pub(crate) take_lease: String,
    /// `$1` session, `$2` token, `$3` time to live in ms: extends the token's lease, or takes
    /// it again if it expired and nobody else took it. Returns whether it is interrupted, no
    /// row when another call holds the session.
    pub(crate) renew_lease: String,
    /// `$1` session, `$2` token: deletes the lease if the token holds it.
    pub(crate) release_lease: String,
    /// `$1` session, `$2` the notification's payload: marks the live lease of the session as
    /// interrupted and notifies every store. Returns a row when a lease was held.
    pub(crate) interrupt: String,
}

impl Statements {
    /// The statements on the tables of `schema` (checked by `check_schema`).
    pub(crate) fn new(schema: &str) -> Self {
        let schema = quoted(schema);
        let states = format!("{schema}.{STATES_TABLE}");
        let messages = format!("{schema}.{MESSAGES_TABLE}");
        let leases = format!("{schema}.{LEASES_TABLE}");
        let columns = "revision = $2, version = $3, agent = $4::text::json, \
                       metadata = $5::text::json, running_tools = $6::text::json, \
                       hooks = $7::text::json, message_count = $8, saved_at = $9, \
                       recency = $10, updated_at = now()";
        Self {
            fence: format!(
                "SELECT token = $2 OR expires_at <= now() FROM {leases} \
                 WHERE session_id = $1 FOR SHARE"
            ),
            head: format!(
                "SELECT revision, message_count FROM {states} WHERE session_id = $1 FOR UPDATE"
            ),
            insert_state: format!(
                "INSERT INTO {states} (session_id, revision, version, agent, metadata, \
                 running_tools, hooks, message_count, saved_at, recency) \
                 VALUES ($1, $2, $3, $4::text::json, $5::text::json, $6::text::json, \
                 $7::text::json, $8, $9, $10) \
                 ON CONFLICT (session_id) DO NOTHING RETURNING revision"
            ),
            update_state: format!("UPDATE {states} SET {columns} WHERE session_id = $1"),
            delete_messages_from: format!(
                "DELETE FROM {messages} WHERE session_id = $1 AND position >= $2"
            ),
            insert_messages: format!(
                "INSERT INTO {messages} (session_id, position, message) \
                 SELECT $1, ($2::integer + item.ordinality - 1)::integer, item.message::json \
                 FROM unnest($3::text[]) WITH ORDINALITY AS item (message, ordinality)"
            ),
            load: format!(
                "SELECT s.revision, s.version, s.agent::text, s.metadata::text, \
                 s.running_tools::text, s.hooks::text, s.message_count, s.saved_at, \
                 m.positions, m.messages \
                 FROM {states} s CROSS JOIN LATERAL ( \
                     SELECT array_agg(position ORDER BY position) AS positions, \
                            array_agg(message::text ORDER BY position) AS messages \
                     FROM {messages} WHERE session_id = s.session_id) m \
                 WHERE s.session_id = $1"
            ),
            delete: format!("DELETE FROM {states} WHERE session_id = $1"),
            list: format!("SELECT session_id FROM {states} ORDER BY session_id"),
            has_unkeyed: format!("SELECT EXISTS (SELECT 1 FROM {states} WHERE recency IS NULL)"),
            list_recent: format!(
                "SELECT recency, session_id, revision, saved_at FROM {states} \
                 WHERE (recency, session_id) > ($1, $2) AND starts_with(session_id, $3) \
                 ORDER BY recency, session_id LIMIT $4"
            ),
            take_lease: format!(
                "INSERT INTO {leases} AS lease (session_id, token, expires_at, interrupted) \
                 VALUES ($1, $2, now() + $3::float8 * interval '1 millisecond', false) \
                 ON CONFLICT (session_id) DO UPDATE \
                 SET token = excluded.token, expires_at = excluded.expires_at, \
                     interrupted = false \
                 WHERE lease.expires_at <= now() \
                 RETURNING lease.token"
            ),
            renew_lease: format!(
                "INSERT INTO {leases} AS lease (session_id, token, expires_at, interrupted) \
                 VALUES ($1, $2, now() + $3::float8 * interval '1 millisecond', false) \
                 ON CONFLICT (session_id) DO UPDATE \
                 SET token = excluded.token, expires_at = excluded.expires_at, \
                     interrupted = lease.interrupted AND lease.token = excluded.token \
                 WHERE lease.token = excluded.token OR lease.expires_at <= now() \
                 RETURNING lease.interrupted"
            ),
            release_lease: format!("DELETE FROM {leases} WHERE session_id = $1 AND token = $2"),
            interrupt: format!(
                "WITH marked AS ( \
                     UPDATE {leases} SET interrupted = true \
                     WHERE session_id = $1 AND expires_at > now() RETURNING session_id) \
                 SELECT pg_notify('{INTERRUPT_CHANNEL}', $2) FROM marked"
            ),
        }
    }
}
