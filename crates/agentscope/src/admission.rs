//! [`Admission`]: a call whose input is decided from the session it loaded, under the
//! session's lease, before any hook runs ([`ReActAgent::stream_admitted`]).
//!
//! A server deciding what a request does from what a session awaits (a question to answer,
//! a call in doubt, a message already received) must decide from a state no other instance
//! can change meanwhile: read with a plain `load` and then called, the session may have
//! moved on in between (another instance's call started a tool and died, and the new
//! message would tell the model about that call instead of asking about it). The admission
//! check runs inside the call, after the call took the session's lease and loaded it, and
//! either gives the call its input or refuses it, storing what it recorded in the session's
//! [`HookState`] with the same lease.
//!
//! [`ReActAgent::stream_admitted`]: crate::ReActAgent::stream_admitted

use std::fmt;

use agentscope_core::session::{AgentIdentity, AgentState, HookState};
use agentscope_core::{Memory, Msg};
use serde_json::{Map, Value};

use crate::CallInput;

/// The check that decides a call's input (see
/// [`ReActAgent::stream_admitted`](crate::ReActAgent::stream_admitted)).
pub(crate) type Admit =
    Box<dyn FnOnce(&mut Admission<'_>) -> Result<CallInput, Refusal> + Send + 'static>;

/// The session a call loaded, as its admission check sees it: the conversation, the tool
/// calls recorded as running, the hooks' state and the user metadata, as stored, and
/// whether the call holds the session's lease (then no other instance can change the
/// session until the call ends).
///
/// The check may change the hooks' state ([`hooks_mut`](Self::hooks_mut)): an admitted call
/// starts with it (PreCall hooks see it, and the call saves it before anything runs); a
/// refused call stores it, under the call's lease, before it returns.
pub struct Admission<'a> {
    agent: AgentIdentity,
    memory: &'a dyn Memory,
    messages: Option<Vec<Msg>>,
    running: &'a [String],
    hooks: HookState,
    metadata: &'a Map<String, Value>,
    revision: u64,
    leased: bool,
}

impl fmt::Debug for Admission<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("revision", &self.revision)
            .field("leased", &self.leased)
            .field("running_tools", &self.running)
            .finish_non_exhaustive()
    }
}

impl<'a> Admission<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        agent: AgentIdentity,
        memory: &'a dyn Memory,
        running: &'a [String],
        hooks: Map<String, Value>,
        metadata: &'a Map<String, Value>,
        revision: u64,
        leased: bool,
    ) -> Self {
        Self {
            agent,
            memory,
            messages: None,
            running,
            hooks: HookState::new(hooks),
            metadata,
            revision,
            leased,
        }
    }

    /// The conversation as loaded, oldest first.
    pub fn messages(&mut self) -> &[Msg] {
        self.messages.get_or_insert_with(|| self.memory.messages())
    }

    /// The tool calls (by id) recorded as running: started, with no stored result. While the
    /// call holds the session's lease ([`is_leased`](Self::is_leased)) none of them is
    /// running anywhere: each is in doubt.
    pub fn running_tools(&self) -> &[String] {
        self.running
    }

    /// The hooks' session state as stored (with this check's changes).
    pub fn hooks(&self) -> &HookState {
        &self.hooks
    }

    /// The hooks' session state, to change: an admitted call starts with it, a refused
    /// call stores it.
    pub fn hooks_mut(&mut self) -> &mut HookState {
        &mut self.hooks
    }

    /// The user metadata as stored.
    pub fn metadata(&self) -> &Map<String, Value> {
        self.metadata
    }

    /// The stored revision (`0`: the session does not exist yet).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Whether the call holds the session's lease: the store coordinates instances, and no
    /// other call runs on the session until this one ends. `false` with a store that does
    /// not lease, and for an agent without a session.
    pub fn is_leased(&self) -> bool {
        self.leased
    }

    /// The session as a whole state (the conversation, running tools, hooks' state and
    /// metadata, as stored, with this check's changes to the hooks' state): what
    /// `ToolApprovalHook::restore_state` reads.
    pub fn state(&mut self) -> AgentState {
        let messages = self.messages().to_vec();
        let mut state =
            AgentState::new(self.agent.clone(), messages).with_metadata(self.metadata.clone());
        state.revision = self.revision;
        state.running_tools = self.running.to_vec();
        state.hooks = self.hooks.entries().clone();
        state
    }

    pub(crate) fn into_hooks(self) -> Map<String, Value> {
        self.hooks.into_entries()
    }
}

/// Why an admission check refused its call: the call ends with
/// [`AgentError::Refused`](crate::AgentError::Refused) carrying it, after storing the
/// check's changes to the hooks' state; no hook ran and nothing else was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    reason: String,
}

impl Refusal {
    /// A refusal, saying why.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }

    /// Why.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    pub(crate) fn into_reason(self) -> String {
        self.reason
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}
