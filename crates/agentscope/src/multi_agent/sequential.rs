//! The sequential pipeline: each agent's reply is the next agent's input, in a hub or not.

use std::sync::Arc;

use agentscope_core::Msg;

use super::error::{AgentFailure, MultiAgentError};
use super::roster::{Roster, Unsaid, heard};
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
/// (its thinking and tool calls stay with the speaker); see [`MsgHub`](super::MsgHub) for
/// why.
///
/// Outside a hub, nobody else sees the replies; run it with
/// [`MsgHub::sequential`](super::MsgHub::sequential) to have every participant observe each
/// of them.
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

/// The pipeline, in the hub of `hub` when given (each call through the hub) or directly.
pub(super) async fn run(
    agents: &[Arc<dyn Agent>],
    input: Vec<Msg>,
    hub: Option<&Roster>,
) -> Result<Msg, MultiAgentError> {
    if let Some(hub) = hub {
        hub.check_all(agents)?;
    }
    let mut replies: Vec<Option<Msg>> = vec![None; agents.len()];
    let mut input = input;
    let mut last = None;
    for (at, agent) in agents.iter().enumerate() {
        let spoken = match hub {
            Some(hub) => hub.speak(&**agent, input).await,
            None => agent.call(input.into()).await.map_err(|error| Unsaid {
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
