//! [`A2aBuilder`]: the agent, the store and the card's details of an [`A2a`], checked once.

use std::fmt;
use std::sync::Arc;

use agentscope::ReActAgentBuilder;
use agentscope::hooks::ApprovalPolicy;
use agentscope::session::SessionStore;
use agentscope_serving::{AgentSpec, Retention, Served};

use crate::card::{CardInfo, card};
use crate::routes::A2a;

/// Makes the agent of one turn.
type Factory = Arc<dyn Fn() -> ReActAgentBuilder + Send + Sync>;

impl A2a {
    /// Starts a builder.
    pub fn builder() -> A2aBuilder {
        A2aBuilder {
            factory: None,
            url: None,
            description: None,
            version: "1.0.0".to_owned(),
            store: None,
            approval: None,
            token: None,
            retention: Retention::default(),
        }
    }
}

/// Builds an [`A2a`]; start with [`A2a::builder`]. The agent and the URL are required;
/// the rest has defaults.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope_a2a::A2a;
/// use agentscope_test::ScriptedModel;
///
/// let model = ScriptedModel::new([]);
/// let a2a = A2a::builder()
///     .agent(move || ReActAgent::builder().name("librarian").model(model.clone()))
///     .url("https://agents.example.com/librarian")
///     .description("Finds books.")
///     .version("2.0.0")
///     .store(JsonFileSessionStore::new("sessions"))
///     .build()?;
/// # let _ = a2a;
/// # Ok::<(), agentscope_a2a::BuildError>(())
/// ```
#[must_use]
pub struct A2aBuilder {
    factory: Option<Factory>,
    url: Option<String>,
    description: Option<String>,
    version: String,
    store: Option<Arc<dyn SessionStore>>,
    approval: Option<ApprovalPolicy>,
    token: Option<String>,
    retention: Retention,
}

impl fmt::Debug for A2aBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("A2aBuilder")
            .field("agent", &self.factory.is_some())
            .field("url", &self.url)
            .field("version", &self.version)
            .field("store", &self.store.is_some())
            .field("approval", &self.approval.is_some())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl A2aBuilder {
    /// Serves the agents `factory` makes: a configured builder (model, tools, hooks,
    /// prompt) for every task turn, to which the server adds the context's session. The
    /// agent's name is the card's name and the first part of its sessions' ids.
    pub fn agent(
        mut self,
        factory: impl Fn() -> ReActAgentBuilder + Send + Sync + 'static,
    ) -> Self {
        self.factory = Some(Arc::new(factory));
        self
    }

    /// The URL clients reach the router at (where it is mounted, e.g.
    /// `https://agents.example.com/a2a`): the card's interfaces name it. Required.
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// What the agent does, for the card (default: `"An agentscope-rs agent."`). With no
    /// tools, the card's one skill has it too.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The agent's version on the card (default `"1.0.0"`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Where contexts (sessions) and tasks are stored (default: JSON files in
    /// `./sessions`). Use a shared store to serve one context from several instances.
    pub fn store(mut self, store: impl SessionStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Tool calls this policy selects stop the call for a decision: the task ends in
    /// `input-required`, its status message listing the pending calls (text, and a data
    /// part `{"pendingToolCalls": [{"id", "name", "input"}]}`), and the next message on the
    /// task answers with a data part `{"decisions": [{"toolCallId", "approved",
    /// "arguments"?, "reason"?}]}` (one per pending call): the stopped call resumes, running
    /// the approved calls (with the edited arguments) and answering the rejected ones.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_a2a::A2a;
    /// use agentscope_test::ScriptedModel;
    ///
    /// let model = ScriptedModel::new([]);
    /// let a2a = A2a::builder()
    ///     .agent(move || ReActAgent::builder().name("ops").model(model.clone()))
    ///     .url("http://127.0.0.1:3000/a2a")
    ///     .approval(ApprovalPolicy::tools(["delete_files"]))
    ///     .build()?;
    /// # let _ = a2a;
    /// # Ok::<(), agentscope_a2a::BuildError>(())
    /// ```
    pub fn approval(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = Some(policy);
        self
    }

    /// How long tasks are kept, and how many per context (default: 30 days, 100 per
    /// context; see [`Retention`]). A task is kept with its context's conversation; past
    /// the retention it is gone (`GetTask` answers `TaskNotFoundError`) while the
    /// conversation stays.
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Requires `Authorization: Bearer <token>` on every A2A method: a request without it
    /// gets `401` and starts nothing. The agent card stays public and declares the scheme
    /// (`securitySchemes: {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}`).
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_a2a::A2a;
    /// use agentscope_test::ScriptedModel;
    ///
    /// let model = ScriptedModel::new([]);
    /// let a2a = A2a::builder()
    ///     .agent(move || ReActAgent::builder().name("assistant").model(model.clone()))
    ///     .url("https://agents.example.com/a2a")
    ///     .bearer_token(std::env::var("A2A_TOKEN").unwrap_or_else(|_| "change-me".into()))
    ///     .build()?;
    /// # let _ = a2a;
    /// # Ok::<(), agentscope_a2a::BuildError>(())
    /// ```
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Builds the server: makes one agent to read its name and tools for the card.
    ///
    /// # Errors
    ///
    /// [`BuildError`] when no agent or URL is configured, the URL is not `http(s)://`, the
    /// agent cannot be built, its name is not usable in a session id (ASCII letters,
    /// digits, `-`, `_`), or the token is empty.
    pub fn build(self) -> Result<A2a, BuildError> {
        let factory = self
            .factory
            .ok_or_else(|| BuildError("no agent configured: call .agent(factory)".into()))?;
        let url = self
            .url
            .ok_or_else(|| BuildError("no URL configured: call .url(base_url)".into()))?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(BuildError(
                "the URL must start with http:// or https://".into(),
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
        let mut spec = {
            let factory = Arc::clone(&factory);
            AgentSpec::new(move || factory())
        };
        if let Some(policy) = self.approval {
            spec = spec.approval(policy);
        }
        // Its name names the sessions; read from a builder (building touches no session).
        let name = factory()
            .session(Arc::clone(&store), CARD_SESSION)
            .build()
            .map_err(|err| BuildError(format!("the agent cannot be built: {err}")))?
            .name()
            .to_owned();
        let served =
            Served::new(&name, spec, Arc::clone(&store), self.retention).map_err(BuildError)?;
        // Bound to the store as every turn's agent is, so that a builder with session
        // settings (`durability(..)`) builds here as it will for a turn.
        let (agent, _) = served
            .agent(CARD_SESSION)
            .map_err(|err| BuildError(format!("the agent cannot be built: {err}")))?;
        let description = self
            .description
            .unwrap_or_else(|| "An agentscope-rs agent.".to_owned());
        let card = card(
            &agent,
            &CardInfo {
                url: url.trim_end_matches('/'),
                bearer: self.token.is_some(),
                description: &description,
                version: &self.version,
            },
        );
        Ok(A2a::new(card, served, self.token.map(Arc::from)))
    }
}

/// The session id of the agent [`A2aBuilder::build`] makes for the card (nothing is loaded
/// from it or stored in it).
const CARD_SESSION: &str = "a2a-card";

/// What [`A2aBuilder::build`] reports: which setting is missing or wrong.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope_a2a::A2a;
/// use agentscope_test::ScriptedModel;
///
/// let model = ScriptedModel::new([]);
/// let err = A2a::builder()
///     .agent(move || ReActAgent::builder().name("my agent").model(model.clone()))
///     .url("http://127.0.0.1:3000")
///     .build()
///     .unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"agent name "my agent": use 1 to 64 ASCII letters, digits, '-' or '_'"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}
