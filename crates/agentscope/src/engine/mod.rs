//! The call lifecycle. Reads top to bottom like section 5 of DESIGN.md: busy check, system
//! message seed, PreCall, pending tool calls, the reason/act loop (with the summary at the
//! iteration limit), PostCall, and the error path. `call()` and `stream()` both run
//! [`run`]; streaming only adds a sink.

mod acting;
mod finish;
mod open_calls;
mod reasoning;
mod summary;

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use agentscope_core::{
    AgentError, AgentInfo, BoxedHook, BoxedTool, CancellationToken, ContentBlock, DispatchFailure,
    ErrorEvent, GenerateReason, HookChain, HookEvent, HookEventType, HookId, Msg, PostCallEvent,
    PreCallEvent, Role, ToolResultBlock, ToolUseBlock, check_tool_results,
    system_injection_message,
};

use crate::agent::AgentInner;
use crate::stream::{Event, EventSink, EventType};
use crate::toolkit::Toolkit;

pub(crate) use finish::Finish;
use finish::FinishStep;
use open_calls::OpenToolCalls;

/// The reply to an interrupted call.
pub(crate) const INTERRUPT_REPLY: &str =
    "I noticed that you have interrupted me. What can I do for you?";
/// The result given to tool calls an interrupt left without one.
pub(crate) const INTERRUPTED_RESULT: &str = "Error: Tool execution was interrupted.";
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
}

/// Runs one call on `agent`, delivering events to `sink` when streaming.
pub(crate) async fn run(
    agent: &AgentInner,
    input: Vec<Msg>,
    sink: Option<&EventSink>,
    extras: CallExtras,
) -> Result<Msg, AgentError> {
    // 1. Busy check: a rejected call is seen by no hook.
    let guard = agent.begin_call()?;
    // A bound session replaces memory before anything reads it; a failed load fails the call
    // before any hook runs or anything is stored.
    // (Boxed: the session's futures live on the heap only for agents that have one, so they
    // don't enlarge every call's future.)
    let synced = match agent.has_session() {
        true => Box::pin(agent.load_session()).await?,
        false => None,
    };
    // Declared before `call`: when the call is dropped, its open tool calls are closed first.
    let mut finish = FinishStep::new(&*agent.memory, extras.finish);
    let mut hooks = agent.hook_snapshot();
    if !extras.hooks.is_empty() {
        let chain = Arc::make_mut(&mut hooks);
        for hook in extras.hooks {
            chain.push(hook);
        }
    }
    let toolkit = if extras.tools.is_empty() {
        Cow::Borrowed(&agent.toolkit)
    } else {
        let mut toolkit = agent.toolkit.clone();
        for tool in extras.tools {
            toolkit.add_tool(tool).map_err(AgentError::invalid_input)?;
        }
        Cow::Owned(toolkit)
    };
    let mut call = Call::new(agent, &hooks, &toolkit, sink, guard.token());
    let mut outcome = call.execute(input).await;
    if finish.is_armed() {
        if outcome.is_err() {
            call.open.close(CANCELLED_RESULT);
        }
        outcome = finish.run(outcome);
    }
    let result = match outcome {
        Ok(reply) => call.post_call(reply).await,
        Err(error) => Err(DispatchFailure {
            error,
            reached: Vec::new(),
        }),
    };
    let result = match result {
        Ok(reply) => Ok(reply),
        Err(failure) => {
            call.open.close(CANCELLED_RESULT);
            // A hook that already saw PostCall does not also get Error for the same call.
            Err(call.notify_error(failure.error, &failure.reached).await)
        }
    };
    drop(call);
    drop(finish);
    let result = match synced {
        Some(synced) => Box::pin(save_session(agent, synced, result)).await,
        None => result,
    };
    // Released before the result is delivered, so back-to-back calls never trip the check.
    drop(guard);
    result
}

/// Saves the bound session after a call (whatever its outcome) if memory changed. A failed
/// save fails a call that succeeded; a call that failed keeps its own error (the save error
/// is logged), since its caller must retry anyway.
async fn save_session(
    agent: &AgentInner,
    synced: crate::session::Synced,
    result: Result<Msg, AgentError>,
) -> Result<Msg, AgentError> {
    let Err(save_error) = agent.save_session(Some(&synced)).await else {
        return result;
    };
    match result {
        Ok(_) => Err(save_error),
        Err(error) => {
            tracing::error!(
                agent = agent.info.name(),
                error = %save_error,
                "saving the session after a failed call failed"
            );
            Err(error)
        }
    }
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

pub(crate) type Step<T> = Result<T, Halt>;

enum Next {
    Reason,
    Act(Vec<ToolUseBlock>),
}

/// The state of one call.
pub(crate) struct Call<'a> {
    agent: &'a AgentInner,
    hooks: &'a HookChain,
    /// The agent's toolkit, plus this call's extra tools.
    toolkit: &'a Toolkit,
    sink: Option<&'a EventSink>,
    cancel: &'a CancellationToken,
    /// The system message frozen after PreCall; each model call gets a fresh copy.
    base_system: Option<Msg>,
    iteration: usize,
    gotos: usize,
    open: OpenToolCalls<'a>,
}

impl<'a> Call<'a> {
    fn new(
        agent: &'a AgentInner,
        hooks: &'a HookChain,
        toolkit: &'a Toolkit,
        sink: Option<&'a EventSink>,
        cancel: &'a CancellationToken,
    ) -> Self {
        Self {
            agent,
            hooks,
            toolkit,
            sink,
            cancel,
            base_system: None,
            iteration: 0,
            gotos: 0,
            open: OpenToolCalls::new(&*agent.memory),
        }
    }

    fn info(&self) -> Arc<AgentInfo> {
        Arc::clone(&self.agent.info)
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
        let seed = self.agent.system_seed.clone();
        // 3. PreCall, then the system message is frozen as this call's base.
        let (input, system) = if self.hooks.is_interested(HookEventType::PreCall) {
            let history = self.agent.memory.messages();
            self.chained(PreCallEvent::new(self.info(), input, history, seed))
                .await?
                .into_parts()
        } else {
            (input, seed)
        };
        reject_system(&input, "PreCallEvent input messages")?;
        self.base_system = system;
        // 4. Pending tool calls.
        let mut next = match self.accept_input(input)? {
            Some(pending) => Next::Act(pending),
            None => Next::Reason,
        };
        // 5-7. The loop.
        loop {
            if self.cancel.is_cancelled() {
                return Err(Halt::Interrupted);
            }
            next = match next {
                Next::Reason if self.iteration >= self.agent.max_iters => {
                    return self.summarize().await;
                }
                Next::Reason => match self.reason().await? {
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
    fn accept_input(&self, input: Vec<Msg>) -> Result<Option<Vec<ToolUseBlock>>, AgentError> {
        let memory = &self.agent.memory;
        let pending = pending_tool_uses(&memory.messages());
        if !pending.is_empty() && input.is_empty() {
            return Ok(Some(pending));
        }
        let still_pending = check_input(pending, &input)?;
        memory.extend(input);
        Ok((!still_pending.is_empty()).then_some(still_pending))
    }

    /// Writes results for every tool call left open and stores the interrupt reply.
    fn finish_interrupted(&mut self) -> Msg {
        self.open.close(INTERRUPTED_RESULT);
        let memory = &self.agent.memory;
        for call in pending_tool_uses(&memory.messages()) {
            memory.add(Msg::tool_result(ToolResultBlock::error(
                call.id,
                call.name,
                INTERRUPTED_RESULT,
            )));
        }
        let reply = Msg::new(
            Role::Assistant,
            self.agent.info.name(),
            vec![ContentBlock::text(INTERRUPT_REPLY)],
        )
        .with_generate_reason(GenerateReason::Interrupted);
        memory.add(reply.clone());
        reply
    }

    /// 8. PostCall: its result goes to the caller; memory keeps the loop's message.
    async fn post_call(&self, reply: Msg) -> Result<Msg, DispatchFailure> {
        if !self.hooks.is_interested(HookEventType::PostCall) {
            return Ok(reply);
        }
        let mut event = HookEvent::PostCall(PostCallEvent::new(self.info(), reply));
        self.hooks.dispatch_tracked(&mut event).await?;
        PostCallEvent::try_from(event)
            .map(PostCallEvent::into_final_message)
            .map_err(|other| DispatchFailure {
                error: AgentError::invalid_input(format!(
                    "the hook chain returned a {} event",
                    other.event_type()
                )),
                reached: Vec::new(),
            })
    }

    /// Notifies ErrorEvent hooks (except `except`); they get a copy, so nothing they do
    /// replaces the error.
    async fn notify_error(&self, error: AgentError, except: &[HookId]) -> AgentError {
        if self.hooks.is_interested(HookEventType::Error) {
            let mut event = HookEvent::Error(ErrorEvent::new(self.info(), error.clone()));
            self.hooks.notify_except(&mut event, except).await;
        }
        error
    }

    /// Runs a chained event through the hooks and unwraps it again.
    async fn chained<E>(&self, event: E) -> Result<E, AgentError>
    where
        E: Into<HookEvent> + TryFrom<HookEvent, Error = HookEvent>,
    {
        let mut event = event.into();
        self.hooks.dispatch(&mut event).await?;
        // `dispatch` rejects hooks that change the event's kind, so this cannot fail.
        E::try_from(event).map_err(|other| {
            AgentError::invalid_input(format!(
                "the hook chain returned a {} event",
                other.event_type()
            ))
        })
    }

    /// Delivers a notification to the interested hooks.
    async fn notify(&self, event: impl Into<HookEvent>) {
        let mut event = event.into();
        self.hooks.notify(&mut event).await;
    }

    /// Whether the stream consumer wants events of this type and completeness.
    fn wants(&self, event_type: EventType, is_last: bool) -> bool {
        self.sink
            .is_some_and(|sink| sink.wants(event_type, is_last))
    }

    /// Sends a stream event when the consumer wants it; `message` is built only then.
    async fn emit(&self, event_type: EventType, is_last: bool, message: impl FnOnce() -> Msg) {
        if let Some(sink) = self.sink.filter(|sink| sink.wants(event_type, is_last)) {
            sink.send(Event {
                event_type,
                message: message(),
                is_last,
            })
            .await;
        }
    }
}

/// Checks new, non-empty input against the pending tool calls: every tool result must answer
/// a call (no duplicates, no unknown ids, also when nothing is pending); with calls pending
/// the input must answer some of them, and may carry other content only when it answers all.
/// Returns the calls still pending after it.
pub(crate) fn check_input(
    pending: Vec<ToolUseBlock>,
    input: &[Msg],
) -> Result<Vec<ToolUseBlock>, AgentError> {
    let answered = check_tool_results(&pending.iter().collect::<Vec<_>>(), input)
        .map_err(AgentError::invalid_input)?;
    if pending.is_empty() {
        return Ok(pending);
    }
    if answered.is_empty() {
        return Err(AgentError::PendingToolCalls {
            ids: pending.iter().map(|call| call.id.clone()).collect(),
        });
    }
    let still_pending: Vec<ToolUseBlock> = pending
        .into_iter()
        .filter(|call| !answered.contains(&call.id))
        .collect();
    let has_other_content = input.iter().any(|msg| {
        msg.content
            .iter()
            .any(|block| !matches!(block, ContentBlock::ToolResult(_)))
    });
    if !still_pending.is_empty() && has_other_content {
        let ids: Vec<&str> = still_pending.iter().map(|call| call.id.as_str()).collect();
        return Err(AgentError::invalid_input(format!(
            "Partial tool results cannot be mixed with new content: results are missing for pending tool call ids [{}]",
            ids.join(", ")
        )));
    }
    Ok(still_pending)
}

/// Fails when a message that will be stored as the agent's own is not an assistant message
/// (a hook replaced it with another role).
fn check_reply_role(message: &Msg, place: &str) -> Result<(), AgentError> {
    match message.role {
        Role::Assistant => Ok(()),
        Role::System => Err(AgentError::invalid_input(system_injection_message(place))),
        other => Err(AgentError::invalid_input(format!(
            "The {place} must have the assistant role, not {other}"
        ))),
    }
}

/// Fails when a message list that hooks or callers can change holds a SYSTEM message.
fn reject_system(messages: &[Msg], place: &str) -> Result<(), AgentError> {
    if messages.iter().any(|msg| msg.role == Role::System) {
        return Err(AgentError::invalid_input(system_injection_message(place)));
    }
    Ok(())
}

/// The model's input: the system message (when there is one) followed by `messages`.
fn with_system(system: Option<Msg>, messages: Vec<Msg>) -> Vec<Msg> {
    match system {
        Some(system) => {
            let mut all = Vec::with_capacity(messages.len() + 1);
            all.push(system);
            all.extend(messages);
            all
        }
        None => messages,
    }
}

/// The tool calls of the last assistant message that have no result after it.
pub(crate) fn pending_tool_uses(messages: &[Msg]) -> Vec<ToolUseBlock> {
    let Some(at) = messages.iter().rposition(|msg| msg.role == Role::Assistant) else {
        return Vec::new();
    };
    let answered: HashSet<&str> = messages[at + 1..]
        .iter()
        .flat_map(|msg| msg.tool_results())
        .map(|result| result.id.as_str())
        .collect();
    messages[at]
        .tool_uses()
        .into_iter()
        .filter(|call| !answered.contains(call.id.as_str()))
        .cloned()
        .collect()
}
