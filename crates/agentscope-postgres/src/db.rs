//! [`Db`]: what every operation of a store needs, shared with its lease tasks: the connection
//! pool, the server (shown without its password), the TLS connector for connections outside
//! the pool, and the statements.

use agentscope_core::session::SessionError;
use deadpool_postgres::{Object, Pool};
use tokio_postgres::Statement;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::endpoint::Endpoint;
use crate::error::{backend, pool};
use crate::sql::Statements;

/// How connections are made: plain, or TLS with a verified certificate.
#[derive(Clone)]
pub(crate) enum Tls {
    Off,
    On(MakeRustlsConnect),
}

/// The pool, the endpoint, the TLS connector and the statements of one store.
pub(crate) struct Db {
    pub(crate) pool: Pool,
    pub(crate) endpoint: Endpoint,
    pub(crate) tls: Tls,
    pub(crate) sql: Statements,
    /// The schema, and so the prefix of the interrupts meant for this store.
    pub(crate) schema: String,
}

impl Db {
    /// A connection of the pool, for `what` on `session`.
    pub(crate) async fn client(
        &self,
        session: Option<&str>,
        what: &str,
    ) -> Result<Object, SessionError> {
        self.pool
            .get()
            .await
            .map_err(|error| pool(session, what, &error, &self.endpoint))
    }

    /// The backend error about `session` saying `what` failed.
    pub(crate) fn fail(
        &self,
        session: Option<&str>,
        what: &str,
        error: &tokio_postgres::Error,
    ) -> SessionError {
        backend(session, what, error, &self.endpoint)
    }

    /// `sql` prepared on `client` (once per connection: the pool caches it).
    pub(crate) async fn prepare(
        &self,
        client: &Object,
        sql: &str,
        session: Option<&str>,
        what: &str,
    ) -> Result<Statement, SessionError> {
        client
            .prepare_cached(sql)
            .await
            .map_err(|error| self.fail(session, what, &error))
    }
}
