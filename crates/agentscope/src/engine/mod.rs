//! The call lifecycle. Reads top to bottom like "One call, end to end" in
//! `docs/architecture.md`: busy check, system
//! message seed, PreCall, pending tool calls, the reason/act loop (with the summary at the
//! iteration limit), PostCall, and the error path. `call()` and `stream()` both run
//! [`run`]; streaming only adds a sink.

/// Runs a chained event (a `Pre*`/`Post*` struct) through the call's hooks and evaluates to
/// it as the last hook left it; a hook's failure returns from the enclosing step.
///
/// The event is built here, in the step's frame, and the chain works on it in place
/// ([`engine::chain_in_place`]): through [`engine::chain`] it would be copied in and
/// out of the chain's future (a few hundred bytes each time). A macro rather than an async
/// fn, which would be one more state machine per event.
macro_rules! chain {
    ($call:expr, $event:expr) => {{
        let (mut event, kind) = $crate::engine::wrap($event);
        agentscope_core::engine::chain_in_place($call.setup.hooks, &mut event, $call.context())
            .await?;
        $crate::engine::back(kind, event)?
    }};
}

mod acting;

mod finish;
mod open_calls;
mod reasoning;
pub(crate) mod reply;
pub(crate) mod spans;
mod summary;

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use agentscope_core::ConversationError;
use agentscope_core::engine::conversation;
use agentscope_core::engine::{self, CallContext, ChainedEvent, EventParts, TypedEvent, events};
use agentscope_core::pending_tool_uses;
use agentscope_core::session::HookState;
use agentscope_core::{
    AgentError, BoxedHook, BoxedTool, CallId, CancellationToken, ContentBlock, GenerateReason,
    HookChain, HookEvent, HookEventType, Memory, Msg, Role, SharedString, Tool, ToolResultBlock,
    ToolUseBlock,
};

use futures::future::BoxFuture;

use crate::CallInput;
use crate::admission::{Admission, Admit};
use crate::config::AgentConfig;
use crate::engine::spans::Decision;
use crate::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT, INTERRUPTED_WHILE_RUNNING};
use crate::runtime::AgentRuntime;
use crate::runtime::CallGuard;
use crate::session::{
    Durability, SaveQueue, SessionBinding, Synced, durability_refuses, save_queue,
};
use crate::stream::{EventSink, EventType};
use crate::toolkit::Toolkit;
use reply::SharedReply;

pub(crate) use finish::Finish;
use finish::FinishStep;
use open_calls::OpenToolCalls;

/// What is stored for a tool's result that never passed the PostActing hooks listening (the
/// call failed or was dropped first), so no hook is bypassed.
pub(crate) const WITHHELD_RESULT: &str = "Error: The tool ran, but its result was withheld \
     because the agent call ended before the result passed the PostActing hooks.";
/// The result given to tool calls a failed or dropped call left without one.
pub(crate) const CANCELLED_RESULT: &str =
    "Error: Tool execution was cancelled because the agent call ended before it finished.";

/// What one call adds to the agent's configuration: built-in hooks and tools that exist only
/// for this call (structured output installs its hook and `generate_response` tool this way).
#[derive(Default)]
pub(crate) struct CallExtras {
    pub(crate) hooks: Vec<BoxedHook>,
    pub(crate) tools: Vec<BoxedTool>,
    /// Runs after the loop and before PostCall (and when the call is dropped), while the
    /// call still holds the agent.
    pub(crate) finish: Option<Finish>,
    /// Tool calls in doubt the caller asked to run again (`CallInput::retry`).
    pub(crate) retry: Vec<String>,
    /// How `CallInput::resolve` resolved calls in doubt: (call id, action), for the trace.
    pub(crate) resolved: Vec<(String, &'static str)>,
    /// The check that decides the call's input once the session is loaded
    /// (`ReActAgent::stream_admitted`).
    pub(crate) admit: Option<Admit>,
    /// The agent's custom reply, which replaces the ReAct loop (`builder.reply(..)`).
    pub(crate) reply: Option<SharedReply>,
}

/// The end of the conversation in `memory`, from its last assistant message on (all of it
/// when the last few messages hold none), and the index of its first message: all that
/// decides which tool calls are pending. A call reads it before storing its input, so it
/// copies a short tail, not the whole of a long conversation.
fn conversation_end(memory: &dyn Memory) -> (usize, Vec<Msg>) {
    const TAIL: usize = 8;
    let len = memory.len();
    if len > TAIL {
        let start = len - TAIL;
        let tail = memory.messages_from(start);
        if tail.iter().any(|message| message.role == Role::Assistant) {
            return (start, tail);
        }
    }
    (0, memory.messages())
}

/// Runs one call of the agent configured by `config`, delivering events to `sink` when
/// streaming.
pub(crate) async fn run(
    config: &AgentConfig,
    runtime: &AgentRuntime,
    input: Vec<Msg>,
    sink: Option<&EventSink>,
    extras: CallExtras,
) -> Result<Msg, AgentError> {
    // An approval hook added after the build to an agent whose durability cannot keep its
    // promise is refused as the build refuses it, before anything is loaded or run. (Only
    // `Exit` agents look at their hooks: the others do not take the hooks' lock for it.)
    if let Some(binding) = &config.session
        && binding.durability() == Durability::Exit
        && let Some(message) = durability_refuses(binding.durability(), &runtime.hooks())
    {
        return Err(AgentError::invalid_input(message));
    }
    // 1. Busy check: a rejected call is seen by no hook.
    let guard = runtime.begin_call(config.settings.check_running)?;
    // A bound session replaces memory before anything reads it; a failed load fails the call
    // before any hook runs or anything is stored.
    // (Boxed: the session's futures and state live on the heap only for agents that have
    // one, so they don't enlarge every call's future.)
    let session = match config.session.is_some() {
        true => Box::pin(config.load_session(runtime, guard.token()))
            .await?
            .map(Box::new),
        false => None,
    };
    let (mut session, mut input, mut extras) = (session, input, extras);
    let mut start_hooks = None;
    if let Some(admit) = extras.admit.take() {
        match Box::pin(admit_call(config, runtime, session.as_deref_mut(), admit)).await {
            Ok(admitted) => {
                let (messages, decided) = admitted.input.into_call();
                input = messages;
                extras.retry = decided.retry;
                extras.resolved = decided.resolved;
                start_hooks = admitted.hooks;
            }
            Err(error) => {
                config.release_session(session.map(|synced| *synced)).await;
                return Err(error);
            }
        }
    }
    let loaded = Loaded {
        guard,
        session,
        queue: None,
        start_hooks,
    };
    match (&config.session, &loaded.session) {
        (Some(binding), Some(_)) if binding.durability() == Durability::Async => {
            Box::pin(run_with_queue(
                config, runtime, input, sink, extras, loaded, binding,
            ))
            .await
        }
        _ => run_loaded(config, runtime, input, sink, extras, loaded).await,
    }
}

/// What an admission check decided for a call it admitted: its input, and the hooks' state
/// it starts with when the check changed it.
struct Admitted {
    input: CallInput,
    hooks: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Runs the call's admission check on the session as loaded; a refused call stores what the
/// check recorded in the hooks' state (under the call's lease) and fails with
/// `AgentError::Refused`.
#[cold]
async fn admit_call(
    config: &AgentConfig,
    runtime: &AgentRuntime,
    synced: Option<&mut Synced>,
    admit: Admit,
) -> Result<Admitted, AgentError> {
    let metadata = crate::sync::lock(runtime.metadata()).clone();
    let (running, stored_hooks, revision, leased) = match &synced {
        Some(synced) => (
            synced.running().to_vec(),
            synced.hooks().clone(),
            synced.revision(),
            synced.is_leased(),
        ),
        None => Default::default(),
    };
    let mut admission = Admission::new(
        config.identity(),
        &*config.memory,
        &running,
        stored_hooks.clone(),
        &metadata,
        revision,
        leased,
    );
    let decided = admit(&mut admission);
    let hooks = admission.into_hooks();
    let changed = synced.is_some() && hooks != stored_hooks;
    match decided {
        Ok(input) => Ok(Admitted {
            input,
            hooks: changed.then_some(hooks),
        }),
        Err(refusal) => {
            if changed {
                config.save_session(runtime, synced, Some(&hooks)).await?;
            }
            Err(AgentError::Refused {
                reason: refusal.into_reason(),
            })
        }
    }
}

/// What a call holds once its session is loaded: the agent (its busy guard), the stored
/// revision it works from, and under `Durability::Async` its save queue.
struct Loaded<'a> {
    guard: CallGuard<'a>,
    session: Option<Box<Synced>>,
    queue: Option<&'a SaveQueue>,
    /// The hooks' state the call starts with, when its admission check changed the stored
    /// one (saved after PreCall, before anything runs).
    start_hooks: Option<serde_json::Map<String, serde_json::Value>>,
}

/// [`run_loaded`] with a save queue, whose writer runs beside the call until the call has
/// waited for its last save (`Durability::Async`).
#[cold]
async fn run_with_queue<'a>(
    config: &'a AgentConfig,
    runtime: &'a AgentRuntime,
    input: Vec<Msg>,
    sink: Option<&'a EventSink>,
    extras: CallExtras,
    loaded: Loaded<'a>,
    binding: &'a SessionBinding,
) -> Result<Msg, AgentError> {
    let Loaded {
        guard,
        session,
        start_hooks,
        ..
    } = loaded;
    let revision = session.as_ref().map_or(0, |synced| synced.revision());
    let queue = SaveQueue::default();
    let call = async {
        let loaded = Loaded {
            guard,
            session,
            queue: Some(&queue),
            start_hooks,
        };
        let result = run_loaded(config, runtime, input, sink, extras, loaded).await;
        queue.close();
        result
    };
    save_queue::beside(call, queue.write(binding, revision)).await
}

/// Runs a call whose session (if any) is loaded.
async fn run_loaded(
    config: &AgentConfig,
    runtime: &AgentRuntime,
    input: Vec<Msg>,
    sink: Option<&EventSink>,
    extras: CallExtras,
    loaded: Loaded<'_>,
) -> Result<Msg, AgentError> {
    let Loaded {
        guard,
        session,
        queue,
        start_hooks,
    } = loaded;
    // Declared before `call`: when the call is dropped, its open tool calls are closed first.
    let mut finish = FinishStep::new(&*config.memory, extras.finish);
    let mut hooks = runtime.hook_snapshot();
    if !extras.hooks.is_empty() {
        let chain = Arc::make_mut(&mut hooks);
        for hook in extras.hooks {
            chain.push(hook);
        }
    }
    // The toolkit's live sources are resolved once, here: the call keeps this snapshot.
    let resolved = config
        .toolkit()
        .resolved()
        .map_err(AgentError::invalid_input)?;
    let base = resolved.as_deref().unwrap_or(config.toolkit());
    let toolkit = if extras.tools.is_empty() {
        Cow::Borrowed(base)
    } else {
        let mut toolkit = base.clone();
        for tool in extras.tools {
            toolkit.add_tool(tool).map_err(AgentError::invalid_input)?;
        }
        Cow::Owned(toolkit)
    };
    let (retry, resolved, custom_reply) = (extras.retry, extras.resolved, extras.reply);
    let mut call = Call {
        setup: Setup {
            config,
            runtime,
            custom_reply: custom_reply.as_ref(),
            hooks: &hooks,
            toolkit: &toolkit,
            sink,
            cancel: guard.token(),
            resumes: guard.stopped_call(),
            retry: &retry,
            resolved: &resolved,
        },
        context: None,
        progress: Progress::default(),
        session,
        queue,
        start_hooks,
        open: OpenToolCalls::new(
            &*config.memory,
            hooks.is_interested(HookEventType::PostActing),
        ),
    };
    let mut outcome = call.execute(input).await;
    if finish.is_armed() {
        if outcome.is_err() {
            call.open.close(CANCELLED_RESULT);
        }
        outcome = finish.run(outcome);
    }
    let stopped = (outcome.is_ok() && call.progress.left_pending).then(|| call.context().id());
    guard.set_stopped_call(stopped);
    let result = match outcome {
        Ok(reply) => call.post_call(reply).await,
        Err(error) => Err(error),
    };
    let result = match result {
        Ok(reply) => Ok(reply),
        Err(error) => {
            call.open.close(CANCELLED_RESULT);
            call.roll_back_unanswered_input();
            Err(call.notify_error(error).await)
        }
    };
    let session = call.session.take();
    // What hooks keep with the session, as the call's last hook left it: saved with the
    // call's end even when no step boundary followed the change.
    let hook_entries = session
        .as_ref()
        .and_then(|_| hook_state(call.context.as_ref()).cloned());
    // Kept for the ErrorEvent of a final save that fails.
    let errors_seen = session.is_some() && hooks.is_interested(HookEventType::Error);
    let context = errors_seen.then(|| call.context.take().unwrap_or_else(|| call.new_context()));
    drop(call);
    drop(finish);
    let result = match session {
        Some(synced) => {
            let returned = result.is_ok();
            let result = Box::pin(save_session(
                config,
                runtime,
                synced,
                queue,
                result,
                hook_entries.as_ref(),
            ))
            .await;
            match (result, context) {
                (Err(error), Some(context)) if returned => {
                    Err(Box::pin(failed_after_post_call(&hooks, context, error)).await)
                }
                (result, _) => result,
            }
        }
        None => result,
    };
    // Released before the result is delivered, so back-to-back calls never trip the check.
    drop(guard);
    result
}

/// Saves the bound session after a call (whatever its outcome) if memory changed (through
/// `queue` under `Durability::Async`, waiting for every save queued before), and gives the
/// session's lease back. A failed save fails a call that succeeded; a call that failed keeps
/// its own error (the save error is logged), since its caller must retry anyway.
async fn save_session(
    config: &AgentConfig,
    runtime: &AgentRuntime,
    mut synced: Box<Synced>,
    queue: Option<&SaveQueue>,
    result: Result<Msg, AgentError>,
    hooks: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Result<Msg, AgentError> {
    let saved = match (queue, &config.session) {
        (Some(queue), Some(binding)) => {
            binding.enqueue(&mut synced, &config.current(runtime, hooks), queue);
            queue.durable().await
        }
        _ => config.save_session(runtime, Some(&mut synced), hooks).await,
    };
    config.release_session(Some(*synced)).await;
    let Err(save_error) = saved else {
        return result;
    };
    match result {
        Ok(_) => Err(save_error),
        Err(error) => {
            tracing::error!(
                agent = config.info.name(),
                error = %save_error,
                "saving the session after a failed call failed"
            );
            Err(error)
        }
    }
}

/// Notifies the ErrorEvent of a call whose final save failed after PostCall, to every hook
/// interested, also those that saw PostCall: the turn they saw was neither returned nor
/// stored.
#[cold]
async fn failed_after_post_call(
    hooks: &HookChain,
    mut context: CallContext,
    error: AgentError,
) -> AgentError {
    context.failed_after_post_call();
    let mut event = events::error(context.info(), error.clone()).into_event();
    engine::notify(hooks, &mut event, &mut context).await;
    error
}

/// Why the loop stopped early.
pub(crate) enum Halt {
    Failed(AgentError),
    Interrupted,
}

impl From<AgentError> for Halt {
    fn from(error: AgentError) -> Self {
        Halt::Failed(error)
    }
}

impl From<ConversationError> for Halt {
    fn from(error: ConversationError) -> Self {
        Halt::Failed(error.into())
    }
}

impl Halt {
    /// The error a custom reply's step returns for this halt.
    fn into_error(self) -> AgentError {
        match self {
            Halt::Failed(error) => error,
            Halt::Interrupted => AgentError::Interrupted,
        }
    }
}

pub(crate) type Step<T> = Result<T, Halt>;

enum Next {
    Reason,
    Act(Vec<ToolUseBlock>),
}

/// One call, as it goes through the lifecycle: what it reads and never changes
/// ([`Setup`]), how hooks see it (its `CallContext`), where its loop stands ([`Progress`]),
/// and what it must leave stored (the session's revision, the tool calls it left open).
///
/// Its methods live with their step: this file holds the lifecycle from input to reply
/// (steps 1-4 and 8, the error path, the session's step saves and the stream);
/// `reasoning.rs` step 5, `acting.rs` step 6, `summary.rs` step 7, and `reply.rs` the
/// steps a custom [`Reply`](crate::Reply) drives.
pub(crate) struct Call<'a> {
    setup: Setup<'a>,
    /// The call's identity and per-call extensions; hooks get them with every event. Made
    /// when first needed: a call that no hook sees never pays for it.
    context: Option<CallContext>,
    progress: Progress,
    /// With a bound session: the stored revision the call works from. Saved at step
    /// boundaries (see `checkpoint`).
    session: Option<Box<Synced>>,
    /// Under `Durability::Async`: where the step saves go.
    queue: Option<&'a SaveQueue>,
    /// The hooks' state the call starts with when its admission check changed the stored
    /// one (the context's `HookState` is made from it).
    start_hooks: Option<serde_json::Map<String, serde_json::Value>>,
    /// The tool calls stored in memory without a result; any early exit closes them.
    open: OpenToolCalls<'a>,
}

/// What a call reads and never changes: the agent, this call's hooks and tools, the stream
/// it feeds, and its cancellation.
struct Setup<'a> {
    config: &'a AgentConfig,
    runtime: &'a AgentRuntime,
    /// The custom reply that replaces the ReAct loop, if the agent has one.
    custom_reply: Option<&'a SharedReply>,
    /// The agent's hooks as the call started (runtime changes apply from the next call),
    /// plus this call's own.
    hooks: &'a HookChain,
    /// The agent's toolkit (its sources resolved at the call's start), plus this call's
    /// extra tools.
    toolkit: &'a Toolkit,
    sink: Option<&'a EventSink>,
    cancel: &'a CancellationToken,
    /// The call this one resumes (see `CallInfo::resumed_from`).
    resumes: Option<CallId>,
    /// Tool calls in doubt the caller asked to run again.
    retry: &'a [String],
    /// How `CallInput::resolve` resolved calls in doubt (the trace names the action).
    resolved: &'a [(String, &'static str)],
}

/// Where a call's loop stands.
#[derive(Default)]
struct Progress {
    /// The system message frozen after PreCall; each model call gets a fresh copy.
    base_system: Option<Msg>,
    /// Model calls of the loop so far (goto re-entries excepted).
    iteration: usize,
    /// `goto_reasoning` re-entries so far.
    gotos: usize,
    /// Memory's length before the first goto of the call stored anything: what memory is
    /// cut back to if the goto cap is hit.
    goto_mark: Option<usize>,
    /// Where the call's input sits in memory (start, end), once stored.
    input_span: Option<(usize, usize)>,
    /// Whether the call ends with tool calls pending on purpose (a stop after reasoning, a
    /// suspended tool): the next call resumes it.
    left_pending: bool,
}

impl Call<'_> {
    /// Records what a hook decided on the call's trace (nothing without a `TracingHook`).
    fn trace(&mut self, decision: Decision<'_>) {
        if let Some(context) = &mut self.context {
            crate::engine::spans::record(context.extensions_mut(), decision);
        }
    }

    /// The `chat` span a `TracingHook` opened for this model call (a disabled one
    /// without), made current while the model streams.
    fn chat_span(&mut self) -> tracing::Span {
        match &mut self.context {
            Some(context) => crate::engine::spans::chat_span(context.extensions_mut()),
            None => tracing::Span::none(),
        }
    }

    /// The `invoke_agent` span a `TracingHook` opened for this call (a disabled one
    /// without), made current while a custom reply runs.
    fn call_span(&mut self) -> tracing::Span {
        match &mut self.context {
            Some(context) => crate::engine::spans::invoke_span(context.extensions_mut()),
            None => tracing::Span::none(),
        }
    }

    /// The call's context, made on first use.
    #[inline]
    fn context(&mut self) -> &mut CallContext {
        if self.context.is_none() {
            self.context = Some(self.new_context());
        }
        match &mut self.context {
            Some(context) => context,
            None => unreachable!("the context was just made"),
        }
    }

    #[cold]
    fn new_context(&self) -> CallContext {
        let mut context = CallContext::new(Arc::clone(&self.setup.config.info));
        if let Some(previous) = self.setup.resumes {
            context = context.with_resumed_from(previous);
        }
        for tool in self.setup.toolkit.marked() {
            context = context.with_tool_kind(tool.name(), tool.kind());
        }
        let mut context = context.with_tools(self.setup.toolkit.shared_schemas());
        if let Some(synced) = &self.session {
            context = context.with_running_tools(synced.running().to_vec());
            let hooks = self
                .start_hooks
                .clone()
                .unwrap_or_else(|| synced.hooks().clone());
            context.extensions_mut().insert(HookState::new(hooks));
        }
        context
    }

    async fn execute(&mut self, input: Vec<Msg>) -> Result<Msg, AgentError> {
        match self.lifecycle(input).await {
            Ok(reply) => Ok(reply),
            Err(Halt::Interrupted) => Ok(self.finish_interrupted()),
            Err(Halt::Failed(error)) => Err(error),
        }
    }

    async fn lifecycle(&mut self, input: Vec<Msg>) -> Step<Msg> {
        // 2. System message seed.
        let seed = self.setup.config.system_seed.clone();
        // 3. PreCall, then the system message is frozen as this call's base.
        let (input, system) = if self.setup.hooks.is_interested(HookEventType::PreCall) {
            let history = self.setup.config.memory.messages();
            chain!(
                self,
                events::pre_call(self.context().info(), input, history, seed)
            )
            .into_parts()
        } else {
            (input, seed)
        };
        conversation::check_no_system(&input, "PreCallEvent input messages")?;
        self.progress.base_system = system;
        // What an admission check recorded is stored with what PreCall hooks recorded.
        if self.start_hooks.is_some() {
            self.context();
        }
        // A hook that recorded session state at PreCall (an approval decision) has it
        // stored before anything runs, in every mode that saves steps (under `Async` too:
        // a decision only queued could be lost by a crash after its tool ran, and asked for
        // again), so no process asks for a stored decision again.
        if self.hook_state_changed()
            && let Some(save) = self.checkpoint_awaited()
        {
            save.await?;
        }
        // 4. Pending tool calls.
        let custom = self.setup.custom_reply.cloned();
        let stored_input = custom.as_ref().map(|_| input.clone());
        let next = match self.accept_input(input)? {
            Some(pending) => Next::Act(pending),
            None => Next::Reason,
        };
        let Some(reply) = custom else {
            // 5-7. The loop.
            return self.react_loop(next).await;
        };
        // A custom reply: pending tool calls run first, as a ReAct call would run them.
        if let Next::Act(calls) = next
            && let acting::Acted::Done(reply) = self.act(calls).await?
        {
            return Ok(reply);
        }
        self.custom_reply(&*reply, stored_input.unwrap_or_default())
            .await
    }

    /// 5-7. The reason/act loop, from `next` until the call's reply (summarising at the
    /// iteration limit).
    async fn react_loop(&mut self, mut next: Next) -> Step<Msg> {
        loop {
            if self.setup.cancel.is_cancelled() {
                return Err(Halt::Interrupted);
            }
            next = match next {
                Next::Reason if self.progress.iteration >= self.setup.config.settings.max_iters => {
                    return self.summarize().await;
                }
                Next::Reason => match self.reason(reasoning::Then::Act).await? {
                    reasoning::Reasoned::Done(reply) => return Ok(reply),
                    reasoning::Reasoned::Again => Next::Reason,
                    reasoning::Reasoned::Act(calls) => Next::Act(calls),
                },
                Next::Act(calls) => match self.act(calls).await? {
                    acting::Acted::Done(reply) => return Ok(reply),
                    acting::Acted::Continue => Next::Reason,
                },
            };
        }
    }

    /// Stores the input, or decides how to resume pending tool calls. Returns the calls to
    /// act on first, if any.
    fn accept_input(&mut self, input: Vec<Msg>) -> Result<Option<Vec<ToolUseBlock>>, AgentError> {
        let (offset, messages) = conversation_end(&*self.setup.config.memory);
        let pending = pending_tool_uses(&messages);
        self.check_retry(&pending)?;
        let resolved = self.resolved_in_doubt(&pending, &input);
        let accepted = self.store_input(offset, &messages, pending, input)?;
        for (call, action) in &resolved {
            self.trace(Decision::InDoubtResolved { tool: call, action });
        }
        Ok(accepted)
    }

    /// The calls in doubt (pending, recorded as running) that `input` resolves, with how:
    /// `"retry"` (`CallInput::retry`), the action of `CallInput::resolve` (`"done"`,
    /// `"fail"`, `"dismissed"`), `"result"` (another result the input gives it), or
    /// `"moved_on"` (new input moves on past it: it gets the "interrupted while running"
    /// result). Only for the trace: nothing when no hook saw the call (no call span).
    fn resolved_in_doubt(
        &self,
        pending: &[ToolUseBlock],
        input: &[Msg],
    ) -> Vec<(ToolUseBlock, &'static str)> {
        let running = match &self.session {
            Some(synced) if self.context.is_some() => synced.running(),
            _ => return Vec::new(),
        };
        if running.is_empty() {
            return Vec::new();
        }
        let answered = |id: &str| {
            input
                .iter()
                .flat_map(Msg::tool_results)
                .any(|result| result.id == id)
        };
        let moves_on = input.iter().any(|msg| msg.tool_results().is_empty());
        pending
            .iter()
            .filter(|call| running.iter().any(|id| call.id == *id))
            .filter_map(|call| {
                let id = call.id.as_str();
                let action = if self.setup.retry.iter().any(|retried| retried == id) {
                    "retry"
                } else if answered(id) {
                    self.setup
                        .resolved
                        .iter()
                        .find(|(resolved, _)| resolved == id)
                        .map_or("result", |(_, action)| *action)
                } else if moves_on {
                    "moved_on"
                } else {
                    return None;
                };
                Some((call.clone(), action))
            })
            .collect()
    }

    /// Stores the input after the conversation's end (`messages`, from index `offset` of
    /// memory, whose pending calls are `pending`), or decides how to resume them.
    fn store_input(
        &mut self,
        offset: usize,
        messages: &[Msg],
        pending: Vec<ToolUseBlock>,
        mut input: Vec<Msg>,
    ) -> Result<Option<Vec<ToolUseBlock>>, AgentError> {
        let memory = &self.setup.config.memory;
        // Input that only answers pending calls resolves them; any other moves on.
        if input.iter().any(|msg| msg.tool_results().is_empty()) {
            self.close_interrupted_for_new_input(&pending, &mut input);
        }
        if input.is_empty() {
            if !pending.is_empty() {
                return Ok(Some(pending));
            }
            // The conversation ends with messages the model has not answered (tool results
            // of a call that was dropped or whose process stopped, input of a call that
            // failed): resuming continues with reasoning.
            if messages
                .last()
                .is_some_and(|last| last.role != Role::Assistant)
            {
                return Ok(None);
            }
        }
        let still_pending = conversation::check_input(pending, &input)?;
        let start = offset + messages.len();
        self.progress.input_span = Some((start, start + input.len()));
        memory.extend(input);
        Ok((!still_pending.is_empty()).then_some(still_pending))
    }

    /// Refuses a retry (`CallInput::retry`) of a call that is not in doubt: not pending, or
    /// not recorded as running.
    fn check_retry(&self, pending: &[ToolUseBlock]) -> Result<(), AgentError> {
        let running = self
            .session
            .as_ref()
            .map_or(&[][..], |synced| synced.running());
        let in_doubt = |id: &String| {
            pending.iter().any(|call| call.id == *id) && running.iter().any(|run| run == id)
        };
        match self.setup.retry.iter().find(|id| !in_doubt(id)) {
            None => Ok(()),
            Some(id) => Err(AgentError::invalid_input(format!(
                "tool call '{id}' cannot be retried: it is not in doubt (in doubt: [{}])",
                pending
                    .iter()
                    .filter(|call| running.iter().any(|run| call.id == *run))
                    .map(|call| call.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// New input moves on past pending calls that were recorded as running (their tool
    /// started in a call that was dropped or whose process stopped): each such call the
    /// input does not answer gets the "interrupted while running" result, placed before the
    /// input, as a resume would give it. Their decisions were made and their tools started,
    /// so nothing else can answer them; other pending calls are left to the usual rules.
    fn close_interrupted_for_new_input(&self, pending: &[ToolUseBlock], input: &mut Vec<Msg>) {
        let Some(synced) = self.session.as_ref() else {
            return;
        };
        let running = synced.running();
        let answered: Vec<SharedString> = input
            .iter()
            .flat_map(Msg::tool_results)
            .map(|result| result.id.clone())
            .collect();
        let closed: Vec<Msg> = pending
            .iter()
            .filter(|call| {
                running.iter().any(|id| call.id == *id)
                    && !answered.contains(&call.id)
                    && !self.setup.retry.iter().any(|id| call.id == *id)
            })
            .map(|call| {
                Msg::tool_result(ToolResultBlock::error(
                    &call.id,
                    &call.name,
                    INTERRUPTED_WHILE_RUNNING,
                ))
            })
            .collect();
        if !closed.is_empty() {
            input.splice(0..0, closed);
        }
    }

    /// A failed call whose input nothing followed (the model never answered: it failed, a
    /// hook failed before it, the goto cap removed its loop) takes its input back out of
    /// memory, so the next call does not send it again: a request the provider refused
    /// (one over the context length) would fail again, and two user messages in a row break
    /// strict chat templates. Anything the call stored after its input stays.
    fn roll_back_unanswered_input(&mut self) {
        let Some((start, end)) = self.progress.input_span.take() else {
            return;
        };
        if self.setup.config.memory.len() == end {
            self.truncate_memory(start);
        }
    }

    /// Cuts memory back to its first `len` messages (memory is append-only: rewritten whole;
    /// only failure paths do this).
    fn truncate_memory(&self, len: usize) {
        let memory = &self.setup.config.memory;
        let mut messages = memory.messages();
        messages.truncate(len);
        memory.clear();
        memory.extend(messages);
    }

    /// Writes results for every tool call left open and stores the interrupt reply.
    fn finish_interrupted(&mut self) -> Msg {
        self.open.close_interrupted(INTERRUPTED_RESULT);
        let memory = &self.setup.config.memory;
        for call in pending_tool_uses(&memory.messages()) {
            memory.add(Msg::tool_result(ToolResultBlock::error(
                call.id,
                call.name,
                INTERRUPTED_RESULT,
            )));
        }
        let reply = Msg::new(
            Role::Assistant,
            self.setup.config.info.shared_name(),
            vec![ContentBlock::text(INTERRUPT_REPLY)],
        )
        .with_generate_reason(GenerateReason::Interrupted);
        memory.add(reply.clone());
        reply
    }

    /// 8. PostCall: its result goes to the caller; memory keeps the loop's message.
    async fn post_call(&mut self, reply: Msg) -> Result<Msg, AgentError> {
        if !self.setup.hooks.is_interested(HookEventType::PostCall) {
            return Ok(reply);
        }
        Ok(chain!(self, events::post_call(self.context().info(), reply)).into_parts())
    }

    /// Notifies ErrorEvent hooks (but those that saw PostCall); they get a copy, so nothing
    /// they do replaces the error.
    async fn notify_error(&mut self, error: AgentError) -> AgentError {
        if self.setup.hooks.is_interested(HookEventType::Error) {
            let event = events::error(self.context().info(), error.clone());
            let mut event = event.into_event();
            engine::notify(self.setup.hooks, &mut event, self.context()).await;
        }
        error
    }

    /// With a bound session, saves what the call changed so far: a step boundary. Called
    /// once a reasoning message with tool calls is stored, before tools run (with their
    /// calls recorded as running: [`checkpoint_before_tools`](Self::checkpoint_before_tools))
    /// and after each tool result is stored, always before the stream shows the step, so a
    /// consumer that drops the stream after an event finds that event's effects stored. The
    /// first two are one save when nothing can happen between them (see `reason`).
    ///
    /// What the save does depends on the session's [`Durability`]: under `Step` the future
    /// writes it; under `Async` the change is queued now and there is nothing to wait for;
    /// under `Exit` nothing happens (the call's end saves). `None` without a session: the
    /// step costs a branch, and the save's future (boxed, made out of line) never sits in
    /// the call's own future.
    #[inline]
    fn checkpoint(&mut self) -> Option<BoxFuture<'_, Result<(), AgentError>>> {
        match self.session {
            Some(_) => self.save_step(false),
            None => None,
        }
    }

    /// A step save the call waits for in every mode that saves steps (under
    /// `Durability::Async`, until it and every save before it are stored): what hooks
    /// decided at PreCall.
    fn checkpoint_awaited(&mut self) -> Option<BoxFuture<'_, Result<(), AgentError>>> {
        match self.session {
            Some(_) => self.save_step(true),
            None => None,
        }
    }

    /// The save before tools start, with their calls recorded as running (see
    /// [`checkpoint`](Self::checkpoint)); under `Durability::Async` the call waits for it
    /// (and every save before it) unless all the tools are `idempotent`.
    fn checkpoint_before_tools(
        &mut self,
        idempotent: bool,
    ) -> Option<BoxFuture<'_, Result<(), AgentError>>> {
        match self.session {
            Some(_) => self.save_step(!idempotent),
            None => None,
        }
    }

    #[cold]
    #[inline(never)]
    fn save_step(&mut self, wait: bool) -> Option<BoxFuture<'_, Result<(), AgentError>>> {
        let config = self.setup.config;
        let (Some(binding), Some(synced)) = (&config.session, &mut self.session) else {
            return None;
        };
        let durability = binding.durability();
        // Under `Exit` nothing is saved until the call's end.
        if durability == Durability::Exit {
            return None;
        }
        let current = config.current(self.setup.runtime, hook_state(self.context.as_ref()));
        if durability == Durability::Step {
            return Some(Box::pin(
                async move { binding.save(synced, &current).await },
            ));
        }
        let queue = self.queue?;
        binding.enqueue(synced, &current, queue);
        wait.then(|| Box::pin(queue.durable()) as BoxFuture<'_, _>)
    }

    /// Whether a hook changed the session's `HookState` since it was stored.
    fn hook_state_changed(&self) -> bool {
        match (&self.session, hook_state(self.context.as_ref())) {
            (Some(synced), Some(entries)) => entries != synced.hooks(),
            _ => false,
        }
    }

    /// Whether the stream consumer wants events of this type and completeness.
    fn wants(&self, event_type: EventType, is_last: bool) -> bool {
        self.setup
            .sink
            .is_some_and(|sink| sink.wants(event_type, is_last))
    }

    /// Sends a stream event when the consumer wants it; `message` is built only then.
    async fn emit(&self, event_type: EventType, is_last: bool, message: impl FnOnce() -> Msg) {
        if let Some(sink) = self
            .setup
            .sink
            .filter(|sink| sink.wants(event_type, is_last))
        {
            sink.send(event_type, message(), is_last).await;
        }
    }
}

/// The call's `HookState` entries, when hooks saw the call (its context exists).
fn hook_state(
    context: Option<&CallContext>,
) -> Option<&serde_json::Map<String, serde_json::Value>> {
    context
        .and_then(|context| context.extensions().get::<HookState>())
        .map(HookState::entries)
}

/// A chained event as a [`HookEvent`], and its type for [`back`] (see [`chain!`]).
#[inline]
fn wrap<E: ChainedEvent>(event: E) -> (HookEvent, PhantomData<E>) {
    (event.into_event(), PhantomData)
}

/// The event `chain!` ran, as its own type again.
#[inline]
fn back<E: ChainedEvent>(_kind: PhantomData<E>, event: HookEvent) -> Result<E, AgentError> {
    E::from_chained(event)
}

/// The model's input: the system message (when there is one) followed by `messages`.
fn with_system(system: Option<Msg>, mut messages: Vec<Msg>) -> Vec<Msg> {
    // In place: the callers leave room for it.
    if let Some(system) = system {
        messages.insert(0, system);
    }
    messages
}
