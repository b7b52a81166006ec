//! A server on 127.0.0.1 with a scripted agent, and the SDK's client for it.

use std::path::Path;

use a2a::{AgentCard, Message, Part, Role, SendMessageRequest, StreamResponse, TaskState};
use a2a_client::A2AClientFactory;
use a2a_client::agent_card::AgentCardResolver;
use agentscope::prelude::*;
use agentscope::session::{
    AgentState, SessionError, SessionLease, SessionStore, SessionSummary, StateChange,
};
use agentscope::{ChatStream, ModelError, ModelRequest};
use agentscope_a2a::A2a;
use agentscope_test::ScriptedModel;
use futures::StreamExt;
use futures::future::BoxFuture;

pub(crate) use crate::http::Client;

/// A running server: its base URL (where the router is mounted) and its task.
pub(crate) struct Server {
    pub(crate) url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// The server's host and port, for tests that speak HTTP over a raw connection.
    pub(crate) fn address(&self) -> &str {
        self.url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves an agent named "assistant" on `model` (and `toolkit`) under `/a2a`, with its
/// sessions and tasks in JSON files in `dir`.
pub(crate) async fn serve(model: &(impl Model + Clone), toolkit: Toolkit, dir: &Path) -> Server {
    serve_with(model, toolkit, dir, None, None).await
}

/// As [`serve`], with the calls `approval` selects stopping for a decision, and requiring
/// `token`.
pub(crate) async fn serve_with(
    model: &(impl Model + Clone),
    toolkit: Toolkit,
    dir: &Path,
    approval: Option<ApprovalPolicy>,
    token: Option<&str>,
) -> Server {
    serve_on(
        model,
        toolkit,
        JsonFileSessionStore::new(dir),
        approval,
        token,
    )
    .await
}

/// As [`serve_with`], on `store`.
pub(crate) async fn serve_on(
    model: &(impl Model + Clone),
    toolkit: Toolkit,
    store: impl SessionStore,
    approval: Option<ApprovalPolicy>,
    token: Option<&str>,
) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/a2a", listener.local_addr().unwrap());
    let model = model.clone();
    let a2a = A2a::builder()
        .agent(move || {
            ReActAgent::builder()
                .name("assistant")
                .model(model.clone())
                .toolkit(toolkit.clone())
        })
        .url(&url)
        .description("Answers questions.")
        .version("2.1.0")
        .store(store);
    let a2a = guarded(a2a, approval, token);
    spawn(
        listener,
        url,
        axum::Router::new().nest("/a2a", a2a.router()),
    )
}

/// The server of a worker process (a copy of the test binary that a test starts and may
/// kill): [`serve_on`] `store` with the tools `pay` guards (`ApprovalPolicy::tools(["pay"])`);
/// prints `LISTENING <base url>` and serves until the process is killed.
pub(crate) async fn serve_worker(
    model: &(impl Model + Clone),
    toolkit: Toolkit,
    store: impl SessionStore,
) {
    let policy = Some(ApprovalPolicy::tools(["pay"]));
    let server = serve_on(model, toolkit, store, policy, None).await;
    println!("LISTENING {}", server.url);
    std::future::pending::<()>().await;
}

/// `a2a` built with the approval policy and the bearer token given.
pub(crate) fn guarded(
    a2a: agentscope_a2a::A2aBuilder,
    approval: Option<ApprovalPolicy>,
    token: Option<&str>,
) -> A2a {
    let a2a = match approval {
        Some(policy) => a2a.approval(policy),
        None => a2a,
    };
    match token {
        Some(token) => a2a.bearer_token(token),
        None => a2a,
    }
    .build()
    .unwrap()
}

/// A role as the tests write it: `user`, `assistant`, `system`, `tool`.
pub(crate) fn role(role: agentscope::Role) -> &'static str {
    match role {
        agentscope::Role::User => "user",
        agentscope::Role::Assistant => "assistant",
        agentscope::Role::System => "system",
        agentscope::Role::Tool => "tool",
    }
}

/// Serves `app` on `listener`, whose base URL (where the A2A router is) is `url`.
pub(crate) fn spawn(listener: tokio::net::TcpListener, url: String, app: axum::Router) -> Server {
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Server { url, task }
}

/// The card at the server's well-known URL.
pub(crate) async fn card(server: &Server) -> AgentCard {
    AgentCardResolver::new(None)
        .resolve(&server.url)
        .await
        .unwrap()
}

/// The SDK's client for the server, over `binding` (`"JSONRPC"` or `"HTTP+JSON"`).
pub(crate) async fn client(server: &Server, binding: &str) -> Client {
    let card = card(server).await;
    let (client, interface) = A2AClientFactory::builder()
        .preferred_bindings(vec![binding.to_owned()])
        .build()
        .create_from_card_with_interface(&card)
        .await
        .unwrap();
    assert_eq!(interface.protocol_binding, binding);
    client
}

/// A request on an existing task with a user message of `parts`.
pub(crate) fn answer(task: &a2a::Task, parts: Vec<Part>) -> SendMessageRequest {
    let mut message = Message::new(Role::User, parts);
    message.context_id = Some(task.context_id.clone());
    message.task_id = Some(task.id.clone());
    SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

/// A request with a user message of `text` in `context`.
pub(crate) fn request(text: &str, context: &str) -> SendMessageRequest {
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.context_id = Some(context.to_owned());
    SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

/// An event as a short line: its kind, the state or artifact, the `agentscope.kind` and the
/// text of its parts.
pub(crate) fn describe(event: &StreamResponse) -> String {
    match event {
        StreamResponse::Task(task) => format!("task {}", state(&task.status.state)),
        StreamResponse::Message(message) => format!("message {}", texts(&message.parts)),
        StreamResponse::StatusUpdate(update) => {
            let kind = update
                .metadata
                .as_ref()
                .and_then(|m| m.get("agentscope.kind"))
                .and_then(|v| v.as_str())
                .unwrap_or("-");
            let text = update
                .status
                .message
                .as_ref()
                .map(|m| texts(&m.parts))
                .unwrap_or_default();
            format!("status {} {kind} {text}", state(&update.status.state))
                .trim_end()
                .to_owned()
        }
        StreamResponse::ArtifactUpdate(update) => format!(
            "artifact {} append={:?} last={:?} {}",
            update.artifact.artifact_id,
            update.append,
            update.last_chunk,
            texts(&update.artifact.parts)
        ),
    }
}

pub(crate) fn state(state: &TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "input-required",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "auth-required",
        TaskState::Unspecified => "unspecified",
    }
}

/// The parts as text: text parts as they are, data parts as JSON, joined by `|`.
pub(crate) fn texts(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|part| match &part.content {
            a2a::PartContent::Text(text) => text.clone(),
            a2a::PartContent::Data(value) => value.to_string(),
            a2a::PartContent::Url(url) => url.clone(),
            a2a::PartContent::Raw(_) => "<raw>".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// A message's role and text, e.g. `"user: Hi"`.
pub(crate) fn line(message: &Message) -> String {
    let role = match message.role {
        Role::User => "user",
        Role::Agent => "agent",
        Role::Unspecified => "unspecified",
    };
    format!("{role}: {}", texts(&message.parts))
}

/// A scripted model whose chunks arrive 20 ms apart, as a real model's do.
#[derive(Clone)]
pub(crate) struct Paced(pub(crate) ScriptedModel);

/// A model answering each question with its own script (by the last user message's text),
/// whatever order the questions come in, and whether an earlier question's call was
/// canceled before or after the model was asked.
#[derive(Clone)]
pub(crate) struct ByQuestion(pub(crate) Vec<(&'static str, Paced)>);

impl Model for ByQuestion {
    fn model_name(&self) -> &str {
        "by-question"
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let question = request
            .messages
            .iter()
            .rev()
            .find(|msg| msg.role == agentscope::Role::User)
            .map(|msg| msg.text())
            .unwrap_or_default();
        match self.0.iter().find(|(asked, _)| *asked == question) {
            Some((_, model)) => model.stream(request).await,
            None => Err(ModelError::InvalidResponse {
                message: format!("no script for {question:?}"),
            }),
        }
    }
}

impl Model for Paced {
    fn model_name(&self) -> &str {
        self.0.model_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let chunks = self.0.stream(request).await?;
        Ok(chunks
            .then(|chunk| async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                chunk
            })
            .boxed())
    }
}

/// `GetTask` of the task `id`, its history as the server keeps it.
pub(crate) fn get(id: &str) -> a2a::GetTaskRequest {
    a2a::GetTaskRequest {
        id: id.to_owned(),
        history_length: None,
        tenant: None,
    }
}

/// `CancelTask` of the task `id`.
pub(crate) fn cancel(id: &str) -> a2a::CancelTaskRequest {
    a2a::CancelTaskRequest {
        id: id.to_owned(),
        metadata: None,
        tenant: None,
    }
}

/// What [`Watched`] runs before a load: given the session, a future the load waits for.
pub(crate) type BeforeLoad =
    Box<dyn Fn(&str) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// A JSON file store (its leases, listing and interrupts included) whose loads wait, first,
/// for what `before_load` makes of the session: a test's way to count loads or hold them.
pub(crate) struct Watched {
    pub(crate) files: agentscope::session::JsonFileSessionStore,
    pub(crate) before_load: BeforeLoad,
}

/// What a store's calls return.
type Answer<'a, T> = BoxFuture<'a, Result<T, SessionError>>;

impl SessionStore for Watched {
    fn save<'a>(&'a self, session: &'a str, change: &'a StateChange) -> Answer<'a, u64> {
        self.files.save(session, change)
    }

    fn load<'a>(&'a self, session: &'a str) -> Answer<'a, Option<AgentState>> {
        let before = (self.before_load)(session);
        Box::pin(async move {
            before.await;
            self.files.load(session).await
        })
    }

    fn delete<'a>(&'a self, session: &'a str) -> Answer<'a, bool> {
        self.files.delete(session)
    }

    fn list(&self) -> Answer<'_, Vec<String>> {
        self.files.list()
    }

    fn list_recent<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a SessionSummary>,
        limit: usize,
    ) -> Answer<'a, Vec<SessionSummary>> {
        self.files.list_recent(prefix, after, limit)
    }

    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a agentscope::CancellationToken,
    ) -> Answer<'a, Option<SessionLease>> {
        self.files.lease(session, interrupt)
    }

    fn interrupt<'a>(&'a self, session: &'a str) -> Answer<'a, bool> {
        self.files.interrupt(session)
    }
}
