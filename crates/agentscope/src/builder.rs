//! [`ReActAgentBuilder`].

use std::sync::Arc;

use agentscope_core::{AgentInfo, BoxedModel, GenerateOptions, Hook, HookChain, Memory, Model};

use crate::agent::{AgentConfig, ReActAgent};
use crate::error::BuildError;
use crate::memory::InMemoryMemory;
use crate::system_hooks::SystemHooks;
use crate::toolkit::Toolkit;

/// Builds a [`ReActAgent`]; start with [`ReActAgent::builder`].
///
/// Only the model is required. Defaults: name `"assistant"`, a new UUID as id, no system
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
    toolkit: Toolkit,
    memory: Option<Arc<dyn Memory>>,
    max_iters: usize,
    max_goto_reasoning: usize,
    options: GenerateOptions,
    check_running: bool,
    hooks: HookChain,
}

impl Default for ReActAgentBuilder {
    fn default() -> Self {
        Self {
            name: "assistant".to_owned(),
            id: None,
            sys_prompt: None,
            model: None,
            toolkit: Toolkit::new(),
            memory: None,
            max_iters: 10,
            max_goto_reasoning: 10,
            options: GenerateOptions::default(),
            check_running: true,
            hooks: HookChain::new(),
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
        self.toolkit = toolkit;
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
        self.max_iters = max_iters;
        self
    }

    /// How many `goto_reasoning` re-entries one call allows (default 10).
    pub fn max_goto_reasoning(mut self, max: usize) -> Self {
        self.max_goto_reasoning = max;
        self
    }

    /// Generation options for every model call (hooks can change them per call).
    pub fn generate_options(mut self, options: GenerateOptions) -> Self {
        self.options = options;
        self
    }

    /// Whether a second concurrent call fails with `AgentError::Busy` (default `true`).
    /// Turn it off only when the memory and hooks tolerate interleaved calls.
    pub fn check_running(mut self, check: bool) -> Self {
        self.check_running = check;
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

    /// Builds the agent.
    ///
    /// # Errors
    ///
    /// [`BuildError::MissingModel`] without a model, [`BuildError::Toolkit`] when the toolkit
    /// rejected a tool, [`BuildError::InvalidConfig`] for `max_iters(0)` or a blank name.
    pub fn build(self) -> Result<ReActAgent, BuildError> {
        let model = self.model.ok_or(BuildError::MissingModel)?;
        if let Some(err) = self.toolkit.error() {
            return Err(BuildError::Toolkit(err.clone()));
        }
        if self.max_iters == 0 {
            return Err(BuildError::InvalidConfig {
                message: "max_iters must be at least 1".to_owned(),
            });
        }
        if self.name.trim().is_empty() {
            return Err(BuildError::InvalidConfig {
                message: "the agent name must not be blank".to_owned(),
            });
        }
        let mut hooks = SystemHooks::snapshot();
        hooks.extend_from(&self.hooks);
        let id = self.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        Ok(ReActAgent::from_config(AgentConfig {
            info: AgentInfo::new(self.name, id),
            sys_prompt: self.sys_prompt.filter(|prompt| !prompt.trim().is_empty()),
            model,
            toolkit: self.toolkit,
            memory: self
                .memory
                .unwrap_or_else(|| Arc::new(InMemoryMemory::new())),
            max_iters: self.max_iters,
            max_goto_reasoning: self.max_goto_reasoning,
            options: self.options,
            check_running: self.check_running,
            hooks,
        }))
    }
}
