//! [`ToolApprovalHook`]: human in the loop. Tool calls that need approval stop the agent
//! until the caller approves, edits or rejects them.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 200 | PreCall, PostReasoning, PreActing, PostActing | PostReasoning: `stop_agent()` when a tool call needs approval (the calls are then awaiting); PreCall: fails a resume that would run an awaiting call without a decision, before anything is stored; PreActing: approve runs the call, edit runs it with new arguments (`set_tool_use`), reject answers it with an error result (`skip_with`); PostActing: adds a note about an edit to the result |
//!
//! See [`ToolApprovalHook`] for the flow and the exact texts, and [`ApprovalPolicy`] for
//! choosing the calls that need approval.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentscope_core::pending_tool_uses;
use agentscope_core::session::{AgentState, HookState};
use agentscope_core::{
    CallInfo, ContentBlock, Hook, HookError, HookEvent, HookEventType, InDoubt, Msg, ToolKind,
    ToolResultBlock, ToolUseBlock,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::spans::{Decision, record};
use crate::toolkit::argument_problems;

/// Which tool calls need approval.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope::ToolUseBlock;
/// use serde_json::json;
///
/// let shell = ToolUseBlock::new("c1", "shell", json!({"cmd": "rm -rf /tmp/x"}));
/// let search = ToolUseBlock::new("c2", "search", json!({"q": "rust"}));
/// assert!(ApprovalPolicy::all().requires_approval(&search));
/// assert!(ApprovalPolicy::tools(["shell"]).requires_approval(&shell));
/// assert!(!ApprovalPolicy::tools(["shell"]).requires_approval(&search));
/// let destructive = ApprovalPolicy::when(|call| {
///     call.input["cmd"].as_str().is_some_and(|cmd| cmd.starts_with("rm "))
/// });
/// assert!(destructive.requires_approval(&shell));
/// ```
#[derive(Clone)]
pub struct ApprovalPolicy {
    rule: Rule,
}

#[derive(Clone)]
enum Rule {
    All,
    Tools(Arc<HashSet<String>>),
    When(Arc<dyn Fn(&ToolUseBlock) -> bool + Send + Sync>),
}

impl ApprovalPolicy {
    /// Every tool call needs approval.
    pub fn all() -> Self {
        Self { rule: Rule::All }
    }

    /// Calls of the named tools need approval.
    pub fn tools<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            rule: Rule::Tools(Arc::new(names.into_iter().map(Into::into).collect())),
        }
    }

    /// Calls for which `rule` returns `true` need approval (it sees the name and the
    /// arguments).
    pub fn when<F>(rule: F) -> Self
    where
        F: Fn(&ToolUseBlock) -> bool + Send + Sync + 'static,
    {
        Self {
            rule: Rule::When(Arc::new(rule)),
        }
    }

    /// Whether `call` needs approval.
    pub fn requires_approval(&self, call: &ToolUseBlock) -> bool {
        match &self.rule {
            Rule::All => true,
            Rule::Tools(names) => names.contains(call.name.as_str()),
            Rule::When(rule) => rule(call),
        }
    }
}

impl fmt::Debug for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.rule {
            Rule::All => f.write_str("ApprovalPolicy::all()"),
            Rule::Tools(names) => {
                let mut names: Vec<&String> = names.iter().collect();
                names.sort();
                f.debug_tuple("ApprovalPolicy::tools")
                    .field(&names)
                    .finish()
            }
            Rule::When(_) => f.write_str("ApprovalPolicy::when(..)"),
        }
    }
}

/// What the caller decided for one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run the call as the model made it.
    Approve,
    /// Run the call with these arguments instead (same tool, same id).
    Edit(Value),
    /// Don't run the call; the model gets `"Rejected by the user: <reason>"`.
    Reject(String),
}

/// A decision was given for a call that is not awaiting approval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No call with this id is awaiting approval.
    #[error("tool call '{id}' is not awaiting approval (awaiting: [{}])", awaiting.join(", "))]
    NotAwaiting {
        /// The id given.
        id: String,
        /// The ids of the calls awaiting approval.
        awaiting: Vec<String>,
    },
    /// The edited arguments do not match the tool's JSON schema (the schema of the call's
    /// tool as the model saw it); nothing was decided.
    #[error("the new arguments for tool call '{id}' ({tool}) are invalid: {problems}")]
    InvalidArguments {
        /// The call's id.
        id: String,
        /// The tool's name.
        tool: String,
        /// What is wrong, with JSON paths.
        problems: String,
    },
}

/// Stops the agent when a tool call needs approval and applies the caller's decisions when
/// it resumes. A cheap `Clone` handle: keep one to decide, register a clone on the agent.
///
/// Priority 200; handles PreCall, PostReasoning, PreActing and PostActing.
///
/// # The flow
///
/// 1. The model calls a tool that the [`ApprovalPolicy`] says needs approval. At
///    PostReasoning the hook calls `stop_agent()`: the reasoning message is stored and
///    returned (`GenerateReason::ReasoningStopRequested`) and its tool calls stay pending
///    (all of them: calls that need no approval wait for the batch too). The calls that need
///    a decision are listed by [`ToolApprovalHook::pending`].
/// 2. The caller decides per call id: [`approve`](ToolApprovalHook::approve),
///    [`edit`](ToolApprovalHook::edit) (new arguments, same id) or
///    [`reject`](ToolApprovalHook::reject) (with a reason), then resumes with
///    `agent.call(())`.
/// 3. At PreActing the decisions apply: an approved call runs; an edited call runs with the
///    new arguments; a rejected call does not run and its result is the error
///    `"Rejected by the user: <reason>"`, which the model reads in its next request. Calls
///    that need no approval run as usual.
///
/// Resuming while a call still has no decision fails at PreCall, before anything is stored,
/// with `"tool calls awaiting approval: [<ids>]; approve, edit or reject them before
/// resuming"` ([`AgentError::Hook`](agentscope_core::AgentError::Hook)); memory is untouched,
/// so the caller can decide and resume again. New input that moves on instead (a user
/// message) is left to the engine: it fails with `PendingToolCalls` unless the
/// [`PendingToolRecoveryHook`](crate::hooks::PendingToolRecoveryHook) answers the calls, and
/// then they no longer await approval.
///
/// # Edits
///
/// The reasoning message was stored before PreActing, so memory keeps the model's original
/// arguments in its tool call; the tool runs with the edited ones, and the hook appends a
/// note to the result (`"Note: the user changed the arguments of this call to <json> before
/// it ran."`) so the model does not mistake the result for one of its own arguments.
/// [`edit`](ToolApprovalHook::edit) checks the new arguments against the tool's JSON schema
/// at once ([`ApprovalError::InvalidArguments`]).
///
/// # With a session
///
/// When the agent is bound to a session, the hook keeps its decisions not applied yet and
/// its remembered rejections in the session's [`HookState`] (under
/// [`ToolApprovalHook::NAME`]): they are stored once the resume passes PreCall and follow
/// the conversation to another process or a restart. A call the engine recorded as started
/// ([`CallInfo::was_started`]) is never held for approval again; if its result was never
/// stored (a crash mid-tool), it is in doubt, and the hook makes it stop the agent
/// ([`InDoubt::Stop`], with
/// [`GenerateReason::ToolInDoubt`](agentscope_core::GenerateReason::ToolInDoubt)) unless its
/// tool declares another policy: a person approved it, so the application, not the model,
/// decides whether it happened. See `docs/hitl.md` for the guarantee.
///
/// # No retry loops
///
/// Rejections are remembered as (tool name, arguments). When the model calls the same tool
/// with the same arguments again, the hook does not stop for approval again: the call is
/// rejected at once with `"Rejected by the user: <reason> (this exact call was rejected
/// before, so it was not run again; do not repeat it)"`.
/// [`clear_rejections`](ToolApprovalHook::clear_rejections) forgets them.
///
/// # Priority
///
/// 200: after user hooks at the default priority, so PostReasoning judges the reasoning
/// message as they left it; observers that should see the decisions applied (edited
/// arguments, rejection results) run later (tracing and JSONL trace hooks run at 900). A call
/// that reaches PreActing needing approval without a decision (a hook after this one added
/// it) is not run: it gets the error result `"Error: Tool call '<name>' requires approval and
/// was not approved."`.
///
/// Use one hook per agent: its awaiting list follows the conversation of the agent it is
/// registered on. Calls of [`ToolKind::Answer`] tools (such as the `generate_response` call
/// of `ReActAgent::call_structured`) are never held, whatever the
/// policy: they run nothing, they carry the answer.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope_test::tools::Calculator;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
/// use serde_json::json;
///
/// # futures::executor::block_on(async {
/// let model = ScriptedModel::new([
///     ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"})),
///     ScriptedResponse::text("It is 42."),
/// ]);
/// let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["calculator"]));
/// let agent = ReActAgent::builder()
///     .model(model)
///     .toolkit(Toolkit::new().tool(Calculator::new()))
///     .hook(approvals.clone())
///     .build()?;
///
/// let stopped = agent.call("What is 6*7?").await?;
/// assert_eq!(stopped.generate_reason(), Some(GenerateReason::ReasoningStopRequested));
/// assert_eq!(approvals.pending()[0].id, "c1");
///
/// approvals.approve("c1")?;
/// let reply = agent.call(()).await?;
/// assert_eq!(reply.text(), "It is 42.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ToolApprovalHook {
    inner: Arc<Inner>,
}

struct Inner {
    policy: ApprovalPolicy,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Calls held for approval, in call order (decided or not).
    awaiting: Vec<ToolUseBlock>,
    /// Decisions by call id, until their call settles (PostActing); PreActing applies them.
    decisions: HashMap<String, ApprovalDecision>,
    /// Rejected (tool name, arguments) pairs and why.
    rejected: Vec<(String, Value, String)>,
    /// Edited calls whose result still needs the note, by id.
    edited: HashMap<String, Value>,
    /// The parameter schemas of the awaiting calls' tools (from the call context), to
    /// validate edits at once.
    schemas: HashMap<String, Arc<Value>>,
    /// `clear_rejections` was called: the session's remembered rejections go too.
    rejections_cleared: bool,
}

/// What the hook keeps with the agent's session ([`HookState`], under
/// [`ToolApprovalHook::NAME`]): decisions not applied yet and remembered rejections.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Persisted {
    #[serde(default)]
    decisions: HashMap<String, ApprovalDecision>,
    #[serde(default)]
    rejected: Vec<(String, Value, String)>,
}

impl State {
    /// Records the parameter schemas of the awaiting calls' tools.
    fn remember_schemas(&mut self, info: &CallInfo) {
        for call in &self.awaiting {
            if let Some(schema) = info.tool_schema(&call.name) {
                self.schemas
                    .insert(call.name.to_string(), schema.parameters.clone());
            }
        }
    }

    fn rejection_of(&self, call: &ToolUseBlock) -> Option<&str> {
        self.rejected
            .iter()
            .find(|(name, input, _)| *name == call.name && *input == call.input)
            .map(|(_, _, reason)| reason.as_str())
    }

    /// Whether `call` must wait for a decision.
    fn needs_decision(
        &self,
        policy: &ApprovalPolicy,
        call: &ToolUseBlock,
        info: Option<&CallInfo>,
    ) -> bool {
        guarded(policy, call, info)
            && !info.is_some_and(|info| info.was_started(&call.id))
            && !self.decisions.contains_key(call.id.as_str())
            && self.rejection_of(call).is_none()
    }
}

impl ToolApprovalHook {
    /// The hook's name in the chain.
    pub const NAME: &'static str = "tool_approval";
    /// The hook's priority.
    pub const PRIORITY: i32 = 200;

    /// A hook asking for approval of the calls `policy` selects.
    pub fn new(policy: ApprovalPolicy) -> Self {
        Self {
            inner: Arc::new(Inner {
                policy,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &ApprovalPolicy {
        &self.inner.policy
    }

    /// The calls awaiting a decision, in call order (decided calls drop out).
    pub fn pending(&self) -> Vec<ToolUseBlock> {
        let state = self.state();
        state
            .awaiting
            .iter()
            .filter(|call| !state.decisions.contains_key(call.id.as_str()))
            .cloned()
            .collect()
    }

    /// Runs the call as the model made it.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotAwaiting`] when no call with this id awaits approval.
    pub fn approve(&self, id: impl AsRef<str>) -> Result<(), ApprovalError> {
        self.decide(id, ApprovalDecision::Approve)
    }

    /// Runs the call with `input` as its arguments (they are validated against the tool's
    /// schema like the model's).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotAwaiting`] when no call with this id awaits approval.
    pub fn edit(&self, id: impl AsRef<str>, input: Value) -> Result<(), ApprovalError> {
        self.decide(id, ApprovalDecision::Edit(input))
    }

    /// Does not run the call; the model gets `"Rejected by the user: <reason>"`.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotAwaiting`] when no call with this id awaits approval.
    pub fn reject(
        &self,
        id: impl AsRef<str>,
        reason: impl Into<String>,
    ) -> Result<(), ApprovalError> {
        self.decide(id, ApprovalDecision::Reject(reason.into()))
    }

    /// Records a decision for an awaiting call (a later decision replaces an earlier one
    /// until the agent resumes).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotAwaiting`] when no call with this id awaits approval.
    pub fn decide(
        &self,
        id: impl AsRef<str>,
        decision: ApprovalDecision,
    ) -> Result<(), ApprovalError> {
        let id = id.as_ref().to_owned();
        let mut state = self.state();
        let Some(call) = state.awaiting.iter().find(|call| call.id == id) else {
            return Err(ApprovalError::NotAwaiting {
                id,
                awaiting: state
                    .awaiting
                    .iter()
                    .map(|call| call.id.to_string())
                    .collect(),
            });
        };
        if let (ApprovalDecision::Edit(input), Some(schema)) =
            (&decision, state.schemas.get(call.name.as_str()))
        {
            // An uncompilable schema is reported when the tool is registered, not here.
            if let Ok(validator) = jsonschema::validator_for(schema)
                && let Some(problems) = argument_problems(&validator, input)
            {
                return Err(ApprovalError::InvalidArguments {
                    id,
                    tool: call.name.to_string(),
                    problems,
                });
            }
        }
        state.decisions.insert(id, decision);
        Ok(())
    }

    /// Rebuilds the awaiting list from a conversation (the agent's memory, e.g. after it was
    /// restored from storage): the pending calls of its last assistant message that need
    /// approval. Decisions already given are kept.
    ///
    /// In a new process with a session, pass the stored messages
    /// (`store.load(id).await?` then `state.messages`) before deciding; see `docs/hitl.md`.
    pub fn restore(&self, history: &[Msg]) {
        let mut state = self.state();
        let awaiting: Vec<ToolUseBlock> = pending_tool_uses(history)
            .into_iter()
            .filter(|call| {
                guarded(&self.inner.policy, call, None) && state.rejection_of(call).is_none()
            })
            .collect();
        state
            .decisions
            .retain(|id, _| awaiting.iter().any(|call| call.id == *id));
        state.awaiting = awaiting;
    }

    /// Rebuilds the awaiting list from a stored session, in a process that has not run a
    /// call on it yet: like [`restore`](Self::restore) on its messages, and also with the
    /// decisions and rejections the session stored (made in another process: they await
    /// nothing any more), and without the calls recorded as started (a call starts only
    /// after its decision was stored).
    ///
    /// ```
    /// use agentscope::session::{AgentIdentity, AgentState};
    /// use agentscope::prelude::*;
    /// use agentscope::ToolUseBlock;
    /// use serde_json::json;
    ///
    /// let asked = Msg::builder().role(Role::Assistant)
    ///     .block(ToolUseBlock::new("c1", "rm", json!({})))
    ///     .block(ToolUseBlock::new("c2", "rm", json!({}))).build();
    /// let mut state = AgentState::new(AgentIdentity::new("assistant", "a-1"),
    ///     vec![Msg::user("Remove both"), asked]);
    /// state.running_tools = vec!["c1".into()]; // approved and started elsewhere
    /// let approvals = ToolApprovalHook::new(ApprovalPolicy::all());
    /// approvals.restore_state(&state)?;
    /// let pending: Vec<String> = approvals.pending().into_iter().map(|c| c.id.to_string()).collect();
    /// assert_eq!(pending, ["c2"]);
    /// # Ok::<(), agentscope::HookError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The hook's entry in the stored state cannot be read (written by another version of
    /// the hook): nothing changes, and the entry stays stored.
    pub fn restore_state(&self, stored: &AgentState) -> Result<(), HookError> {
        let hooks = HookState::new(stored.hooks.clone());
        Self::merge_stored(&mut self.state(), Some(&hooks))?;
        self.restore(&stored.messages);
        self.state()
            .awaiting
            .retain(|call| !stored.running_tools.iter().any(|id| call.id == *id));
        Ok(())
    }

    /// Gives the hook the parameter schemas of `toolkit`'s tools, so that
    /// [`edit`](Self::edit) checks new arguments before the agent's first call: after
    /// [`restore`](Self::restore) in a new process, the hook has not seen a call's context
    /// yet and would otherwise accept any arguments (the tool's own validation would then
    /// refuse them when it runs).
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope::ToolUseBlock;
    /// use serde_json::json;
    ///
    /// let toolkit = Toolkit::new().tool(tool_fn("rm", "Removes a file.",
    ///     json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    ///     |_input, _ctx| async { Ok("removed") }));
    /// let approvals = ToolApprovalHook::new(ApprovalPolicy::all());
    /// let asked = Msg::builder().role(Role::Assistant)
    ///     .block(ToolUseBlock::new("c1", "rm", json!({"path": "a.txt"}))).build();
    /// approvals.restore(&[Msg::user("Remove a.txt"), asked]);
    /// approvals.learn_tools(&toolkit);
    /// assert!(approvals.edit("c1", json!({"path": 7})).is_err());
    /// assert!(approvals.edit("c1", json!({"path": "b.txt"})).is_ok());
    /// ```
    pub fn learn_tools(&self, toolkit: &crate::Toolkit) {
        let mut state = self.state();
        for schema in toolkit.schemas() {
            state
                .schemas
                .insert(schema.name.clone(), schema.parameters.clone());
        }
    }

    /// Forgets the rejected calls, so identical calls ask for approval again.
    pub fn clear_rejections(&self) {
        let mut state = self.state();
        state.rejected.clear();
        state.rejections_cleared = true;
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn handle(&self, event: &mut HookEvent) -> Result<(), HookError> {
        let result = self.apply(event);
        // Decisions and rejections go to the session (when the agent has one), saved at the
        // call's next step; a decision is stored before its tool is recorded as started.
        if matches!(
            event.event_type(),
            HookEventType::PreCall | HookEventType::PreActing | HookEventType::PostActing
        ) && let Some(stored) = event.extensions_mut().get_mut::<HookState>()
            // An entry this version cannot read is left as stored, never overwritten.
            && stored.get::<Persisted>(Self::NAME).is_ok()
        {
            let state = self.state();
            let persisted = Persisted {
                decisions: state.decisions.clone(),
                rejected: state.rejected.clone(),
            };
            if persisted.decisions.is_empty() && persisted.rejected.is_empty() {
                stored.remove(Self::NAME);
            } else {
                stored.set(Self::NAME, &persisted);
            }
        }
        result
    }

    /// Takes in what the session stored: decisions made in another process (or before a
    /// restart) and remembered rejections; decisions made here since win.
    ///
    /// # Errors
    ///
    /// The stored entry cannot be read (another version of the hook wrote it): nothing is
    /// taken in, and the entry stays stored.
    fn merge_stored(state: &mut State, stored: Option<&HookState>) -> Result<(), HookError> {
        let stored = match stored {
            Some(stored) => stored.get::<Persisted>(Self::NAME)?,
            None => None,
        };
        let Some(stored) = stored else {
            state.rejections_cleared = false;
            return Ok(());
        };
        for (id, decision) in stored.decisions {
            state.decisions.entry(id).or_insert(decision);
        }
        if !std::mem::take(&mut state.rejections_cleared) {
            for rejection in stored.rejected {
                if !state.rejected.contains(&rejection) {
                    state.rejected.push(rejection);
                }
            }
        }
        Ok(())
    }

    fn apply(&self, event: &mut HookEvent) -> Result<(), HookError> {
        let policy = &self.inner.policy;
        match event {
            // Observing runs no tool: nothing to approve.
            HookEvent::PreCall(e) if e.is_observation() => Ok(()),
            HookEvent::PreCall(e) => {
                Self::merge_stored(&mut self.state(), e.extensions().get::<HookState>())?;
                let pending = pending_tool_uses(e.history());
                // A guarded call in doubt (a person decided, it started, its result was
                // never stored) stops for the application unless its tool says otherwise.
                for call in &pending {
                    if e.call().was_started(&call.id) && guarded(policy, call, Some(e.call())) {
                        e.set_in_doubt(call.id.to_string(), InDoubt::Stop);
                    }
                }
                let input = e.input_messages();
                let answered: HashSet<&str> = input
                    .iter()
                    .flat_map(Msg::tool_results)
                    .map(|result| result.id.as_str())
                    .collect();
                let open: Vec<ToolUseBlock> = pending
                    .into_iter()
                    .filter(|call| !answered.contains(call.id.as_str()))
                    .collect();
                let mut state = self.state();
                // Calls answered by the input (or no longer pending) wait no more.
                state
                    .awaiting
                    .retain(|call| open.iter().any(|o| o.id == call.id));
                state
                    .decisions
                    .retain(|id, _| open.iter().any(|o| o.id == *id));
                state.edited.clear();
                let moves_on = input.iter().any(|msg| {
                    msg.content
                        .iter()
                        .any(|block| !matches!(block, ContentBlock::ToolResult(_)))
                });
                if moves_on {
                    // The engine rejects it, or a recovery hook answered the calls.
                    return Ok(());
                }
                let undecided: Vec<ToolUseBlock> = open
                    .into_iter()
                    .filter(|call| state.needs_decision(policy, call, Some(e.call())))
                    .collect();
                if undecided.is_empty() {
                    return Ok(());
                }
                let ids: Vec<&str> = undecided.iter().map(|call| call.id.as_str()).collect();
                let message = format!(
                    "tool calls awaiting approval: [{}]; approve, edit or reject them before resuming",
                    ids.join(", ")
                );
                for call in &undecided {
                    if !state.awaiting.iter().any(|a| a.id == call.id) {
                        state.awaiting.push(call.clone());
                    }
                }
                state.remember_schemas(e.call());
                Err(HookError::msg(message))
            }
            HookEvent::PostReasoning(e) => {
                let mut state = self.state();
                let needed: Vec<ToolUseBlock> = e
                    .reasoning_message()
                    .tool_uses()
                    .into_iter()
                    .filter(|call| state.needs_decision(policy, call, Some(e.call())))
                    .cloned()
                    .collect();
                if !needed.is_empty() {
                    e.stop_agent();
                    for call in &needed {
                        record(e.extensions_mut(), Decision::ApprovalAsked(call));
                    }
                    state.awaiting = needed;
                    state.remember_schemas(e.call());
                }
                Ok(())
            }
            HookEvent::PreActing(e) => {
                let call = e.tool_use().clone();
                let mut state = self.state();
                state.awaiting.retain(|a| a.id != call.id);
                // The decision stays stored until its call settles (PostActing): a crash
                // before this call starts must not make anyone decide again.
                match state.decisions.get(call.id.as_str()).cloned() {
                    Some(ApprovalDecision::Approve) => {
                        record(e.extensions_mut(), Decision::Approved(&call));
                    }
                    Some(ApprovalDecision::Edit(input)) => {
                        record(e.extensions_mut(), Decision::Edited(&call));
                        state.edited.insert(call.id.to_string(), input.clone());
                        e.set_tool_use(ToolUseBlock {
                            input: input.into(),
                            raw_input: None,
                            ..call
                        })?;
                    }
                    Some(ApprovalDecision::Reject(reason)) => {
                        record(e.extensions_mut(), Decision::Rejected(&call));
                        let text = rejected_text(&reason);
                        let rejection = (call.name.to_string(), call.input.clone().into(), reason);
                        if !state.rejected.contains(&rejection) {
                            state.rejected.push(rejection);
                        }
                        e.skip_with(ToolResultBlock::error(call.id, call.name, text));
                    }
                    // Started (and so decided) in an earlier call, and run again (its
                    // policy, or the caller's retry): the decision stands.
                    None if e.call().was_started(&call.id) => {}
                    None if guarded(policy, &call, Some(e.call())) => {
                        let text = match state.rejection_of(&call) {
                            Some(reason) => format!(
                                "{} (this exact call was rejected before, so it was not run again; do not repeat it)",
                                rejected_text(reason)
                            ),
                            None => format!(
                                "Error: Tool call '{}' requires approval and was not approved.",
                                call.name
                            ),
                        };
                        e.skip_with(ToolResultBlock::error(call.id, call.name, text));
                    }
                    None => {}
                }
                Ok(())
            }
            HookEvent::PostActing(e) => {
                let edited = {
                    let mut state = self.state();
                    // Settled: its decision is spent.
                    state.decisions.remove(e.tool_use().id.as_str());
                    state.edited.remove(e.tool_use().id.as_str())
                };
                if let Some(input) = edited {
                    let mut result = e.tool_result().clone();
                    result.output.push(ContentBlock::text(format!(
                        "Note: the user changed the arguments of this call to {input} before it ran."
                    )));
                    e.set_tool_result(result);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Whether the hook holds `call` for approval: the policy says so, and its tool is not an
/// [`ToolKind::Answer`] tool of the call `info` describes (such as the `generate_response`
/// tool of a structured-output call: it runs nothing, it carries the answer).
fn guarded(policy: &ApprovalPolicy, call: &ToolUseBlock, info: Option<&CallInfo>) -> bool {
    info.and_then(|info| info.tool_kind(&call.name)) != Some(ToolKind::Answer)
        && policy.requires_approval(call)
}

/// The result text of a rejected call.
fn rejected_text(reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        "Rejected by the user.".to_owned()
    } else {
        format!("Rejected by the user: {reason}")
    }
}

impl Hook for ToolApprovalHook {
    fn on_event(
        &self,
        event: &mut HookEvent,
    ) -> impl Future<Output = Result<(), HookError>> + Send {
        std::future::ready(self.handle(event))
    }

    builtin_hook_meta!(PreCall | PostReasoning | PreActing | PostActing);
}

impl fmt::Debug for ToolApprovalHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        let awaiting: Vec<&str> = state.awaiting.iter().map(|c| c.id.as_str()).collect();
        f.debug_struct("ToolApprovalHook")
            .field("policy", &self.inner.policy)
            .field("awaiting", &awaiting)
            .field("rejected", &state.rejected.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rejection_texts() {
        assert_eq!(rejected_text("  "), "Rejected by the user.");
        assert_eq!(
            rejected_text("too risky"),
            "Rejected by the user: too risky"
        );
    }

    #[test]
    fn decisions_need_an_awaiting_call() {
        let hook = ToolApprovalHook::new(ApprovalPolicy::all());
        let err = hook.approve("c1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool call 'c1' is not awaiting approval (awaiting: [])"
        );
        let history = vec![
            Msg::user("q"),
            Msg::builder()
                .role(agentscope_core::Role::Assistant)
                .block(ToolUseBlock::new("c1", "shell", json!({"cmd": "ls"})))
                .block(ToolUseBlock::new("c2", "shell", json!({"cmd": "pwd"})))
                .build(),
        ];
        hook.restore(&history);
        let ids: Vec<crate::SharedString> = hook.pending().into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["c1", "c2"]);
        hook.reject("c2", "no").unwrap();
        let ids: Vec<crate::SharedString> = hook.pending().into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["c1"]);
    }

    #[test]
    fn rejected_pairs_match_name_and_arguments() {
        let mut state = State::default();
        state.rejected.push((
            "shell".into(),
            json!({"cmd": "ls", "dir": "/"}),
            "no".into(),
        ));
        let same = ToolUseBlock::new("x", "shell", json!({"dir": "/", "cmd": "ls"}));
        let other = ToolUseBlock::new("y", "shell", json!({"cmd": "ls"}));
        assert_eq!(state.rejection_of(&same), Some("no"));
        assert_eq!(state.rejection_of(&other), None);
        assert!(!state.needs_decision(&ApprovalPolicy::all(), &same, None));
        assert!(state.needs_decision(&ApprovalPolicy::all(), &other, None));
    }
}
