//! [`PostgresFailure`]: what the PostgreSQL client or the pool reported, without secrets, as
//! the source of a [`SessionError::Backend`]; and the backend errors the store reports.

use std::fmt;

use agentscope_core::session::SessionError;
use deadpool_postgres::PoolError;

use crate::endpoint::Endpoint;

/// A PostgreSQL connection or statement failed: the [`source`](std::error::Error::source) of
/// the [`SessionError::Backend`] errors of a
/// [`PostgresSessionStore`](crate::PostgresSessionStore).
///
/// Its message is the client's, with any password of the store's connection string replaced
/// by `<redacted>`; the client's error itself is not kept (so no secret can leak through it).
/// Find it with `error.source().and_then(|s| s.downcast_ref::<PostgresFailure>())`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PostgresFailure {
    message: String,
    code: Option<String>,
    connection: bool,
    timeout: bool,
}

impl PostgresFailure {
    fn client(error: &tokio_postgres::Error, endpoint: &Endpoint) -> Self {
        let db = error.as_db_error();
        Self {
            message: endpoint.scrub(&describe(error)),
            code: error.code().map(|code| code.code().to_owned()),
            // No answer from the server: the connection is gone (closed, refused, reset).
            connection: db.is_none() && (error.is_closed() || source_is::<std::io::Error>(error)),
            timeout: false,
        }
    }

    fn pool(error: &PoolError, endpoint: &Endpoint) -> Self {
        match error {
            PoolError::Backend(error) => Self::client(error, endpoint),
            PoolError::Timeout(_) => Self {
                message: endpoint.scrub(&error.to_string()),
                code: None,
                connection: true,
                timeout: true,
            },
            other => Self {
                message: endpoint.scrub(&other.to_string()),
                code: None,
                connection: true,
                timeout: false,
            },
        }
    }

    /// The server's [SQLSTATE](https://www.postgresql.org/docs/current/errcodes-appendix.html)
    /// error code, when the server answered with an error (`28P01` a wrong password,
    /// `40001` a serialization failure, `57P01` the server shutting down, ...).
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// Whether the connection failed (refused, dropped, reset, or no connection could be had
    /// from the pool in time). The failed operation is not retried; the pool opens new
    /// connections for the next ones.
    pub fn is_connection_error(&self) -> bool {
        self.connection
    }

    /// Whether no connection could be had within the pool's timeouts (all in use, or the
    /// server too slow to accept one).
    pub fn is_timeout(&self) -> bool {
        self.timeout
    }

    /// Whether the server refused the credentials (SQLSTATE class `28`: a wrong password, an
    /// unknown user, no `pg_hba.conf` entry).
    pub fn is_authentication_error(&self) -> bool {
        self.code
            .as_deref()
            .is_some_and(|code| code.starts_with("28"))
    }
}

/// The client's error with its cause: tokio-postgres shows `db error` for every error the
/// server sent; the server's message is its source.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => {
            let mut text = format!(
                "{}: {} (SQLSTATE {})",
                db.severity(),
                db.message(),
                db.code().code()
            );
            if let Some(detail) = db.detail() {
                text.push_str(&format!("; {detail}"));
            }
            text
        }
        // The client's error and its causes (`error serializing parameter 1: ...`).
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                let cause_text = cause.to_string();
                if !text.ends_with(&cause_text) {
                    text.push_str(": ");
                    text.push_str(&cause_text);
                }
                source = cause.source();
            }
            text
        }
    }
}

fn source_is<E: std::error::Error + 'static>(error: &tokio_postgres::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(current) = source {
        if current.is::<E>() {
            return true;
        }
        source = current.source();
    }
    false
}

/// A [`SessionError::Backend`] about `session` (`None`: the store) saying `what` failed,
/// where, and the client's error as a [`PostgresFailure`].
pub(crate) fn backend(
    session: Option<&str>,
    what: impl fmt::Display,
    error: &tokio_postgres::Error,
    endpoint: &Endpoint,
) -> SessionError {
    failure(
        session,
        what,
        PostgresFailure::client(error, endpoint),
        endpoint,
    )
}

/// As [`backend`], for a connection the pool could not give.
pub(crate) fn pool(
    session: Option<&str>,
    what: impl fmt::Display,
    error: &PoolError,
    endpoint: &Endpoint,
) -> SessionError {
    failure(
        session,
        what,
        PostgresFailure::pool(error, endpoint),
        endpoint,
    )
}

fn failure(
    session: Option<&str>,
    what: impl fmt::Display,
    failure: PostgresFailure,
    endpoint: &Endpoint,
) -> SessionError {
    SessionError::backend(
        session,
        format_args!("{what} ({})", endpoint.shown()),
        failure,
    )
}

/// A [`SessionError::Backend`] about the store's settings or a server it cannot use, with no
/// client error behind it.
pub(crate) fn config_error(message: impl fmt::Display) -> SessionError {
    SessionError::backend_message(None, message)
}
