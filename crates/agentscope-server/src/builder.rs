//! [`AgUiBuilder`]: the agents, the store and the options of an [`AgUi`], checked once.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use agentscope::session::SessionStore;
use agentscope_serving::{AgentSpec, Retention, Served};
use tower_http::cors::CorsLayer;

use crate::routes::{AgUi, RouterOptions};
use crate::state::Inner;

/// The default limit on a request body: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

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
            retention: Retention::default(),
        }
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
    retention: Retention,
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
            .field("retention", &self.retention)
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

    /// How long each thread keeps the records of its runs, and how many (default: 30 days,
    /// 100 per thread; see [`Retention`]). The conversation itself stays.
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Whether to serve the web chat page at `/` (default `true`).
    pub fn chat_page(mut self, serve: bool) -> Self {
        self.chat_page = serve;
        self
    }

    /// Builds the server. It calls each agent's factory once, to take over an approval hook
    /// the builder registers (see [`AgentSpec`]).
    ///
    /// # Errors
    ///
    /// [`BuildError`] when no agent is configured, an agent name is not
    /// usable in a URL and a session id (ASCII letters, digits, `-`, `_`), the token is
    /// empty, or an agent has two approval policies (its builder registers a
    /// [`ToolApprovalHook`](agentscope::hooks::ToolApprovalHook) and its spec sets
    /// [`approval`](AgentSpec::approval), or it registers two) or one the server cannot
    /// answer (a wrapped hook, a system hook); each message says what to change.
    pub fn build(self) -> Result<AgUi, BuildError> {
        if self.agents.is_empty() {
            return Err(BuildError(
                "no agent configured: call .agent(name, spec)".into(),
            ));
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
            None => Arc::new(agentscope::session::JsonFileSessionStore::new("sessions")),
        };
        let mut agents = BTreeMap::new();
        for (name, spec) in self.agents {
            let served =
                Served::new(&name, spec, Arc::clone(&store), self.retention).map_err(BuildError)?;
            agents.insert(name, served);
        }
        Ok(AgUi::new(
            Inner { agents, store },
            RouterOptions {
                token: self.token.map(Arc::from),
                cors: self.cors,
                max_body_bytes: self.max_body_bytes,
                chat_page: self.chat_page,
            },
        ))
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
