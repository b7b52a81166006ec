//! [`PostgresSessionStore`]: the handle, its operations (save, load, delete, list) and its
//! [`SessionStore`] impl (through [`AsyncSessionStore`]). Connecting is the builder's (`builder.rs`), leases are
//! `lease.rs`'s, rows are `codec.rs`'s.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentscope_core::CancellationToken;
use agentscope_core::rfc3339;
#[cfg(doc)]
use agentscope_core::session::SessionStore;
use agentscope_core::session::{
    AgentState, AsyncSessionStore, SessionError, SessionLease, SessionSummary, StateChange,
    validate_session_id,
};
use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;

use crate::codec::{self, EncodedChange};
use crate::db::Db;
use crate::lease::Leases;

/// A [`SessionStore`] keeping sessions in PostgreSQL.
///
/// See the [crate docs](crate) for the tables, the operations, leases and failures. A cheap
/// `Clone` handle: clones share the connection pool. Connect once per process and give
/// clones to every agent.
#[derive(Clone)]
pub struct PostgresSessionStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Arc<Db>,
    leases: Leases,
}

impl PostgresSessionStore {
    /// A store on `db` that has just been connected and migrated.
    pub(crate) fn new(db: Db, leases: Leases) -> Self {
        Self {
            inner: Arc::new(Inner {
                db: Arc::new(db),
                leases,
            }),
        }
    }

    /// The PostgreSQL schema holding the store's tables.
    pub fn schema(&self) -> &str {
        &self.inner.db.schema
    }

    /// How long a lease lives without renewal (`None`: the store takes no leases); see
    /// [`PostgresSessionStoreBuilder::lease_ttl`](crate::PostgresSessionStoreBuilder::lease_ttl).
    pub fn lease_ttl(&self) -> Option<Duration> {
        self.inner.leases.ttl()
    }

    /// The most connections the store's pool holds.
    pub fn max_connections(&self) -> usize {
        self.inner.db.pool.status().max_size
    }
}

impl AsyncSessionStore for PostgresSessionStore {
    async fn save(&self, session: &str, change: &StateChange) -> Result<u64, SessionError> {
        validate_session_id(session)?;
        // Serialised before a connection is taken, so the connection only writes.
        let encoded = EncodedChange::new(session, change)?;
        let db = &self.inner.db;
        let what = "saving";
        let fail = |error: tokio_postgres::Error| db.fail(Some(session), what, &error);
        let mut client = db.client(Some(session), what).await?;
        let tx = client.transaction().await.map_err(fail)?;
        if let Some(fence) = &change.fence {
            let fence_statement = tx.prepare_cached(&db.sql.fence).await.map_err(fail)?;
            let lease = tx
                .query_opt(&fence_statement, &[&session, fence])
                .await
                .map_err(fail)?;
            if let Some(row) = lease
                && !row.try_get::<_, bool>(0).map_err(fail)?
            {
                return Err(SessionError::lease_lost(session));
            }
        }
        let head = tx.prepare_cached(&db.sql.head).await.map_err(fail)?;
        let state: [&(dyn ToSql + Sync); 10] = [
            &session,
            &encoded.revision,
            &i32::try_from(AgentState::CURRENT_VERSION).unwrap_or(i32::MAX),
            &encoded.columns.agent,
            &encoded.columns.metadata,
            &encoded.columns.running_tools,
            &encoded.columns.hooks,
            &encoded.message_count,
            &encoded.columns.saved_at,
            &encoded.recency,
        ];
        match tx.query_opt(&head, &[&session]).await.map_err(fail)? {
            Some(row) => {
                let (revision, messages) = codec::head(session, &row)?;
                change.check(session, revision, messages)?;
                let delete = tx
                    .prepare_cached(&db.sql.delete_messages_from)
                    .await
                    .map_err(fail)?;
                // Always: it also clears rows a damaged table holds past the stored count.
                tx.execute(&delete, &[&session, &encoded.kept])
                    .await
                    .map_err(fail)?;
                append(&tx, db, session, &encoded).await?;
                let update = tx
                    .prepare_cached(&db.sql.update_state)
                    .await
                    .map_err(fail)?;
                tx.execute(&update, &state).await.map_err(fail)?;
            }
            None => {
                change.check(session, 0, 0)?;
                let insert = tx
                    .prepare_cached(&db.sql.insert_state)
                    .await
                    .map_err(fail)?;
                if tx.query_opt(&insert, &state).await.map_err(fail)?.is_none() {
                    // Another writer created the session since the row was read: its
                    // revision says how this change conflicts.
                    let found = match tx.query_opt(&head, &[&session]).await.map_err(fail)? {
                        Some(row) => codec::head(session, &row)?,
                        None => (0, 0),
                    };
                    change.check(session, found.0, found.1)?;
                    return Err(SessionError::backend_message(
                        Some(session),
                        "saving: the session was created and deleted by other writers \
                                  during this save; nothing was written, try again",
                    ));
                }
                append(&tx, db, session, &encoded).await?;
            }
        }
        tx.commit().await.map_err(fail)?;
        Ok(change.revision())
    }

    async fn load(&self, session: &str) -> Result<Option<AgentState>, SessionError> {
        validate_session_id(session)?;
        let db = &self.inner.db;
        let what = "loading";
        let client = db.client(Some(session), what).await?;
        let statement = db
            .prepare(&client, &db.sql.load, Some(session), what)
            .await?;
        let row = client
            .query_opt(&statement, &[&session])
            .await
            .map_err(|error| db.fail(Some(session), what, &error))?;
        row.map(|row| codec::state(session, &row)).transpose()
    }

    async fn delete(&self, session: &str) -> Result<bool, SessionError> {
        validate_session_id(session)?;
        let db = &self.inner.db;
        let what = "deleting";
        let client = db.client(Some(session), what).await?;
        let statement = db
            .prepare(&client, &db.sql.delete, Some(session), what)
            .await?;
        let deleted = client
            .execute(&statement, &[&session])
            .await
            .map_err(|error| db.fail(Some(session), what, &error))?;
        Ok(deleted > 0)
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        let db = &self.inner.db;
        let what = "listing sessions";
        let client = db.client(None, what).await?;
        let statement = db.prepare(&client, &db.sql.list, None, what).await?;
        let rows = client
            .query(&statement, &[])
            .await
            .map_err(|error| db.fail(None, what, &error))?;
        rows.iter()
            .map(|row| row.try_get(0).map_err(|error| db.fail(None, what, &error)))
            .collect()
    }

    /// One indexed query of [`STATES_TABLE`](crate::STATES_TABLE) (by its `recency` column,
    /// then the id): it reads the page's rows and skips, in the index, the newer rows whose
    /// ids do not start with `prefix`; see [Listing by recency](crate#listing-by-recency).
    ///
    /// # Errors
    ///
    /// The server could not be reached or refused the query; a listed row whose `saved_at`
    /// or revision cannot be read is [`SessionError::Corrupt`] naming its session.
    async fn list_recent(
        &self,
        prefix: &str,
        after: Option<&SessionSummary>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, SessionError> {
        // Session ids are ASCII: no id starts with anything else.
        if limit == 0 || !prefix.is_ascii() {
            return Ok(Vec::new());
        }
        let db = &self.inner.db;
        let what = "listing sessions";
        let fail = |error: tokio_postgres::Error| db.fail(None, what, &error);
        let client = db.client(None, what).await?;
        let unkeyed = db.prepare(&client, &db.sql.has_unkeyed, None, what).await?;
        if client
            .query_one(&unkeyed, &[])
            .await
            .and_then(|row| row.try_get::<_, bool>(0))
            .map_err(fail)?
        {
            // Rows an instance of an earlier version saved: key them first.
            crate::schema::key_unkeyed(&client, &db.schema, &db.endpoint).await?;
        }
        let (key, id) = match after {
            Some(cursor) => (
                SessionSummary::recency_key(&cursor.saved_at),
                cursor.id.as_str(),
            ),
            None => (String::new(), ""),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let statement = db.prepare(&client, &db.sql.list_recent, None, what).await?;
        let rows = client
            .query(&statement, &[&key, &id, &prefix, &limit])
            .await
            .map_err(fail)?;
        let mut page = Vec::with_capacity(rows.len());
        for row in rows {
            let session: String = row.try_get(1).map_err(fail)?;
            let revision = codec::revision(&session, &row, 2)?;
            let saved_at: String = row.try_get(3).map_err(fail)?;
            let saved_at = rfc3339::parse_saved_at(&session, &saved_at)?;
            page.push(SessionSummary::new(session, revision, saved_at));
        }
        Ok(page)
    }

    async fn lease(
        &self,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        self.inner
            .leases
            .take(&self.inner.db, session, interrupt)
            .await
    }

    async fn interrupt(&self, session: &str) -> Result<bool, SessionError> {
        self.inner.leases.interrupt(&self.inner.db, session).await
    }
}

/// Inserts the change's appended messages (one statement), after its kept ones.
async fn append(
    tx: &Transaction<'_>,
    db: &Db,
    session: &str,
    encoded: &EncodedChange,
) -> Result<(), SessionError> {
    if encoded.columns.appended.is_empty() {
        return Ok(());
    }
    let fail = |error: tokio_postgres::Error| db.fail(Some(session), "saving", &error);
    let insert = tx
        .prepare_cached(&db.sql.insert_messages)
        .await
        .map_err(fail)?;
    tx.execute(
        &insert,
        &[&session, &encoded.kept, &encoded.columns.appended],
    )
    .await
    .map_err(fail)?;
    Ok(())
}

impl fmt::Debug for PostgresSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let db = &self.inner.db;
        f.debug_struct("PostgresSessionStore")
            .field("server", &db.endpoint)
            .field("schema", &db.schema)
            .field("tls", &matches!(db.tls, crate::db::Tls::On(_)))
            .field("max_connections", &self.max_connections())
            .field("lease_ttl", &self.inner.leases.ttl())
            .finish()
    }
}
