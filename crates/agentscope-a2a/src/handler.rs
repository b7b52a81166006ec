//! The request handler: the SDK's, with what it leaves out for this server added (the
//! first two found by the A2A conformance kit, see `docs/a2a.md`, "Conformance"):
//!
//! - `SendMessage` and `SendStreamingMessage` without a message, or with a message of no
//!   parts, are refused as invalid parameters before any task exists; the SDK reads a
//!   missing message as an empty one and started a task for it.
//! - `SubscribeToTask` answers for every task the store has, on every instance. The SDK
//!   re-attaches a subscriber to a task this process runs (its events, live), and answered
//!   `TaskNotFoundError` for any other. A task no execution of this process runs is
//!   followed through the store instead: the task, then a status update each time its
//!   stored state changes, its artifacts once they are stored, until it ends or waits for
//!   input (a task already waiting for input: the task, then the stream closes). Streamed
//!   tokens are not stored, so a follower on another instance sees the task's states and
//!   its reply, not each token.

use std::time::Duration;

use a2a::*;
use a2a_server::{DefaultRequestHandler, RequestHandler, ServiceParams};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::tasks::SessionTaskStore;

/// How often a follower reads a task running on another instance.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

pub(crate) struct Handler {
    inner: DefaultRequestHandler,
    tasks: SessionTaskStore,
}

impl Handler {
    pub(crate) fn new(inner: DefaultRequestHandler, tasks: SessionTaskStore) -> Self {
        Self { inner, tasks }
    }

    /// Follows task `id`, which no execution of this process runs, through the store.
    async fn follow(
        &self,
        id: &str,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        let Some(task) = self.tasks.stored(id).await? else {
            return Err(A2AError::task_not_found(id));
        };
        if task.status.state.is_terminal() {
            return Err(A2AError::unsupported_operation(format!(
                "task {id} has already reached a terminal state"
            )));
        }
        let follower = Follower {
            tasks: self.tasks.clone(),
            last: task.clone(),
            done: ends_stream(&task.status.state),
            queue: std::collections::VecDeque::from([StreamResponse::Task(task)]),
        };
        Ok(futures::stream::unfold(follower, Follower::next).boxed())
    }
}

/// Whether a subscription ends after a task in `state`: a terminal state, or a question
/// (1.0 has no `final` flag; the stream closes when the task waits for its client).
fn ends_stream(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

struct Follower {
    tasks: SessionTaskStore,
    /// The task as last sent.
    last: Task,
    /// Whether the stream ends once the queue is empty.
    done: bool,
    queue: std::collections::VecDeque<StreamResponse>,
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
            tokio::time::sleep(FOLLOW_EVERY).await;
            match self.tasks.stored(&self.last.id).await {
                Ok(Some(task)) => self.changed(task),
                Ok(None) => {
                    self.done = true;
                    return Some((Err(A2AError::task_not_found(&self.last.id)), self));
                }
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
            self.done = ends_stream(&task.status.state);
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

/// A request whose message has no parts (or is missing, which the SDK reads as empty).
fn check_message(req: &SendMessageRequest) -> Result<(), A2AError> {
    if req.message.parts.is_empty() {
        return Err(A2AError::invalid_params(
            "the request needs a message with at least one part",
        ));
    }
    Ok(())
}

#[async_trait]
impl RequestHandler for Handler {
    async fn send_message(
        &self,
        params: &ServiceParams,
        req: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        check_message(&req)?;
        self.inner.send_message(params, req).await
    }

    async fn send_streaming_message(
        &self,
        params: &ServiceParams,
        req: SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        check_message(&req)?;
        self.inner.send_streaming_message(params, req).await
    }

    async fn get_task(
        &self,
        params: &ServiceParams,
        req: GetTaskRequest,
    ) -> Result<Task, A2AError> {
        self.inner.get_task(params, req).await
    }

    async fn list_tasks(
        &self,
        params: &ServiceParams,
        req: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        self.inner.list_tasks(params, req).await
    }

    async fn cancel_task(
        &self,
        params: &ServiceParams,
        req: CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        self.inner.cancel_task(params, req).await
    }

    async fn subscribe_to_task(
        &self,
        params: &ServiceParams,
        req: SubscribeToTaskRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        let id = req.id.clone();
        match self.inner.subscribe_to_task(params, req).await {
            Err(error) if error.code == error_code::TASK_NOT_FOUND => self.follow(&id).await,
            answer => answer,
        }
    }

    async fn create_push_config(
        &self,
        params: &ServiceParams,
        req: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.inner.create_push_config(params, req).await
    }

    async fn get_push_config(
        &self,
        params: &ServiceParams,
        req: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.inner.get_push_config(params, req).await
    }

    async fn list_push_configs(
        &self,
        params: &ServiceParams,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        self.inner.list_push_configs(params, req).await
    }

    async fn delete_push_config(
        &self,
        params: &ServiceParams,
        req: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2AError> {
        self.inner.delete_push_config(params, req).await
    }

    async fn get_extended_agent_card(
        &self,
        params: &ServiceParams,
        req: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        self.inner.get_extended_agent_card(params, req).await
    }
}
