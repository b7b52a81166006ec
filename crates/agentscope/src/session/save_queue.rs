//! [`SaveQueue`]: the saves of a call under [`Durability::Async`](super::Durability::Async),
//! written in order by a writer that runs beside the call.
//!
//! The writer is a future the engine polls together with the call (no task is spawned: the
//! call runs on whatever executor runs it), so it makes progress whenever the call waits.
//! It owns the revision sequence: each change is rebased on the revision the previous one
//! stored, and the changes queued while one was written go out together as one.

use agentscope_core::AgentError;
use agentscope_core::session::StateChange;
use futures::StreamExt;
use futures::channel::{mpsc, oneshot};

use super::SessionBinding;

enum Job {
    Save(StateChange),
    /// Answered once every save queued before it is stored (or one failed).
    Durable(oneshot::Sender<Result<(), AgentError>>),
}

/// The call's side of the queue.
pub(crate) struct SaveQueue {
    jobs: mpsc::UnboundedSender<Job>,
}

impl SaveQueue {
    /// A queue for a call that loaded revision `revision` of `binding`'s session, and the
    /// writer to poll beside the call; the writer ends once the queue is dropped and its
    /// jobs are done.
    pub(crate) fn new(
        binding: &SessionBinding,
        revision: u64,
    ) -> (Self, impl Future<Output = ()> + '_) {
        let (jobs, queued) = mpsc::unbounded();
        (Self { jobs }, write(binding, revision, queued))
    }

    /// Queues `change` (made from the revision the previous change left).
    pub(crate) fn push(&self, change: StateChange) {
        // The writer only ends once the queue is dropped: sending cannot fail.
        let _ = self.jobs.unbounded_send(Job::Save(change));
    }

    /// Waits until every change queued so far is stored; the first save that failed, if one
    /// did (the changes after it are not written).
    pub(crate) async fn durable(&self) -> Result<(), AgentError> {
        let (reply, stored) = oneshot::channel();
        let _ = self.jobs.unbounded_send(Job::Durable(reply));
        stored.await.unwrap_or_else(|_| {
            Err(AgentError::failed(
                "the session's save queue stopped before its saves were stored",
            ))
        })
    }
}

async fn write(
    binding: &SessionBinding,
    mut revision: u64,
    mut queued: mpsc::UnboundedReceiver<Job>,
) {
    let mut failed: Option<AgentError> = None;
    let mut next = None;
    loop {
        let job = match next.take() {
            Some(job) => job,
            None => match queued.next().await {
                Some(job) => job,
                None => return,
            },
        };
        match job {
            Job::Durable(reply) => {
                let _ = reply.send(failed.clone().map_or(Ok(()), Err));
            }
            Job::Save(mut change) => {
                // The saves queued meanwhile go out with this one.
                while let Ok(job) = queued.try_recv() {
                    match job {
                        Job::Save(later) => change = merge(change, later),
                        durable => {
                            next = Some(durable);
                            break;
                        }
                    }
                }
                if failed.is_some() {
                    continue;
                }
                change.base = revision;
                match binding.save_change(&change).await {
                    Ok(stored) => revision = stored,
                    Err(error) => failed = Some(error.into()),
                }
            }
        }
    }
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
