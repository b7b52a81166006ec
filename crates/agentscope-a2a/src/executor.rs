//! The SDK's [`AgentExecutor`]: one task turn is one call of a fresh agent bound to the
//! context's session, its events mapped to A2A updates.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use a2a::{
    A2AError, Artifact, Message, Part, PartContent, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, ExecutorContext};
use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::session::{AgentState, SessionError, SessionStore, validate_session_id};
use agentscope::{
    AgentError, AgentStream, CallInput, CancellationToken, ContentBlock, Event, EventType,
    GenerateReason, Msg, ReActAgent, ReActAgentBuilder, StreamOptions, ToolUseBlock,
};
use agentscope_core::plumbing::conversation::pending_tool_uses;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tracing::Instrument;

use crate::approvals::{Answer, Awaiting};
use crate::convert;

/// Makes the agent of one turn.
pub(crate) type Factory = Arc<dyn Fn() -> ReActAgentBuilder + Send + Sync>;

/// The id of the artifact that holds a task's reply.
pub(crate) const REPLY_ARTIFACT_ID: &str = "reply";

pub(crate) struct Executor {
    shared: Arc<Shared>,
}

/// What every turn needs, shared with the turns' futures.
struct Shared {
    factory: Factory,
    store: Arc<dyn SessionStore>,
    /// The agent's name: the first part of its sessions' ids.
    agent: String,
    /// Which tool calls stop the call for a decision.
    approval: Option<ApprovalPolicy>,
    /// The agents of the running turns, by task id, for `CancelTask`.
    running: Arc<Mutex<HashMap<String, ReActAgent>>>,
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("agent", &self.shared.agent)
            .field("approval", &self.shared.approval.is_some())
            .finish_non_exhaustive()
    }
}

/// The session a context of `agent` is stored under: `<agent>.<context id>`, the id AG-UI
/// gives the thread of the same name.
pub(crate) fn session_id(agent: &str, context_id: &str) -> String {
    format!("{agent}.{context_id}")
}

impl Executor {
    pub(crate) fn new(
        factory: Factory,
        store: Arc<dyn SessionStore>,
        agent: String,
        approval: Option<ApprovalPolicy>,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                factory,
                store,
                agent,
                approval,
                running: Arc::new(Mutex::new(HashMap::new())),
            }),
        }
    }

    /// The agent's name.
    pub(crate) fn agent(&self) -> &str {
        &self.shared.agent
    }

    /// The store of sessions and tasks.
    pub(crate) fn store(&self) -> &Arc<dyn SessionStore> {
        &self.shared.store
    }
}

/// How a turn starts.
enum Start {
    /// The agent is called.
    Run(Turn),
    /// The task awaits decisions and the message brings none that can be used: the task
    /// asks again, nothing is called.
    Ask(StreamResponse),
}

impl Shared {
    /// The turn of `ctx`, or why it is refused (the message or the context cannot be used).
    async fn start(&self, ctx: &ExecutorContext) -> Result<Start, String> {
        let message = ctx
            .message
            .as_ref()
            .ok_or_else(|| "the request carries no message".to_owned())?;
        let session = session_id(&self.agent, &ctx.context_id);
        validate_session_id(&session).map_err(|err| match err {
            SessionError::InvalidSessionId { reason, .. } => {
                format!("the context id cannot name a session ({session:?}): {reason}")
            }
            other => format!("the context id cannot name a session: {other}"),
        })?;
        let approvals = self.approval.clone().map(ToolApprovalHook::new);
        let mut builder = (self.factory)().session(Arc::clone(&self.store), session.clone());
        if let Some(approvals) = &approvals {
            builder = builder.hook(approvals.clone());
        }
        let agent = builder.build().map_err(|err| {
            tracing::error!(error = %err, "the agent of an A2A task cannot be built");
            "the agent cannot be built".to_owned()
        })?;
        let mut task = Task {
            id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            status: status(TaskState::Working, None),
            artifacts: ctx
                .stored_task
                .as_ref()
                .and_then(|task| task.artifacts.clone()),
            history: Some(history(ctx, message)),
            metadata: ctx
                .stored_task
                .as_ref()
                .and_then(|task| task.metadata.clone()),
        };
        let stored = self.store.load(&session).await.map_err(|err| {
            tracing::error!(error = %err, "the session of an A2A task cannot be loaded");
            "the context's session cannot be loaded".to_owned()
        })?;
        if let Some(first) = stored
            .as_ref()
            .and_then(|stored| duplicate_of(stored, &message.message_id))
        {
            return Ok(Start::Ask(duplicate(ctx, task, &message.message_id, first)));
        }
        let awaiting = Awaiting {
            approvals: match &approvals {
                Some(approvals) => self.restore(approvals, &agent, stored.as_ref())?,
                None => Vec::new(),
            },
            in_doubt: self.in_doubt(stored.as_ref(), &session).await,
            session,
        };
        let input = if awaiting.is_empty() {
            let mut msg = convert::user_msg(message).map_err(|err| err.message)?;
            msg.metadata
                .insert(TASK_KEY.to_owned(), Value::from(ctx.task_id.as_str()));
            CallInput::from(msg)
        } else {
            let asked = ctx
                .stored_task
                .as_ref()
                .is_some_and(|task| task.status.state == TaskState::InputRequired);
            let answered = match awaiting.answers(message) {
                // The stopped call resumes: the approved calls run, the rejected ones are
                // answered, the calls in doubt are resolved.
                Ok(Some(answers)) => apply(approvals.as_ref(), answers),
                Ok(None) if asked => Err("The message carries no decisions.".to_owned()),
                Ok(None) if !awaiting.approvals.is_empty() => {
                    return Err(format!(
                        "the context awaits decisions on tool calls ({}): answer them on the \
                         task that asked for them",
                        awaiting
                            .approvals
                            .iter()
                            .map(|call| call.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                // Calls in doubt no task asked about (the process running them died): this
                // task asks.
                Ok(None) => Err(NOT_GIVEN.to_owned()),
                Err(problem) => Err(problem),
            };
            match answered {
                Ok(input) => input,
                Err(problem) => {
                    let parts = awaiting.question(Some(&problem));
                    let question = agent_text(&ctx.task_id, &ctx.context_id, parts);
                    task.status = status(TaskState::InputRequired, Some(question));
                    return Ok(Start::Ask(StreamResponse::Task(task)));
                }
            }
        };
        // The turn's span: the parent of the call's spans, continuing the caller's trace
        // (the request's `traceparent`) when an OpenTelemetry propagator is installed.
        let span = tracing::info_span!(
            "a2a_task",
            agent = %self.agent,
            task_id = %ctx.task_id,
            context_id = %ctx.context_id,
            otel.kind = tracing::field::Empty,
        );
        agentscope::propagation::continue_trace(&span, |name| {
            ctx.service_params
                .get(name)
                .and_then(|values| values.first())
                .cloned()
        });
        let stream = agent.stream(input, StreamOptions::default());
        lock(&self.running).insert(ctx.task_id.clone(), agent.clone());
        Ok(Start::Run(Turn {
            span,
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            stream: Some(stream),
            approvals,
            session: awaiting.session,
            queue: VecDeque::from([StreamResponse::Task(task)]),
            _running: Running {
                task_id: ctx.task_id.clone(),
                running: Arc::clone(&self.running),
            },
        }))
    }

    /// Gives the approval hook the session's state (its decisions, the calls awaiting
    /// them) and the agent's tools; returns the calls awaiting a decision.
    fn restore(
        &self,
        approvals: &ToolApprovalHook,
        agent: &ReActAgent,
        stored: Option<&AgentState>,
    ) -> Result<Vec<ToolUseBlock>, String> {
        if let Some(stored) = stored {
            approvals.restore_state(stored).map_err(|err| {
                tracing::error!(error = %err, "the approval state of a session cannot be read");
                "the context's approval state cannot be read".to_owned()
            })?;
        }
        match agent.toolkit().resolve() {
            Ok(toolkit) => approvals.learn_tools(&toolkit),
            Err(_) => approvals.learn_tools(agent.toolkit()),
        }
        Ok(approvals.pending())
    }

    /// The calls in doubt in the session stored as `stored`: pending, recorded as started,
    /// and no call holds the session (a call that does is running them).
    async fn in_doubt(&self, stored: Option<&AgentState>, session: &str) -> Vec<ToolUseBlock> {
        let Some(stored) = stored else {
            return Vec::new();
        };
        let started: Vec<ToolUseBlock> = pending_tool_uses(&stored.messages)
            .into_iter()
            .filter(|call| stored.running_tools.iter().any(|id| call.id == *id))
            .collect();
        if started.is_empty() {
            return started;
        }
        match self.store.lease(session, &CancellationToken::new()).await {
            Ok(Some(lease)) => {
                if let Err(error) = lease.release().await {
                    tracing::warn!(%error, "giving back a probed session lease failed");
                }
                started
            }
            // Held: a call runs them (its task answers for them). No lease support: the
            // store cannot tell, and the call's own rules apply.
            Ok(None) | Err(_) => Vec::new(),
        }
    }
}

/// The answers given to the call: decisions to the approval hook, resolutions of calls in
/// doubt as the call's input. A decision the hook refuses (edited arguments that do not
/// match the tool's schema) is the problem to ask again with.
fn apply(
    approvals: Option<&ToolApprovalHook>,
    answers: Vec<(ToolUseBlock, Answer)>,
) -> Result<CallInput, String> {
    let mut input = CallInput::default();
    for (call, answer) in answers {
        match answer {
            Answer::Decision(decision) => {
                // Calls await approval only with an approval hook.
                if let Some(approvals) = approvals {
                    approvals
                        .decide(&call.id, decision)
                        .map_err(|err| format!("{err}."))?;
                }
            }
            Answer::InDoubt(resolution) => input = input.resolve(&call, resolution),
        }
    }
    Ok(input)
}

/// The metadata key of a user message given to the agent: the task it started.
const TASK_KEY: &str = "a2a_task_id";

/// The task that received message `id` in the session stored as `stored`, when the
/// session holds that message: the same message sent again.
fn duplicate_of(stored: &AgentState, id: &str) -> Option<String> {
    let msg = stored.messages.iter().rev().find(|msg| msg.id == id)?;
    Some(
        msg.metadata
            .get(TASK_KEY)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    )
}

/// The answer to a message the context already received (a client sending it again after
/// a lost response): the task is rejected, naming the task the message started, and
/// nothing runs again.
fn duplicate(
    ctx: &ExecutorContext,
    mut task: Task,
    message_id: &str,
    first: String,
) -> StreamResponse {
    let text = if first.is_empty() {
        format!("Message {message_id:?} was already received in this context; it is not run again.")
    } else {
        format!(
            "Message {message_id:?} was already received in this context, by task {first}; it \
             is not run again: get that task for its result."
        )
    };
    let parts = vec![
        Part::text(text),
        Part::data(serde_json::json!({"duplicateOf": {"messageId": message_id, "taskId": first}})),
    ];
    let message = agent_text(&ctx.task_id, &ctx.context_id, parts);
    task.status = status(TaskState::Rejected, Some(message));
    StreamResponse::Task(task)
}

/// Why a task's first message was not given to the agent: calls in doubt must be answered
/// first.
const NOT_GIVEN: &str = "This message was not given to the agent: the calls below must be \
     answered on this task first; send it again after.";

/// The task's history with the turn's message last (once).
fn history(ctx: &ExecutorContext, message: &Message) -> Vec<Message> {
    let mut history = ctx
        .stored_task
        .as_ref()
        .and_then(|task| task.history.clone())
        .unwrap_or_default();
    if history.last().map(|m| &m.message_id) != Some(&message.message_id) {
        history.push(message.clone());
    }
    history
}

/// An agent message of a task made of `parts`, with a new id.
fn agent_text(task_id: &str, context_id: &str, parts: Vec<Part>) -> Message {
    let mut message = Message::new(a2a::Role::Agent, parts);
    message.task_id = Some(task_id.to_owned());
    message.context_id = Some(context_id.to_owned());
    message
}

impl AgentExecutor for Executor {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let shared = Arc::clone(&self.shared);
        futures::stream::once(async move {
            let start = shared.start(&ctx).await;
            (start, ctx)
        })
        .flat_map(|(start, ctx)| match start {
            Ok(Start::Run(turn)) => futures::stream::unfold(turn, |turn| {
                let span = turn.span.clone();
                turn.next().instrument(span)
            })
            .boxed(),
            Ok(Start::Ask(task)) => futures::stream::iter([Ok(task)]).boxed(),
            Err(reason) => {
                let message = agent_text(&ctx.task_id, &ctx.context_id, vec![Part::text(reason)]);
                let update = status_update(
                    &ctx.task_id,
                    &ctx.context_id,
                    TaskState::Rejected,
                    Some(message),
                    None,
                );
                futures::stream::iter([Ok(update)]).boxed()
            }
        })
        .boxed()
    }

    /// Interrupts the running call of the task (it stores what it has), and reports the
    /// task canceled. A call running on another instance is interrupted through the store
    /// ([`SessionStore::interrupt`] on the context's session: the one call a session runs
    /// is the task's).
    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let here = lock(&self.shared.running).get(&ctx.task_id).cloned();
        let shared = Arc::clone(&self.shared);
        async move {
            match here {
                Some(agent) => agent.interrupt(),
                None => {
                    let session = session_id(&shared.agent, &ctx.context_id);
                    if let Err(error) = shared.store.interrupt(&session).await {
                        tracing::warn!(%error, task = %ctx.task_id,
                            "interrupting a canceled task's call through the store failed");
                    }
                }
            }
            Ok(status_update(
                &ctx.task_id,
                &ctx.context_id,
                TaskState::Canceled,
                None,
                None,
            ))
        }
        .into_stream()
        .boxed()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes a turn from the running ones when it ends or is dropped.
struct Running {
    task_id: String,
    running: Arc<Mutex<HashMap<String, ReActAgent>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&self.running).remove(&self.task_id);
    }
}

/// One turn: the agent's events as A2A updates, after the task itself.
struct Turn {
    /// The turn's span, current while the call is polled.
    span: tracing::Span,
    task_id: String,
    context_id: String,
    /// `None` once the call has ended.
    stream: Option<AgentStream>,
    /// The approval hook of the call, with an approval policy.
    approvals: Option<ToolApprovalHook>,
    /// The context's session.
    session: String,
    queue: VecDeque<StreamResponse>,
    _running: Running,
}

impl Turn {
    async fn next(mut self) -> Option<(Result<StreamResponse, A2AError>, Self)> {
        loop {
            if let Some(update) = self.queue.pop_front() {
                return Some((Ok(update), self));
            }
            let item = self.stream.as_mut()?.next().await;
            self.take(item);
            // What else the call has ready joins this batch, its text deltas merged: the SDK
            // keeps 32 events per subscriber, and a model faster than the client must not
            // outrun them.
            while let Some(stream) = self.stream.as_mut() {
                match stream.next().now_or_never() {
                    Some(item) => self.take(item),
                    None => break,
                }
            }
        }
    }

    /// One item of the call's stream, mapped into the queue.
    fn take(&mut self, item: Option<Result<Event, AgentError>>) {
        match item {
            Some(Ok(event)) => self.map(&event),
            Some(Err(error)) => {
                self.stream = None;
                tracing::warn!(%error, "an A2A task's call failed");
                let message = self.message(
                    format!("agent-error-{}", self.task_id),
                    vec![Part::text(format!("the agent failed: {error}"))],
                );
                self.push_status(TaskState::Failed, Some(message), None);
            }
            None => {
                // Only reached if the stream ended without its result (not expected).
                self.stream = None;
                let message = self.message(
                    format!("agent-error-{}", self.task_id),
                    vec![Part::text("the call ended without a reply")],
                );
                self.push_status(TaskState::Failed, Some(message), None);
            }
        }
    }

    fn message(&self, id: String, parts: Vec<Part>) -> Message {
        Message {
            message_id: id,
            context_id: Some(self.context_id.clone()),
            task_id: Some(self.task_id.clone()),
            role: a2a::Role::Agent,
            parts,
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        }
    }

    fn push_status(&mut self, state: TaskState, message: Option<Message>, kind: Option<&str>) {
        self.queue.push_back(status_update(
            &self.task_id,
            &self.context_id,
            state,
            message,
            kind,
        ));
    }

    /// A progress update: a `working` status whose message carries `parts`. A text delta
    /// right after a text delta of the same message joins it.
    fn progress(&mut self, msg: &Msg, parts: Vec<Part>, kind: &str) {
        if parts.is_empty() {
            return;
        }
        let queued = match kind {
            TEXT_DELTA => self
                .queue
                .back_mut()
                .and_then(|last| queued_delta(last, msg)),
            _ => None,
        };
        if let Some(text) = queued {
            for part in &parts {
                if let Some(more) = part.as_text() {
                    text.push_str(more);
                }
            }
            return;
        }
        let message = convert::agent_message(msg, parts, &self.task_id, &self.context_id);
        self.push_status(TaskState::Working, Some(message), Some(kind));
    }

    fn map(&mut self, event: &Event) {
        let msg = &event.message;
        match (event.event_type, event.is_last) {
            (EventType::Reasoning, false) => {
                let parts = msg
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text(text) if !text.text.is_empty() => {
                            Some(Part::text(text.text.as_str()))
                        }
                        _ => None,
                    })
                    .collect();
                self.progress(msg, parts, TEXT_DELTA);
            }
            (EventType::Reasoning, true) => {
                let calls = convert::parts(msg)
                    .into_iter()
                    .filter(|part| matches!(&part.content, a2a::PartContent::Data(_)))
                    .collect();
                self.progress(msg, calls, "tool_call");
            }
            (EventType::ToolResult, false) => {
                self.progress(msg, convert::parts(msg), "tool_progress")
            }
            (EventType::ToolResult, true) => self.progress(msg, convert::parts(msg), "tool_result"),
            (EventType::AgentResult, _) => {
                self.stream = None;
                self.finish(msg);
            }
            _ => {}
        }
    }

    /// The reply: an interrupted call ends the task canceled; any other reply is the task's
    /// artifact, and the task completes with the reply as its status message.
    fn finish(&mut self, reply: &Msg) {
        // Calls that await a decision stopped the call, or calls in doubt whose policy is
        // to stop (its reply lists them): the task asks for them.
        let awaiting = Awaiting {
            approvals: self
                .approvals
                .as_ref()
                .map(ToolApprovalHook::pending)
                .unwrap_or_default(),
            in_doubt: if reply.generate_reason() == Some(GenerateReason::ToolInDoubt) {
                reply.tool_uses().into_iter().cloned().collect()
            } else {
                Vec::new()
            },
            session: self.session.clone(),
        };
        if !awaiting.is_empty() {
            let question = agent_text(&self.task_id, &self.context_id, awaiting.question(None));
            self.push_status(TaskState::InputRequired, Some(question), None);
            return;
        }
        let mut parts = convert::parts(reply);
        if parts.is_empty() {
            parts.push(Part::text(""));
        }
        let message = convert::agent_message(reply, parts.clone(), &self.task_id, &self.context_id);
        if reply.generate_reason() == Some(GenerateReason::Interrupted) {
            self.push_status(TaskState::Canceled, Some(message), None);
            return;
        }
        self.queue
            .push_back(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: self.task_id.clone(),
                context_id: self.context_id.clone(),
                artifact: Artifact {
                    artifact_id: REPLY_ARTIFACT_ID.to_owned(),
                    name: Some("reply".to_owned()),
                    description: None,
                    parts,
                    metadata: None,
                    extensions: None,
                },
                append: None,
                last_chunk: Some(true),
                metadata: None,
            }));
        self.push_status(TaskState::Completed, Some(message), None);
    }
}

/// The `agentscope.kind` of a streamed piece of text.
const TEXT_DELTA: &str = "text_delta";

/// The text of `update` when it is a queued text delta of `msg` (to append to).
fn queued_delta<'a>(update: &'a mut StreamResponse, msg: &Msg) -> Option<&'a mut String> {
    let StreamResponse::StatusUpdate(update) = update else {
        return None;
    };
    let is_delta = update
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.get(KIND))
        .is_some_and(|kind| kind == TEXT_DELTA);
    let message = update.status.message.as_mut()?;
    if !is_delta || message.message_id != msg.id.as_str() {
        return None;
    }
    match message.parts.last_mut().map(|part| &mut part.content) {
        Some(PartContent::Text(text)) => Some(text),
        _ => None,
    }
}

fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus {
        state,
        message,
        timestamp: Some(chrono::Utc::now()),
    }
}

/// The metadata key saying what a `working` update carries.
const KIND: &str = "agentscope.kind";

/// A status update; `kind` says what a `working` update carries (`text_delta`,
/// `tool_call`, `tool_progress`, `tool_result`), in the metadata under `agentscope.kind`.
fn status_update(
    task_id: &str,
    context_id: &str,
    state: TaskState,
    message: Option<Message>,
    kind: Option<&str>,
) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        status: status(state, message),
        metadata: kind.map(|kind| HashMap::from([(KIND.to_owned(), Value::from(kind))])),
    })
}
