//! [`ToolContext`]: what a running tool gets besides its arguments.

use std::fmt;

use crate::block::{ContentBlock, ToolUseBlock};
use crate::cancel::{CancellationToken, Cancelled};
use crate::tool::ProgressSender;
use std::sync::Arc;

/// What a running tool gets besides its arguments: its call, a way to report progress, and
/// a way to notice that the call was interrupted.
///
/// ```
/// use agentscope_core::{ToolContext, ToolUseBlock};
/// use serde_json::json;
///
/// // A detached context, e.g. for unit-testing a tool: emit() goes nowhere.
/// let ctx = ToolContext::new(ToolUseBlock::new("c1", "search", json!({"q": "rust"})));
/// assert_eq!(ctx.tool_use().id, "c1");
/// assert!(!ctx.is_cancelled());
/// ```
#[derive(Clone)]
pub struct ToolContext {
    tool_use: Arc<ToolUseBlock>,
    progress: Option<ProgressSender>,
    cancellation: Option<CancellationToken>,
}

impl ToolContext {
    /// A context for `tool_use` with no progress receiver that is never cancelled.
    pub fn new(tool_use: impl Into<Arc<ToolUseBlock>>) -> Self {
        Self {
            tool_use: tool_use.into(),
            progress: None,
            cancellation: None,
        }
    }

    /// Sends progress chunks to `sender`.
    #[must_use]
    pub(crate) fn with_progress(mut self, sender: ProgressSender) -> Self {
        self.progress = Some(sender);
        self
    }

    /// Observes `token` for cancellation.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// The call being executed.
    pub fn tool_use(&self) -> &ToolUseBlock {
        &self.tool_use
    }

    /// Whether anyone receives progress chunks (when not, [`emit`](Self::emit) is free).
    pub fn has_progress_receiver(&self) -> bool {
        self.progress.is_some()
    }

    /// Reports progress. Each chunk becomes an `ActingChunk` hook event and a streamed
    /// `ToolResult` event (`is_last = false`), in emission order. Waits while the consumer is
    /// behind.
    pub async fn emit(&self, chunk: impl Into<ContentBlock>) {
        if let Some(progress) = &self.progress {
            progress.send(chunk.into()).await;
        }
    }

    /// Whether the call was interrupted. Long-running tools should check this (or await
    /// [`cancelled`](Self::cancelled)) and stop early.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Completes when the call is interrupted (never, for a context without a token).
    pub fn cancelled(&self) -> Cancelled<'_> {
        Cancelled {
            token: self.cancellation.as_ref(),
        }
    }

    /// The cancellation token the context observes, if any.
    pub fn cancellation_token(&self) -> Option<&CancellationToken> {
        self.cancellation.as_ref()
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool_use", &self.tool_use)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}
