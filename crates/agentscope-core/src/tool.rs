//! The tool seam: [`Tool`], its [`ToolContext`] and [`ToolOutput`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use futures::SinkExt;
use futures::channel::mpsc;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::error::ToolError;
use crate::message::{ContentBlock, ToolUseBlock};
use crate::model::ToolSchema;

/// Something the model can call.
///
/// `parameters` is the JSON schema of the arguments object; the engine validates arguments
/// against it before calling, so `call` only sees arguments that fit (invalid ones go back to
/// the model as an error result).
///
/// ```
/// use agentscope_core::{Tool, ToolContext, ToolError, ToolOutput};
/// use serde_json::{json, Value};
///
/// struct Clock;
///
/// impl Tool for Clock {
///     fn name(&self) -> &str { "clock" }
///     fn description(&self) -> &str { "Returns the current UTC time." }
///     fn parameters(&self) -> Value { json!({"type": "object", "properties": {}}) }
///
///     async fn call(&self, _input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text("2026-11-30T10:00:00Z"))
///     }
/// }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls the tool by (unique within a toolkit).
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments object (read once, at registration).
    fn parameters(&self) -> Value;

    /// Runs the tool. Emit progress and observe cancellation through `ctx`.
    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

impl<T: Tool> Tool for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn parameters(&self) -> Value {
        (**self).parameters()
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        (**self).call(input, ctx)
    }
}

trait DynTool: Send + Sync + 'static {
    fn call_boxed(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;
}

impl<T: Tool> DynTool for T {
    fn call_boxed(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.call(input, ctx))
    }
}

/// A type-erased, cheaply clonable [`Tool`] with its schema read once.
#[derive(Clone)]
pub struct BoxedTool {
    tool: Arc<dyn DynTool>,
    schema: Arc<ToolSchema>,
}

impl BoxedTool {
    /// Erases `tool`, reading its name, description and parameters once.
    pub fn new<T: Tool>(tool: T) -> Self {
        if let Some(boxed) = (&tool as &dyn std::any::Any).downcast_ref::<BoxedTool>() {
            return boxed.clone();
        }
        let schema = ToolSchema::new(tool.name(), tool.description(), tool.parameters());
        Self {
            tool: Arc::new(tool),
            schema: Arc::new(schema),
        }
    }

    /// The tool's schema as the model sees it.
    pub fn schema(&self) -> &ToolSchema {
        &self.schema
    }
}

impl fmt::Debug for BoxedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BoxedTool").field(&self.schema.name).finish()
    }
}

impl Tool for BoxedTool {
    fn name(&self) -> &str {
        &self.schema.name
    }

    fn description(&self) -> &str {
        &self.schema.description
    }

    fn parameters(&self) -> Value {
        (*self.schema.parameters).clone()
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        self.tool.call_boxed(input, ctx)
    }
}

/// What a tool returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolOutput {
    /// The result content the model sees.
    Content(Vec<ContentBlock>),
    /// The tool handed the call to an external executor: the agent call returns with
    /// `GenerateReason::ToolSuspended` and the tool call stays pending until the caller
    /// resumes with its result.
    Suspended,
}

impl ToolOutput {
    /// A text result.
    pub fn text(text: impl Into<crate::SharedString>) -> Self {
        ToolOutput::Content(vec![ContentBlock::text(text)])
    }

    /// A result holding `value` as JSON text.
    pub fn json(value: &Value) -> Self {
        ToolOutput::text(value.to_string())
    }

    /// A suspended call (see [`ToolOutput::Suspended`]).
    pub fn suspended() -> Self {
        ToolOutput::Suspended
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput::text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        ToolOutput::text(text)
    }
}

impl From<Vec<ContentBlock>> for ToolOutput {
    fn from(blocks: Vec<ContentBlock>) -> Self {
        ToolOutput::Content(blocks)
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        match value {
            Value::String(text) => ToolOutput::text(text),
            other => ToolOutput::json(&other),
        }
    }
}

/// A progress chunk emitted by the tool at position `index` of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProgress {
    /// The position of the emitting call in its batch.
    pub index: usize,
    /// The emitted content.
    pub chunk: ContentBlock,
}

/// The sending half of a progress channel (see [`progress_channel`]).
#[derive(Clone)]
pub struct ProgressSender {
    tx: Arc<futures::lock::Mutex<mpsc::Sender<ToolProgress>>>,
    index: usize,
}

impl ProgressSender {
    /// The same channel, tagging chunks with `index`.
    pub fn with_index(&self, index: usize) -> Self {
        Self {
            tx: Arc::clone(&self.tx),
            index,
        }
    }

    /// Sends a chunk, waiting while the channel is full. Returns `false` when the receiver
    /// is gone.
    pub async fn send(&self, chunk: ContentBlock) -> bool {
        let progress = ToolProgress {
            index: self.index,
            chunk,
        };
        self.tx.lock().await.send(progress).await.is_ok()
    }
}

impl fmt::Debug for ProgressSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressSender")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// A bounded channel for tool progress: senders wait while `capacity` chunks are unread,
/// so a slow consumer slows the tool instead of buffering without limit.
pub fn progress_channel(capacity: usize) -> (ProgressSender, mpsc::Receiver<ToolProgress>) {
    let (tx, rx) = mpsc::channel(capacity);
    (
        ProgressSender {
            tx: Arc::new(futures::lock::Mutex::new(tx)),
            index: 0,
        },
        rx,
    )
}

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
    pub fn with_progress(mut self, sender: ProgressSender) -> Self {
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

/// A runtime-independent cancellation flag that can be awaited.
///
/// ```
/// use agentscope_core::CancellationToken;
///
/// let token = CancellationToken::new();
/// let observer = token.clone();
/// token.cancel();
/// assert!(observer.is_cancelled());
/// futures::executor::block_on(observer.cancelled()); // completes at once
/// ```
#[derive(Clone, Default)]
pub struct CancellationToken(Arc<CancelState>);

#[derive(Default)]
struct CancelState {
    cancelled: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl CancellationToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the token and wakes everyone waiting on [`cancelled`](Self::cancelled).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        let wakers =
            std::mem::take(&mut *self.0.wakers.lock().unwrap_or_else(PoisonError::into_inner));
        for waker in wakers {
            waker.wake();
        }
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Completes when the token is cancelled.
    pub fn cancelled(&self) -> Cancelled<'_> {
        Cancelled { token: Some(self) }
    }
}

impl fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// The future returned by [`CancellationToken::cancelled`].
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Cancelled<'a> {
    token: Option<&'a CancellationToken>,
}

impl Future for Cancelled<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(token) = self.token else {
            return Poll::Pending;
        };
        if token.is_cancelled() {
            return Poll::Ready(());
        }
        let mut wakers = token
            .0
            .wakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Checked again under the lock: `cancel` sets the flag before taking the wakers.
        if token.is_cancelled() {
            return Poll::Ready(());
        }
        if !wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use futures::executor::block_on;
    use serde_json::json;

    struct Upper;

    impl Tool for Upper {
        fn name(&self) -> &str {
            "upper"
        }
        fn description(&self) -> &str {
            "Uppercases text"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {"text": {"type": "string"}}})
        }
        async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
            ctx.emit("working").await;
            let text = input["text"].as_str().unwrap_or_default();
            Ok(ToolOutput::text(text.to_uppercase()))
        }
    }

    #[test]
    fn boxed_tool_reads_schema_once_and_calls() {
        let tool = BoxedTool::new(Upper);
        assert_eq!(tool.schema().name, "upper");
        let again = BoxedTool::new(tool.clone());
        assert!(Arc::ptr_eq(&tool.tool, &again.tool));
        let ctx = ToolContext::new(ToolUseBlock::new("c", "upper", json!({})));
        let out = block_on(tool.call(json!({"text": "hi"}), ctx)).unwrap();
        assert_eq!(out, ToolOutput::text("HI"));
    }

    #[test]
    fn progress_reaches_the_receiver_with_index() {
        let (tx, mut rx) = progress_channel(4);
        let ctx = ToolContext::new(ToolUseBlock::new("c", "upper", json!({})))
            .with_progress(tx.with_index(3));
        block_on(Upper.call(json!({"text": "x"}), ctx)).unwrap();
        let progress = block_on(rx.next()).unwrap();
        assert_eq!(progress.index, 3);
        assert_eq!(progress.chunk, ContentBlock::text("working"));
    }

    #[test]
    fn cancellation_wakes_waiters() {
        let token = CancellationToken::new();
        let waiter = token.clone();
        let handle = std::thread::spawn(move || block_on(waiter.cancelled()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        token.cancel();
        handle.join().unwrap();
        assert!(token.is_cancelled());
    }
}
