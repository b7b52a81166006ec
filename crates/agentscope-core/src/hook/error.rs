//! [`ErrorEvent`]: a call failed.

use crate::error::AgentError;
use crate::hook::meta::Meta;

/// Fired when a call failed, before the error reaches the caller (a notification: a hook's
/// `Err` here is logged and never replaces the original error).
#[derive(Debug, Clone)]
pub struct ErrorEvent {
    pub(crate) meta: Meta,
    pub(crate) error: AgentError,
}

impl ErrorEvent {
    /// The error the caller will get.
    pub fn error(&self) -> &AgentError {
        &self.error
    }
}
