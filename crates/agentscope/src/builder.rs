//! [`ReActAgentBuilder`].

use std::sync::Arc;

use agentscope_core::SharedString;
use agentscope_core::{
    AgentInfo, BoxedModel, GenerateOptions, Hook, HookChain, Memory, Model, Msg,
};

use crate::agent::ReActAgent;
use crate::config::{AgentConfig, Settings};
use crate::engine::reply::{NoModel, Reply, SharedReply};
use crate::error::BuildError;
use crate::memory::InMemoryMemory;
use crate::runtime::AgentRuntime;
use crate::session::{
    AgentState, Durability, SessionBinding, SessionStore, check_sessionless, durability_refuses,
};
use crate::system_hooks::SystemHooks;
use crate::toolkit::Toolkit;

/// Builds a [`ReActAgent`]; start with [`ReActAgent::builder`].
///
/// Only the model is required (or a custom [`reply`](Self::reply)). Defaults: name `"assistant"`, a new UUID as id, no system
/// prompt, no tools, [`InMemoryMemory`], `max_iters` 10, `max_goto_reasoning` 10, the busy
/// check on, provider-default generation options, no hooks (plus the current
/// [`SystemHooks`]).
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope_test::{tools::Calculator, ScriptedModel};
///
/// let agent = ReActAgent::builder()
///     .name("assistant")
///     .sys_prompt("You are helpful.")
///     .model(ScriptedModel::new([]))
///     .toolkit(Toolkit::new().tool(Calculator::new()))
///     .max_iters(5)
///     .hook(hook_fn(|_| Ok(())).with_name("noop"))
///     .build()?;
/// assert_eq!(agent.name(), "assistant");
/// # Ok::<(), BuildError>(())
/// ```
#[must_use]
pub struct ReActAgentBuilder {
    name: String,
    id: Option<String>,
    sys_prompt: Option<String>,
    model: Option<BoxedModel>,
    memory: Option<Arc<dyn Memory>>,
    hooks: HookChain,
    state: Option<AgentState>,
    session: Option<(Arc<dyn SessionStore>, String)>,
    durability: Option<Durability>,
    reply: Option<SharedReply>,
    /// The settings that have defaults; `build()` moves them into the configuration as is.
    settings: Settings,
}

impl ReActAgent {
    /// Starts building an agent.
    pub fn builder() -> ReActAgentBuilder {
        ReActAgentBuilder::default()
    }
}

impl std::fmt::Debug for ReActAgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReActAgentBuilder")
            .field("name", &self.name)
            .field("id", &self.id)
            .field(
                "model",
                &self.model.as_ref().map(|model| model.model_name()),
            )
            .field("toolkit", &self.settings.toolkit)
            .field("max_iters", &self.settings.max_iters)
            .field("max_goto_reasoning", &self.settings.max_goto_reasoning)
            .field("check_running", &self.settings.check_running)
            .field("hooks", &self.hooks)
            .field("session", &self.session.as_ref().map(|(_, id)| id))
            .field("custom_reply", &self.reply.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for ReActAgentBuilder {
    fn default() -> Self {
        Self {
            name: "assistant".to_owned(),
            id: None,
            sys_prompt: None,
            model: None,
            memory: None,
            hooks: HookChain::new(),
            state: None,
            session: None,
            durability: None,
            reply: None,
            settings: Settings::default(),
        }
    }
}

impl ReActAgentBuilder {
    /// The agent's name (default `"assistant"`); its replies carry it.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The agent's id (default: a new UUID).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The system prompt. Each call seeds its system message (role System, name `"system"`,
    /// one text block) from it; a blank prompt means no system message.
    pub fn sys_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.sys_prompt = Some(prompt.into());
        self
    }

    /// The model (required). Erased once here; pass an `Arc<M>` to share one model.
    pub fn model(mut self, model: impl Model) -> Self {
        self.model = Some(BoxedModel::new(model));
        self
    }

    /// The tools.
    pub fn toolkit(mut self, toolkit: Toolkit) -> Self {
        self.settings.toolkit = toolkit;
        self
    }

    /// The memory (default [`InMemoryMemory`]). Pass an `Arc<M>` to keep a handle.
    pub fn memory(mut self, memory: impl Memory) -> Self {
        self.memory = Some(Arc::new(memory));
        self
    }

    /// The iteration limit (default 10, at least 1): after this many reasoning steps that
    /// called tools, the agent summarises instead of reasoning again.
    pub fn max_iters(mut self, max_iters: usize) -> Self {
        self.settings.max_iters = max_iters;
        self
    }

    /// How many `goto_reasoning` re-entries one call allows (default 10).
    pub fn max_goto_reasoning(mut self, max: usize) -> Self {
        self.settings.max_goto_reasoning = max;
        self
    }

    /// Generation options for every model call (hooks can change them per call).
    pub fn generate_options(mut self, options: GenerateOptions) -> Self {
        self.settings.options = Arc::new(options);
        self
    }

    /// Whether a second concurrent call fails with `AgentError::Busy` (default `true`).
    /// Turn it off only when the memory and hooks tolerate interleaved calls.
    pub fn check_running(mut self, check: bool) -> Self {
        self.settings.check_running = check;
        self
    }

    /// Adds a hook.
    pub fn hook(mut self, hook: impl Hook) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Adds hooks, in order.
    pub fn hooks<H: Hook>(mut self, hooks: impl IntoIterator<Item = H>) -> Self {
        for hook in hooks {
            self.hooks.push(hook);
        }
        self
    }

    /// Reads or changes the hooks added so far with any [`HookChain`] operation, as
    /// [`ReActAgent::edit_hooks`] does on a built agent: what code that receives a builder
    /// (a server that builds an agent per request, a test) uses to find a hook
    /// ([`of_type`](HookChain::of_type)) or replace one. Returns what `edit` returns. The
    /// [`SystemHooks`] are not in it yet: they are added by [`build`](Self::build).
    ///
    /// ```
    /// use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
    /// use agentscope::prelude::*;
    /// use agentscope_test::ScriptedModel;
    ///
    /// let mut builder = ReActAgent::builder()
    ///     .model(ScriptedModel::new([]))
    ///     .hook(ToolApprovalHook::new(ApprovalPolicy::tools(["rm"])));
    /// let guarded = builder.edit_hooks(|hooks| hooks.of_type::<ToolApprovalHook>().count());
    /// assert_eq!(guarded, 1);
    /// ```
    pub fn edit_hooks<R>(&mut self, edit: impl FnOnce(&mut HookChain) -> R) -> R {
        edit(&mut self.hooks)
    }

    /// Starts the agent from a saved state (from [`ReActAgent::save_state`] or a
    /// [`SessionStore`]): its messages replace the memory's contents and its metadata becomes
    /// the agent's [`metadata`](ReActAgent::metadata). The state's agent name and id are not
    /// taken over (set them with [`name`](Self::name) and [`id`](Self::id) if you want).
    ///
    /// With a [`session`](Self::session) too, the state is where a session that does not
    /// exist yet starts (a template conversation, with its running tools and hooks' state);
    /// an existing session replaces it on the first call. Without a session, a state that
    /// records [`running_tools`](AgentState::running_tools) or [`hooks`](AgentState::hooks)
    /// state fails the build: only a session keeps them (clear them to drop them).
    pub fn state(mut self, state: AgentState) -> Self {
        self.state = Some(state);
        self
    }

    /// Binds the agent to session `session_id` of `store`, so its conversation survives
    /// restarts and can be shared by several agent instances (processes, hosts):
    ///
    /// - every call (and [`observe`](ReActAgent::observe),
    ///   [`update_metadata`](ReActAgent::update_metadata)) first loads the session into
    ///   memory, after the busy check and before PreCall; a session that does not exist is a
    ///   fresh conversation (empty, or the [`state`](Self::state) given here). A failed load
    ///   fails the call with [`AgentError::Session`](agentscope_core::AgentError::Session)
    ///   before any hook runs and without storing or overwriting anything;
    /// - the call saves what changed at every step: after a reasoning message with tool
    ///   calls, before each tool runs (recording it as running; a parallel batch records its
    ///   calls together, as they start together), after each tool result as it settles
    ///   (before the stream shows it), and when it ends, however it ends (when these saves
    ///   are written is the [`durability`](Self::durability); by default, each before the
    ///   call goes on). Saves are
    ///   compare-and-swap: when another writer saved the session meanwhile, the call fails
    ///   with a [`SessionError::Conflict`](crate::session::SessionError::Conflict); a failed
    ///   save fails the call;
    /// - a dropped (cancelled) call or a killed process leaves the session as of its last
    ///   step; a tool call recorded as running without a result is **in doubt** on resume,
    ///   and handled as its tool's [`InDoubt`](agentscope_core::InDoubt) policy says (tell
    ///   the model, stop for the application, or run again with the same idempotency key).
    ///
    /// With a session the store is the source of truth: change memory through calls,
    /// [`observe`](ReActAgent::observe) and [`load_state`](ReActAgent::load_state), not with
    /// `memory().add(..)`, which the next load would undo. Requires the busy check (the
    /// default): a load must never replace memory under a running call. See
    /// `docs/sessions.md`.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_test::ScriptedModel;
    ///
    /// let store = JsonFileSessionStore::new(std::env::temp_dir().join("my-app-sessions"));
    /// let agent = ReActAgent::builder()
    ///     .model(ScriptedModel::new([]))
    ///     .session(store, "user-42")
    ///     .build()?;
    /// assert_eq!(agent.session_id(), Some("user-42"));
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn session(mut self, store: impl SessionStore, session_id: impl Into<String>) -> Self {
        self.session = Some((Arc::new(store), session_id.into()));
        self
    }

    /// When the [`session`](Self::session)'s saves are written: at every step
    /// ([`Durability::Step`], the default), in order beside the call's work
    /// ([`Durability::Async`]: the call waits only for a decision a hook stored at PreCall,
    /// before a tool that is not idempotent starts, and for its last save), or once when the
    /// call ends ([`Durability::Exit`], which gives up at-most-once across a crash, and so is
    /// refused with a [`ToolApprovalHook`](crate::hooks::ToolApprovalHook)). See
    /// [`Durability`]. Needs a session: without one the build fails.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope::session::Durability;
    /// use agentscope_test::ScriptedModel;
    ///
    /// let result = ReActAgent::builder()
    ///     .model(ScriptedModel::new([]))
    ///     .durability(Durability::Exit)
    ///     .build();
    /// assert!(matches!(result, Err(BuildError::InvalidConfig { .. })));
    /// ```
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = Some(durability);
        self
    }

    /// Replaces the ReAct loop with your own reply logic; the agent keeps the rest of its
    /// machinery (hooks, sessions, streaming, interrupts, state). The model is then
    /// optional: give one if the reply uses the model steps of its
    /// [`ReplyContext`](crate::ReplyContext). See [`Reply`].
    pub fn reply(mut self, reply: impl Reply) -> Self {
        self.reply = Some(Arc::new(reply));
        self
    }

    /// Builds the agent.
    ///
    /// # Errors
    ///
    /// [`BuildError::MissingModel`] without a model (unless a custom [`reply`](Self::reply)
    /// is set), [`BuildError::Toolkit`] when the toolkit
    /// rejected a tool, [`BuildError::InvalidConfig`] for `max_iters(0)`, a blank name, a
    /// [`state`](Self::state) that has another format version or holds a `System` message,
    /// a [`session`](Self::session) with a blank id or with `check_running(false)`, a
    /// [`durability`](Self::durability) without a session, or [`Durability::Exit`] with a
    /// [`ToolApprovalHook`](crate::hooks::ToolApprovalHook) (among the hooks or the
    /// [`SystemHooks`]): `Exit` cannot keep the hook's promise that an approved tool runs at
    /// most once (see [`Durability::Exit`]).
    pub fn build(self) -> Result<ReActAgent, BuildError> {
        let model = match (self.model, &self.reply) {
            (Some(model), _) => model,
            (None, Some(_)) => BoxedModel::new(NoModel),
            (None, None) => return Err(BuildError::MissingModel),
        };
        if let Some(err) = self.settings.toolkit.error() {
            return Err(BuildError::Toolkit(err.clone()));
        }
        if self.settings.max_iters == 0 {
            return Err(BuildError::InvalidConfig {
                message: "max_iters must be at least 1".to_owned(),
            });
        }
        if self.name.trim().is_empty() {
            return Err(BuildError::InvalidConfig {
                message: "the agent name must not be blank".to_owned(),
            });
        }
        if let Some(state) = &self.state {
            state.check().map_err(|error| BuildError::InvalidConfig {
                message: format!("invalid agent state: {error}"),
            })?;
            if self.session.is_none() {
                check_sessionless(state).map_err(|message| BuildError::InvalidConfig {
                    message: format!("invalid agent state: {message}"),
                })?;
            }
        }
        if self.session.is_none()
            && let Some(durability) = self.durability
        {
            return Err(BuildError::InvalidConfig {
                message: format!(
                    "durability({durability:?}) says when a session's saves are written, and \
                     the agent has no session: bind one with session(..)"
                ),
            });
        }
        if let Some((_, id)) = &self.session {
            if id.trim().is_empty() {
                return Err(BuildError::InvalidConfig {
                    message: "the session id must not be blank".to_owned(),
                });
            }
            if !self.settings.check_running {
                return Err(BuildError::InvalidConfig {
                    message: "a session needs the busy check (check_running(true)): a call's \
                              load would replace memory under another running call"
                        .to_owned(),
                });
            }
        }
        let memory = self
            .memory
            .unwrap_or_else(|| Arc::new(InMemoryMemory::new()));
        if let Some(state) = &self.state {
            memory.clear();
            memory.extend(state.messages.clone());
        }
        let metadata = self
            .state
            .as_ref()
            .map(|state| state.metadata.clone())
            .unwrap_or_default();
        let initial = self.state;
        let session = self.session.map(|(store, id)| {
            SessionBinding::new(store, id, initial, self.durability.unwrap_or_default())
        });
        // The agent's own hooks first, then the system hooks: at equal priority the agent's
        // run first, as in AgentScope-Java (and Python's instance-before-class hooks).
        let mut hooks = self.hooks;
        hooks.extend_from(&SystemHooks::snapshot());
        if let Some(message) = session
            .as_ref()
            .and_then(|session| durability_refuses(session.durability(), &hooks))
        {
            return Err(BuildError::InvalidConfig { message });
        }
        let id = self.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let model_name: Arc<str> = Arc::from(model.model_name());
        let tool_scope = SharedString::from(session.as_ref().map_or(&*id, |session| session.id()));
        let mut info = AgentInfo::new(self.name, id);
        if let Some(provider) = model.provider_name() {
            info = info.with_model_provider(provider);
        }
        if let Some(session) = &session {
            info = info.with_conversation_id(session.id());
        }
        let config = AgentConfig {
            info: Arc::new(info),
            system_seed: self
                .sys_prompt
                .filter(|prompt| !prompt.trim().is_empty())
                .map(Msg::system),
            model,
            model_name,
            memory,
            session,
            tool_scope,
            settings: self.settings,
        };
        Ok(ReActAgent::new(
            config,
            AgentRuntime::new(hooks, metadata),
            self.reply,
        ))
    }
}
