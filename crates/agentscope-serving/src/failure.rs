//! What a remote peer reads when a served call fails: a generic sentence and a correlation
//! id, never internal text (a model's or a store's error names hosts, paths, providers and
//! hooks). The details go to the log, and to the current span, under the same id.

use std::error::Error;

use agentscope_core::error_chain;

/// A failure as a peer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// The correlation id the details were logged under.
    pub id: String,
    /// What the peer reads: generic, with the id.
    pub message: String,
}

/// Logs `error` (with its chain of causes) as an error event of the current span under a
/// new correlation id, and returns what a peer may read about it: `"{what} (error id
/// <id>); the details are in the server's log."`.
///
/// ```
/// use agentscope_serving::failure;
///
/// let error = std::io::Error::other("connect to db.internal:5432 failed");
/// let failure = failure("The agent failed", &error);
/// assert!(failure.message.starts_with("The agent failed (error id "));
/// assert!(!failure.message.contains("db.internal"));
/// assert!(failure.message.contains(&failure.id));
/// ```
pub fn failure(what: &str, error: &(dyn Error + 'static)) -> Failure {
    let id = uuid::Uuid::new_v4().simple().to_string();
    tracing::error!(error_id = %id, error = %error_chain(error), "{what}");
    Failure {
        message: format!("{what} (error id {id}); the details are in the server's log."),
        id,
    }
}
