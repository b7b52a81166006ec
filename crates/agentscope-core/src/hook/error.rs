//! [`ErrorEvent`]: a call failed.

use std::sync::Arc;

use crate::error::AgentError;
use crate::hook::context::CallInfo;
use crate::hook::meta::{Meta, event_meta_accessors};

/// Fired when a call failed, before the error reaches the caller (a notification: a hook's
/// `Err` here is logged and never replaces the original error).
#[derive(Debug, Clone)]
pub struct ErrorEvent {
    pub(super) meta: Meta,
    error: AgentError,
}

impl ErrorEvent {
    /// Creates the event.
    pub fn new(call: &Arc<CallInfo>, error: AgentError) -> Self {
        Self {
            meta: Meta::new(call),
            error,
        }
    }

    event_meta_accessors!();

    /// The error the caller will get.
    pub fn error(&self) -> &AgentError {
        &self.error
    }

    /// Takes the error.
    pub fn into_error(self) -> AgentError {
        self.error
    }
}
