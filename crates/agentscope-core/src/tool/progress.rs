//! The progress channel between running tools and the engine: tools send [`ToolProgress`]
//! through their context's [`ProgressSender`]; the engine reads a [`ProgressReceiver`].

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use futures::Stream;

use crate::block::ContentBlock;

/// A progress chunk emitted by the tool at position `index` of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProgress {
    /// The position of the emitting call in its batch.
    pub index: usize,
    /// The emitted content.
    pub chunk: ContentBlock,
}

/// The sending half of a progress channel (see [`progress_channel`]).
pub struct ProgressSender {
    shared: Arc<Shared>,
    index: usize,
}

impl ProgressSender {
    /// The same channel, tagging chunks with `index`.
    pub fn with_index(&self, index: usize) -> Self {
        Self {
            shared: self.shared.joined(),
            index,
        }
    }

    /// Sends a chunk, waiting while the channel is full. Returns `false` when the receiver
    /// is gone.
    pub async fn send(&self, chunk: ContentBlock) -> bool {
        let mut progress = Some(ToolProgress {
            index: self.index,
            chunk,
        });
        std::future::poll_fn(|cx| {
            let mut state = self.shared.lock();
            if !state.receiving {
                return Poll::Ready(false);
            }
            if state.queue.len() >= state.capacity {
                if !state
                    .senders_waiting
                    .iter()
                    .any(|w| w.will_wake(cx.waker()))
                {
                    state.senders_waiting.push(cx.waker().clone());
                }
                return Poll::Pending;
            }
            if let Some(progress) = progress.take() {
                state.queue.push_back(progress);
            }
            let receiver = state.receiver_waiting.take();
            drop(state);
            if let Some(receiver) = receiver {
                receiver.wake();
            }
            Poll::Ready(true)
        })
        .await
    }
}

impl Clone for ProgressSender {
    fn clone(&self) -> Self {
        self.with_index(self.index)
    }
}

impl Drop for ProgressSender {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.senders -= 1;
        let receiver = match state.senders {
            0 => state.receiver_waiting.take(),
            _ => None,
        };
        drop(state);
        if let Some(receiver) = receiver {
            receiver.wake();
        }
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
    shared: Arc<Shared>,
}

impl Stream for ProgressReceiver {
    type Item = ToolProgress;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ToolProgress>> {
        let mut state = self.shared.lock();
        if let Some(progress) = state.queue.pop_front() {
            // Room for one more: the waiting senders try again.
            let waiting = std::mem::take(&mut state.senders_waiting);
            drop(state);
            waiting.into_iter().for_each(Waker::wake);
            return Poll::Ready(Some(progress));
        }
        if state.senders == 0 {
            return Poll::Ready(None);
        }
        match &mut state.receiver_waiting {
            Some(waker) => waker.clone_from(cx.waker()),
            none => *none = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Drop for ProgressReceiver {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.receiving = false;
        let unread = std::mem::take(&mut state.queue);
        let waiting = std::mem::take(&mut state.senders_waiting);
        drop(state);
        drop(unread);
        waiting.into_iter().for_each(Waker::wake);
    }
}

impl fmt::Debug for ProgressReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressReceiver").finish_non_exhaustive()
    }
}

/// What the two halves share. The channel is a queue under a lock: tool progress is rare
/// next to the rest of a call, and this costs one allocation per channel (its queue grows
/// only when a tool reports progress), where the `futures` channel cost five per tool batch.
struct Shared(Mutex<State>);

struct State {
    queue: VecDeque<ToolProgress>,
    capacity: usize,
    /// Live senders: the stream ends when the last one is dropped.
    senders: usize,
    /// Whether the receiver still exists: sends fail once it is dropped.
    receiving: bool,
    receiver_waiting: Option<Waker>,
    senders_waiting: Vec<Waker>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent after every statement, so a panic elsewhere cannot leave
        // it half-updated.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The channel, counted once more as a sender.
    fn joined(self: &Arc<Self>) -> Arc<Self> {
        self.lock().senders += 1;
        Arc::clone(self)
    }
}

/// A bounded channel for tool progress: senders wait while `capacity` chunks (at least one)
/// are unread, so a slow consumer slows the tool instead of buffering without limit.
///
/// The engine makes one per tool batch; a tool's test can use one to read its progress:
///
/// ```
/// use agentscope_core::engine::{attach_progress, progress_channel};
/// use agentscope_core::{ContentBlock, ToolContext, ToolUseBlock};
/// use futures::StreamExt;
/// use serde_json::json;
///
/// # futures::executor::block_on(async {
/// let (sender, mut progress) = progress_channel(4);
/// let ctx = ToolContext::new(ToolUseBlock::new("c1", "download", json!({})));
/// let ctx = attach_progress(ctx, sender.with_index(2));
/// drop(sender); // the context holds the only sender now
/// ctx.emit("50%").await;
/// drop(ctx);
/// let chunk = progress.next().await.unwrap();
/// assert_eq!((chunk.index, chunk.chunk), (2, ContentBlock::text("50%")));
/// assert!(progress.next().await.is_none());
/// # });
/// ```
pub fn progress_channel(capacity: usize) -> (ProgressSender, ProgressReceiver) {
    let shared = Arc::new(Shared(Mutex::new(State {
        queue: VecDeque::new(),
        capacity: capacity.max(1),
        senders: 1,
        receiving: true,
        receiver_waiting: None,
        senders_waiting: Vec::new(),
    })));
    (
        ProgressSender {
            shared: Arc::clone(&shared),
            index: 0,
        },
        ProgressReceiver { shared },
    )
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use futures::StreamExt;
    use futures::executor::block_on;
    use futures::future::{Either, select};

    use super::*;

    /// A waker that counts its wakes.
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn counting_waker() -> (Arc<Counter>, Waker) {
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        (Arc::clone(&counter), Waker::from(counter))
    }

    fn text(progress: &ToolProgress) -> (usize, &str) {
        (progress.index, progress.chunk.as_text().unwrap_or_default())
    }

    #[test]
    fn chunks_arrive_in_order_and_the_stream_ends_with_the_last_sender() {
        let (sender, mut receiver) = progress_channel(8);
        let (first, second) = (sender.with_index(0), sender.with_index(1));
        drop(sender);
        block_on(async {
            assert!(first.send(ContentBlock::text("a")).await);
            assert!(second.send(ContentBlock::text("b")).await);
            assert!(first.send(ContentBlock::text("c")).await);
            drop(first);
            let got: Vec<ToolProgress> = (&mut receiver).take(3).collect().await;
            let got: Vec<(usize, &str)> = got.iter().map(text).collect();
            assert_eq!(got, [(0, "a"), (1, "b"), (0, "c")]);
            // `second` still lives: nothing queued, so the stream is pending, not ended.
            let pending = select(receiver.next(), std::future::ready(())).await;
            assert!(matches!(pending, Either::Right(_)));
            drop(second);
            assert!(receiver.next().await.is_none());
        });
    }

    #[test]
    fn a_full_channel_makes_the_sender_wait_until_a_chunk_is_read() {
        let (sender, mut receiver) = progress_channel(1);
        let (counter, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        block_on(async { assert!(sender.send(ContentBlock::text("1")).await) });

        let mut second = std::pin::pin!(sender.send(ContentBlock::text("2")));
        assert!(second.as_mut().poll(&mut cx).is_pending());
        assert_eq!(counter.0.load(Ordering::Relaxed), 0);

        let first = block_on(receiver.next()).unwrap();
        assert_eq!(text(&first), (0, "1"));
        assert_eq!(
            counter.0.load(Ordering::Relaxed),
            1,
            "the reader woke the sender"
        );
        assert_eq!(second.as_mut().poll(&mut cx), Poll::Ready(true));
        assert_eq!(text(&block_on(receiver.next()).unwrap()), (0, "2"));
    }

    #[test]
    fn sends_fail_once_the_receiver_is_gone_and_a_waiting_sender_is_released() {
        let (sender, receiver) = progress_channel(1);
        let (counter, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        block_on(async { assert!(sender.send(ContentBlock::text("1")).await) });
        let mut waiting = std::pin::pin!(sender.send(ContentBlock::text("2")));
        assert!(waiting.as_mut().poll(&mut cx).is_pending());

        drop(receiver);
        assert_eq!(counter.0.load(Ordering::Relaxed), 1);
        assert_eq!(waiting.as_mut().poll(&mut cx), Poll::Ready(false));
        assert!(!block_on(sender.send(ContentBlock::text("3"))));
    }

    #[test]
    fn a_zero_capacity_holds_one_chunk() {
        let (sender, mut receiver) = progress_channel(0);
        block_on(async {
            assert!(sender.send(ContentBlock::text("only")).await);
            drop(sender);
            assert_eq!(text(&receiver.next().await.unwrap()), (0, "only"));
            assert!(receiver.next().await.is_none());
        });
    }
}
