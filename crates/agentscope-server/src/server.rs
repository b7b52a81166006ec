//! [`AgUi`]: the agents, the store, the options, and the router that serves them.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::session::validate_session_id;
use agentscope::{ReActAgent, ReActAgentBuilder, SessionStore};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tokio::sync::Notify;
use tower_http::cors::CorsLayer;

use crate::error::ApiError;
use crate::mapping::to_messages;
use crate::run;

/// The default limit on a request body: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;
/// How long [`AgUi::shutdown`] waits for interrupted runs to end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How to make an agent for one run: a factory of a configured builder (model, tools,
/// hooks, prompt), and optionally which tool calls need a person's approval.
///
/// The server adds the thread's session and, with [`approval`](Self::approval), a
/// [`ToolApprovalHook`], then builds a fresh agent for every run: agents are cheap, and a
/// thread's state lives in the store, so any instance can serve its next run.
///
/// ```
/// use agentscope::hooks::ApprovalPolicy;
/// use agentscope::prelude::*;
/// use agentscope_server::AgentSpec;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// let model = ScriptedModel::new([ScriptedResponse::text("Hi!")]);
/// let spec = AgentSpec::new(move || ReActAgent::builder().model(model.clone()))
///     .approval(ApprovalPolicy::tools(["delete_files"]));
/// # let _ = spec;
/// ```
#[derive(Clone)]
pub struct AgentSpec {
    factory: Arc<dyn Fn() -> ReActAgentBuilder + Send + Sync>,
    approval: Option<ApprovalPolicy>,
}

impl AgentSpec {
    /// An agent made by `factory` for every run.
    pub fn new(factory: impl Fn() -> ReActAgentBuilder + Send + Sync + 'static) -> Self {
        Self {
            factory: Arc::new(factory),
            approval: None,
        }
    }

    /// Tool calls this policy selects stop the run for a decision (an AG-UI interrupt).
    #[must_use]
    pub fn approval(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = Some(policy);
        self
    }

    /// A new approval hook for one run, when the agent has an approval policy.
    pub(crate) fn approvals(&self) -> Option<ToolApprovalHook> {
        self.approval.clone().map(ToolApprovalHook::new)
    }

    /// The agent for one run on `session`.
    pub(crate) fn build(
        &self,
        store: &Arc<dyn SessionStore>,
        session: &str,
        approvals: Option<&ToolApprovalHook>,
    ) -> Result<ReActAgent, ApiError> {
        let mut builder = (self.factory)().session(Arc::clone(store), session);
        if let Some(approvals) = approvals {
            builder = builder.hook(approvals.clone());
        }
        builder.build().map_err(|err| {
            ApiError::internal("agent_build", format!("the agent cannot be built: {err}"))
        })
    }
}

impl fmt::Debug for AgentSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentSpec")
            .field("approval", &self.approval.is_some())
            .finish_non_exhaustive()
    }
}

/// Builds an [`AgUi`]; start with [`AgUi::builder`].
#[must_use]
pub struct AgUiBuilder {
    agents: BTreeMap<String, AgentSpec>,
    store: Option<Arc<dyn SessionStore>>,
    token: Option<String>,
    cors: Option<CorsLayer>,
    max_body_bytes: usize,
    chat_page: bool,
}

impl fmt::Debug for AgUiBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgUiBuilder")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("store", &self.store.is_some())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("cors", &self.cors.is_some())
            .field("max_body_bytes", &self.max_body_bytes)
            .field("chat_page", &self.chat_page)
            .finish()
    }
}

impl AgUiBuilder {
    /// Serves `spec` as `name`, at `POST /agents/{name}`.
    pub fn agent(mut self, name: impl Into<String>, spec: AgentSpec) -> Self {
        self.agents.insert(name.into(), spec);
        self
    }

    /// Where threads are stored (default: JSON files in `./sessions`). Use a shared store
    /// (SQLite on a shared disk, Redis) to serve one thread from several instances.
    pub fn store(mut self, store: impl SessionStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Requires `Authorization: Bearer <token>` on every `/agents` route: a request
    /// without it gets `401` and starts nothing. The chat page itself stays public (it asks
    /// for the token).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Answers cross-origin requests as `cors` says (default: no CORS headers, so only
    /// same-origin pages can call the API).
    pub fn cors(mut self, cors: CorsLayer) -> Self {
        self.cors = Some(cors);
        self
    }

    /// The largest request body accepted (default 1 MiB); a larger one gets `413`.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Whether to serve the web chat page at `/` (default `true`).
    pub fn chat_page(mut self, serve: bool) -> Self {
        self.chat_page = serve;
        self
    }

    /// Builds the server.
    ///
    /// # Errors
    ///
    /// [`BuildError`] when no agent is configured, an agent name is not
    /// usable in a URL and a session id (ASCII letters, digits, `-`, `_`), or the token is
    /// empty.
    pub fn build(self) -> Result<AgUi, BuildError> {
        if self.agents.is_empty() {
            return Err(BuildError(
                "no agent configured: call .agent(name, spec)".into(),
            ));
        }
        for name in self.agents.keys() {
            let usable = !name.is_empty()
                && name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !usable {
                return Err(BuildError(format!(
                    "agent name {name:?}: use 1 to 64 ASCII letters, digits, '-' or '_'"
                )));
            }
        }
        if self
            .token
            .as_deref()
            .is_some_and(|token| token.trim().is_empty())
        {
            return Err(BuildError("the bearer token is empty".into()));
        }
        let store = match self.store {
            Some(store) => store,
            None => Arc::new(agentscope::JsonFileSessionStore::new("sessions")),
        };
        Ok(AgUi {
            inner: Arc::new(Inner {
                agents: self.agents,
                store,
                token: self.token,
                cors: self.cors,
                max_body_bytes: self.max_body_bytes,
                chat_page: self.chat_page,
                runs: Mutex::default(),
                draining: AtomicBool::new(false),
                idle: Notify::new(),
            }),
        })
    }
}

/// What [`AgUiBuilder::build`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

/// Agents served over AG-UI: build one with [`AgUi::builder`], mount
/// [`router`](Self::router) in an axum app, and pass [`shutdown_signal`](Self::shutdown_signal)
/// to axum's graceful shutdown.
///
/// ```no_run
/// use agentscope::prelude::*;
/// use agentscope_server::{AgUi, AgentSpec};
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
/// let agui = AgUi::builder()
///     .agent("assistant", AgentSpec::new(move || ReActAgent::builder().model(model.clone())))
///     .store(agentscope::JsonFileSessionStore::new("/var/lib/my-app/threads"))
///     .build()?;
/// let app = axum::Router::new().nest("/ui", agui.router());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// // Your stop signal: e.g. `tokio::signal::ctrl_c()` (tokio's `signal` feature).
/// let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// axum::serve(listener, app)
///     .with_graceful_shutdown(agui.shutdown_signal(async {
///         let _ = stopped.await;
///     }))
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct AgUi {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) agents: BTreeMap<String, AgentSpec>,
    pub(crate) store: Arc<dyn SessionStore>,
    token: Option<String>,
    cors: Option<CorsLayer>,
    max_body_bytes: usize,
    chat_page: bool,
    /// The running calls, by session: the busy check, and whom to interrupt at shutdown.
    runs: Mutex<HashMap<String, ReActAgent>>,
    draining: AtomicBool,
    idle: Notify,
}

impl fmt::Debug for AgUi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgUi")
            .field("agents", &self.inner.agents.keys().collect::<Vec<_>>())
            .field("auth", &self.inner.token.is_some())
            .field("running", &self.inner.lock_runs().len())
            .finish_non_exhaustive()
    }
}

impl AgUi {
    /// Starts a builder.
    pub fn builder() -> AgUiBuilder {
        AgUiBuilder {
            agents: BTreeMap::new(),
            store: None,
            token: None,
            cors: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            chat_page: true,
        }
    }

    /// The session a thread of an agent is stored under: `<agent>.<threadId>`, so two
    /// agents sharing a store never share a conversation.
    ///
    /// ```
    /// assert_eq!(agentscope_server::AgUi::session_id("assistant", "t-1"), "assistant.t-1");
    /// ```
    pub fn session_id(agent: &str, thread_id: &str) -> String {
        format!("{agent}.{thread_id}")
    }

    /// The routes: `GET /agents`, `POST /agents/{agent}` (a run),
    /// `GET /agents/{agent}/threads/{thread}` (a thread's messages and pending interrupts),
    /// and the chat page at `/` with its assets under `/chat/`.
    pub fn router(&self) -> Router {
        let api = Router::new()
            .route("/agents", get(list_agents))
            .route("/agents/{agent}", post(run::run))
            .route("/agents/{agent}/threads/{thread}", get(thread_history))
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&self.inner),
                authenticate,
            ))
            .fallback(|| async { ApiError::not_found("no such route") })
            .layer(DefaultBodyLimit::max(self.inner.max_body_bytes));
        let mut router = api;
        if self.inner.chat_page {
            router = router
                .route("/", get(|| async { Html(CHAT_HTML) }))
                .route(
                    "/chat/app.js",
                    get(|| async { asset("text/javascript", CHAT_JS) }),
                )
                .route(
                    "/chat/style.css",
                    get(|| async { asset("text/css", CHAT_CSS) }),
                );
        }
        let router = router.with_state(Arc::clone(&self.inner));
        match &self.inner.cors {
            Some(cors) => router.layer(cors.clone()),
            None => router,
        }
    }

    /// Waits for `signal`, then [`shutdown`](Self::shutdown): give it to
    /// `axum::serve(..).with_graceful_shutdown(..)`, which stops accepting connections when
    /// it completes and waits for the open ones.
    pub fn shutdown_signal(
        &self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let agui = self.clone();
        async move {
            signal.await;
            agui.shutdown().await;
        }
    }

    /// Stops taking runs (new ones get `503`), interrupts the running calls (each ends
    /// with `RUN_FINISHED` and a `cancelled` outcome after its engine has stored what it
    /// did), and waits up to 30 s for them to end.
    pub async fn shutdown(&self) {
        self.inner.draining.store(true, Ordering::SeqCst);
        let running: Vec<ReActAgent> = self.inner.lock_runs().values().cloned().collect();
        tracing::info!(
            running = running.len(),
            "AG-UI server shutting down: interrupting runs"
        );
        for agent in &running {
            agent.interrupt();
        }
        let wait = async {
            loop {
                let idle = self.inner.idle.notified();
                if self.inner.lock_runs().is_empty() {
                    return;
                }
                idle.await;
            }
        };
        if tokio::time::timeout(SHUTDOWN_GRACE, wait).await.is_err() {
            tracing::warn!("AG-UI runs still active after the shutdown grace period");
        }
    }

    /// How many runs are active.
    pub fn running(&self) -> usize {
        self.inner.lock_runs().len()
    }
}

impl Inner {
    fn lock_runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, ReActAgent>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Marks `session` busy with `agent`, or reports that a run is active on it.
    pub(crate) fn start_run(
        self: &Arc<Self>,
        session: &str,
        agent: &ReActAgent,
    ) -> Result<RunGuard, ApiError> {
        let mut runs = self.lock_runs();
        if runs.contains_key(session) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "thread_busy",
                "a run is already active on this thread; wait for it to finish",
            ));
        }
        runs.insert(session.to_owned(), agent.clone());
        Ok(RunGuard {
            inner: Arc::clone(self),
            session: session.to_owned(),
        })
    }

    pub(crate) fn spec(&self, agent: &str) -> Result<&AgentSpec, ApiError> {
        self.agents
            .get(agent)
            .ok_or_else(|| ApiError::not_found(format!("no agent named {agent:?}")))
    }
}

/// Holds a thread busy for one run; frees it when dropped (the run ended, or the client
/// went away and the stream was dropped).
pub(crate) struct RunGuard {
    inner: Arc<Inner>,
    session: String,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let mut runs = self.inner.lock_runs();
        runs.remove(&self.session);
        if runs.is_empty() {
            self.inner.idle.notify_waiters();
        }
    }
}

/// The session of `thread` for `agent`, checked.
pub(crate) fn session_of(agent: &str, thread: &str) -> Result<String, ApiError> {
    let session = AgUi::session_id(agent, thread);
    validate_session_id(&session).map_err(|_| {
        ApiError::bad_request(
            "invalid_thread_id",
            format!(
                "threadId {:?} is not usable: use 1 to {} ASCII letters, digits, '-', '_' or '.'",
                crate::error::shorten(thread),
                agentscope::session::MAX_SESSION_ID_LEN - agent.len() - 1
            ),
        )
    })?;
    Ok(session)
}

async fn list_agents(State(inner): State<Arc<Inner>>) -> Json<serde_json::Value> {
    Json(json!({"agents": inner.agents.keys().collect::<Vec<_>>()}))
}

async fn thread_history(
    State(inner): State<Arc<Inner>>,
    Path((agent, thread)): Path<(String, String)>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let spec = inner.spec(&agent)?;
    let session = session_of(&agent, &thread)?;
    let state = run::load_state(&inner.store, &session).await?;
    let interrupts = match (spec.approvals(), &state) {
        (Some(approvals), Some(state)) => {
            approvals.restore_state(state);
            run::interrupts(&approvals)
        }
        _ => Vec::new(),
    };
    let messages = state.map(|state| state.messages).unwrap_or_default();
    Ok(Json(json!({
        "threadId": thread,
        "messages": to_messages(&messages),
        "interrupts": interrupts,
    })))
}

/// Checks the bearer token, in time independent of where a wrong token differs.
async fn authenticate(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = &inner.token else {
        return next.run(request).await;
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    match given {
        Some(given) if constant_time_eq(given.as_bytes(), token.as_bytes()) => {
            next.run(request).await
        }
        _ => {
            let mut response = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid bearer token is required (Authorization: Bearer <token>)",
            )
            .into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            response
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

const CHAT_HTML: &str = include_str!("../static/index.html");
const CHAT_JS: &str = include_str!("../static/app.js");
const CHAT_CSS: &str = include_str!("../static/style.css");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }
}
