//! The sequential pipeline: each agent's reply is the next agent's input.

use std::fmt;
use std::sync::Arc;

use agentscope_core::Msg;

use super::error::{AgentFailure, MultiAgentError};
use super::heard;
use super::hub::MsgHub;
use crate::agent::CallInput;
use crate::agent_trait::Agent;

/// Runs `agents` one after another: the first gets `input`, each next one gets the previous
/// one's reply; returns the last reply. AgentScope Python's `sequential_pipeline`.
///
/// ```text
/// input ──▶ agents[0] ──reply──▶ agents[1] ──reply──▶ … ──▶ agents[n-1] ──▶ last reply
/// ```
///
/// The next agent gets the reply as it hears it: a [`Role::User`](agentscope_core::Role::User)
/// message carrying the speaker's name and the reply's id, with the reply's text (after the
/// speaker's name: `"writer: ..."`) and images
/// (its thinking and tool calls stay with the speaker); see [`MsgHub`] for why.
///
/// Outside a hub, nobody else sees the replies; run it with
/// [`MsgHub::sequential`] to have every participant observe each of them.
///
/// ```
/// use std::sync::Arc;
/// use agentscope::prelude::*;
/// use agentscope::Agent;
/// use agentscope::multi_agent::sequential;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let writer = ReActAgent::builder().name("writer")
///     .model(ScriptedModel::new([ScriptedResponse::text("A draft.")])).build()?;
/// let editor_model = ScriptedModel::new([ScriptedResponse::text("A better draft.")]);
/// let editor = ReActAgent::builder().name("editor").model(editor_model.clone()).build()?;
/// let agents: [Arc<dyn Agent>; 2] = [Arc::new(writer), Arc::new(editor)];
///
/// let reply = sequential(&agents, "Write a haiku.").await?;
/// assert_eq!((reply.name.as_str(), reply.text()), ("editor", "A better draft.".to_owned()));
/// // The editor's input was the writer's reply, as the editor hears it.
/// let request = &editor_model.requests()[0];
/// assert_eq!((request.messages[0].role, request.messages[0].name.as_str()), (Role::User, "writer"));
/// assert_eq!(request.messages[0].text(), "writer: A draft.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Errors
///
/// [`MultiAgentError::NoAgents`] for an empty list; [`MultiAgentError::Agents`] when an agent
/// fails: the pipeline stops there (the agents after it never run), and the error names it
/// and holds the replies made before it.
///
/// # Cancel safety
///
/// Dropping the future cancels the running agent's call (see
/// [`ReActAgent::call`](crate::ReActAgent::call)); the agents after it never run.
pub async fn sequential(
    agents: &[Arc<dyn Agent>],
    input: impl Into<CallInput>,
) -> Result<Msg, MultiAgentError> {
    run(agents, input.into().into_messages(), None).await
}

/// A sequential pipeline kept as a value: the same agents, run on several inputs, in or
/// outside a hub. AgentScope Python's `SequentialPipeline`. See [`sequential`].
///
/// ```
/// use std::sync::Arc;
/// use agentscope::prelude::*;
/// use agentscope::multi_agent::SequentialPipeline;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let echo = ReActAgent::builder().name("echo")
///     .model(ScriptedModel::new([ScriptedResponse::text("once")])).build()?;
/// let pipeline = SequentialPipeline::new([Arc::new(echo) as Arc<dyn agentscope::Agent>]);
/// assert_eq!(pipeline.run("hi").await?.text(), "once");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SequentialPipeline {
    agents: Vec<Arc<dyn Agent>>,
}

impl SequentialPipeline {
    /// A pipeline running `agents` in this order.
    pub fn new(agents: impl IntoIterator<Item = Arc<dyn Agent>>) -> Self {
        Self {
            agents: agents.into_iter().collect(),
        }
    }

    /// The agents, in order.
    pub fn agents(&self) -> &[Arc<dyn Agent>] {
        &self.agents
    }

    /// Runs the pipeline on `input` (see [`sequential`]).
    ///
    /// # Errors
    ///
    /// As [`sequential`].
    pub async fn run(&self, input: impl Into<CallInput>) -> Result<Msg, MultiAgentError> {
        sequential(&self.agents, input).await
    }

    /// Runs the pipeline on `input` in `hub` (see [`MsgHub::sequential`]).
    ///
    /// # Errors
    ///
    /// As [`MsgHub::sequential`].
    pub async fn run_in(
        &self,
        hub: &MsgHub,
        input: impl Into<CallInput>,
    ) -> Result<Msg, MultiAgentError> {
        hub.sequential(&self.agents, input).await
    }
}

impl fmt::Debug for SequentialPipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.agents.iter().map(|a| a.name()).collect();
        f.debug_struct("SequentialPipeline")
            .field("agents", &names)
            .finish()
    }
}

/// The pipeline, in `hub` when given (each call through the hub) or directly.
pub(super) async fn run(
    agents: &[Arc<dyn Agent>],
    input: Vec<Msg>,
    hub: Option<&MsgHub>,
) -> Result<Msg, MultiAgentError> {
    if let Some(hub) = hub {
        for agent in agents {
            hub.check(&**agent)?;
        }
    }
    let mut replies: Vec<Option<Msg>> = vec![None; agents.len()];
    let mut input = input;
    let mut last = None;
    for (at, agent) in agents.iter().enumerate() {
        let spoken = match hub {
            Some(hub) => hub.speak(&**agent, input).await,
            None => agent
                .call(input.into())
                .await
                .map_err(|error| super::hub::Unsaid {
                    reply: None,
                    failures: vec![AgentFailure::reply(agent.name(), error)],
                }),
        };
        match spoken {
            Ok(reply) => {
                input = heard(&reply).into_iter().collect();
                replies[at] = Some(reply.clone());
                last = Some(reply);
            }
            Err(unsaid) => {
                replies[at] = unsaid.reply;
                return Err(MultiAgentError::Agents {
                    replies,
                    failures: unsaid.failures,
                });
            }
        }
    }
    last.ok_or(MultiAgentError::NoAgents)
}
