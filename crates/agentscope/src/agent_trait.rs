//! [`Agent`]: what every agent can do, as a trait object multi-agent code holds.

use std::sync::Arc;

use agentscope_core::{AgentError, Msg};
use futures::future::BoxFuture;

use crate::agent::{CallInput, ReActAgent};
use crate::session::AgentState;
use crate::stream::{AgentStream, StreamOptions};

/// An agent: it has a name and an id, replies to calls (at once or as a stream), observes
/// messages without replying, can be interrupted, and saves and loads its state.
///
/// [`ReActAgent`] implements it, including agents built with a custom
/// [`Reply`](crate::Reply); so can your own types. Multi-agent building blocks
/// (the message hub, the pipelines, an agent used as a tool)
/// hold agents as `Arc<dyn Agent>`.
///
/// The trait's methods take a [`CallInput`]; `ReActAgent`'s own methods of the same names
/// take anything that converts into one and are the ones a direct call picks.
///
/// ```
/// use std::sync::Arc;
/// use agentscope::prelude::*;
/// use agentscope::Agent;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let agents: Vec<Arc<dyn Agent>> = vec![
///     Arc::new(ReActAgent::builder().name("alice")
///         .model(ScriptedModel::new([ScriptedResponse::text("Hi, I'm Alice.")])).build()?),
///     Arc::new(ReActAgent::builder().name("bob")
///         .model(ScriptedModel::new([ScriptedResponse::text("Bob here.")])).build()?),
/// ];
/// for agent in &agents {
///     let reply = agent.call(Msg::user("Who are you?").into()).await?;
///     println!("{}: {}", agent.name(), reply.text());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait Agent: Send + Sync + 'static {
    /// The agent's name (its replies carry it).
    fn name(&self) -> &str;

    /// The agent's id.
    fn id(&self) -> &str;

    /// Runs one call and returns the reply. See [`ReActAgent::call`].
    fn call(&self, input: CallInput) -> BoxFuture<'static, Result<Msg, AgentError>>;

    /// Runs one call as a stream of events. See [`ReActAgent::stream`].
    fn stream(&self, input: CallInput, options: StreamOptions) -> AgentStream;

    /// Stores messages without replying (PreCall hooks see them first, see
    /// [`ReActAgent::observe`]).
    fn observe(&self, input: CallInput) -> BoxFuture<'_, Result<(), AgentError>>;

    /// Interrupts the running call, if any. See [`ReActAgent::interrupt`].
    fn interrupt(&self);

    /// The agent's state. See [`ReActAgent::save_state`].
    ///
    /// # Errors
    ///
    /// [`AgentError::Busy`] while a call is running.
    fn save_state(&self) -> Result<AgentState, AgentError>;

    /// Replaces the agent's state. See [`ReActAgent::load_state`].
    fn load_state(&self, state: AgentState) -> BoxFuture<'_, Result<(), AgentError>>;
}

impl Agent for ReActAgent {
    fn name(&self) -> &str {
        ReActAgent::name(self)
    }

    fn id(&self) -> &str {
        ReActAgent::id(self)
    }

    fn call(&self, input: CallInput) -> BoxFuture<'static, Result<Msg, AgentError>> {
        Box::pin(ReActAgent::call(self, input))
    }

    fn stream(&self, input: CallInput, options: StreamOptions) -> AgentStream {
        ReActAgent::stream(self, input, options)
    }

    fn observe(&self, input: CallInput) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(ReActAgent::observe(self, input))
    }

    fn interrupt(&self) {
        ReActAgent::interrupt(self);
    }

    fn save_state(&self) -> Result<AgentState, AgentError> {
        ReActAgent::save_state(self)
    }

    fn load_state(&self, state: AgentState) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(ReActAgent::load_state(self, state))
    }
}

impl<A: Agent + ?Sized> Agent for Arc<A> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn id(&self) -> &str {
        (**self).id()
    }

    fn call(&self, input: CallInput) -> BoxFuture<'static, Result<Msg, AgentError>> {
        (**self).call(input)
    }

    fn stream(&self, input: CallInput, options: StreamOptions) -> AgentStream {
        (**self).stream(input, options)
    }

    fn observe(&self, input: CallInput) -> BoxFuture<'_, Result<(), AgentError>> {
        (**self).observe(input)
    }

    fn interrupt(&self) {
        (**self).interrupt();
    }

    fn save_state(&self) -> Result<AgentState, AgentError> {
        (**self).save_state()
    }

    fn load_state(&self, state: AgentState) -> BoxFuture<'_, Result<(), AgentError>> {
        (**self).load_state(state)
    }
}

/// `agent` as the trait object multi-agent code holds, without wrapping an
/// `Arc<dyn Agent>` twice.
#[cfg(feature = "multi-agent")]
pub(crate) fn shared<A: Agent>(agent: A) -> Arc<dyn Agent> {
    if let Some(shared) = (&agent as &dyn std::any::Any).downcast_ref::<Arc<dyn Agent>>() {
        return Arc::clone(shared);
    }
    Arc::new(agent)
}
