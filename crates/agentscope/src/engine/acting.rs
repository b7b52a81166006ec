//! Acting (step 6 of the lifecycle): PreActing for the whole batch, execution (sequential or
//! concurrent) with progress chunks, then PostActing and storage in call order.

use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use agentscope_core::plumbing::{
    self, EventParts, ProgressSender, ToolProgress, attach_progress, events, progress_channel,
};
use agentscope_core::{
    AgentError, CancellationToken, ContentBlock, GenerateReason, HookError, HookEventType, Msg,
    Role, ToolContext, ToolResultBlock, ToolUseBlock,
};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};

use super::{Call, Halt, Step};
use crate::stream::EventType;
use crate::toolkit::{ToolRun, Toolkit};

/// How many progress chunks may wait for hooks and the stream before tools block.
const PROGRESS_BUFFER: usize = 16;

pub(super) enum Acted {
    /// The call ends with this message (stop or suspension).
    Done(Msg),
    /// Reason again.
    Continue,
}

/// One call of the batch after PreActing: what executes, and its result when a hook
/// skipped it.
struct Job {
    tool_use: Arc<ToolUseBlock>,
    run: Option<ToolRun>,
}

impl Call<'_> {
    pub(super) async fn act(&mut self, calls: Vec<ToolUseBlock>) -> Step<Acted> {
        // A resumed batch was stored by an earlier call: track it from now on.
        self.open.open(&calls);
        // Tools run: a goto loop the cap ends later is only what follows this round.
        self.progress.goto_mark = None;

        // PreActing for every call, in order, before any tool runs.
        let mut jobs = Vec::with_capacity(calls.len());
        for call in calls {
            if let Some(result) = self.interrupted_while_running(&call) {
                // Its tool started in an earlier call whose result was never stored: it
                // does not run again (see `Tool::idempotent`); PostActing sees the result.
                jobs.push(Job {
                    tool_use: Arc::new(call),
                    run: Some(ToolRun::Done(result)),
                });
                continue;
            }
            let (tool_use, skip) = if self.setup.hooks.is_interested(HookEventType::PreActing) {
                let id = call.id.clone();
                let (tool_use, skip) =
                    chain!(self, events::pre_acting(self.context().info(), call)).into_parts();
                if tool_use.id != id {
                    return Err(AgentError::Hook {
                        hook: "PreActing hooks".to_owned(),
                        event: HookEventType::PreActing,
                        source: HookError::InvalidModification {
                            message: format!("the tool call id '{id}' must not change"),
                        },
                    }
                    .into());
                }
                (tool_use, skip)
            } else {
                (call, None)
            };
            jobs.push(Job {
                tool_use: Arc::new(tool_use),
                run: skip.map(ToolRun::Done),
            });
        }

        // The calls about to run are recorded as running before any of them starts.
        if let Some(synced) = &mut self.session {
            synced.start(
                jobs.iter()
                    .filter(|job| job.run.is_none())
                    .map(|job| job.tool_use.id.to_string()),
            );
        }
        if let Some(save) = self.checkpoint() {
            save.await?;
        }
        self.run_tools(&mut jobs).await?;

        // PostActing for each result, in call order; each result is stored as it settles.
        let mut stop = false;
        let mut last = None;
        let mut suspended = Vec::new();
        let count = jobs.len();
        for (position, job) in jobs.into_iter().enumerate() {
            let tool_use = Arc::unwrap_or_clone(job.tool_use);
            let result = match job.run {
                Some(ToolRun::Done(result)) => result,
                Some(ToolRun::Suspended) => {
                    // Stays pending on purpose: the caller resumes it with its result.
                    self.open.settle(&tool_use.id);
                    suspended.push(ContentBlock::ToolUse(tool_use));
                    continue;
                }
                Some(ToolRun::Interrupted) => {
                    ToolResultBlock::error(&tool_use.id, &tool_use.name, super::INTERRUPTED_RESULT)
                }
                None => {
                    ToolResultBlock::error(&tool_use.id, &tool_use.name, super::CANCELLED_RESULT)
                }
            };
            let (result, stop_here) = if self.setup.hooks.is_interested(HookEventType::PostActing) {
                chain!(
                    self,
                    events::post_acting(self.context().info(), tool_use, result)
                )
                .into_parts()
            } else {
                (result, false)
            };
            stop |= stop_here;
            self.open.settle(&result.id);
            let message = Msg::tool_result(result);
            let streamed = self
                .wants(EventType::ToolResult, true)
                .then(|| message.clone());
            // The reply of a stopped batch is its last tool message.
            if stop && position + 1 == count {
                last = Some(message.clone());
            }
            self.setup.config.memory.add(message);
            if let Some(save) = self.checkpoint() {
                save.await?;
            }
            if let Some(message) = streamed {
                self.emit(EventType::ToolResult, true, || message).await;
            }
        }

        if !suspended.is_empty() {
            self.progress.left_pending = true;
            let reply = Msg::new(
                Role::Assistant,
                self.setup.config.info.shared_name(),
                suspended,
            )
            .with_generate_reason(GenerateReason::ToolSuspended);
            return Ok(Acted::Done(reply));
        }
        match last {
            Some(message) => Ok(Acted::Done(
                message.with_generate_reason(GenerateReason::ActingStopRequested),
            )),
            None => Ok(Acted::Continue),
        }
    }

    /// The result of a call whose tool started in an earlier call and never stored a
    /// result (a crash, a dropped call), unless its tool is idempotent and may run again.
    fn interrupted_while_running(&self, call: &ToolUseBlock) -> Option<ToolResultBlock> {
        let synced = self.session.as_ref()?;
        let started = synced.running().iter().any(|id| call.id == *id);
        (started && !self.setup.toolkit.is_idempotent(&call.name))
            .then(|| ToolResultBlock::error(&call.id, &call.name, super::INTERRUPTED_WHILE_RUNNING))
    }

    /// Runs the jobs that have no result yet, delivering their progress chunks as
    /// ActingChunk events and stream events while they run. On interrupt, the results that
    /// are ready are kept (as computed results of the open calls) and the rest are dropped.
    async fn run_tools(&mut self, jobs: &mut [Job]) -> Step<()> {
        let cancel = self.setup.cancel;
        let toolkit = self.setup.toolkit;
        if cancel.is_cancelled() {
            return Err(Halt::Interrupted);
        }
        let hook_chunks = self.setup.hooks.is_interested(HookEventType::ActingChunk);
        let sink_chunks = self
            .setup
            .sink
            .is_some_and(|sink| sink.wants(EventType::ToolResult, false));
        let (progress, mut receiver) = if hook_chunks || sink_chunks {
            let (sender, receiver) = progress_channel(PROGRESS_BUFFER);
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        // The calls, apart from `jobs`: the batch writes results into the jobs while the
        // loop below reads a call for each progress chunk.
        let tool_uses: Vec<Arc<ToolUseBlock>> =
            jobs.iter().map(|job| Arc::clone(&job.tool_use)).collect();
        let interrupted = {
            let mut batch = pin!(run_batch(
                toolkit,
                &tool_uses,
                jobs,
                progress,
                cancel,
                toolkit.is_parallel()
            ));
            let mut cancelled = pin!(cancel.cancelled());
            let mut batch_done = false;
            loop {
                let wake = std::future::poll_fn(|cx| {
                    // The batch first: when it is done, its senders are gone and the queue
                    // is drained without registering a waker (no wake-up to come back to);
                    // chunks it sent are delivered before the results either way.
                    if !batch_done && batch.as_mut().poll(cx).is_ready() {
                        batch_done = true;
                    }
                    if let Some(receiver) = receiver.as_mut()
                        && let Poll::Ready(Some(progress)) = receiver.poll_next_unpin(cx)
                    {
                        return Poll::Ready(Wake::Progress(progress));
                    }
                    if batch_done {
                        return Poll::Ready(Wake::Done);
                    }
                    if cancelled.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Wake::Interrupted);
                    }
                    Poll::Pending
                })
                .await;
                match wake {
                    Wake::Progress(progress) => {
                        self.deliver_progress(hook_chunks, &tool_uses[progress.index], progress)
                            .await;
                    }
                    Wake::Done => break false,
                    Wake::Interrupted => break true,
                }
            }
        };
        // A tool may have finished because it saw the interrupt: the batch still counts as
        // interrupted, and results computed before it are kept.
        let interrupted = interrupted || cancel.is_cancelled();
        for job in jobs.iter() {
            if let Some(ToolRun::Done(result)) = &job.run {
                self.open.computed(result.clone());
            }
        }
        if interrupted {
            return Err(Halt::Interrupted);
        }
        Ok(())
    }

    async fn deliver_progress(
        &mut self,
        hook_chunks: bool,
        tool_use: &Arc<ToolUseBlock>,
        progress: ToolProgress,
    ) {
        let chunk = ToolResultBlock {
            id: tool_use.id.clone(),
            name: tool_use.name.clone(),
            output: vec![progress.chunk],
            is_error: false,
        };
        if hook_chunks {
            let event =
                events::acting_chunk(self.context().info(), Arc::clone(tool_use), chunk.clone());
            let mut event = event.into();
            plumbing::notify(self.setup.hooks, &mut event, self.context()).await;
        }
        self.emit(EventType::ToolResult, false, || Msg::tool_result(chunk))
            .await;
    }
}

enum Wake {
    Progress(ToolProgress),
    Done,
    Interrupted,
}

/// Runs every job that has no result yet, writing each result into its job as it finishes.
/// Each tool gets its context (and its own progress sender) as it starts; `progress` is
/// dropped when the batch ends, so the receiver ends with the tools.
async fn run_batch(
    toolkit: &Toolkit,
    tool_uses: &[Arc<ToolUseBlock>],
    jobs: &mut [Job],
    progress: Option<ProgressSender>,
    cancel: &CancellationToken,
    parallel: bool,
) {
    let context = |index: usize| {
        let ctx = ToolContext::new(Arc::clone(&tool_uses[index])).with_cancellation(cancel.clone());
        match &progress {
            Some(sender) => attach_progress(ctx, sender.with_index(index)),
            None => ctx,
        }
    };
    if parallel {
        let mut running: FuturesUnordered<_> = jobs
            .iter()
            .enumerate()
            .filter(|(_, job)| job.run.is_none())
            .map(|(index, _)| {
                toolkit
                    .run(&tool_uses[index], context(index))
                    .map(move |run| (index, run))
            })
            .collect();
        // Only the contexts hold senders now, so the receiver ends when the tools are done.
        drop(progress);
        while let Some((index, run)) = running.next().await {
            jobs[index].run = Some(run);
        }
    } else {
        for (index, job) in jobs.iter_mut().enumerate() {
            if job.run.is_some() {
                continue;
            }
            // Once interrupted, the remaining tools don't start.
            if cancel.is_cancelled() {
                break;
            }
            job.run = Some(toolkit.run(&tool_uses[index], context(index)).await);
        }
    }
}
