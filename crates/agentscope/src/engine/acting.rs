//! Acting (step 6 of the lifecycle): calls in doubt first (their policy may stop the agent),
//! PreActing for the whole batch, then execution with progress chunks: a sequential batch
//! records, runs, passes through PostActing and stores one call at a time; a parallel batch
//! records and runs its calls together, and passes each result through PostActing and stores
//! it as soon as it and those before it are in (call order).

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use agentscope_core::SharedString;
use agentscope_core::engine::{
    self, EventParts, ProgressSender, ToolProgress, TypedEvent, attach_progress, events,
    progress_channel,
};
use agentscope_core::{
    AgentError, CancellationToken, ContentBlock, GenerateReason, HookError, HookEvent,
    HookEventType, InDoubt, Msg, Role, ToolContext, ToolResultBlock, ToolUseBlock,
};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tracing::{Instrument, Span};

use super::{Call, Halt, Step};
use crate::engine::spans::Decision;
use crate::stream::EventType;
use crate::sync::lock;
use crate::toolkit::{ToolRun, Toolkit};

/// How many progress chunks may wait for hooks and the stream before tools block.
const PROGRESS_BUFFER: usize = 16;

pub(super) enum Acted {
    /// The call ends with this message (stop or suspension).
    Done(Msg),
    /// Reason again.
    Continue,
}

/// Whether a policy lets a call in doubt go on within the batch (told or run again) rather
/// than stop the agent; a policy this engine does not know stops it, the safe side.
fn tells_or_reruns(policy: InDoubt) -> bool {
    matches!(policy, InDoubt::Tell | InDoubt::RunAgain)
}

/// What the settled jobs of a batch leave for its end.
#[derive(Default)]
struct Settled {
    /// A PostActing hook asked to stop.
    stop: bool,
    /// The batch's last tool message, when a PostActing hook asked to stop.
    last: Option<Msg>,
    /// The calls a tool suspended, in call order.
    suspended: Vec<ContentBlock>,
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

        // Calls in doubt whose policy is to stop: nothing of the batch runs, and the calls
        // stay pending for the application to resolve.
        let stopped: Vec<ContentBlock> = calls
            .iter()
            .filter(|call| {
                self.in_doubt(call)
                    .is_some_and(|policy| !tells_or_reruns(policy))
            })
            .map(|call| ContentBlock::ToolUse(call.clone()))
            .collect();
        if !stopped.is_empty() {
            for call in &calls {
                self.open.settle(&call.id);
            }
            self.progress.left_pending = true;
            let reply = Msg::new(
                Role::Assistant,
                self.setup.config.info.shared_name(),
                stopped,
            )
            .with_generate_reason(GenerateReason::ToolInDoubt);
            return Ok(Acted::Done(reply));
        }

        // PreActing for every call, in order, before any tool runs.
        let mut jobs = Vec::with_capacity(calls.len());
        for call in calls {
            if self.in_doubt(&call) == Some(InDoubt::Tell) {
                // Its tool started in an earlier call whose result was never stored: it does
                // not run again; PostActing sees the result.
                let result = ToolResultBlock::error(
                    &call.id,
                    &call.name,
                    crate::interrupt::INTERRUPTED_WHILE_RUNNING,
                );
                jobs.push(Job {
                    tool_use: Arc::new(call),
                    run: Some(ToolRun::Done(result)),
                });
                continue;
            }
            let (tool_use, skip) = if self.setup.hooks.is_interested(HookEventType::PreActing) {
                let id = call.id.clone();
                let event = chain!(self, events::pre_acting(self.context().info(), call));
                let skipped_by = event.skipped_by().map(str::to_owned);
                let (tool_use, skip) = event.into_parts();
                if let Some(hook) = &skipped_by {
                    self.trace(Decision::Skipped {
                        hook,
                        tool: &tool_use,
                    });
                }
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

        // Each call is recorded as running (and saved) before its tool starts, and its
        // result is stored (and saved) as it settles: a crash keeps every finished result
        // and leaves only the calls that really started in doubt. A parallel batch starts
        // its calls together, so they are recorded together.
        let mut settled = Settled::default();
        let count = jobs.len();
        if self.setup.toolkit.is_parallel() {
            self.record_running(&jobs).await?;
            // Results settle in call order, each as soon as it and those before it are in.
            self.run_tools(&mut jobs, Some(&mut settled)).await?;
        } else {
            let mut jobs = jobs.into_iter().enumerate();
            while let Some((position, mut job)) = jobs.next() {
                if job.run.is_none() {
                    let one = std::slice::from_mut(&mut job);
                    self.record_running(one).await?;
                    if let Err(halt) = self.run_tools(one, None).await {
                        // What hooks decided for the calls after it still stands.
                        for (_, job) in jobs {
                            if let Some(ToolRun::Done(result)) = job.run {
                                self.open.computed(result);
                            }
                        }
                        return Err(halt);
                    }
                }
                self.settle(job, position + 1 == count, &mut settled)
                    .await?;
            }
        }

        if !settled.suspended.is_empty() {
            self.progress.left_pending = true;
            let reply = Msg::new(
                Role::Assistant,
                self.setup.config.info.shared_name(),
                settled.suspended,
            )
            .with_generate_reason(GenerateReason::ToolSuspended);
            return Ok(Acted::Done(reply));
        }
        match settled.last {
            Some(message) => Ok(Acted::Done(
                message.with_generate_reason(GenerateReason::ActingStopRequested),
            )),
            None => Ok(Acted::Continue),
        }
    }

    /// Records the jobs that are about to run as running, and saves that before they start
    /// (under `Durability::Async`, waits for the save only when a tool that is not
    /// idempotent is among them).
    async fn record_running(&mut self, jobs: &[Job]) -> Step<()> {
        let Some(synced) = &mut self.session else {
            return Ok(());
        };
        let mut starting = jobs.iter().filter(|job| job.run.is_none());
        synced.start(starting.clone().map(|job| job.tool_use.id.to_string()));
        let toolkit = self.setup.toolkit;
        let idempotent =
            starting.all(|job| toolkit.in_doubt(&job.tool_use.name) == Some(InDoubt::RunAgain));
        if let Some(save) = self.checkpoint_before_tools(idempotent) {
            save.await?;
        }
        Ok(())
    }

    /// PostActing for one settled job, then its result is stored (and saved) or, for a
    /// suspended call, left pending. `last`: the batch's last job, whose result is the reply
    /// of a batch a PostActing hook stopped.
    async fn settle(&mut self, job: Job, last: bool, settled: &mut Settled) -> Step<()> {
        let tool_use = Arc::unwrap_or_clone(job.tool_use);
        let result = match job.run {
            Some(ToolRun::Done(result)) => result,
            Some(ToolRun::Suspended) => {
                // Stays pending on purpose: the caller resumes it with its result.
                self.open.settle(&tool_use.id);
                settled.suspended.push(ContentBlock::ToolUse(tool_use));
                return Ok(());
            }
            Some(ToolRun::Interrupted) => ToolResultBlock::error(
                &tool_use.id,
                &tool_use.name,
                crate::interrupt::INTERRUPTED_RESULT,
            ),
            None => ToolResultBlock::error(&tool_use.id, &tool_use.name, super::CANCELLED_RESULT),
        };
        let (result, stop_here) = if self.setup.hooks.is_interested(HookEventType::PostActing) {
            let event = chain!(
                self,
                events::post_acting(self.context().info(), tool_use, result)
            );
            if let Some(hook) = event.stop_requested_by() {
                let hook = hook.to_owned();
                self.trace(Decision::Stop {
                    hook: &hook,
                    step: "acting",
                });
            }
            event.into_parts()
        } else {
            (result, false)
        };
        settled.stop |= stop_here;
        self.open.settle(&result.id);
        let message = Msg::tool_result(result);
        let streamed = self
            .wants(EventType::ToolResult, true)
            .then(|| message.clone());
        // The reply of a stopped batch is its last tool message.
        if settled.stop && last {
            settled.last = Some(message.clone());
        }
        self.setup.config.memory.add(message);
        if let Some(save) = self.checkpoint() {
            save.await?;
        }
        if let Some(message) = streamed {
            self.emit(EventType::ToolResult, true, || message).await;
        }
        Ok(())
    }

    /// How a call in doubt (its tool started in an earlier call and its result was never
    /// stored: a crash, a dropped call) is handled, `None` for a call that is not in doubt.
    /// The caller's retry comes first, then the tool's own policy, then a hook's choice at
    /// PreCall, then [`InDoubt::Tell`].
    fn in_doubt(&self, call: &ToolUseBlock) -> Option<InDoubt> {
        let synced = self.session.as_ref()?;
        if !synced.running().iter().any(|id| call.id == *id) {
            return None;
        }
        if self.setup.retry.iter().any(|id| call.id == *id) {
            return Some(InDoubt::RunAgain);
        }
        let chosen = || {
            self.context
                .as_ref()
                .and_then(|context| engine::in_doubt_choice(context, &call.id))
        };
        Some(
            self.setup
                .toolkit
                .in_doubt(&call.name)
                .or_else(chosen)
                .unwrap_or(InDoubt::Tell),
        )
    }

    /// Settles, in call order, the jobs from `*next` on whose result is in (see
    /// [`settle`](Self::settle)); `*next` moves past them.
    async fn settle_ready(
        &mut self,
        jobs: &Mutex<&mut [Job]>,
        next: &mut usize,
        settled: &mut Settled,
    ) -> Step<()> {
        loop {
            let (job, last) = {
                let mut jobs = lock(jobs);
                let count = jobs.len();
                match jobs.get_mut(*next) {
                    Some(job) if job.run.is_some() => {
                        let job = Job {
                            tool_use: Arc::clone(&job.tool_use),
                            run: job.run.take(),
                        };
                        *next += 1;
                        (job, *next == count)
                    }
                    _ => return Ok(()),
                }
            };
            self.settle(job, last, settled).await?;
        }
    }

    /// Runs the jobs that have no result yet, delivering their progress chunks as
    /// ActingChunk events and stream events while they run. On interrupt, the results that
    /// are ready are kept (as computed results of the open calls) and the rest are dropped.
    ///
    /// With `settled`, each result is settled (PostActing, stored, saved) as soon as it and
    /// the results before it are in, while the other tools run on.
    async fn run_tools(&mut self, jobs: &mut [Job], mut settled: Option<&mut Settled>) -> Step<()> {
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
        // Each tool that runs does so in its `execute_tool` span (with a `TracingHook`).
        let spans = match &mut self.context {
            Some(context) => crate::engine::spans::tool_spans(
                context.extensions_mut(),
                jobs.iter()
                    .map(|job| job.run.is_none().then_some(job.tool_use.id.as_str())),
            ),
            None => Vec::new(),
        };
        let jobs = Mutex::new(jobs);
        // How many tools have finished, and how many of those the loop has seen.
        let finished = AtomicUsize::new(0);
        let mut seen = 0;
        let mut next = 0;
        let interrupted = {
            let mut batch = pin!(run_batch(
                toolkit,
                &tool_uses,
                Batch {
                    jobs: &jobs,
                    finished: &finished,
                },
                Tooling {
                    scope: &self.setup.config.tool_scope,
                    progress,
                    cancel,
                    spans: &spans,
                },
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
                    if settled.is_some() && finished.load(Ordering::Relaxed) != seen {
                        seen = finished.load(Ordering::Relaxed);
                        return Poll::Ready(Wake::Settled);
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
                    Wake::Settled => {
                        if let Some(settled) = settled.as_deref_mut() {
                            self.settle_ready(&jobs, &mut next, settled).await?;
                        }
                    }
                    Wake::Done => break false,
                    Wake::Interrupted => break true,
                }
            }
        };
        let jobs = jobs.into_inner().unwrap_or_else(PoisonError::into_inner);
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
        if let Some(settled) = settled {
            self.settle_ready(&Mutex::new(jobs), &mut next, settled)
                .await?;
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
        // The chunk as the hooks leave it is what the stream gets; none when one skipped it
        // or failed on it. Without ActingChunk hooks the chunk goes to the stream as is.
        let chunk = if hook_chunks {
            let event = events::acting_chunk(self.context().info(), Arc::clone(tool_use), chunk);
            let mut event = event.into_event();
            engine::notify(self.setup.hooks, &mut event, self.context()).await;
            match event {
                HookEvent::ActingChunk(event) => event.into_parts(),
                // Notifications may not replace their event; the chunk is withheld.
                _ => None,
            }
        } else {
            Some(chunk)
        };
        if let Some(chunk) = chunk {
            self.emit(EventType::ToolResult, false, || Msg::tool_result(chunk))
                .await;
        }
    }
}

enum Wake {
    Progress(ToolProgress),
    /// A tool finished (only watched when results settle as they come in).
    Settled,
    Done,
    Interrupted,
}

/// The jobs a batch runs, shared with the loop that drives it (the same task: the lock is
/// never contended): each result is written into its job as it finishes, and `finished`
/// counts them.
struct Batch<'a, 'j> {
    jobs: &'a Mutex<&'j mut [Job]>,
    finished: &'a AtomicUsize,
}

/// What every tool of a batch gets in its context.
struct Tooling<'a> {
    /// The conversation (session id, else agent id): idempotency keys are made from it.
    scope: &'a SharedString,
    /// Dropped when the batch ends, so the receiver ends with the tools.
    progress: Option<ProgressSender>,
    cancel: &'a CancellationToken,
    /// The tools' `execute_tool` spans by index (none without a `TracingHook`).
    spans: &'a [Span],
}

/// Runs every job that has no result yet, writing each result into its job as it finishes.
/// Each tool gets its context (and its own progress sender) as it starts.
async fn run_batch(
    toolkit: &Toolkit,
    tool_uses: &[Arc<ToolUseBlock>],
    batch: Batch<'_, '_>,
    tooling: Tooling<'_>,
    parallel: bool,
) {
    let Tooling {
        scope,
        progress,
        cancel,
        spans,
    } = tooling;
    let span = |index: usize| spans.get(index).cloned().unwrap_or_else(Span::none);
    let context = |index: usize| {
        let ctx = ToolContext::new(Arc::clone(&tool_uses[index]))
            .with_scope(scope.clone())
            .with_cancellation(cancel.clone());
        match &progress {
            Some(sender) => attach_progress(ctx, sender.with_index(index)),
            None => ctx,
        }
    };
    let finish = |index: usize, run: ToolRun| {
        lock(batch.jobs)[index].run = Some(run);
        batch.finished.fetch_add(1, Ordering::Relaxed);
    };
    let count = tool_uses.len();
    let waiting = |index: &usize| lock(batch.jobs)[*index].run.is_none();
    if parallel {
        let mut running: FuturesUnordered<_> = (0..count)
            .filter(waiting)
            .map(|index| {
                toolkit
                    .run(&tool_uses[index], context(index))
                    .instrument(span(index))
                    .map(move |run| (index, run))
            })
            .collect();
        // Only the contexts hold senders now, so the receiver ends when the tools are done.
        drop(progress);
        while let Some((index, run)) = running.next().await {
            finish(index, run);
        }
    } else {
        for index in (0..count).filter(waiting) {
            // Once interrupted, the remaining tools don't start.
            if cancel.is_cancelled() {
                break;
            }
            let run = toolkit
                .run(&tool_uses[index], context(index))
                .instrument(span(index))
                .await;
            finish(index, run);
        }
    }
}
