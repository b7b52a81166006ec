//! Custom replies: [`Reply`], the user's reply logic in place of the ReAct loop, and
//! [`ReplyContext`], the steps of the loop it may use.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use agentscope_core::{
    AgentError, AgentInfo, CancellationToken, ChatStream, ContentBlock, Memory, Model, ModelError,
    ModelRequest, Msg, Role, ToolUseBlock,
};
use futures::future::{BoxFuture, Either, select};
use tracing::Instrument;

use super::acting::Acted;
use super::reasoning::{Reasoned, Then};
use super::{Call, Halt, Step};
use crate::stream::{Event, EventType};

/// An agent's reply logic: what the agent does with a call's input, in place of the ReAct
/// loop. Give it to [`ReActAgentBuilder::reply`](crate::ReActAgentBuilder::reply).
///
/// The agent keeps the whole machinery around it: the busy check, the session (loaded
/// before, saved after), PreCall before and PostCall after (Error on failure) through the
/// priority chain with the system hooks, [`interrupt`](crate::ReActAgent::interrupt),
/// streaming ([`AgentStream`](crate::AgentStream)) and state. The input is in memory when
/// `reply` runs; the returned message is stored after it (unless a step already stored it)
/// and is the call's reply. The steps of [`ReplyContext`] fire the reasoning, acting and
/// summary events, as in a ReAct call, when the logic uses them.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope::{Reply, ReplyContext};
///
/// /// Echoes the call's input, in upper case.
/// struct Shout;
///
/// impl Reply for Shout {
///     async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
///         let heard: Vec<String> = cx.input().iter().map(Msg::text).collect();
///         Ok(cx.message(heard.join(" ").to_uppercase()))
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let agent = ReActAgent::builder().name("shouter").reply(Shout).build()?;
/// let reply = agent.call("hello there").await?;
/// assert_eq!(reply.text(), "HELLO THERE");
/// assert_eq!(reply.name, "shouter");
/// assert_eq!(agent.memory().len(), 2); // the input and the reply
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait Reply: Send + Sync + 'static {
    /// Replies to the call's input (see [`ReplyContext::input`]).
    ///
    /// # Errors
    ///
    /// Whatever fails the call; the agent sends it to ErrorEvent hooks and returns it. A
    /// step's [`AgentError::Interrupted`] (returned on) ends the call as an interrupted one.
    fn reply(
        &self,
        cx: &mut ReplyContext<'_, '_>,
    ) -> impl Future<Output = Result<Msg, AgentError>> + Send;
}

/// The dyn-compatible twin of [`Reply`], which the agent stores.
pub(crate) trait DynReply: Send + Sync + 'static {
    fn reply_boxed<'a>(
        &'a self,
        cx: &'a mut ReplyContext<'_, '_>,
    ) -> BoxFuture<'a, Result<Msg, AgentError>>;
}

impl<R: Reply> DynReply for R {
    fn reply_boxed<'a>(
        &'a self,
        cx: &'a mut ReplyContext<'_, '_>,
    ) -> BoxFuture<'a, Result<Msg, AgentError>> {
        Box::pin(self.reply(cx))
    }
}

/// What a reasoning step decided ([`ReplyContext::reason`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reasoning {
    /// The model answered without tool calls, or a hook stopped the call
    /// ([`stop_agent`](agentscope_core::PostReasoningEvent::stop_agent)): the message is stored
    /// and is the natural reply.
    Answer(Msg),
    /// The model called tools (its message is stored): run them with
    /// [`ReplyContext::act`].
    Act(Vec<ToolUseBlock>),
    /// A hook asked for another reasoning step (`goto_reasoning`); its messages are stored.
    Again,
}

/// One call of an agent with a custom [`Reply`]: the call's input and memory, and the steps
/// of the ReAct loop, each firing its hook events and stream events as in a ReAct call.
///
/// A step of an interrupted call returns [`AgentError::Interrupted`]; return it on (`?`).
/// An interrupt also ends the reply while it waits on anything else.
pub struct ReplyContext<'c, 'a> {
    call: &'c mut Call<'a>,
    input: Vec<Msg>,
}

impl std::fmt::Debug for ReplyContext<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyContext")
            .field("agent", self.agent())
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

impl<'c, 'a> ReplyContext<'c, 'a> {
    /// The agent's name and id.
    pub fn agent(&self) -> &AgentInfo {
        &self.call.setup.config.info
    }

    /// The call's input, as PreCall hooks left it (already in memory).
    pub fn input(&self) -> &[Msg] {
        &self.input
    }

    /// The agent's memory: the conversation so far, input included.
    pub fn memory(&self) -> &dyn Memory {
        &*self.call.setup.config.memory
    }

    /// The call's system message (the frozen base after PreCall hooks), if any.
    pub fn system_message(&self) -> Option<&Msg> {
        self.call.progress.base_system.as_ref()
    }

    /// An assistant message from this agent (carrying its name) with one text block: the
    /// usual shape of a reply.
    pub fn message(&self, text: impl Into<String>) -> Msg {
        Msg::new(
            Role::Assistant,
            self.call.setup.config.info.shared_name(),
            vec![ContentBlock::text(text.into())],
        )
    }

    /// The call's cancellation: cancelled when the call is interrupted.
    pub fn cancellation(&self) -> &CancellationToken {
        self.call.setup.cancel
    }

    /// Whether the call was interrupted.
    pub fn is_interrupted(&self) -> bool {
        self.call.setup.cancel.is_cancelled()
    }

    /// The agent's model, to call directly (no hook sees such a call; use
    /// [`reason`](Self::reason) for a step hooks see).
    ///
    /// # Errors
    ///
    /// The model's error.
    pub async fn call_model(&self, request: ModelRequest) -> Result<ChatStream, AgentError> {
        Ok(self.call.setup.config.model.stream(request).await?)
    }

    /// One reasoning step of the ReAct loop: PreReasoning, the model call (chunk events
    /// and stream events), PostReasoning, and the message stored in memory.
    ///
    /// # Errors
    ///
    /// A hook's or the model's error; [`AgentError::Interrupted`] when interrupted.
    pub async fn reason(&mut self) -> Result<Reasoning, AgentError> {
        match self.call.reason(Then::Return).await {
            Ok(Reasoned::Done(message)) => Ok(Reasoning::Answer(message)),
            Ok(Reasoned::Act(calls)) => Ok(Reasoning::Act(calls)),
            Ok(Reasoned::Again) => Ok(Reasoning::Again),
            Err(halt) => Err(halt.into_error()),
        }
    }

    /// Runs tool calls of the last reasoning message: PreActing, the tools (progress as
    /// ActingChunk), PostActing, the results stored. Returns the call's reply when acting
    /// ends it (a hook stopped the call, or a tool suspended it); `None` to reason again.
    ///
    /// # Errors
    ///
    /// A hook's error; [`AgentError::Interrupted`] when interrupted.
    pub async fn act(&mut self, calls: Vec<ToolUseBlock>) -> Result<Option<Msg>, AgentError> {
        match self.call.act(calls).await {
            Ok(Acted::Done(reply)) => Ok(Some(reply)),
            Ok(Acted::Continue) => Ok(None),
            Err(halt) => Err(halt.into_error()),
        }
    }

    /// The rest of a ReAct call from here: reason and act until an answer (summarising at
    /// the iteration limit), exactly as a [`ReActAgent`](crate::ReActAgent) without a custom
    /// reply does.
    ///
    /// # Errors
    ///
    /// As for [`reason`](Self::reason) and [`act`](Self::act).
    pub async fn react(&mut self) -> Result<Msg, AgentError> {
        self.call
            .react_loop(super::Next::Reason)
            .await
            .map_err(Halt::into_error)
    }

    /// The summary step of the iteration limit: PreSummary, the model call without tools
    /// (SummaryChunk), PostSummary, the summary stored.
    ///
    /// # Errors
    ///
    /// A hook's or the model's error; [`AgentError::Interrupted`] when interrupted.
    pub async fn summarize(&mut self) -> Result<Msg, AgentError> {
        self.call.summarize().await.map_err(Halt::into_error)
    }

    /// Stores `message` in memory and sends it to the stream as a final
    /// [`Reasoning`](EventType::Reasoning) event (an intermediate message of a custom
    /// reply: a router's note, a sub-agent's answer).
    pub async fn say(&mut self, message: Msg) {
        self.call.setup.config.memory.add(message.clone());
        self.call.emit(EventType::Reasoning, true, || message).await;
    }

    /// Sends `event` to the call's stream (when the stream's options want its type) as it
    /// is: nothing is stored and no hook runs. For a reply that relays another agent's
    /// work, whose steps are not this agent's (a remote agent's streamed text, tool calls and
    /// tool results). Chunk events are sent as given, whatever the stream's `incremental`
    /// option says; an [`AgentResult`](EventType::AgentResult) event is not sent (the call's
    /// reply is the stream's result).
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope::{Event, EventType, Reply, ReplyContext, StreamOptions};
    /// use futures::StreamExt;
    ///
    /// /// Relays a word at a time, then answers with the whole text.
    /// struct Relay;
    ///
    /// impl Reply for Relay {
    ///     async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
    ///         for word in ["Hello", " there"] {
    ///             let chunk = cx.message(word);
    ///             cx.emit(Event::new(EventType::Reasoning, chunk, false))
    ///                 .await;
    ///         }
    ///         Ok(cx.message("Hello there"))
    ///     }
    /// }
    ///
    /// # futures::executor::block_on(async {
    /// let agent = ReActAgent::builder().name("relay").reply(Relay).build()?;
    /// let events: Vec<_> = agent.stream("hi", StreamOptions::default()).collect().await;
    /// let texts: Vec<String> = events.into_iter().map(|e| e.unwrap().message.text()).collect();
    /// assert_eq!(texts, ["Hello", " there", "Hello there"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn emit(&mut self, event: Event) {
        let Event {
            event_type,
            message,
            is_last,
        } = event;
        if event_type == EventType::AgentResult {
            return;
        }
        self.call.emit(event_type, is_last, || message).await;
    }
}

impl Call<'_> {
    /// Runs the agent's custom reply on the call's `input` (already stored). An interrupt
    /// ends it wherever it waits.
    pub(super) async fn custom_reply(
        &mut self,
        reply: &dyn DynReply,
        input: Vec<Msg>,
    ) -> Step<Msg> {
        let cancel = self.setup.cancel;
        // The call's span is current while the reply runs: what it does nests under it.
        let span = self.call_span();
        let mut cx = ReplyContext { call: self, input };
        let outcome = {
            let replied = reply.reply_boxed(&mut cx).instrument(span);
            match select(replied, pin!(cancel.cancelled())).await {
                Either::Left((outcome, _)) => outcome,
                Either::Right(_) => return Err(Halt::Interrupted),
            }
        };
        let message = match outcome {
            Ok(message) => message,
            Err(AgentError::Interrupted) => return Err(Halt::Interrupted),
            Err(error) => return Err(Halt::Failed(error)),
        };
        // Stored unless a step stored it already (it is then memory's last message).
        let memory = &self.setup.config.memory;
        let stored = memory
            .len()
            .checked_sub(1)
            .and_then(|last| memory.messages_from(last).pop())
            .is_some_and(|last| last.id == message.id);
        if !stored {
            // What the engine stores for the reply must keep memory well formed.
            if message.role == Role::System {
                return Err(Halt::Failed(AgentError::invalid_input(
                    "the custom reply must not be a SYSTEM message (the system message is \
                     set with `sys_prompt` or by hooks)",
                )));
            }
            if message.has_tool_uses() {
                return Err(Halt::Failed(AgentError::invalid_input(
                    "the custom reply holds tool calls that no step ran: let `reason` store \
                     the model's tool calls and `act` run them",
                )));
            }
            memory.add(message.clone());
        }
        Ok(message)
    }
}

/// The model of an agent built without one: a custom reply that never asks the model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoModel;

impl Model for NoModel {
    fn model_name(&self) -> &str {
        "none"
    }

    async fn stream(&self, _request: ModelRequest) -> Result<ChatStream, ModelError> {
        Err(ModelError::Config {
            message: "the agent was built without a model (give one to the builder's `model`)"
                .to_owned(),
        })
    }
}

/// The agent's custom reply, shared by its calls.
pub(crate) type SharedReply = Arc<dyn DynReply>;
