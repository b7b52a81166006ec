//! The progress channel between running tools and the engine: tools send [`ToolProgress`]
//! through their context's [`ProgressSender`]; the engine reads a [`ProgressReceiver`].

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::{SinkExt, Stream};

use crate::message::ContentBlock;

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

/// The receiving half of a progress channel (see [`progress_channel`]): a [`Stream`] of the
/// chunks in the order they were sent, which ends when every sender is gone.
pub struct ProgressReceiver {
    rx: mpsc::Receiver<ToolProgress>,
}

impl Stream for ProgressReceiver {
    type Item = ToolProgress;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ToolProgress>> {
        Pin::new(&mut self.rx).poll_next(cx)
    }
}

impl fmt::Debug for ProgressReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressReceiver").finish_non_exhaustive()
    }
}

/// A bounded channel for tool progress: senders wait while `capacity` chunks are unread,
/// so a slow consumer slows the tool instead of buffering without limit.
///
/// The engine makes one per tool batch; use one to test a tool's progress:
///
/// ```
/// use agentscope_core::{progress_channel, ContentBlock, ToolContext, ToolUseBlock};
/// use futures::StreamExt;
/// use serde_json::json;
///
/// # futures::executor::block_on(async {
/// let (sender, mut progress) = progress_channel(4);
/// let ctx = ToolContext::new(ToolUseBlock::new("c1", "download", json!({})))
///     .with_progress(sender.with_index(2));
/// drop(sender); // the context holds the only sender now
/// ctx.emit("50%").await;
/// drop(ctx);
/// let chunk = progress.next().await.unwrap();
/// assert_eq!((chunk.index, chunk.chunk), (2, ContentBlock::text("50%")));
/// assert!(progress.next().await.is_none());
/// # });
/// ```
pub fn progress_channel(capacity: usize) -> (ProgressSender, ProgressReceiver) {
    let (tx, rx) = mpsc::channel(capacity);
    (
        ProgressSender {
            tx: Arc::new(futures::lock::Mutex::new(tx)),
            index: 0,
        },
        ProgressReceiver { rx },
    )
}
