//! [`CancellationToken`]: a runtime-independent cancellation flag that can be awaited.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

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
    pub(crate) token: Option<&'a CancellationToken>,
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
    use futures::executor::block_on;

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
