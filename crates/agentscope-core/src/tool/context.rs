//! [`ToolContext`]: what a running tool gets besides its arguments.

use std::fmt;

use crate::block::{ContentBlock, ToolUseBlock};
use crate::cancel::{CancellationToken, Cancelled};
use crate::text::SharedString;
use crate::tool::ProgressSender;
use std::sync::Arc;

/// What a running tool gets besides its arguments: its call, its idempotency key, a way to
/// report progress, and a way to notice that the call was interrupted.
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
    /// The conversation the call belongs to (the session id, else the agent's id): with the
    /// call id, it makes the idempotency key.
    scope: Option<SharedString>,
}

impl ToolContext {
    /// A context for `tool_use` with no progress receiver that is never cancelled.
    pub fn new(tool_use: impl Into<Arc<ToolUseBlock>>) -> Self {
        Self {
            tool_use: tool_use.into(),
            progress: None,
            cancellation: None,
            scope: None,
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

    /// Places the call in conversation `scope` (the engine passes the session id, or the
    /// agent's id for an agent without a session); see
    /// [`idempotency_key`](Self::idempotency_key).
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<SharedString>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The call being executed.
    pub fn tool_use(&self) -> &ToolUseBlock {
        &self.tool_use
    }

    /// A key that is the same for this call in every process and every retry of it, and
    /// different for every other call: a UUID made from the conversation (the session id,
    /// else the agent's id) and the call id. Pass it to the service the tool calls (an
    /// `Idempotency-Key` header, a unique column) so that a call run again after a crash
    /// ([`InDoubt::RunAgain`](crate::InDoubt::RunAgain), a retry the application asked for)
    /// does its work once. MCP tools forward it in the request's `_meta`.
    ///
    /// No two calls of a conversation share a key: the `agentscope` engine makes call ids
    /// unique in their conversation, replacing a call id the model repeats (some providers
    /// send `"0"` on every turn) by a fresh one as the answer streams in, before any hook,
    /// memory or the stream sees it. A call keeps the id it was stored with, so the key a
    /// context for a stored call gives (as below) is the one its tool got.
    ///
    /// ```
    /// use agentscope_core::{ToolContext, ToolUseBlock};
    /// use serde_json::json;
    ///
    /// let call = ToolUseBlock::new("call_7", "pay", json!({"cents": 500}));
    /// let first = ToolContext::new(call.clone()).with_scope("chat-1");
    /// let retry = ToolContext::new(call.clone()).with_scope("chat-1"); // another process
    /// assert_eq!(first.idempotency_key(), retry.idempotency_key());
    /// let elsewhere = ToolContext::new(call).with_scope("chat-2");
    /// assert_ne!(first.idempotency_key(), elsewhere.idempotency_key());
    /// ```
    pub fn idempotency_key(&self) -> String {
        super::in_doubt::idempotency_key(self.scope.as_deref().unwrap_or(""), &self.tool_use.id)
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
            .field("scope", &self.scope)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}
