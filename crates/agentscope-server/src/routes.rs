//! [`AgUi`]: the handle an application holds, and the router that serves its agents.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tower_http::cors::CorsLayer;

use agentscope::session::HookState;
use agentscope_serving::{Awaiting, BearerAuth, Runs, may_be_running};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::assets::with_chat_page;
use crate::error::ApiError;
use crate::mapping::to_messages;
use crate::run;
use crate::state::{self, Inner, internal, session_of};

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
/// let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]).cycling();
/// let agui = AgUi::builder()
///     .agent("assistant", AgentSpec::new(move || ReActAgent::builder().model(model.clone())))
///     .store(agentscope::session::JsonFileSessionStore::new("/var/lib/my-app/threads"))
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
    options: Arc<RouterOptions>,
}

/// How the routes are served: what the builder was told besides the agents and the store.
pub(crate) struct RouterOptions {
    pub(crate) token: Option<Arc<str>>,
    pub(crate) cors: Option<CorsLayer>,
    pub(crate) max_body_bytes: usize,
    pub(crate) chat_page: bool,
}

impl fmt::Debug for AgUi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgUi")
            .field("agents", &self.inner.agents.keys().collect::<Vec<_>>())
            .field("auth", &self.options.token.is_some())
            .field("running", &self.inner.running())
            .finish_non_exhaustive()
    }
}

impl AgUi {
    pub(crate) fn new(inner: Inner, options: RouterOptions) -> Self {
        Self {
            inner: Arc::new(inner),
            options: Arc::new(options),
        }
    }

    /// The session a thread of an agent is stored under: `<agent>.<threadId>`, so two
    /// agents sharing a store never share a conversation.
    ///
    /// ```
    /// assert_eq!(agentscope_server::AgUi::session_id("assistant", "t-1"), "assistant.t-1");
    /// ```
    pub fn session_id(agent: &str, thread_id: &str) -> String {
        state::session_id(agent, thread_id)
    }

    /// The routes: `GET /agents`, `POST /agents/{agent}` (a run),
    /// `GET /agents/{agent}/threads/{thread}` (a thread's messages, its pending interrupts,
    /// and what it awaits: `"busy"`, `"resume"`, `"run"` or `"message"`),
    /// and the chat page at `/` with its assets under `/chat/`.
    pub fn router(&self) -> Router {
        let mut api = Router::new()
            .route("/agents", get(list_agents))
            .route("/agents/{agent}", post(run::run))
            .route("/agents/{agent}/threads/{thread}", get(thread_history));
        if let Some(token) = &self.options.token {
            api = BearerAuth::new(Arc::clone(token), unauthorized).guard(api);
        }
        let mut router = api
            .fallback(|| async { ApiError::not_found("no such route") })
            .layer(DefaultBodyLimit::max(self.options.max_body_bytes));
        if self.options.chat_page {
            router = with_chat_page(router);
        }
        let router = router.with_state(Arc::clone(&self.inner));
        match &self.options.cors {
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
        self.inner.shutdown().await;
    }

    /// How many runs are active.
    pub fn running(&self) -> usize {
        self.inner.running()
    }
}

async fn list_agents(State(inner): State<Arc<Inner>>) -> Json<serde_json::Value> {
    Json(json!({"agents": inner.agents.keys().collect::<Vec<_>>()}))
}

async fn thread_history(
    State(inner): State<Arc<Inner>>,
    Path((agent, thread)): Path<(String, String)>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let served = inner.served(&agent)?;
    let session = session_of(&agent, &thread)?;
    let state = inner.load_state(&session).await?;
    let (messages, running, hooks) = match state {
        Some(state) => (
            state.messages.clone(),
            state.running_tools.clone(),
            Some(state),
        ),
        None => Default::default(),
    };
    let (_, approvals) = served.agent(&session).map_err(|error| {
        internal(
            "agent_build",
            "The agent cannot be built",
            &std::io::Error::other(error),
        )
    })?;
    if let (Some(approvals), Some(state)) = (&approvals, &hooks) {
        approvals.restore_state(state).map_err(unreadable_state)?;
    }
    // Calls recorded as running are in doubt, and an unanswered end awaits a run, unless a
    // call holds the thread.
    let held = may_be_running(&messages, &running) && inner.held(served, &session).await?;
    let awaiting = Awaiting::of(&messages, &running, approvals.as_ref(), held);
    let runs = hooks
        .as_ref()
        .and_then(|state| Runs::read(&HookState::new(state.hooks.clone())).ok())
        .unwrap_or_default();
    let interrupts: Vec<_> = awaiting
        .approvals
        .iter()
        .map(crate::interrupts::approval)
        .chain(
            awaiting
                .in_doubt
                .iter()
                .map(|call| crate::interrupts::in_doubt(call, &session)),
        )
        .collect();
    Ok(Json(json!({
        "threadId": thread,
        "messages": to_messages(&messages),
        "interrupts": interrupts,
        "awaits": awaiting.label().as_str(),
        "runs": runs
            .iter()
            .filter(|run| run.protocol == "agui")
            .map(|run| json!({"runId": run.id, "state": run.state.name()}))
            .collect::<Vec<_>>(),
    })))
}

/// The approval hook's stored state cannot be read (another version of the server wrote it):
/// refused, with the state left as stored.
fn unreadable_state(error: agentscope::HookError) -> ApiError {
    tracing::error!(%error, "a thread's approval state cannot be read");
    ApiError::internal(
        "unreadable_state",
        "the thread's stored state cannot be read by this server",
    )
}

/// The `401` of the `/agents` routes.
fn unauthorized() -> Response {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "a valid bearer token is required (Authorization: Bearer <token>)",
    )
    .into_response()
}
