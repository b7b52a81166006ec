//! The fan-out pipeline: the same input to every agent, concurrently, in a hub or not.

use std::sync::Arc;

use agentscope_core::{Msg, SharedString};
use futures::future::join_all;

use super::error::{AgentFailure, MultiAgentError};
use super::roster::Roster;
use crate::agent::CallInput;
use crate::agent_trait::Agent;

/// Gives `input` to every agent concurrently and returns their replies **in the order of
/// `agents`**, whatever order they finished in. AgentScope Python's `fanout_pipeline`
/// (with `enable_gather=True`).
///
/// ```text
///          ┌──▶ agents[0] ──▶ reply 0 ─┐
/// input ───┼──▶ agents[1] ──▶ reply 1 ─┼──▶ [reply 0, reply 1, reply 2]
///          └──▶ agents[2] ──▶ reply 2 ─┘
/// ```
///
/// The calls run on the caller's task (joined, not spawned). Outside a hub nobody else sees
/// the replies; run it with [`MsgHub::fanout`](super::MsgHub::fanout) to have every
/// participant observe them.
///
/// ```
/// use std::sync::Arc;
/// use agentscope::prelude::*;
/// use agentscope::Agent;
/// use agentscope::multi_agent::fanout;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let voter = |name: &str, vote: &str| -> Result<Arc<dyn Agent>, BuildError> {
///     let model = ScriptedModel::new([ScriptedResponse::text(vote)]);
///     Ok(Arc::new(ReActAgent::builder().name(name).model(model).build()?))
/// };
/// let agents = [voter("ann", "yes")?, voter("ben", "no")?];
/// let votes = fanout(&agents, "Ship it?").await?;
/// let votes: Vec<_> = votes.iter().map(|m| (m.name.as_str(), m.text())).collect();
/// assert_eq!(votes, [("ann", "yes".to_owned()), ("ben", "no".to_owned())]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Errors
///
/// [`MultiAgentError::Agents`] when agents failed: a failing agent does not stop the others
/// (each call runs to its end), and the error names every agent that failed and holds the
/// others' replies, in the order of `agents`.
///
/// # Cancel safety
///
/// Dropping the future cancels every call still running (see
/// [`ReActAgent::call`](crate::ReActAgent::call)).
pub async fn fanout(
    agents: &[Arc<dyn Agent>],
    input: impl Into<CallInput>,
) -> Result<Vec<Msg>, MultiAgentError> {
    run(agents, input.into().into_messages(), None).await
}

/// The pipeline, in the hub of `hub` when given (replies broadcast once every call ended)
/// or directly.
pub(super) async fn run(
    agents: &[Arc<dyn Agent>],
    input: Vec<Msg>,
    hub: Option<&Roster>,
) -> Result<Vec<Msg>, MultiAgentError> {
    if let Some(hub) = hub {
        hub.check_all(agents)?;
    }
    let inputs: Vec<Vec<Msg>> = agents
        .iter()
        .map(|agent| match hub {
            Some(hub) => hub.unseen(agent.id(), &input),
            None => input.clone(),
        })
        .collect();
    let ids: Vec<Vec<SharedString>> = inputs
        .iter()
        .map(|input| input.iter().map(|m| m.id.clone()).collect())
        .collect();
    let outcomes = join_all(
        agents
            .iter()
            .zip(inputs)
            .map(|(agent, input)| agent.call(input.into())),
    )
    .await;

    let mut replies = Vec::with_capacity(agents.len());
    let mut failures = Vec::new();
    for (agent, outcome) in agents.iter().zip(outcomes) {
        match outcome {
            Ok(reply) => replies.push(Some(reply)),
            Err(error) => {
                failures.push(AgentFailure::reply(agent.name(), error));
                replies.push(None);
            }
        }
    }
    if let Some(hub) = hub {
        for ((agent, reply), ids) in agents.iter().zip(&replies).zip(ids) {
            if let Some(reply) = reply {
                hub.mark(agent.id(), ids.into_iter().chain([reply.id.clone()]));
                failures.extend(hub.share(reply, agent.id()).await);
            }
        }
    }
    if failures.is_empty() {
        Ok(replies.into_iter().flatten().collect())
    } else {
        Err(MultiAgentError::Agents { replies, failures })
    }
}
