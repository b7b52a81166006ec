//! The call an event belongs to: [`CallContext`] (owned by the engine for one call),
//! [`CallInfo`] (what every event of the call can read), [`CallId`] and the call's typed
//! [`Extensions`].
//!
//! Per-call state of a hook lives in the call's extensions, not in a map inside the hook:
//! the engine drops them when the call ends, however it ends (reply, error, or the call
//! future being dropped), so nothing a hook keeps for a call can outlive it or leak into
//! another call.

use std::any::{Any, TypeId};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::SharedString;
use crate::hook::HookId;
use crate::model::ToolSchema;
use crate::tool::ToolKind;

/// The name and id of the agent an event belongs to, and what tracing reports about it:
/// who serves its model and the conversation it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    name: SharedString,
    id: String,
    model_provider: Option<SharedString>,
    conversation_id: Option<SharedString>,
}

impl AgentInfo {
    /// Describes an agent.
    pub fn new(name: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            name: SharedString::from(&*name.into()),
            id: id.into(),
            model_provider: None,
            conversation_id: None,
        }
    }

    /// Names who serves the agent's model ([`Model::provider_name`](crate::Model::provider_name));
    /// the agent builder sets it.
    #[must_use]
    pub fn with_model_provider(mut self, provider: &str) -> Self {
        self.model_provider = Some(SharedString::from(provider));
        self
    }

    /// Names the conversation the agent keeps (its session's id); the agent builder sets it
    /// for an agent bound to a session.
    #[must_use]
    pub fn with_conversation_id(mut self, id: &str) -> Self {
        self.conversation_id = Some(SharedString::from(id));
        self
    }

    /// Who serves the agent's model (`"openai"`, `"anthropic"`, ...), when known.
    pub fn model_provider(&self) -> Option<&str> {
        self.model_provider.as_deref()
    }

    /// The conversation the agent keeps (its session's id), when it is bound to a session.
    pub fn conversation_id(&self) -> Option<&str> {
        self.conversation_id.as_deref()
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's name, shared: the name of its messages, without a copy.
    pub fn shared_name(&self) -> &SharedString {
        &self.name
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// Identifies one agent call (a random UUID, shown hyphenated).
///
/// Every event of a call carries the same id; the next call, including the resume of a call
/// that stopped for approval, gets a new one.
///
/// ```
/// use agentscope_core::CallId;
///
/// let id = CallId::new();
/// assert_ne!(id, CallId::new());
/// assert_eq!(id.to_string().parse::<CallId>().unwrap(), id);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId(uuid::Uuid);

impl CallId {
    /// A new, random id.
    pub fn new() -> Self {
        CallId(uuid::Uuid::new_v4())
    }
}

impl Default for CallId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl fmt::Debug for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CallId({self})")
    }
}

/// A string that is not a UUID was parsed as a [`CallId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid call id '{0}': expected a UUID")]
pub struct ParseCallIdError(String);

impl FromStr for CallId {
    type Err = ParseCallIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        uuid::Uuid::parse_str(s)
            .map(CallId)
            .map_err(|_| ParseCallIdError(s.to_owned()))
    }
}

impl Serialize for CallId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CallId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What every event of a call can read about the call: its id, the call it resumes, its
/// agent, and how its tools are marked.
pub struct CallInfo {
    agent: Arc<AgentInfo>,
    /// Drawn at the first read: most calls' ids are never read, and drawing one was about a
    /// third of the cost of making a call's context. A clone has the same id.
    id: OnceLock<CallId>,
    resumed_from: Option<CallId>,
    tool_kinds: Vec<(String, ToolKind)>,
    tools: Option<Arc<[ToolSchema]>>,
    running_tools: Vec<String>,
}

impl Clone for CallInfo {
    fn clone(&self) -> Self {
        Self {
            agent: Arc::clone(&self.agent),
            id: OnceLock::from(self.id()),
            resumed_from: self.resumed_from,
            tool_kinds: self.tool_kinds.clone(),
            tools: self.tools.clone(),
            running_tools: self.running_tools.clone(),
        }
    }
}

impl fmt::Debug for CallInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallInfo")
            .field("agent", &self.agent)
            .field("id", &self.id())
            .field("resumed_from", &self.resumed_from)
            .field("tool_kinds", &self.tool_kinds)
            .field("tools", &self.tools)
            .field("running_tools", &self.running_tools)
            .finish()
    }
}

impl CallInfo {
    /// The agent making the call.
    pub fn agent(&self) -> &AgentInfo {
        &self.agent
    }

    /// The call's id, unique per call (drawn at the first read, the same at every read).
    pub fn id(&self) -> CallId {
        *self.id.get_or_init(CallId::new)
    }

    /// The id of the call this one resumes: the agent's previous call, when that call ended
    /// with tool calls still pending (a stop for approval, a suspended tool). Tracing uses it
    /// to link a resume to the call that stopped. Known within one process only.
    pub fn resumed_from(&self) -> Option<CallId> {
        self.resumed_from
    }

    /// The kind of the tool named `name` in this call's toolkit, when the tool declared one
    /// other than [`ToolKind::Action`] (see [`Tool::kind`](crate::Tool::kind)); `None` for
    /// plain tools and for names the toolkit does not have.
    pub fn tool_kind(&self, name: &str) -> Option<ToolKind> {
        self.tool_kinds
            .iter()
            .find(|(tool, _)| tool == name)
            .map(|(_, kind)| *kind)
    }

    /// Whether the tool call `id` started running in an earlier call whose result was never
    /// stored (the process stopped, the call was dropped), by the agent's session (see
    /// `AgentState::running_tools`). Such a call is in doubt (see
    /// [`InDoubt`](crate::InDoubt)), and a decision about it (an approval) was already taken.
    pub fn was_started(&self, id: &str) -> bool {
        self.running_tools.iter().any(|running| running == id)
    }

    /// The schema of the tool named `name` in this call's toolkit, as the model sees it
    /// (`None` for names the toolkit does not have). Hooks that check or edit arguments
    /// validate against it.
    pub fn tool_schema(&self, name: &str) -> Option<&ToolSchema> {
        self.tools
            .as_deref()?
            .iter()
            .find(|schema| schema.name == name)
    }
}

/// One agent call, as the engine holds it: the [`CallInfo`] its events share, and the call's
/// [`Extensions`].
///
/// The engine creates one per call and drops it when the call ends. It lends the extensions
/// to each event while the hooks handle it ([`engine::chain`](crate::engine::chain)),
/// so a hook can store state at one event (typically PreCall) and find it at every later
/// event of the same call:
///
/// ```
/// use std::sync::Arc;
/// use agentscope_core::engine::{self, events, CallContext};
/// use agentscope_core::{hook_fn, AgentInfo, HookChain, HookEvent, Msg};
///
/// # futures::executor::block_on(async {
/// struct Started(&'static str);
///
/// let mut chain = HookChain::new();
/// chain.push(hook_fn(|event: &mut HookEvent| {
///     match event {
///         HookEvent::PreCall(e) => {
///             e.extensions_mut().insert(Started("at PreCall"));
///         }
///         HookEvent::PostCall(e) => {
///             let started = e.extensions().get::<Started>().map(|s| s.0);
///             e.set_final_message(Msg::assistant(format!("started {}", started.unwrap_or("?"))));
///         }
///         _ => {}
///     }
///     Ok(())
/// }));
///
/// let mut call = CallContext::new(Arc::new(AgentInfo::new("assistant", "a1")));
/// engine::chain(&chain, events::pre_call(call.info(), vec![], vec![], None), &mut call).await?;
/// let post = engine::chain(&chain, events::post_call(call.info(), Msg::assistant("hi")), &mut call).await?;
/// assert_eq!(post.final_message().text(), "started at PreCall");
/// assert!(call.extensions().get::<Started>().is_some());
/// # Ok::<(), agentscope_core::AgentError>(())
/// # }).unwrap();
/// ```
pub struct CallContext {
    info: Arc<CallInfo>,
    extensions: Extensions,
    /// The hooks that received this call's PostCall: they don't also get its ErrorEvent.
    pub(crate) saw_post_call: Vec<HookId>,
}

impl CallContext {
    /// A new call of `agent`, with a fresh [`CallId`].
    pub fn new(agent: Arc<AgentInfo>) -> Self {
        Self {
            info: Arc::new(CallInfo {
                agent,
                id: OnceLock::new(),
                resumed_from: None,
                tool_kinds: Vec::new(),
                tools: None,
                running_tools: Vec::new(),
            }),
            extensions: Extensions::new(),
            saw_post_call: Vec::new(),
        }
    }

    /// Records that this call resumes the call `previous` (see [`CallInfo::resumed_from`]).
    #[must_use]
    pub fn with_resumed_from(mut self, previous: CallId) -> Self {
        Arc::make_mut(&mut self.info).resumed_from = Some(previous);
        self
    }

    /// Records that this call's toolkit has a tool `name` of `kind` (see
    /// [`CallInfo::tool_kind`]).
    #[must_use]
    pub fn with_tool_kind(mut self, name: impl Into<String>, kind: ToolKind) -> Self {
        Arc::make_mut(&mut self.info)
            .tool_kinds
            .push((name.into(), kind));
        self
    }

    /// Records the schemas of this call's tools (see [`CallInfo::tool_schema`]).
    #[must_use]
    pub fn with_tools(mut self, tools: Arc<[ToolSchema]>) -> Self {
        Arc::make_mut(&mut self.info).tools = Some(tools);
        self
    }

    /// Records the tool calls an earlier call started without storing a result (see
    /// [`CallInfo::was_started`]).
    #[must_use]
    pub fn with_running_tools(mut self, ids: Vec<String>) -> Self {
        Arc::make_mut(&mut self.info).running_tools = ids;
        self
    }

    /// Lets every hook receive the call's ErrorEvent, also those that received its PostCall
    /// (which otherwise don't get it): for a call that fails after PostCall, when its final
    /// save fails, so that a hook that recorded the turn at PostCall learns that it was
    /// neither returned nor stored.
    pub fn failed_after_post_call(&mut self) {
        self.saw_post_call.clear();
    }

    /// What the call's events share; event constructors take it.
    pub fn info(&self) -> &Arc<CallInfo> {
        &self.info
    }

    /// The call's id.
    pub fn id(&self) -> CallId {
        self.info.id()
    }

    /// The call's extensions (between events: what the hooks stored so far).
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The call's extensions, to change between events.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("id", &self.info.id())
            .field("agent", &self.info.agent.name())
            .field("resumed_from", &self.info.resumed_from)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

/// A call's typed per-call state, one value per type (in the spirit of `http::Extensions`).
///
/// Values must be `Send + Sync + 'static`. They are dropped when the call ends. They belong
/// to the call, not to one event: a *clone* of an event (kept by a recording hook, say) has
/// no extensions.
///
/// A hook that may be registered more than once on an agent, and keeps per-call state,
/// should key that state by its instance (for example a value holding a list of
/// `(instance id, state)` pairs), since there is one value per type.
///
/// ```
/// use agentscope_core::Extensions;
///
/// #[derive(Debug, PartialEq)]
/// struct Budget(u32);
///
/// let mut extensions = Extensions::new();
/// assert_eq!(extensions.insert(Budget(3)), None);
/// extensions.get_mut::<Budget>().unwrap().0 -= 1;
/// assert_eq!(extensions.get::<Budget>(), Some(&Budget(2)));
/// assert_eq!(extensions.insert(Budget(9)), Some(Budget(2)));
/// assert_eq!(extensions.remove::<Budget>(), Some(Budget(9)));
/// assert!(extensions.is_empty());
/// ```
#[derive(Default)]
pub struct Extensions {
    // One pointer in every event: most calls store nothing, and a handful of entries at most
    // when they do, so a boxed vector (scanned linearly) beats a map.
    #[allow(clippy::box_collection)]
    entries: Option<Box<Vec<Entry>>>,
}

type Entry = (TypeId, Box<dyn Any + Send + Sync>);

impl Extensions {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> &[Entry] {
        self.entries.as_deref().map_or(&[], Vec::as_slice)
    }

    fn position<T: 'static>(&self) -> Option<usize> {
        let id = TypeId::of::<T>();
        self.entries().iter().position(|(entry, _)| *entry == id)
    }

    /// Stores `value`, returning the value of the same type it replaces.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        let at = self.position::<T>();
        let entries = self.entries.get_or_insert_with(Box::default);
        match at {
            Some(at) => {
                let old = std::mem::replace(&mut entries[at].1, Box::new(value));
                old.downcast::<T>().ok().map(|old| *old)
            }
            None => {
                entries.push((TypeId::of::<T>(), Box::new(value)));
                None
            }
        }
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        let at = self.position::<T>()?;
        self.entries()[at].1.downcast_ref()
    }

    /// The value of type `T`, mutably, if there is one.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        let at = self.position::<T>()?;
        self.entries.as_mut()?[at].1.downcast_mut()
    }

    /// The value of type `T`, inserting `make()` first when there is none.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(
        &mut self,
        make: impl FnOnce() -> T,
    ) -> &mut T {
        let at = self.position::<T>();
        let entries = self.entries.get_or_insert_with(Box::default);
        let at = match at {
            Some(at) => at,
            None => {
                entries.push((TypeId::of::<T>(), Box::new(make())));
                entries.len() - 1
            }
        };
        match entries[at].1.downcast_mut() {
            Some(value) => value,
            // The entry at `at` holds a `T`: its key is `TypeId::of::<T>()`.
            None => unreachable!("extension entry holds another type than its key"),
        }
    }

    /// Removes and returns the value of type `T`.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        let at = self.position::<T>()?;
        self.entries
            .as_mut()?
            .swap_remove(at)
            .1
            .downcast::<T>()
            .ok()
            .map(|value| *value)
    }

    /// Whether there is a value of type `T`.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        self.position::<T>().is_some()
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_round_trip_through_json() {
        let id = CallId::new();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<CallId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<CallId>("\"nope\"").is_err());
    }

    #[test]
    fn context_builders_share_nothing_between_calls() {
        let agent = Arc::new(AgentInfo::new("a", "1"));
        let first = CallContext::new(Arc::clone(&agent));
        let second = CallContext::new(agent).with_resumed_from(first.id());
        assert_ne!(first.id(), second.id());
        assert_eq!(second.info().resumed_from(), Some(first.id()));
        let marked = second.with_tool_kind("answer", ToolKind::Answer);
        assert_eq!(marked.info().tool_kind("answer"), Some(ToolKind::Answer));
        assert_eq!(marked.info().tool_kind("other"), None);
    }

    #[test]
    fn a_call_id_is_drawn_once_and_kept_by_clones() {
        let call = CallContext::new(Arc::new(AgentInfo::new("a", "1")));
        let id = call.id();
        assert_eq!(call.id(), id);
        assert_eq!(call.info().id(), id);
        // A copy of an info nobody read yet has the id the original gets.
        let unread = CallContext::new(Arc::new(AgentInfo::new("b", "1")));
        let copy = CallInfo::clone(unread.info());
        assert_eq!(copy.id(), unread.id());
        // A builder that copies a shared info keeps its id.
        let shared = Arc::clone(call.info());
        let built = call.with_tool_kind("answer", ToolKind::Answer);
        assert!(!Arc::ptr_eq(built.info(), &shared));
        assert_eq!(built.id(), id);
        assert!(format!("{:?}", built.info()).contains(&id.to_string()));
        assert!(format!("{built:?}").contains(&id.to_string()));
    }

    #[test]
    fn get_or_insert_with_keeps_the_first_value() {
        let mut extensions = Extensions::new();
        *extensions.get_or_insert_with(|| 1_u8) += 1;
        *extensions.get_or_insert_with(|| 10_u8) += 1;
        assert_eq!(extensions.get::<u8>(), Some(&3));
        assert!(extensions.contains::<u8>());
        assert!(!extensions.contains::<u16>());
        assert_eq!(extensions.len(), 1);
    }
}
