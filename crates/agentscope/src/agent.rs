//! [`ReActAgent`]: the agent handle.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use agentscope_core::engine::conversation;
use agentscope_core::engine::{CallContext, EventParts, events};
use agentscope_core::pending_tool_uses;
use agentscope_core::{AgentError, Hook, HookChain, HookEventType, HookId, HookInfo, Memory, Msg};
#[cfg(feature = "schema")]
use agentscope_core::{BoxedHook, BoxedTool};

#[cfg(feature = "schema")]
use schemars::JsonSchema;
#[cfg(feature = "schema")]
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::admission::{Admission, Refusal};
use crate::config::AgentConfig;
#[cfg(feature = "schema")]
use crate::engine::Finish;
use crate::engine::reply::SharedReply;
use crate::engine::{self, CallExtras};
#[cfg(feature = "schema")]
use crate::hooks::StructuredOutputHook;
use crate::runtime::AgentRuntime;
use crate::session::{AgentState, SessionBinding, check_sessionless};
use crate::stream::{AgentStream, EventSink, StreamOptions};
use crate::sync::lock;
use crate::toolkit::Toolkit;

/// The input of one call: the new messages (empty to resume pending tool calls), and the
/// tool calls in doubt to run again.
///
/// Converts from a [`Msg`], a `Vec<Msg>`, an array of messages, a string (a user message)
/// and `()` (no input).
///
/// ```
/// use agentscope::{CallInput, Msg, ToolResultBlock};
///
/// // Resolve two calls found in doubt after a crash: one with a result the application
/// // verified, the other by running it again with the same idempotency key.
/// let verified = Msg::tool_result(ToolResultBlock::text("c1", "pay", "paid: receipt 42"));
/// let input = CallInput::from(verified).retry(["c2"]);
/// assert_eq!(input.retried(), ["c2"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallInput {
    messages: Vec<Msg>,
    retry: Vec<String>,
    /// How [`resolve`](Self::resolve) resolved calls in doubt: (call id, action), for the
    /// trace.
    resolved: Vec<(String, &'static str)>,
}

impl CallInput {
    /// The messages.
    pub fn into_messages(self) -> Vec<Msg> {
        self.messages
    }

    /// Runs the tool calls `ids` again, in this call: each must be **in doubt** (pending,
    /// and recorded as started by an earlier call whose result was never stored; see
    /// [`InDoubt`](crate::InDoubt)). They run with the same
    /// [idempotency key](crate::ToolContext::idempotency_key) as their first attempt,
    /// whatever their tool's policy, after PreActing hooks (a decision taken before they
    /// started is not asked for again). A call given an id that is not in doubt fails with
    /// [`AgentError::InvalidInput`](crate::AgentError::InvalidInput) before anything runs.
    #[must_use]
    pub fn retry<I, S>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.retry.extend(ids.into_iter().map(Into::into));
        self
    }

    /// The ids passed to [`retry`](Self::retry).
    pub fn retried(&self) -> &[String] {
        &self.retry
    }

    /// Adds `message` after the input's others.
    pub(crate) fn with_message(mut self, message: Msg) -> Self {
        self.messages.push(message);
        self
    }

    /// The messages, and what the call does with calls in doubt.
    pub(crate) fn into_call(self) -> (Vec<Msg>, CallExtras) {
        let extras = CallExtras {
            retry: self.retry,
            resolved: self.resolved,
            ..CallExtras::default()
        };
        (self.messages, extras)
    }

    /// Records that [`resolve`](Self::resolve) resolved call `id` with `action`.
    pub(crate) fn resolved_as(mut self, id: &str, action: &'static str) -> Self {
        self.resolved.push((id.to_owned(), action));
        self
    }
}

impl From<Vec<Msg>> for CallInput {
    fn from(messages: Vec<Msg>) -> Self {
        CallInput {
            messages,
            retry: Vec::new(),
            resolved: Vec::new(),
        }
    }
}

impl From<Msg> for CallInput {
    fn from(msg: Msg) -> Self {
        vec![msg].into()
    }
}

impl<const N: usize> From<[Msg; N]> for CallInput {
    fn from(msgs: [Msg; N]) -> Self {
        Vec::from(msgs).into()
    }
}

impl From<Option<Msg>> for CallInput {
    fn from(msg: Option<Msg>) -> Self {
        msg.into_iter().collect::<Vec<_>>().into()
    }
}

impl From<&str> for CallInput {
    fn from(text: &str) -> Self {
        vec![Msg::user(text)].into()
    }
}

impl From<String> for CallInput {
    fn from(text: String) -> Self {
        vec![Msg::user(text)].into()
    }
}

impl From<()> for CallInput {
    fn from((): ()) -> Self {
        Vec::new().into()
    }
}

/// A ReAct agent: it reasons with a model, acts with tools, and reports every step of the
/// way to its hooks.
///
/// `ReActAgent` is a cheap handle (an `Arc` inside): clone it to share the agent between
/// tasks. Build one with [`ReActAgent::builder`].
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # tokio_test_block_on(async {
/// let agent = ReActAgent::builder()
///     .name("assistant")
///     .sys_prompt("You are helpful.")
///     .model(ScriptedModel::new([ScriptedResponse::text("Hi! How can I help?")]))
///     .build()?;
/// let reply = agent.call(Msg::user("hello")).await?;
/// assert_eq!(reply.text(), "Hi! How can I help?");
/// assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
/// assert_eq!(agent.memory().len(), 2); // the user message and the reply
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output { futures::executor::block_on(f) }
/// ```
#[derive(Clone)]
pub struct ReActAgent {
    inner: Arc<AgentInner>,
}

/// An agent: its configuration (fixed at build time) and its runtime state.
struct AgentInner {
    config: AgentConfig,
    runtime: AgentRuntime,
    /// The custom reply that replaces the ReAct loop (`builder.reply(..)`).
    reply: Option<SharedReply>,
}

impl AgentInner {
    /// Runs one call with the agent's custom reply, if it has one.
    async fn run(
        &self,
        input: Vec<Msg>,
        sink: Option<&EventSink>,
        extras: CallExtras,
    ) -> Result<Msg, AgentError> {
        let extras = CallExtras {
            reply: self.reply.clone(),
            ..extras
        };
        engine::run(&self.config, &self.runtime, input, sink, extras).await
    }
}

impl ReActAgent {
    pub(crate) fn new(
        config: AgentConfig,
        runtime: AgentRuntime,
        reply: Option<SharedReply>,
    ) -> Self {
        Self {
            inner: Arc::new(AgentInner {
                config,
                runtime,
                reply,
            }),
        }
    }

    /// Runs one call and returns the reply (after PostCall hooks).
    ///
    /// `input` is the new messages: a [`Msg`], a `Vec<Msg>`, a `&str` (a user message), or
    /// `()` to resume tool calls left pending by a previous call (stopped or suspended). To
    /// resume with externally computed results, pass tool messages
    /// ([`Msg::tool_result`]). See the lifecycle in `docs/hooks.md`.
    ///
    /// The returned future is `Send + 'static`: spawn it if you like.
    ///
    /// # Errors
    ///
    /// [`AgentError::Busy`] at once when another call is running on this agent (unless
    /// `check_running(false)`); otherwise whatever failed the call (a hook, the model,
    /// invalid input), after `ErrorEvent` hooks ran. With a
    /// [session](crate::ReActAgentBuilder::session): [`AgentError::Session`] when it cannot be
    /// loaded (before any hook runs) or saved (after the call).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the call at once: the model stream and running tools are
    /// dropped, the agent is free again immediately, and any tool call stored without a
    /// result gets an error result (memory never holds an orphan tool-use). Messages already
    /// stored stay. Hooks see neither PostCall nor Error for a dropped call. A bound session
    /// is not saved for a dropped call: the next call loads its state from before this one.
    pub fn call(
        &self,
        input: impl Into<CallInput>,
    ) -> impl Future<Output = Result<Msg, AgentError>> + Send + 'static {
        let (messages, extras) = input.into().into_call();
        self.call_with(messages, extras)
    }

    /// [`call`](Self::call) with hooks and tools that exist for this call only.
    pub(crate) fn call_with(
        &self,
        input: Vec<Msg>,
        extras: CallExtras,
    ) -> impl Future<Output = Result<Msg, AgentError>> + Send + 'static {
        let inner = Arc::clone(&self.inner);
        async move { inner.run(input, None, extras).await }
    }

    /// Runs one call whose answer is a `T`: the model must answer by calling a temporary
    /// `generate_response` tool whose parameter schema is `T`'s JSON schema (schemars).
    ///
    /// For this call only, a [`StructuredOutputHook`](crate::hooks::StructuredOutputHook)
    /// (priority 50) and the tool are added: invalid arguments go back to the model as an
    /// error result, a text answer gets a reminder (at most 3, with `tool_choice` forced to
    /// the tool after the first), and the first valid response ends the call. Memory is left
    /// clean: no reminders and no `generate_response` calls or results, but one final
    /// assistant message whose text is the value's JSON (`metadata["structured_output"]`,
    /// [`GenerateReason::StructuredOutput`](agentscope_core::GenerateReason::StructuredOutput)).
    /// See the hook's docs for the details. `T` must describe a JSON object (a struct): tool
    /// arguments are objects.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_test::{ScriptedModel, ScriptedResponse};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::json;
    ///
    /// #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    /// struct City {
    ///     /// The city's name.
    ///     name: String,
    ///     /// Its population.
    ///     population: u64,
    /// }
    ///
    /// # futures::executor::block_on(async {
    /// let model = ScriptedModel::new([ScriptedResponse::tool_call(
    ///     "call_1",
    ///     "generate_response",
    ///     json!({"name": "Paris", "population": 2_100_000}),
    /// )]);
    /// let agent = ReActAgent::builder().model(model).build()?;
    /// let city: City = agent.call_structured("Which city is the capital of France?").await?;
    /// assert_eq!(city, City { name: "Paris".into(), population: 2_100_000 });
    /// let memory = agent.memory().messages();
    /// assert_eq!(memory.len(), 2); // the question and the final message
    /// assert_eq!(memory[1].metadata["structured_output"]["name"], "Paris");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call); also [`AgentError::Hook`] (from the hook named
    /// `"structured_output"`) when the model still answers in text after 3 reminders, and
    /// [`AgentError::StructuredOutput`] when the call ends without a value (iteration limit,
    /// interrupt, another hook's stop, a suspended tool) or the value does not deserialise.
    /// A `generate_response` tool already in the agent's toolkit is an
    /// [`AgentError::InvalidInput`].
    ///
    /// # Cancel safety
    ///
    /// As for [`call`](Self::call); memory is cleaned of the structured-output engine on
    /// drop too.
    #[cfg(feature = "schema")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
    pub fn call_structured<T>(
        &self,
        input: impl Into<CallInput>,
    ) -> impl Future<Output = Result<T, AgentError>> + Send + 'static
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        let call = self.call_structured_with_message::<T>(input);
        async move { call.await.map(|(value, _)| value) }
    }

    /// [`call_structured`](Self::call_structured), also returning the final message (as
    /// PostCall hooks left it): its text is the value's JSON and
    /// `metadata["structured_output"]` holds the value.
    ///
    /// # Errors
    ///
    /// As [`call_structured`](Self::call_structured).
    #[cfg(feature = "schema")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
    pub fn call_structured_with_message<T>(
        &self,
        input: impl Into<CallInput>,
    ) -> impl Future<Output = Result<(T, Msg), AgentError>> + Send + 'static
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        let hook = StructuredOutputHook::new();
        let finisher = hook.clone();
        let agent_name = self.name().to_owned();
        let finish: Finish = Box::new(move |memory, start, outcome| {
            finisher.finish(memory, start, outcome, &agent_name)
        });
        let (messages, extras) = input.into().into_call();
        let extras = CallExtras {
            hooks: vec![BoxedHook::new(hook.clone())],
            tools: vec![BoxedTool::new(StructuredOutputHook::tool::<T>())],
            finish: Some(finish),
            ..extras
        };
        let call = self.call_with(messages, extras);
        async move {
            let reply = call.await?;
            let value = hook
                .take_value()
                .ok_or_else(|| AgentError::StructuredOutput {
                    message: "the call returned no value".to_owned(),
                })?;
            let value = serde_json::from_value::<T>(value).map_err(|error| {
                AgentError::StructuredOutput {
                    message: format!(
                        "the response does not deserialise into {}: {error}",
                        std::any::type_name::<T>()
                    ),
                }
            })?;
            Ok((value, reply))
        }
    }

    /// Runs one call, delivering its events as a stream; the last item is the reply
    /// (`EventType::AgentResult`) or the error.
    ///
    /// Hooks see exactly what they see with [`call`](Self::call): both run the same engine.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
    /// use futures::StreamExt;
    ///
    /// # futures::executor::block_on(async {
    /// let model = ScriptedModel::new([ScriptedResponse::chunks([
    ///     ScriptedChunk::text("Hel"),
    ///     ScriptedChunk::text("lo"),
    /// ])]);
    /// let agent = ReActAgent::builder().model(model).build()?;
    /// let mut events = agent.stream("hi", StreamOptions::default());
    /// let mut deltas = String::new();
    /// while let Some(event) = events.next().await {
    ///     let event = event?;
    ///     match (event.event_type, event.is_last) {
    ///         (EventType::Reasoning, false) => deltas.push_str(&event.message.text()),
    ///         (EventType::AgentResult, _) => assert_eq!(event.message.text(), "Hello"),
    ///         _ => {}
    ///     }
    /// }
    /// assert_eq!(deltas, "Hello");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Cancel safety
    ///
    /// As for [`call`](Self::call): dropping the stream cancels the call at once; see
    /// [`AgentStream`].
    pub fn stream(&self, input: impl Into<CallInput>, options: StreamOptions) -> AgentStream {
        let inner = Arc::clone(&self.inner);
        let (input, extras) = input.into().into_call();
        AgentStream::new(options, move |sink| async move {
            inner.run(input, Some(&sink), extras).await
        })
    }

    /// Runs one call whose input `admit` decides from the session the call loaded, delivering
    /// its events as a stream, as [`stream`](Self::stream) does.
    ///
    /// The call takes the session's lease and loads it as every call does (a busy session is
    /// [`AgentError::Busy`], before `admit` runs); then, before any hook runs, `admit` reads
    /// the session as stored ([`Admission`]: the conversation, the tool calls recorded as
    /// running, the hooks' state, whether the lease is held) and returns the call's input,
    /// or a [`Refusal`]. Holding the lease, no other instance can change the session between
    /// what `admit` read and what the call does: that is what a server needs to tell a call
    /// in doubt from a running one, or a message already received from a new one, across
    /// instances. What `admit` records in the hooks' state is stored with the call's first
    /// save (right after PreCall), or, for a refused call, before the call ends with
    /// [`AgentError::Refused`] (no hook sees a refused call).
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope::{Admission, CallInput, Refusal};
    /// use agentscope_test::{ScriptedModel, ScriptedResponse};
    /// use futures::StreamExt;
    ///
    /// # futures::executor::block_on(async {
    /// let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    /// let agent = ReActAgent::builder().model(model).build()?;
    /// // Refuses a message the conversation already holds (a client sending it again).
    /// let message = Msg::user("hi");
    /// let admit = |message: Msg| {
    ///     move |session: &mut Admission<'_>| {
    ///         if session.messages().iter().any(|m| m.id == message.id) {
    ///             return Err(Refusal::new("already received"));
    ///         }
    ///         Ok(CallInput::from(message))
    ///     }
    /// };
    /// let mut events = agent.stream_admitted(admit(message.clone()), StreamOptions::default());
    /// while let Some(event) = events.next().await {
    ///     event?;
    /// }
    /// let mut again = agent.stream_admitted(admit(message), StreamOptions::default());
    /// let refused = again.next().await.unwrap().unwrap_err();
    /// assert!(matches!(refused, AgentError::Refused { reason } if reason == "already received"));
    /// assert_eq!(agent.memory().len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Cancel safety
    ///
    /// As for [`stream`](Self::stream).
    pub fn stream_admitted(
        &self,
        admit: impl FnOnce(&mut Admission<'_>) -> Result<CallInput, Refusal> + Send + 'static,
        options: StreamOptions,
    ) -> AgentStream {
        let inner = Arc::clone(&self.inner);
        AgentStream::new(options, move |sink| async move {
            let extras = CallExtras {
                admit: Some(Box::new(admit)),
                ..CallExtras::default()
            };
            inner.run(Vec::new(), Some(&sink), extras).await
        })
    }

    /// Stores messages in memory without replying. PreCall hooks see them first, as the
    /// event's input with [`is_observation`](agentscope_core::PreCallEvent::is_observation)
    /// set, and what they leave is stored (a hook can redact or drop an observed message);
    /// nothing else runs (observing no messages fires no hook). With a session, the session
    /// is loaded first and saved after.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_test::ScriptedModel;
    ///
    /// # futures::executor::block_on(async {
    /// // Redacts card numbers from everything the agent stores, observed or not.
    /// let redact = hook_fn(|event| {
    ///     if let HookEvent::PreCall(e) = event {
    ///         let redacted = e.input_messages().iter()
    ///             .map(|m| Msg::user(m.text().replace("4111", "****")))
    ///             .collect();
    ///         e.set_input_messages(redacted);
    ///     }
    ///     Ok(())
    /// }).with_interests(HookEventType::PreCall);
    /// let agent = ReActAgent::builder().model(ScriptedModel::new([])).hook(redact).build()?;
    /// agent.observe(Msg::user("my card is 4111")).await?;
    /// assert_eq!(agent.memory().messages()[0].text(), "my card is ****");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// [`AgentError::Busy`] while a call is running; [`AgentError::Hook`] when a PreCall hook
    /// fails (nothing is stored; observing fires no ErrorEvent); [`AgentError::Conversation`] for
    /// `System` messages (the system message is configured with `sys_prompt` or hooks) and,
    /// while tool calls are pending, for the same input a call would reject
    /// ([`ConversationError::PendingToolCalls`](agentscope_core::ConversationError::PendingToolCalls)
    /// unless the messages carry their results); [`AgentError::Session`] when the session
    /// cannot be loaded or saved.
    pub async fn observe(&self, input: impl Into<CallInput>) -> Result<(), AgentError> {
        let messages = input.into().into_messages();
        conversation::check_no_system(&messages, "observed messages")?;
        let AgentInner {
            config, runtime, ..
        } = &*self.inner;
        let guard = runtime.begin_call(config.settings.check_running)?;
        let mut synced = config.load_session(runtime, guard.token()).await?;
        let memory = &config.memory;
        let saved = match self.observed(messages).await {
            Ok(messages) => {
                memory.extend(messages);
                config.save_session(runtime, synced.as_mut(), None).await
            }
            Err(error) => Err(error),
        };
        config.release_session(synced).await;
        saved
    }

    /// `messages` as PreCall hooks leave them for storing, checked like a call's input.
    async fn observed(&self, messages: Vec<Msg>) -> Result<Vec<Msg>, AgentError> {
        let AgentInner {
            config, runtime, ..
        } = &*self.inner;
        let hooks = runtime.hook_snapshot();
        let messages = if !messages.is_empty() && hooks.is_interested(HookEventType::PreCall) {
            let mut context = CallContext::new(Arc::clone(&config.info));
            let event = events::observation(context.info(), messages, config.memory.messages());
            let (messages, _) = agentscope_core::engine::chain(&hooks, event, &mut context)
                .await?
                .into_parts();
            conversation::check_no_system(&messages, "PreCallEvent input messages")?;
            messages
        } else {
            messages
        };
        // Like a call's input: nothing may come between tool calls and their results.
        if !messages.is_empty() {
            conversation::check_input(pending_tool_uses(&config.memory.messages()), &messages)?;
        }
        Ok(messages)
    }

    /// The agent's state: its memory, name, id and [`metadata`](Self::metadata), taken now
    /// (format version [`AgentState::CURRENT_VERSION`]). Store it anywhere; give it to
    /// [`ReActAgentBuilder::state`](crate::ReActAgentBuilder::state) or
    /// [`load_state`](Self::load_state) to continue the conversation.
    ///
    /// With a session bound
    /// ([`ReActAgentBuilder::session`](crate::ReActAgentBuilder::session)) this is the state
    /// as of this agent's last call; the store may hold a newer one saved by another instance.
    /// It then also carries the session's
    /// [`running_tools`](AgentState::running_tools) and [`hooks`](AgentState::hooks) state,
    /// so loading it elsewhere neither runs a started tool again nor forgets an approval.
    /// Without a session both are empty: only a session keeps them.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_test::{ScriptedModel, ScriptedResponse};
    ///
    /// # futures::executor::block_on(async {
    /// let agent = ReActAgent::builder()
    ///     .model(ScriptedModel::new([ScriptedResponse::text("Hello!")]))
    ///     .build()?;
    /// agent.call("hi").await?;
    /// let state = agent.save_state()?;
    /// assert_eq!(state.messages.len(), 2);
    ///
    /// let model = ScriptedModel::new([ScriptedResponse::text("Welcome back.")]);
    /// let restored = ReActAgent::builder().model(model.clone()).state(state).build()?;
    /// restored.call("I am back").await?;
    /// assert_eq!(model.requests()[0].messages.len(), 3); // the old exchange + the new input
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// [`AgentError::Busy`] while a call is running (even with `check_running(false)`):
    /// memory in the middle of a call may hold tool calls that the call will still answer.
    pub fn save_state(&self) -> Result<AgentState, AgentError> {
        let AgentInner {
            config, runtime, ..
        } = &*self.inner;
        if runtime.is_running() {
            return Err(AgentError::Busy);
        }
        let _guard = runtime.begin_call(config.settings.check_running)?;
        let mut state = AgentState::new(config.identity(), config.memory.messages())
            .with_metadata(self.metadata());
        if let Some(session) = &config.session {
            (state.running_tools, state.hooks) = session.seen();
        }
        Ok(state)
    }

    /// Replaces the agent's memory and [`metadata`](Self::metadata) with `state`'s. With a
    /// session bound, all of `state` (with its running tools and hooks' state) is saved to
    /// the session first (and memory is replaced only if that succeeded), since every call
    /// loads the session.
    ///
    /// # Errors
    ///
    /// [`AgentError::Busy`] while a call is running; [`AgentError::InvalidInput`] when the
    /// state has another format version or holds a `System` message, or, without a session,
    /// records [`running_tools`](AgentState::running_tools) or [`hooks`](AgentState::hooks)
    /// state, which only a session keeps (clear them to drop them) (nothing changes);
    /// [`AgentError::Session`] when saving to the session fails (nothing changes).
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope::session::{AgentIdentity, AgentState};
    /// use agentscope_test::ScriptedModel;
    ///
    /// # futures::executor::block_on(async {
    /// let agent = ReActAgent::builder().model(ScriptedModel::new([])).build()?;
    /// let state = AgentState::new(
    ///     AgentIdentity::new("assistant", "old-instance"),
    ///     vec![Msg::user("hi"), Msg::assistant("Hello!")],
    /// );
    /// agent.load_state(state).await?;
    /// assert_eq!(agent.memory().len(), 2);
    ///
    /// let mut bad = AgentState::new(AgentIdentity::new("a", "b"), vec![Msg::system("x")]);
    /// assert!(agent.load_state(bad.clone()).await.is_err());
    /// bad.version = 99;
    /// assert!(agent.load_state(bad).await.is_err());
    /// assert_eq!(agent.memory().len(), 2); // unchanged
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn load_state(&self, state: AgentState) -> Result<(), AgentError> {
        state.check().map_err(AgentError::invalid_input)?;
        let AgentInner {
            config, runtime, ..
        } = &*self.inner;
        if config.session.is_none() {
            check_sessionless(&state).map_err(AgentError::invalid_input)?;
        }
        let guard = runtime.begin_call(config.settings.check_running)?;
        if let Some(session) = &config.session {
            session
                .replace(config.identity(), &state, guard.token())
                .await?;
        }
        let memory = &config.memory;
        memory.clear();
        memory.extend(state.messages);
        *lock(runtime.metadata()) = state.metadata;
        Ok(())
    }

    /// A copy of the user metadata saved with the agent's state (a title, the user's id, ...;
    /// agentscope only stores it). With a session bound, this is what the last call loaded.
    pub fn metadata(&self) -> Map<String, Value> {
        lock(self.inner.runtime.metadata()).clone()
    }

    /// Changes the user metadata. With a session bound, the session is loaded first and
    /// saved after, like a call.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_test::ScriptedModel;
    /// use serde_json::json;
    ///
    /// # futures::executor::block_on(async {
    /// let agent = ReActAgent::builder().model(ScriptedModel::new([])).build()?;
    /// agent
    ///     .update_metadata(|metadata| {
    ///         metadata.insert("title".into(), json!("Refund for order 42"));
    ///     })
    ///     .await?;
    /// assert_eq!(agent.metadata()["title"], "Refund for order 42");
    /// assert_eq!(agent.save_state()?.metadata["title"], "Refund for order 42");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// [`AgentError::Busy`] while a call is running; [`AgentError::Session`] when the
    /// session cannot be loaded or saved.
    pub async fn update_metadata(
        &self,
        update: impl FnOnce(&mut Map<String, Value>),
    ) -> Result<(), AgentError> {
        let AgentInner {
            config, runtime, ..
        } = &*self.inner;
        let guard = runtime.begin_call(config.settings.check_running)?;
        let mut synced = config.load_session(runtime, guard.token()).await?;
        update(&mut lock(runtime.metadata()));
        let saved = config.save_session(runtime, synced.as_mut(), None).await;
        config.release_session(synced).await;
        saved
    }

    /// The id of the session the agent is bound to
    /// ([`ReActAgentBuilder::session`](crate::ReActAgentBuilder::session)).
    pub fn session_id(&self) -> Option<&str> {
        self.inner.config.session.as_ref().map(SessionBinding::id)
    }

    /// Asks the running call(s) to stop. Observed between steps, on every model chunk and by
    /// running tools (through their context); the call stores what it has, gives pending
    /// tool calls "interrupted" results ([`INTERRUPTED_RESULT`](crate::interrupt::INTERRUPTED_RESULT))
    /// and returns [`INTERRUPT_REPLY`](crate::interrupt::INTERRUPT_REPLY),
    /// `"I noticed that you have interrupted me. What can I do for you?"`
    /// ([`GenerateReason::Interrupted`](agentscope_core::GenerateReason::Interrupted)).
    /// Interrupting an idle agent does nothing.
    pub fn interrupt(&self) {
        self.inner.runtime.interrupt();
    }

    /// Interrupts the call running on the agent's session, on whichever instance runs it:
    /// this agent's own calls (as [`interrupt`](Self::interrupt)), and, with a store that
    /// leases sessions, the call that holds the session's lease elsewhere, which then ends as
    /// a local interrupt ends it: in any process sharing the store with `agentscope-redis`,
    /// in this process with `JsonFileSessionStore`.
    /// Returns whether the store found a call holding the session (always `false` for a
    /// store that does not lease, and without a session).
    ///
    /// See `docs/scaling.md` for how the interrupt travels and how fast it arrives.
    ///
    /// # Errors
    ///
    /// [`AgentError::Session`] when the store could not be reached (this agent's own calls
    /// are interrupted anyway).
    pub async fn interrupt_session(&self) -> Result<bool, AgentError> {
        self.interrupt();
        match &self.inner.config.session {
            Some(session) => Ok(session.interrupt().await?),
            None => Ok(false),
        }
    }

    /// Whether a call is running.
    pub fn is_running(&self) -> bool {
        self.inner.runtime.is_running()
    }

    /// The agent's memory.
    pub fn memory(&self) -> &dyn Memory {
        &*self.inner.config.memory
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        self.inner.config.info.name()
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        self.inner.config.info.id()
    }

    /// The agent's toolkit.
    pub fn toolkit(&self) -> &Toolkit {
        self.inner.config.toolkit()
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        &self.inner.config.model_name
    }

    /// Registers a hook; it applies from the next call on.
    ///
    /// A [`ToolApprovalHook`](crate::hooks::ToolApprovalHook) added to an agent whose
    /// session uses [`Durability::Exit`](crate::session::Durability::Exit) (which the build
    /// refuses with one) makes the next calls fail at their start with
    /// [`AgentError::InvalidInput`] saying why, until it is removed: `Exit` cannot keep its
    /// promise that an approved tool runs at most once. The same holds for
    /// [`edit_hooks`](Self::edit_hooks).
    pub fn add_hook(&self, hook: impl Hook) -> HookId {
        let mut hooks = self.inner.runtime.hooks();
        Arc::make_mut(&mut hooks).push(hook)
    }

    /// Removes a hook (including a system hook copied at build time); it applies from the
    /// next call on. Returns whether the hook was registered.
    pub fn remove_hook(&self, id: HookId) -> bool {
        let mut hooks = self.inner.runtime.hooks();
        Arc::make_mut(&mut hooks).remove(id)
    }

    /// Removes every hook of this agent (system hooks copied at build time included); it
    /// applies from the next call on.
    pub fn clear_hooks(&self) {
        *self.inner.runtime.hooks() = Arc::new(HookChain::new());
    }

    /// Changes the agent's hooks with any [`HookChain`] operation, applied from the next call
    /// on: remove by name ([`remove_named`](HookChain::remove_named)), by event kind
    /// ([`remove_interested_in`](HookChain::remove_interested_in)), stop one kind for every
    /// hook ([`clear_kind`](HookChain::clear_kind)) or for one named hook
    /// ([`remove_named_for`](HookChain::remove_named_for)). Returns what `edit` returns.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_test::ScriptedModel;
    ///
    /// let agent = ReActAgent::builder()
    ///     .model(ScriptedModel::new([]))
    ///     .hook(hook_fn(|_| Ok(())).with_name("audit").with_interests(HookEventType::PreCall))
    ///     .hook(hook_fn(|_| Ok(())).with_name("metrics"))
    ///     .build()?;
    /// let removed = agent.edit_hooks(|hooks| hooks.remove_named("audit"));
    /// assert_eq!(removed, 1);
    /// // `metrics` receives every kind; it keeps all but PreReasoning.
    /// agent.edit_hooks(|hooks| hooks.clear_kind(HookEventType::PreReasoning));
    /// let order = agent.hook_order();
    /// assert_eq!(order.len(), 1);
    /// assert!(!order[0].interests.contains(HookEventType::PreReasoning));
    /// # Ok::<(), agentscope::BuildError>(())
    /// ```
    pub fn edit_hooks<R>(&self, edit: impl FnOnce(&mut HookChain) -> R) -> R {
        let mut hooks = self.inner.runtime.hooks();
        edit(Arc::make_mut(&mut hooks))
    }

    /// The effective hook chain in execution order, for debugging.
    pub fn hook_order(&self) -> Vec<HookInfo> {
        self.inner.runtime.hooks().order()
    }
}

impl fmt::Debug for ReActAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReActAgent")
            .field("name", &self.name())
            .field("id", &self.id())
            .field("model", &self.model_name())
            .field("tools", &self.toolkit().names())
            .field("max_iters", &self.inner.config.settings.max_iters)
            .field("hooks", &self.inner.runtime.hooks().len())
            .finish()
    }
}
