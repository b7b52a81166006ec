//! [`SessionError`] and session id validation.

use std::fmt;

use crate::error::ErrorSource;

/// The longest session id [`validate_session_id`] accepts, in bytes.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// A session store failed. Every message names the session it is about (or says that the
/// store itself failed, for [`list`](super::SessionStore::list) and opening a store).
///
/// Errors are `Clone` (sources are shared) and convert into
/// [`AgentError::Session`](crate::AgentError::Session) with `?`.
///
/// ```
/// use agentscope_core::session::SessionError;
///
/// let err = SessionError::UnsupportedVersion {
///     session: "support-42".into(),
///     found: 9,
///     supported: 1,
/// };
/// assert_eq!(
///     err.to_string(),
///     "session 'support-42' has state format version 9; this build reads version 1"
/// );
/// assert_eq!(err.session(), Some("support-42"));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The stored state is not a valid agent state: truncated or malformed JSON, a missing
    /// field, a message that cannot be in memory. Nothing was changed.
    #[error("session '{session}' is corrupt: {message}")]
    Corrupt {
        /// The session id.
        session: String,
        /// What is wrong with it (for JSON: the parser's message with line and column).
        message: String,
    },
    /// The stored state has a format version this build does not read (written by a newer
    /// version of agentscope, or not an agentscope state at all). Nothing was changed.
    #[error(
        "session '{session}' has state format version {found}; this build reads version {supported}"
    )]
    UnsupportedVersion {
        /// The session id.
        session: String,
        /// The version found.
        found: u32,
        /// The version this build reads and writes ([`AgentState::CURRENT_VERSION`](super::AgentState::CURRENT_VERSION)).
        supported: u32,
    },
    /// The session id is not allowed (see [`validate_session_id`]).
    #[error("invalid session id '{session}': {reason}")]
    InvalidSessionId {
        /// The id given.
        session: String,
        /// Why it is rejected.
        reason: String,
    },
    /// A save was made from an older revision than the one stored: another writer (another
    /// agent instance, another process) saved the session since this writer loaded it.
    /// Nothing was written; load the session again and redo the work.
    #[error(
        "session '{session}' was changed by another writer: this save was made from revision {expected}, but revision {found} is stored"
    )]
    Conflict {
        /// The session id.
        session: String,
        /// The revision the save was made from (`0`: the writer expected no session).
        expected: u64,
        /// The revision stored (`0`: the session does not exist).
        found: u64,
    },
    /// Another call holds the session's lease (on another instance, or another agent of this
    /// one): see [`SessionStore::lease`](super::SessionStore::lease). Nothing was loaded or
    /// changed; try again once that call has ended. An agent call reports it as
    /// [`AgentError::Busy`](crate::AgentError::Busy).
    #[error("session '{session}' is busy: another call holds its lease")]
    Busy {
        /// The session id.
        session: String,
    },
    /// A save was made under a lease that expired and that another call has taken since
    /// (the holder stalled longer than the lease's time to live). Nothing was written: the
    /// other call owns the session now.
    #[error(
        "session '{session}': this call's lease expired and another call took the session, so the save was refused"
    )]
    LeaseLost {
        /// The session id.
        session: String,
    },
    /// A [`StateChange`](super::StateChange) that cannot apply to the stored state (it
    /// keeps more messages than are stored, or appends a message memory cannot hold).
    /// Nothing was written.
    #[error("invalid change to session '{session}': {message}")]
    InvalidChange {
        /// The session id.
        session: String,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: I/O error: {message}", subject(.session.as_deref()))]
    Io {
        /// The session id (`None` when the store as a whole failed, e.g. listing).
        session: Option<String>,
        /// What failed, with the path and the OS error.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The storage backend (a database, a remote service) failed.
    #[error("{}: storage backend error: {message}", subject(.session.as_deref()))]
    Backend {
        /// The session id (`None` when the store as a whole failed, e.g. opening it).
        session: Option<String>,
        /// What failed.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
}

fn subject(session: Option<&str>) -> String {
    match session {
        Some(session) => format!("session '{session}'"),
        None => "session store".to_owned(),
    }
}

impl SessionError {
    /// The session the error is about, when there is one.
    pub fn session(&self) -> Option<&str> {
        match self {
            SessionError::Corrupt { session, .. }
            | SessionError::UnsupportedVersion { session, .. }
            | SessionError::InvalidSessionId { session, .. }
            | SessionError::Conflict { session, .. }
            | SessionError::Busy { session }
            | SessionError::LeaseLost { session }
            | SessionError::InvalidChange { session, .. } => Some(session),
            SessionError::Io { session, .. } | SessionError::Backend { session, .. } => {
                session.as_deref()
            }
        }
    }

    /// A corrupt-state error.
    pub fn corrupt(session: impl Into<String>, message: impl fmt::Display) -> Self {
        SessionError::Corrupt {
            session: session.into(),
            message: message.to_string(),
        }
    }

    /// An I/O error about `session` (or the store, with `None`); `message` says what failed.
    pub fn io(
        session: Option<&str>,
        message: impl fmt::Display,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        SessionError::Io {
            session: session.map(str::to_owned),
            message: format!("{message}: {source}"),
            source: Some(ErrorSource::new(source)),
        }
    }

    /// [`SessionError::Busy`]: another call holds session `session`'s lease.
    pub fn busy(session: impl Into<String>) -> Self {
        SessionError::Busy {
            session: session.into(),
        }
    }

    /// [`SessionError::LeaseLost`]: a save of session `session` was fenced by a lease that no
    /// longer holds it.
    pub fn lease_lost(session: impl Into<String>) -> Self {
        SessionError::LeaseLost {
            session: session.into(),
        }
    }

    /// A backend error about `session` (or the store, with `None`) with no error behind it
    /// (a setting the store cannot use, an answer it does not understand, a request that
    /// timed out); `message` says what failed.
    ///
    /// ```
    /// use agentscope_core::session::SessionError;
    ///
    /// let error = SessionError::backend_message(None, "the server speaks protocol 2");
    /// assert_eq!(
    ///     error.to_string(),
    ///     "session store: storage backend error: the server speaks protocol 2"
    /// );
    /// ```
    pub fn backend_message(session: Option<&str>, message: impl fmt::Display) -> Self {
        SessionError::Backend {
            session: session.map(str::to_owned),
            message: message.to_string(),
            source: None,
        }
    }

    /// A backend error about `session` (or the store, with `None`); `message` says what
    /// failed (and where), followed by `source`'s message. `source` is the error's
    /// [`source`](std::error::Error::source): a store that wraps its client's error in a
    /// type of its own (to say which server, or to keep a password out of the message)
    /// passes that type, and callers downcast to it.
    pub fn backend(
        session: Option<&str>,
        message: impl fmt::Display,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        SessionError::Backend {
            session: session.map(str::to_owned),
            message: format!("{message}: {source}"),
            source: Some(ErrorSource::new(source)),
        }
    }
}

/// Checks a session id against the rules both built-in stores apply, so ids are portable
/// between them (and safe as file names):
///
/// - 1 to [`MAX_SESSION_ID_LEN`] (128) bytes;
/// - only ASCII letters, digits, `-`, `_` and `.`;
/// - not starting with `.` (so no `.`, `..` or hidden files).
///
/// Ids are case-sensitive, but on a case-insensitive file system (macOS, Windows)
/// `Alice` and `alice` name the same JSON file: use one case.
///
/// ```
/// use agentscope_core::session::validate_session_id;
///
/// assert!(validate_session_id("user-42_chat.7").is_ok());
/// assert!(validate_session_id("6f1c0a52-3b0e-4a5c-9d55-2c0f2b7e9a10").is_ok());
/// assert!(validate_session_id("../etc/passwd").is_err());
/// assert!(validate_session_id("a/b").is_err());
/// assert!(validate_session_id("").is_err());
/// ```
///
/// # Errors
///
/// [`SessionError::InvalidSessionId`] saying which rule the id breaks.
pub fn validate_session_id(session: &str) -> Result<(), SessionError> {
    let reason = if session.is_empty() {
        Some("it is empty".to_owned())
    } else if session.len() > MAX_SESSION_ID_LEN {
        Some(format!(
            "it is {} bytes long; the limit is {MAX_SESSION_ID_LEN}",
            session.len()
        ))
    } else if session.starts_with('.') {
        Some("it starts with '.'".to_owned())
    } else {
        session
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .map(|c| {
                format!("it contains {c:?}; allowed are ASCII letters, digits, '-', '_' and '.'")
            })
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(SessionError::InvalidSessionId {
            session: session.to_owned(),
            reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AgentError;

    #[test]
    fn ids() {
        for ok in ["a", "A-z_0.9", "x.json", &"a".repeat(128)] {
            assert!(validate_session_id(ok).is_ok(), "{ok}");
        }
        let reason = |id: &str| match validate_session_id(id) {
            Err(SessionError::InvalidSessionId { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason(""), "it is empty");
        assert_eq!(reason(".."), "it starts with '.'");
        assert_eq!(reason(".hidden"), "it starts with '.'");
        assert_eq!(
            reason("a/b"),
            "it contains '/'; allowed are ASCII letters, digits, '-', '_' and '.'"
        );
        assert_eq!(
            reason("a\\b"),
            "it contains '\\\\'; allowed are ASCII letters, digits, '-', '_' and '.'"
        );
        assert_eq!(
            reason("é"),
            "it contains 'é'; allowed are ASCII letters, digits, '-', '_' and '.'"
        );
        assert_eq!(
            reason(&"a".repeat(129)),
            "it is 129 bytes long; the limit is 128"
        );
    }

    #[test]
    fn messages_name_the_session() {
        let io = SessionError::io(
            Some("s1"),
            "reading /x/s1.json",
            std::io::Error::other("disk on fire"),
        );
        assert_eq!(
            io.to_string(),
            "session 's1': I/O error: reading /x/s1.json: disk on fire"
        );
        let store = SessionError::Backend {
            session: None,
            message: "opening db".into(),
            source: None,
        };
        assert_eq!(
            store.to_string(),
            "session store: storage backend error: opening db"
        );
        let agent: AgentError = SessionError::corrupt("s2", "EOF").into();
        assert_eq!(
            agent.to_string(),
            "session error: session 's2' is corrupt: EOF"
        );
        // The store's error is the source, and downcasts to what the store returned.
        let source = std::error::Error::source(&agent).unwrap();
        let session = source.downcast_ref::<SessionError>().unwrap();
        assert_eq!(session.session(), Some("s2"));
    }
}
