//! [`SaveQueue`]: the saves of a call under [`Durability::Async`](super::Durability::Async),
//! written in order by a writer that runs beside the call.
//!
//! The writer is a future polled together with the call by [`beside`] (no task is spawned:
//! the call runs on whatever executor runs it), right after the call at every poll, so it
//! finds each change the call queued as soon as the call waits, without a wake-up per
//! change. It owns the revision sequence: each change is rebased on the revision the
//! previous one stored, and the changes queued while one was written go out together as
//! one.

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::Mutex;
use std::task::Poll;

use agentscope_core::AgentError;
use agentscope_core::session::StateChange;
use futures::channel::oneshot;

use super::SessionBinding;
use crate::sync::lock;

enum Job {
    Save(StateChange),
    /// Answered once every save queued before it is stored (or one failed).
    Durable(oneshot::Sender<Result<(), AgentError>>),
}

#[derive(Default)]
struct Jobs {
    queued: VecDeque<Job>,
    /// The call ended: the writer ends once the queue is empty.
    closed: bool,
}

/// A call's save queue.
#[derive(Default)]
pub(crate) struct SaveQueue {
    jobs: Mutex<Jobs>,
}

impl SaveQueue {
    /// Queues `change` (made from the revision the previous change left).
    pub(crate) fn push(&self, change: StateChange) {
        lock(&self.jobs).queued.push_back(Job::Save(change));
    }

    /// Waits until every change queued so far is stored; the first save that failed, if one
    /// did (the changes after it are not written).
    pub(crate) async fn durable(&self) -> Result<(), AgentError> {
        let (reply, stored) = oneshot::channel();
        lock(&self.jobs).queued.push_back(Job::Durable(reply));
        stored.await.unwrap_or_else(|_| {
            Err(AgentError::failed(
                "the session's save queue stopped before its saves were stored",
            ))
        })
    }

    /// Ends the queue: the writer ends once it has done what is queued.
    pub(crate) fn close(&self) {
        lock(&self.jobs).closed = true;
    }

    /// The next job; `None` once the queue is closed and empty. Registers no waker: the
    /// writer is polled right after the call at every poll of [`beside`], and only the call
    /// queues jobs.
    async fn next(&self) -> Option<Job> {
        std::future::poll_fn(|_| {
            let mut jobs = lock(&self.jobs);
            match jobs.queued.pop_front() {
                Some(job) => Poll::Ready(Some(job)),
                None if jobs.closed => Poll::Ready(None),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// The queued saves at the front, each made from the state the one before leaves, as
    /// one change after `change`.
    fn merge_queued(&self, mut change: StateChange) -> StateChange {
        let mut jobs = lock(&self.jobs);
        while let Some(Job::Save(_)) = jobs.queued.front() {
            if let Some(Job::Save(later)) = jobs.queued.pop_front() {
                change = merge(change, later);
            }
        }
        change
    }

    /// Writes the queued changes to `binding`'s session, which the call loaded at revision
    /// `revision`, until the queue is closed and done.
    pub(crate) async fn write(&self, binding: &SessionBinding, mut revision: u64) {
        let mut failed: Option<AgentError> = None;
        while let Some(job) = self.next().await {
            match job {
                Job::Durable(reply) => {
                    let _ = reply.send(failed.clone().map_or(Ok(()), Err));
                }
                // After a failed save nothing more is written.
                Job::Save(_) if failed.is_some() => {}
                Job::Save(change) => {
                    let mut change = self.merge_queued(change);
                    change.base = revision;
                    match binding.save_change(&change).await {
                        Ok(stored) => revision = stored,
                        Err(error) => failed = Some(error.into()),
                    }
                }
            }
        }
    }
}

/// Runs `call` with `writer` beside it, polling the writer right after the call at every
/// poll (which [`SaveQueue::next`] relies on), until both are done; the call's output.
pub(crate) async fn beside<T>(
    call: impl Future<Output = T>,
    writer: impl Future<Output = ()>,
) -> T {
    let (mut call, mut writer) = (pin!(call), pin!(writer));
    let (mut output, mut written) = (None, false);
    std::future::poll_fn(|cx| {
        if output.is_none()
            && let Poll::Ready(done) = call.as_mut().poll(cx)
        {
            output = Some(done);
        }
        if !written {
            written = writer.as_mut().poll(cx).is_ready();
        }
        match (written, output.take()) {
            (true, Some(done)) => Poll::Ready(done),
            (_, pending) => {
                output = pending;
                Poll::Pending
            }
        }
    })
    .await
}

/// One change doing what `first` then `then` (made from the state `first` leaves) do.
fn merge(first: StateChange, then: StateChange) -> StateChange {
    let mut merged = then;
    merged.base = first.base;
    if merged.kept >= first.kept {
        // `then` keeps `first`'s kept messages and part (usually all) of what it appended.
        let mut appended = first.appended;
        appended.truncate(merged.kept - first.kept);
        appended.append(&mut merged.appended);
        merged.appended = appended;
        merged.kept = first.kept;
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::merge;
    use agentscope_core::Msg;
    use agentscope_core::session::{AgentIdentity, AgentState, StateChange};

    fn agent() -> AgentIdentity {
        AgentIdentity::new("a", "1")
    }

    fn texts(state: &AgentState) -> Vec<String> {
        state.messages.iter().map(Msg::text).collect()
    }

    /// Applying the merged change gives what applying both in turn gives.
    fn check(first: StateChange, then: StateChange) {
        let stored = StateChange::new(0, 0, vec![Msg::user("q"), Msg::assistant("a")], agent())
            .apply("s", None)
            .unwrap();
        let in_turn = then
            .clone()
            .apply(
                "s",
                Some(first.clone().apply("s", Some(stored.clone())).unwrap()),
            )
            .unwrap();
        let merged = merge(first, then).apply("s", Some(stored)).unwrap();
        assert_eq!(texts(&merged), texts(&in_turn));
        assert_eq!(merged.revision, 2, "one change: one revision");
        assert_eq!(merged.running_tools, in_turn.running_tools);
    }

    #[test]
    fn merged_appends_are_the_appends_in_turn() {
        let first = StateChange::new(1, 2, vec![Msg::user("b")], agent())
            .with_running_tools(vec!["t1".into()]);
        let then = StateChange::new(2, 3, vec![Msg::assistant("c")], agent());
        check(first, then);
    }

    #[test]
    fn a_rewrite_after_an_append_keeps_only_what_the_rewrite_keeps() {
        let first = StateChange::new(1, 2, vec![Msg::user("b"), Msg::user("c")], agent());
        // Keeps the stored two and the first appended, then appends.
        let then = StateChange::new(2, 3, vec![Msg::assistant("d")], agent());
        check(first.clone(), then);
        // Rewrites from the first message on.
        let then = StateChange::new(2, 1, vec![Msg::assistant("summary")], agent());
        check(first, then);
    }
}
