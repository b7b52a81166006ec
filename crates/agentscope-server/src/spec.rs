//! [`AgentSpec`]: how the server makes the agent of one run.

use std::fmt;
use std::sync::Arc;

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::session::SessionStore;
use agentscope::{ReActAgent, ReActAgentBuilder};

use crate::error::ApiError;

/// How to make an agent for one run: a factory of a configured builder (model, tools,
/// hooks, prompt), and optionally which tool calls need a person's approval.
///
/// The server adds the thread's session and, with [`approval`](Self::approval), a
/// [`ToolApprovalHook`], then builds a fresh agent for every run: agents are cheap, and a
/// thread's state lives in the store, so any instance can serve its next run.
///
/// ```
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
