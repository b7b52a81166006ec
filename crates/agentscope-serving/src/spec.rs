//! [`AgentSpec`]: how a server makes the agent of one served run.

use std::fmt;
use std::sync::Arc;

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::session::SessionStore;
use agentscope::{HookChain, HookId, HookInfo, ReActAgent, ReActAgentBuilder, SystemHooks};

/// How to make an agent for one served run: a factory of a configured builder (model, tools,
/// hooks, prompt), and optionally which tool calls need a person's approval.
///
/// The server adds the conversation's session and, with [`approval`](Self::approval), a
/// [`ToolApprovalHook`], then builds a fresh agent for every run: agents are cheap, and a
/// conversation's state lives in the store, so any instance can serve its next run.
///
/// # An agent with its own approval hook
///
/// A builder that registers its own [`ToolApprovalHook`] is served with that hook's policy,
/// as if it were given to [`approval`](Self::approval): its stops become questions of the
/// protocol (AG-UI interrupts, A2A `input-required`) that the client answers. The server
/// reads the policy once, when it is built (it calls the factory), and for every run
/// replaces the builder's hook with a fresh one of the same policy, restored from the
/// session: decisions belong to a conversation, so a hook the application keeps (and clones
/// into every builder) never sees them. Two policies for one agent (the builder's hook and
/// `approval`, or two hooks) are refused when the server is built.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope_serving::AgentSpec;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// let model = ScriptedModel::new([ScriptedResponse::text("Hi!")]).cycling();
/// let spec = AgentSpec::new(move || ReActAgent::builder().model(model.clone()))
///     .approval(ApprovalPolicy::tools(["delete_files"]));
/// # let _ = spec;
/// ```
#[derive(Clone)]
pub struct AgentSpec {
    factory: Arc<dyn Fn() -> ReActAgentBuilder + Send + Sync>,
    approval: Option<ApprovalPolicy>,
}

/// Counts and removes the [`ToolApprovalHook`]s of `hooks`; returns the first one's
/// policy and how many there were.
fn take_approval_hooks(hooks: &mut HookChain) -> (Option<ApprovalPolicy>, usize) {
    let found: Vec<(HookId, ApprovalPolicy)> = hooks
        .of_type::<ToolApprovalHook>()
        .map(|(id, hook)| (id, hook.policy().clone()))
        .collect();
    for (id, _) in &found {
        hooks.remove(*id);
    }
    let count = found.len();
    (found.into_iter().next().map(|(_, policy)| policy), count)
}

/// How many hooks of `hooks` are named like a [`ToolApprovalHook`]: the hook itself, or one
/// wrapped (in an `Arc`, in a type of the application) that the server cannot take over.
fn named_approval_hooks(hooks: &[HookInfo]) -> usize {
    hooks
        .iter()
        .filter(|hook| hook.name == ToolApprovalHook::NAME)
        .count()
}

impl AgentSpec {
    /// An agent made by `factory` for every run.
    pub fn new(factory: impl Fn() -> ReActAgentBuilder + Send + Sync + 'static) -> Self {
        Self {
            factory: Arc::new(factory),
            approval: None,
        }
    }

    /// Tool calls this policy selects stop the run for a decision (an AG-UI interrupt, an
    /// A2A `input-required` task).
    #[must_use]
    pub fn approval(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = Some(policy);
        self
    }

    /// Takes over the approval hook the factory's builder registers (see
    /// [the type's docs](Self#an-agent-with-its-own-approval-hook)), or refuses two
    /// policies; `name` is the agent's name in the server.
    pub(crate) fn adopt_own_approvals(&mut self, name: &str) -> Result<(), String> {
        let two = |what: &str| format!("agent '{name}' has two approval policies: {what}");
        if SystemHooks::order()
            .iter()
            .any(|hook| hook.name == ToolApprovalHook::NAME)
        {
            return Err(format!(
                "a ToolApprovalHook is registered with SystemHooks::add, so every agent \
                 shares its approvals, and the server cannot answer its stops: remove it and \
                 give agent '{name}' its policy with AgentSpec::approval"
            ));
        }
        let mut builder = (self.factory)();
        let (policy, count, named) = builder.edit_hooks(|hooks| {
            let named = named_approval_hooks(&hooks.order());
            let (policy, count) = take_approval_hooks(hooks);
            (policy, count, named)
        });
        if named > count {
            return Err(format!(
                "agent '{name}': its builder registers a hook named '{}' that is not a \
                 ToolApprovalHook itself (a wrapper, an Arc), which the server cannot take \
                 over; register the ToolApprovalHook itself, or give its policy to \
                 AgentSpec::approval",
                ToolApprovalHook::NAME
            ));
        }
        match (policy, count, &self.approval) {
            (None, _, _) => Ok(()),
            (Some(_), 1, Some(_)) => Err(two(
                "its builder registers a ToolApprovalHook and its AgentSpec sets \
                 .approval(..); keep one (the server turns the stops of either into AG-UI \
                 interrupts)",
            )),
            (Some(policy), 1, None) => {
                self.approval = Some(policy);
                Ok(())
            }
            (Some(_), count, _) => Err(two(&format!(
                "its builder registers {count} ToolApprovalHooks; keep one (or none, and set \
                 AgentSpec::approval)"
            ))),
        }
    }

    /// A new approval hook for one run, when the agent has an approval policy.
    pub(crate) fn approvals(&self) -> Option<ToolApprovalHook> {
        self.approval.clone().map(ToolApprovalHook::new)
    }

    /// The agent for one run on `session`, with `approvals` in place of the approval hook its
    /// builder registers (the server took it over when it was built).
    pub(crate) fn build(
        &self,
        store: &Arc<dyn SessionStore>,
        session: &str,
        approvals: Option<&ToolApprovalHook>,
    ) -> Result<ReActAgent, String> {
        let mut builder = (self.factory)().session(Arc::clone(store), session);
        let (_, own) = builder.edit_hooks(take_approval_hooks);
        if own > 0 && approvals.is_none() {
            return Err(
                "the agent's builder registers a ToolApprovalHook it did not register \
                 when the server was built, so the server cannot answer its stops; register it \
                 every time, or give its policy to AgentSpec::approval"
                    .to_owned(),
            );
        }
        if let Some(approvals) = approvals {
            builder = builder.hook(approvals.clone());
        }
        let agent = builder
            .build()
            .map_err(|err| format!("the agent cannot be built: {err}"))?;
        // A hook the server does not answer (a system hook added since, a wrapped hook the
        // factory registers now) would end runs as successes with calls pending.
        let expected = usize::from(approvals.is_some());
        if named_approval_hooks(&agent.hook_order()) != expected {
            return Err(
                "the agent has an approval hook the server does not answer (a \
                 ToolApprovalHook wrapped, or added with SystemHooks::add after the server \
                 was built); give its policy to AgentSpec::approval instead"
                    .to_owned(),
            );
        }
        Ok(agent)
    }
}

impl fmt::Debug for AgentSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentSpec")
            .field("approval", &self.approval.is_some())
            .finish_non_exhaustive()
    }
}
