//! The request handler: every A2A method, on the serving core. A task is a served run of
//! its context's session ([`Served`]); its id names its context, so any instance answers for
//! it with one load of that session.
//!
//! - `SendMessage` / `SendStreamingMessage`: a turn, admitted under the context session's
//!   lease ([`turn::decide`]), runs on a task of its own (a client that goes away does not
//!   cancel it); a message the context already received is answered with the task it
//!   started, followed to its end when another call still runs it, on any instance.
//! - `GetTask`, `ListTasks`, `SubscribeToTask`: read the tasks where they are stored (a
//!   task whose call stopped is settled by the orphan rule first); a task this instance runs
//!   is followed live, one running elsewhere through the store.
//! - `CancelTask`: interrupts the task's call where it runs (through the store on another
//!   instance), and answers with what happened to it; a task waiting for answers is canceled
//!   where it is stored.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use a2a::*;
use a2a_server::{RequestHandler, ServiceParams};
use agentscope::{AgentError, Refusal, StreamOptions};
use agentscope_serving::held::{self, Held, Unleased};
use agentscope_serving::{RunState, Runs, Served, StartError, failure};
use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use tokio::sync::broadcast;
use tracing::Instrument;

use crate::convert;
use crate::live::{Live, LiveTask};
use crate::task::{self, PROTOCOL};
use crate::turn::{self, Mapper, NotRun, Request};

/// How long a cancel waits for the call it interrupted to end.
const CANCEL_WAIT: Duration = Duration::from_secs(30);
/// How often a task running elsewhere is read, at first and at most (the wait between reads
/// grows by half each time).
const FOLLOW_FIRST: Duration = Duration::from_millis(100);
const FOLLOW_MOST: Duration = Duration::from_secs(1);

#[derive(Clone)]
pub(crate) struct Handler {
    served: Served,
    live: Arc<Live>,
}

/// How a sent message is answered.
enum Started {
    /// The task runs here: its view when the call was admitted, and its updates.
    Live {
        view: Task,
        updates: Option<broadcast::Receiver<StreamResponse>>,
    },
    /// The task as it stands (nothing ran).
    Done(Task),
    /// Another call runs the task (on another instance): follow it through the store.
    Follow { task: String },
}

impl Handler {
    pub(crate) fn new(served: Served) -> Self {
        Self {
            served,
            live: Arc::default(),
        }
    }

    /// The task's context and its session, from the task's id.
    fn locate(&self, id: &str) -> Result<(String, String), A2AError> {
        let context = task::context_of(id).ok_or_else(|| A2AError::task_not_found(id))?;
        let session = self
            .served
            .checked_session_id(context)
            .ok_or_else(|| A2AError::task_not_found(id))?;
        Ok((context.to_owned(), session))
    }

    /// Starts the turn of `req`.
    async fn start(
        &self,
        params: &ServiceParams,
        req: SendMessageRequest,
    ) -> Result<Started, A2AError> {
        if req.message.parts.is_empty() {
            return Err(A2AError::invalid_params(
                "the request needs a message with at least one part",
            ));
        }
        let message = req.message;
        let (task, existing, context) = match &message.task_id {
            Some(id) => {
                let context = task::context_of(id)
                    .ok_or_else(|| A2AError::task_not_found(id))?
                    .to_owned();
                if let Some(asked) = &message.context_id
                    && *asked != context
                {
                    return Err(A2AError::invalid_params(format!(
                        "contextId {asked} does not match task {id}, which belongs to context \
                         {context}"
                    )));
                }
                (id.clone(), true, context)
            }
            None => {
                let context = message.context_id.clone().unwrap_or_else(new_context_id);
                (task::new_task_id(&context), false, context)
            }
        };
        let Some(session) = self.served.checked_session_id(&context) else {
            // Nothing can be stored for a context that names no session.
            let session = self.served.session_id(&context);
            let reason = match agentscope::session::validate_session_id(&session) {
                Err(agentscope::session::SessionError::InvalidSessionId { reason, .. }) => {
                    format!("the context id cannot name a session ({session:?}): {reason}")
                }
                _ => "the context id cannot name a session".to_owned(),
            };
            return Ok(Started::Done(unstored_rejection(
                &task, &context, &message, reason,
            )));
        };
        // A message the agent cannot read is rejected (and stored so), naming the part.
        let msg = convert::user_msg(&message).map_err(|error| error.message);
        let span = tracing::info_span!(
            "a2a_task",
            gen_ai.agent.name = %self.served.name(),
            a2a.task.id = %task,
            a2a.context.id = %context,
            otel.kind = tracing::field::Empty,
        );
        agentscope::propagation::continue_trace(&span, |name| {
            params.get(name).and_then(|values| values.first()).cloned()
        });
        let slot: Arc<Mutex<Option<Outcome>>> = Arc::default();
        let decided = Arc::clone(&slot);
        let message_id = message.message_id.clone();
        let request = Request {
            message,
            msg,
            task: task.clone(),
            existing,
            context: context.clone(),
        };
        let started = self.served.start(
            &session,
            &task,
            PROTOCOL,
            Vec::new(),
            StreamOptions::default(),
            move |decision| {
                let (outcome, result) = match turn::decide(request, decision) {
                    Ok((input, view)) => (Outcome::Admitted(view), Ok(input)),
                    Err(not_run) => (Outcome::NotRun(not_run), Err(Refusal::new("answered"))),
                };
                *decided.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
                result
            },
        );
        let mut turn = match started {
            Ok(turn) => turn,
            Err(StartError::Busy) => {
                return self
                    .busy(&session, &context, &task, existing, &message_id)
                    .await;
            }
            Err(StartError::ShuttingDown) => {
                return Err(A2AError::internal(
                    "the server is shutting down; send the message to another instance",
                ));
            }
            Err(error) => {
                let failure = failure("The agent cannot be built", &error);
                return Err(A2AError::internal(failure.message));
            }
        };
        let view = match turn.admitted().instrument(span.clone()).await {
            Ok(()) => match slot.lock().unwrap_or_else(PoisonError::into_inner).take() {
                Some(Outcome::Admitted(view)) => *view,
                _ => first_view(&task, &context),
            },
            Err(AgentError::Busy) => {
                drop(turn);
                return self
                    .busy(&session, &context, &task, existing, &message_id)
                    .await;
            }
            Err(AgentError::Refused { .. }) => {
                let outcome = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                return match outcome {
                    Some(Outcome::NotRun(NotRun::Task(task))) => Ok(Started::Done(*task)),
                    Some(Outcome::NotRun(NotRun::Error(error))) => Err(error),
                    _ => Err(A2AError::internal(
                        "the conversation's stored state cannot be read by this server",
                    )),
                };
            }
            Err(error) => {
                let failure = span.in_scope(|| failure("The task could not start", &error));
                return Err(A2AError::internal(failure.message));
            }
        };
        // Admitted: the task runs on a task of its own, followed live.
        let live = self.live.open(view);
        let (view, updates) = live.subscribe();
        let driver = drive(
            turn,
            Arc::clone(&live),
            Arc::clone(&self.live),
            task,
            context,
            session,
        );
        tokio::spawn(driver.instrument(span));
        Ok(Started::Live { view, updates })
    }

    /// A message whose context another call holds: a message that call's task received
    /// (a client sending it again) or a message on the task it runs follows that task;
    /// any other message is rejected (not stored: the session is held).
    async fn busy(
        &self,
        session: &str,
        context: &str,
        task: &str,
        existing: bool,
        message_id: &str,
    ) -> Result<Started, A2AError> {
        let stored = self
            .served
            .read(session)
            .await
            .map_err(|error| {
                A2AError::internal(failure("Reading the task failed", &error).message)
            })?
            .ok_or_else(|| A2AError::task_not_found(task))?;
        let target = stored.runs.by_message(message_id).or_else(|| {
            existing
                .then(|| stored.runs.get(task))
                .flatten()
                .filter(|run| run.state == RunState::Working)
        });
        match target {
            Some(run) if run.state == RunState::Working => Ok(Started::Follow {
                task: run.id.clone(),
            }),
            Some(run) => Ok(Started::Done(task::render(
                run,
                &stored.messages,
                context,
                session,
            ))),
            None => Ok(Started::Done(unstored_rejection(
                task,
                context,
                &Message::new(Role::User, Vec::new()),
                "The context is busy: another task's call runs on it. Send this message again \
                 when that task has ended."
                    .to_owned(),
            ))),
        }
    }

    /// Task `id` as it stands: live when this instance runs it, else as stored (settled by
    /// the orphan rule).
    async fn current(&self, id: &str) -> Result<Task, A2AError> {
        if let Some(live) = self.live.get(id) {
            return Ok(live.view());
        }
        let (context, session) = self.locate(id)?;
        let stored = self
            .served
            .read(&session)
            .await
            .map_err(|error| {
                A2AError::internal(failure("Reading the task failed", &error).message)
            })?
            .ok_or_else(|| A2AError::task_not_found(id))?;
        let run = stored
            .runs
            .get(id)
            .filter(|run| run.protocol == PROTOCOL)
            .ok_or_else(|| A2AError::task_not_found(id))?;
        Ok(task::render(run, &stored.messages, &context, &session))
    }

    /// Follows task `id`, which another call runs (on another instance): the task, then a
    /// status update each time its stored state changes, and its reply once stored, until it
    /// ends or waits for input. Reads back off from 100 ms to 1 s.
    fn follow(&self, first: Task) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let follower = Follower {
            handler: self.clone(),
            wait: FOLLOW_FIRST,
            done: turn::ends_stream(&first.status.state),
            queue: std::collections::VecDeque::from([StreamResponse::Task(first.clone())]),
            last: first,
        };
        futures::stream::unfold(follower, Follower::next).boxed()
    }

    /// The updates of the task `started` says, as a stream.
    fn stream_of(&self, started: Started) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        match started {
            Started::Done(task) => futures::stream::iter([Ok(StreamResponse::Task(task))]).boxed(),
            Started::Live { view, updates } => live_stream(view, updates),
            Started::Follow { task, .. } => {
                let handler = self.clone();
                futures::stream::once(async move {
                    let first = handler.current(&task).await;
                    (handler, first)
                })
                .flat_map(move |(handler, first)| match first {
                    Ok(first) => handler.follow(first),
                    Err(error) => futures::stream::iter([Err(error)]).boxed(),
                })
                .boxed()
            }
        }
    }
}

/// What the turn's admission decided, kept for the request.
enum Outcome {
    /// The task as it starts.
    Admitted(Box<Task>),
    NotRun(NotRun),
}

struct Follower {
    handler: Handler,
    wait: Duration,
    done: bool,
    queue: std::collections::VecDeque<StreamResponse>,
    /// The task as last sent.
    last: Task,
}

impl Follower {
    async fn next(mut self) -> Option<(Result<StreamResponse, A2AError>, Self)> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some((Ok(item), self));
            }
            if self.done {
                return None;
            }
            tokio::time::sleep(self.wait).await;
            self.wait = (self.wait + self.wait / 2).min(FOLLOW_MOST);
            match self.handler.current(&self.last.id).await {
                Ok(task) => self.changed(task),
                Err(error) => {
                    self.done = true;
                    return Some((Err(error), self));
                }
            }
        }
    }

    /// Queues what changed from the last task sent: new artifacts, then the new status.
    fn changed(&mut self, task: Task) {
        let known = self.last.artifacts.as_deref().unwrap_or_default();
        for artifact in task.artifacts.iter().flatten() {
            if !known.contains(artifact) {
                self.queue
                    .push_back(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                        task_id: task.id.clone(),
                        context_id: task.context_id.clone(),
                        artifact: artifact.clone(),
                        append: None,
                        last_chunk: Some(true),
                        metadata: None,
                    }));
            }
        }
        if task.status.state != self.last.status.state {
            self.done = turn::ends_stream(&task.status.state);
            self.queue
                .push_back(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                    task_id: task.id.clone(),
                    context_id: task.context_id.clone(),
                    status: task.status.clone(),
                    metadata: None,
                }));
        }
        self.last = task;
    }
}

/// A live task's updates after `view`, until it ends or waits for input.
fn live_stream(
    view: Task,
    updates: Option<broadcast::Receiver<StreamResponse>>,
) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
    let done = turn::ends_stream(&view.status.state);
    let first = futures::stream::iter([Ok(StreamResponse::Task(view))]);
    let rest = futures::stream::unfold(
        (updates.filter(|_| !done), false),
        |(updates, ended)| async move {
            if ended {
                return None;
            }
            let mut receiver = updates?;
            match receiver.recv().await {
                Ok(update) => {
                    let ends = match &update {
                        StreamResponse::StatusUpdate(status) => {
                            turn::ends_stream(&status.status.state)
                        }
                        StreamResponse::Task(task) => turn::ends_stream(&task.status.state),
                        _ => false,
                    };
                    Some((Ok(update), (Some(receiver), ends)))
                }
                Err(broadcast::error::RecvError::Lagged(_)) => Some((
                    Err(A2AError::internal(
                        "the stream fell behind the task's updates; get the task for its state",
                    )),
                    (None, true),
                )),
                Err(broadcast::error::RecvError::Closed) => None,
            }
        },
    );
    first.chain(rest).boxed()
}

/// A task that starts working (when its decision left no view: not reached).
fn first_view(task: &str, context: &str) -> Task {
    Task {
        id: task.to_owned(),
        context_id: context.to_owned(),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: Some(chrono::Utc::now()),
        },
        artifacts: None,
        history: Some(Vec::new()),
        metadata: None,
    }
}

/// A task rejected before anything could be stored for it.
fn unstored_rejection(task: &str, context: &str, message: &Message, reason: String) -> Task {
    let status_message = task::agent_text(
        &format!("{task}-rejected"),
        task,
        context,
        vec![Part::text(reason)],
    );
    let mut history = Vec::new();
    if !message.parts.is_empty() {
        history.push(message.clone());
    }
    history.push(status_message.clone());
    Task {
        id: task.to_owned(),
        context_id: context.to_owned(),
        status: TaskStatus {
            state: TaskState::Rejected,
            message: Some(status_message),
            timestamp: Some(chrono::Utc::now()),
        },
        artifacts: None,
        history: Some(history),
        metadata: None,
    }
}

/// Runs an admitted turn to its end: its events as updates of the live task, then the
/// task as stored when the call ended.
async fn drive(
    mut turn: agentscope_serving::Turn,
    task: Arc<LiveTask>,
    live: Arc<Live>,
    id: String,
    context: String,
    session: String,
) {
    let mut mapper = Mapper::new(&id, &context);
    let mut ended = false;
    while !ended {
        let mut item = turn.next().await;
        loop {
            match item {
                Some(Ok(event)) if event.event_type == agentscope::EventType::AgentResult => {
                    ended = true;
                }
                Some(Ok(event)) => mapper.map(&event),
                Some(Err(_)) | None => ended = true,
            }
            if ended {
                break;
            }
            // What else the call has ready joins this batch, its text deltas merged: a
            // model faster than a client must not outrun the subscribers' buffers.
            match turn.next().now_or_never() {
                Some(next) => item = next,
                None => break,
            }
        }
        for update in mapper.queue.drain(..) {
            task.publish(update);
        }
    }
    let view = final_view(&turn, &id, &context, &session);
    for update in turn::ending(&view) {
        task.publish(update);
    }
    live.close(&task, view);
}

/// The task as its call left it: from the session the agent saved (its runs and its
/// conversation), with how the call ended when its last save did not store it.
fn final_view(turn: &agentscope_serving::Turn, id: &str, context: &str, session: &str) -> Task {
    let state = turn.agent.save_state().ok();
    let runs = state
        .as_ref()
        .and_then(|state| {
            Runs::read(&agentscope::session::HookState::new(state.hooks.clone())).ok()
        })
        .unwrap_or_default();
    let messages = state.map(|state| state.messages).unwrap_or_default();
    let mut run = runs
        .get(id)
        .cloned()
        .unwrap_or_else(|| agentscope_serving::Run::new(id, PROTOCOL, None, Vec::new()));
    if let Some(ended) = turn.hook.ended()
        && run.state == RunState::Working
    {
        run.set_state(ended);
    }
    if run.state == RunState::Working {
        run.set_state(RunState::Failed {
            reason: "The task's call ended without a reply.".to_owned(),
            error_id: None,
        });
    }
    task::render(&run, &messages, context, session)
}

/// A context id for a message that names none.
fn new_context_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[async_trait]
impl RequestHandler for Handler {
    async fn send_message(
        &self,
        params: &ServiceParams,
        req: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        let history_length = req
            .configuration
            .as_ref()
            .and_then(|configuration| configuration.history_length);
        let immediately = req
            .configuration
            .as_ref()
            .and_then(|configuration| configuration.return_immediately)
            .unwrap_or(false);
        let started = self.start(params, req).await?;
        let mut task = match started {
            Started::Done(task) => task,
            Started::Live { view, .. } if immediately => view,
            started => {
                // The task's updates to its end (or its question): the last task seen.
                let mut last = None;
                let mut stream = self.stream_of(started);
                while let Some(item) = stream.next().await {
                    match item? {
                        StreamResponse::Task(task) => last = Some(task),
                        update => {
                            if let Some(task) = last.as_mut() {
                                crate::live::apply(task, &update);
                            }
                        }
                    }
                }
                let id = last
                    .as_ref()
                    .map(|task| task.id.clone())
                    .unwrap_or_default();
                // As stored (the same task GetTask answers).
                self.current(&id).await?
            }
        };
        task::limit_history(&mut task, history_length);
        Ok(SendMessageResponse::Task(task))
    }

    async fn send_streaming_message(
        &self,
        params: &ServiceParams,
        req: SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        let started = self.start(params, req).await?;
        Ok(self.stream_of(started))
    }

    async fn get_task(
        &self,
        _params: &ServiceParams,
        req: GetTaskRequest,
    ) -> Result<Task, A2AError> {
        let mut task = self.current(&req.id).await?;
        task::limit_history(&mut task, req.history_length);
        Ok(task)
    }

    async fn list_tasks(
        &self,
        _params: &ServiceParams,
        req: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        crate::listing::list(&self.served, &self.live, &req).await
    }

    async fn cancel_task(
        &self,
        _params: &ServiceParams,
        req: CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        let id = req.id;
        let (context, session) = self.locate(&id)?;
        // Here: interrupt the call and wait for it to end.
        if let Some(live) = self.live.get(&id) {
            if let Some((run, agent)) = self.served.local(&session)
                && run == id
            {
                agent.interrupt();
            }
            let (_, updates) = live.subscribe();
            wait_closed(updates).await;
            return canceled_or_refused(live.view());
        }
        let current = self.current(&id).await?;
        match current.status.state {
            TaskState::Canceled => return Ok(current),
            state if state.is_terminal() => return Err(A2AError::task_not_cancelable(&id)),
            TaskState::InputRequired => return self.cancel_waiting(&id, &context, &session).await,
            _ => {}
        }
        // Elsewhere: the store reaches the call that holds the session (the one call a
        // session runs is the task's).
        let reached = self
            .served
            .store()
            .interrupt(&session)
            .await
            .map_err(|error| {
                A2AError::internal(failure("Canceling the task failed", &error).message)
            })?;
        if !reached {
            // No call holds the session: the orphan rule settles the task (read again), or
            // the store cannot tell (it does not coordinate instances).
            let task = self.current(&id).await?;
            return match task.status.state {
                TaskState::InputRequired => self.cancel_waiting(&id, &context, &session).await,
                TaskState::Canceled => Ok(task),
                TaskState::Working => Err(A2AError::new(
                    error_code::TASK_NOT_CANCELABLE,
                    format!(
                        "task {id} cannot be canceled from here: its call runs where this \
                         instance cannot reach it (the store does not coordinate instances); \
                         cancel it on the instance that runs it"
                    ),
                )),
                _ => Err(A2AError::task_not_cancelable(&id)),
            };
        }
        // Wait for the interrupted call to store its end.
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        let mut wait = FOLLOW_FIRST;
        loop {
            let task = self.current(&id).await?;
            match task.status.state {
                TaskState::Working if tokio::time::Instant::now() < deadline => {}
                TaskState::Working => {
                    return Err(A2AError::new(
                        error_code::TASK_NOT_CANCELABLE,
                        format!(
                            "task {id}'s call was interrupted but had not ended after {} s",
                            CANCEL_WAIT.as_secs()
                        ),
                    ));
                }
                TaskState::InputRequired => {
                    return self.cancel_waiting(&id, &context, &session).await;
                }
                _ => return canceled_or_refused(task),
            }
            tokio::time::sleep(wait).await;
            wait = (wait + wait / 2).min(FOLLOW_MOST);
        }
    }

    async fn subscribe_to_task(
        &self,
        _params: &ServiceParams,
        req: SubscribeToTaskRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        if let Some(live) = self.live.get(&req.id) {
            let (view, updates) = live.subscribe();
            return Ok(live_stream(view, updates));
        }
        let task = self.current(&req.id).await?;
        if task.status.state.is_terminal() {
            return Err(A2AError::unsupported_operation(format!(
                "task {} has already reached a terminal state",
                req.id
            )));
        }
        Ok(self.follow(task))
    }

    async fn create_push_config(
        &self,
        _params: &ServiceParams,
        _req: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        Err(A2AError::push_notification_not_supported())
    }

    async fn get_push_config(
        &self,
        _params: &ServiceParams,
        _req: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        Err(A2AError::push_notification_not_supported())
    }

    async fn list_push_configs(
        &self,
        _params: &ServiceParams,
        _req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        Err(A2AError::push_notification_not_supported())
    }

    async fn delete_push_config(
        &self,
        _params: &ServiceParams,
        _req: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2AError> {
        Err(A2AError::push_notification_not_supported())
    }

    async fn get_extended_agent_card(
        &self,
        _params: &ServiceParams,
        _req: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        Err(A2AError::unsupported_operation(
            "this agent has no extended agent card",
        ))
    }
}

impl Handler {
    /// Cancels task `id`, which waits for answers, where it is stored (holding its
    /// session): the task is `canceled`; the calls it asked about stay pending in the
    /// conversation, and the next message's task asks about them.
    async fn cancel_waiting(
        &self,
        id: &str,
        context: &str,
        session: &str,
    ) -> Result<Task, A2AError> {
        let task_id = id.to_owned();
        let held = held::hold(
            &**self.served.store(),
            session,
            Unleased::Edit,
            move |_, hooks| {
                let Ok(mut runs) = Runs::read(hooks) else {
                    return false;
                };
                let Some(run) = runs.get_mut(&task_id) else {
                    return false;
                };
                if run.state != RunState::InputRequired {
                    return false;
                }
                run.set_state(RunState::Canceled { reply: None });
                runs.write(hooks);
                true
            },
        )
        .await
        .map_err(|error| {
            A2AError::internal(failure("Canceling the task failed", &error).message)
        })?;
        match held {
            Held::Held(true) => {}
            // A call took the session meanwhile (the task was answered), or the task moved
            // on: what it is now says what happened.
            _ => {
                let task = self.current(id).await?;
                return canceled_or_refused(task);
            }
        }
        let _ = context;
        self.current(id).await
    }
}

/// The answer to a cancel once the task's call ended: the task when it is canceled, else
/// the error saying it cannot be (it ended another way first).
fn canceled_or_refused(task: Task) -> Result<Task, A2AError> {
    if task.status.state == TaskState::Canceled {
        Ok(task)
    } else {
        Err(A2AError::new(
            error_code::TASK_NOT_CANCELABLE,
            format!(
                "task {} ended {} before the cancel reached its call",
                task.id,
                state_name(&task.status.state)
            ),
        ))
    }
}

fn state_name(state: &TaskState) -> &'static str {
    match state {
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Rejected => "rejected",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "asking for input",
        TaskState::AuthRequired => "asking for authentication",
        _ => "working",
    }
}

/// Waits until `updates` closes (the task's call ended), at most [`CANCEL_WAIT`].
async fn wait_closed(updates: Option<broadcast::Receiver<StreamResponse>>) {
    let Some(mut updates) = updates else {
        return;
    };
    let drain = async {
        loop {
            match updates.recv().await {
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    };
    let _ = tokio::time::timeout(CANCEL_WAIT, drain).await;
}
