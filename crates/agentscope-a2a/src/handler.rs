//! The SDK's request handler, with what it gets wrong for this server put right (each found
//! by the A2A conformance kit, see `docs/a2a.md`, "Conformance"):
//!
//! - `SubscribeToTask` on a task that waits for input (`input-required`, `auth-required`:
//!   no call runs it) answers with the task and closes, as a stream closes at such a
//!   state; the SDK answered `TaskNotFoundError` for a task that exists.
//! - `SendMessage` and `SendStreamingMessage` without a message, or with a message of no
//!   parts, are refused as invalid parameters before any task exists; the SDK reads a
//!   missing message as an empty one and started a task for it.
//!
//! Everything else goes to the SDK's handler as it is.

use a2a::{
    A2AError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskState,
};
use a2a_server::{DefaultRequestHandler, RequestHandler, ServiceParams};
use futures::StreamExt;
use futures::stream::BoxStream;

type Events = BoxStream<'static, Result<StreamResponse, A2AError>>;

pub(crate) struct Handler {
    inner: DefaultRequestHandler,
}

impl Handler {
    pub(crate) fn new(inner: DefaultRequestHandler) -> Self {
        Self { inner }
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

#[async_trait::async_trait]
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
    ) -> Result<Events, A2AError> {
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

    /// A running task: the SDK's live stream. A task that waits for input: the task, then
    /// the stream closes.
    async fn subscribe_to_task(
        &self,
        params: &ServiceParams,
        req: SubscribeToTaskRequest,
    ) -> Result<Events, A2AError> {
        let id = req.id.clone();
        let tenant = req.tenant.clone();
        let not_found = match self.inner.subscribe_to_task(params, req).await {
            Ok(events) => return Ok(events),
            Err(error) if error.code == a2a::error_code::TASK_NOT_FOUND => error,
            Err(error) => return Err(error),
        };
        let get = GetTaskRequest {
            id,
            history_length: None,
            tenant,
        };
        match self.inner.get_task(params, get).await {
            Ok(task)
                if matches!(
                    task.status.state,
                    TaskState::InputRequired | TaskState::AuthRequired
                ) =>
            {
                Ok(futures::stream::iter([Ok(StreamResponse::Task(task))]).boxed())
            }
            _ => Err(not_found),
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
