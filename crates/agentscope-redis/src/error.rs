//! [`RedisFailure`]: what the Redis client reported, without secrets, as the source of a
//! [`SessionError::Backend`]; and the backend errors the store reports.

use std::fmt;

use agentscope_core::session::SessionError;

use crate::endpoint::{Endpoint, scrub};

/// A Redis connection or command failed: the [`source`](std::error::Error::source) of the
/// [`SessionError::Backend`] errors of a [`RedisSessionStore`](crate::RedisSessionStore).
///
/// Its message is the Redis client's, with any password of the store's URLs replaced by
/// `<redacted>`; the client's error itself is not kept (so no secret can leak through it). Find it
/// with `error.source().and_then(|s| s.downcast_ref::<RedisFailure>())`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RedisFailure {
    message: String,
    code: Option<String>,
    timeout: bool,
    connection: bool,
    authentication: bool,
}

impl RedisFailure {
    pub(crate) fn new(error: &redis::RedisError, endpoints: &[Endpoint]) -> Self {
        Self {
            message: scrub(&error.to_string(), endpoints),
            // The code of the first failed command of a pipeline or transaction too.
            code: error.code().map(str::to_owned).or_else(|| {
                error
                    .clone()
                    .into_server_errors()
                    .and_then(|errors| errors.first().map(|(_, error)| error.code().to_owned()))
            }),
            timeout: error.is_timeout(),
            connection: error.is_connection_refusal()
                || error.is_connection_dropped()
                || error.is_io_error(),
            authentication: error.kind() == redis::ErrorKind::AuthenticationFailed
                || matches!(error.code(), Some("WRONGPASS" | "NOAUTH" | "NOPERM")),
        }
    }

    /// The server's error code, when the server answered with an error (`NOAUTH`,
    /// `WRONGPASS`, `OOM`, `READONLY`, `CROSSSLOT`, ...).
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// Whether no answer came within the response (or connection) timeout. A save that timed
    /// out may or may not have been applied: load the session to find out.
    pub fn is_timeout(&self) -> bool {
        self.timeout
    }

    /// Whether the server refused the credentials (a wrong or missing password, or a user
    /// without the permissions the store needs).
    pub fn is_authentication_error(&self) -> bool {
        self.authentication
    }

    /// Whether the connection failed (refused, dropped, or another I/O error). The store
    /// reconnects by itself; the failed operation is not retried.
    pub fn is_connection_error(&self) -> bool {
        self.connection
    }
}

/// A [`SessionError::Backend`] about `session` (`None`: the store) saying `what` failed,
/// with the Redis client's error as a [`RedisFailure`].
pub(crate) fn backend(
    session: Option<&str>,
    what: impl fmt::Display,
    error: &redis::RedisError,
    endpoints: &[Endpoint],
) -> SessionError {
    SessionError::backend(session, what, RedisFailure::new(error, endpoints))
}

/// A [`SessionError::Backend`] about the store's settings or an answer it cannot use, with no
/// Redis error behind it.
pub(crate) fn config_error(message: impl fmt::Display) -> SessionError {
    SessionError::backend_message(None, message)
}
