//! [`A2a`]: the handle an application holds, and the router that serves its agent.

use std::fmt;
use std::sync::Arc;

use a2a::AgentCard;
use a2a_server::StaticAgentCard;
use a2a_server::agent_card::agent_card_router;
use a2a_server::jsonrpc::jsonrpc_router;
use a2a_server::rest::rest_router;
use agentscope_serving::{BearerAuth, Served};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router, middleware};
use serde_json::json;

use crate::handler::Handler;
use crate::stream;
use crate::version::require_version;

/// An agent served over A2A 1.0: build one with [`A2a::builder`] and mount
/// [`router`](Self::router) in an axum app, beside the AG-UI routes if you like.
///
/// ```no_run
/// use agentscope::prelude::*;
/// use agentscope_a2a::A2a;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]).cycling();
/// let a2a = A2a::builder()
///     .agent(move || ReActAgent::builder().name("assistant").model(model.clone()))
///     .url("http://127.0.0.1:3000/a2a")
///     .store(JsonFileSessionStore::new("/var/lib/my-app/sessions"))
///     .build()?;
/// let app = axum::Router::new().nest("/a2a", a2a.router());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// axum::serve(listener, app).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct A2a {
    card: Arc<AgentCard>,
    handler: Arc<Handler>,
    served: Served,
    token: Option<Arc<str>>,
}

impl fmt::Debug for A2a {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("A2a")
            .field("agent", &self.served.name())
            .field("auth", &self.token.is_some())
            .finish_non_exhaustive()
    }
}

impl A2a {
    pub(crate) fn new(card: AgentCard, served: Served, token: Option<Arc<str>>) -> Self {
        Self {
            card: Arc::new(card),
            handler: Arc::new(Handler::new(served.clone())),
            served,
            token,
        }
    }

    /// The session a context of an agent is stored under: `<agent>.<contextId>`, the id
    /// AG-UI gives the thread of the same name, so one conversation can be continued over
    /// either protocol.
    ///
    /// ```
    /// assert_eq!(agentscope_a2a::A2a::session_id("assistant", "c-1"), "assistant.c-1");
    /// ```
    pub fn session_id(agent: &str, context_id: &str) -> String {
        format!("{agent}.{context_id}")
    }

    /// The routes: the agent card at `GET /.well-known/agent-card.json`, JSON-RPC at
    /// `POST /`, and HTTP+JSON (`POST /message:send`, `POST /message:stream`,
    /// `GET /tasks/{id}`, `GET /tasks`, `POST /tasks/{id}:cancel`,
    /// `POST /tasks/{id}:subscribe`), all relative to where the router is mounted (the
    /// builder's URL). Requests must carry `A2A-Version: 1.0`, and with
    /// [`bearer_token`](crate::A2aBuilder::bearer_token) the token; the card is public.
    pub fn router(&self) -> Router {
        let card = Arc::new(StaticAgentCard::new((*self.card).clone()));
        // The SDK checks `A2A-Version` on JSON-RPC itself, not on HTTP+JSON.
        let rest = rest_router(Arc::clone(&self.handler))
            .route_layer(middleware::from_fn(require_version));
        // `SendStreamingMessage` is served with each event serialised once (src/stream.rs);
        // every other request goes on to the SDK's binding.
        let jsonrpc =
            jsonrpc_router(Arc::clone(&self.handler)).route_layer(middleware::from_fn_with_state(
                Arc::clone(&self.handler),
                stream::send_streaming_message,
            ));
        let mut methods = jsonrpc.merge(rest);
        if let Some(token) = &self.token {
            methods = BearerAuth::new(Arc::clone(token), unauthorized).guard(methods);
        }
        agent_card_router(card).merge(methods)
    }

    /// Stops taking tasks (new messages are refused), interrupts the tasks this instance
    /// runs (each ends `canceled` after its call stored what it did), and waits up to 30 s
    /// for them to end: give it to `axum::serve(..).with_graceful_shutdown(..)` after your
    /// signal.
    pub async fn shutdown(&self) {
        self.served.shutdown().await;
    }

    /// How many tasks this instance runs now.
    pub fn running(&self) -> usize {
        self.served.running()
    }
}

/// The `401` of A2A's methods.
fn unauthorized() -> Response {
    let body = json!({
        "code": "unauthorized",
        "message": "a valid bearer token is required (Authorization: Bearer <token>)",
    });
    (StatusCode::UNAUTHORIZED, Json(body)).into_response()
}
