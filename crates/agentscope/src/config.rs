//! [`AgentConfig`]: every setting of an agent, declared once. The builder fills it, the
//! engine reads it; nothing changes it after `build()`.

use std::sync::Arc;

use agentscope_core::SharedString;
use agentscope_core::{
    AgentError, AgentInfo, BoxedModel, CancellationToken, GenerateOptions, Memory, Msg,
};
use serde_json::{Map, Value};

use crate::runtime::AgentRuntime;
use crate::session::{AgentIdentity, Current, SessionBinding, Synced};
use crate::toolkit::Toolkit;

/// The settings that have a default: the builder starts from [`Settings::default`] and its
/// setters change them in place.
#[derive(Clone)]
pub(crate) struct Settings {
    /// The tools.
    pub(crate) toolkit: Toolkit,
    /// Reasoning steps that call tools before the agent summarises instead (at least 1).
    pub(crate) max_iters: usize,
    /// `goto_reasoning` re-entries allowed per call.
    pub(crate) max_goto_reasoning: usize,
    /// Generation options for every model call.
    pub(crate) options: Arc<GenerateOptions>,
    /// Whether a second concurrent call fails with `AgentError::Busy`.
    pub(crate) check_running: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            toolkit: Toolkit::new(),
            max_iters: 10,
            max_goto_reasoning: 10,
            options: Arc::default(),
            check_running: true,
        }
    }
}

/// Everything the builder decided; read-only for the rest of the agent's life.
pub(crate) struct AgentConfig {
    /// The agent's name and id.
    pub(crate) info: Arc<AgentInfo>,
    /// The system message each call is seeded with (built once from `sys_prompt`).
    pub(crate) system_seed: Option<Msg>,
    pub(crate) model: BoxedModel,
    /// The model's name, read once.
    pub(crate) model_name: Arc<str>,
    pub(crate) memory: Arc<dyn Memory>,
    /// The session the agent is bound to (`builder.session(..)`).
    pub(crate) session: Option<SessionBinding>,
    /// The conversation its tool calls belong to, for their idempotency keys: the session
    /// id, else the agent's id (made once: every tool call gets a cheap clone).
    pub(crate) tool_scope: SharedString,
    pub(crate) settings: Settings,
}

impl AgentConfig {
    /// The tools.
    pub(crate) fn toolkit(&self) -> &Toolkit {
        &self.settings.toolkit
    }

    /// The identity saved with the agent's state.
    pub(crate) fn identity(&self) -> AgentIdentity {
        AgentIdentity::new(self.info.name(), self.info.id())
    }

    /// What a save of the session is made from now: memory, `runtime`'s metadata and the
    /// call's hooks' state (`None` when no hook saw the call).
    pub(crate) fn current<'a>(
        &'a self,
        runtime: &'a AgentRuntime,
        hooks: Option<&'a Map<String, Value>>,
    ) -> Current<'a> {
        Current {
            agent: self.identity(),
            memory: &*self.memory,
            metadata: runtime.metadata(),
            hooks,
        }
    }

    /// With a session: takes its lease (from a store that coordinates instances;
    /// interrupts for the session cancel `interrupt`) and loads it into memory and
    /// `runtime`'s metadata (call this holding the agent; end with
    /// [`release_session`](Self::release_session)).
    pub(crate) async fn load_session(
        &self,
        runtime: &AgentRuntime,
        interrupt: &CancellationToken,
    ) -> Result<Option<Synced>, AgentError> {
        match &self.session {
            Some(session) => session
                .load(&*self.memory, runtime.metadata(), interrupt)
                .await
                .map(Some),
            None => Ok(None),
        }
    }

    /// With a session: gives back the lease [`load_session`](Self::load_session) took.
    pub(crate) async fn release_session(&self, synced: Option<Synced>) {
        if let (Some(session), Some(synced)) = (&self.session, synced) {
            session.release(synced).await;
        }
    }

    /// With a session: saves what changed since `synced` (memory, metadata, running tools).
    pub(crate) async fn save_session(
        &self,
        runtime: &AgentRuntime,
        synced: Option<&mut Synced>,
        hooks: Option<&Map<String, Value>>,
    ) -> Result<(), AgentError> {
        match (&self.session, synced) {
            (Some(session), Some(synced)) => {
                session.save(synced, &self.current(runtime, hooks)).await
            }
            _ => Ok(()),
        }
    }
}
