//! [`Roster`]: who is in a hub's conversation and what reaches them. A participant's reply
//! is heard by the others ([`heard`]), concurrently, failures collected; the hub remembers
//! what it gave each participant, so nothing is delivered twice. [`MsgHub`](super::MsgHub)
//! and the pipelines run in it all deliver through here.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentscope_core::{ContentBlock, Msg, Role, SharedString};
use futures::future::join_all;

use super::error::{AgentFailure, MultiAgentError};
use crate::agent_trait::Agent;

/// The participants of one hub, in the order they entered, each with what it was given.
pub(super) struct Roster(Mutex<Vec<Participant>>);

/// A participant and the ids of the messages the hub gave it.
struct Participant {
    agent: Arc<dyn Agent>,
    seen: HashSet<SharedString>,
}

/// A reply that could not be said (cleanly) in the hub.
pub(super) struct Unsaid {
    /// The reply, when the call succeeded and observers failed.
    pub(super) reply: Option<Msg>,
    pub(super) failures: Vec<AgentFailure>,
}

impl Roster {
    /// The roster of `agents`, who have been given nothing yet.
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::DuplicateParticipant`] when two of them share a name or an id.
    pub(super) fn new(agents: Vec<Arc<dyn Agent>>) -> Result<Self, MultiAgentError> {
        let mut participants: Vec<Participant> = Vec::with_capacity(agents.len());
        for agent in agents {
            if let Some(taken) = clash(&participants, &*agent) {
                return Err(MultiAgentError::DuplicateParticipant { agent: taken });
            }
            participants.push(Participant {
                agent,
                seen: HashSet::new(),
            });
        }
        Ok(Roster(Mutex::new(participants)))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Participant>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The name of the participant `agent` clashes with (same name or id), if any.
    pub(super) fn clash(&self, agent: &dyn Agent) -> Option<String> {
        clash(&self.lock(), agent)
    }

    /// Adds `agent`, which has been given the messages `seen`.
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::DuplicateParticipant`] when a participant has its name or id.
    pub(super) fn admit(
        &self,
        agent: Arc<dyn Agent>,
        seen: HashSet<SharedString>,
    ) -> Result<(), MultiAgentError> {
        let mut participants = self.lock();
        if let Some(taken) = clash(&participants, &*agent) {
            return Err(MultiAgentError::DuplicateParticipant { agent: taken });
        }
        participants.push(Participant { agent, seen });
        Ok(())
    }

    /// Removes the participant whose id, or else whose name, is `who`.
    pub(super) fn remove(&self, who: &str) -> Option<Arc<dyn Agent>> {
        let mut participants = self.lock();
        let at = position(&participants, who)?;
        Some(participants.remove(at).agent)
    }

    /// The participant whose id, or else whose name, is `who`.
    pub(super) fn find(&self, who: &str) -> Option<Arc<dyn Agent>> {
        let participants = self.lock();
        position(&participants, who).map(|at| Arc::clone(&participants[at].agent))
    }

    /// The participants, in the order they entered.
    pub(super) fn agents(&self) -> Vec<Arc<dyn Agent>> {
        self.lock().iter().map(|p| Arc::clone(&p.agent)).collect()
    }

    /// The participants' names, in the order they entered.
    pub(super) fn names(&self) -> Vec<String> {
        self.lock()
            .iter()
            .map(|p| p.agent.name().to_owned())
            .collect()
    }

    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Fails unless `agent` is a participant.
    pub(super) fn check(&self, agent: &dyn Agent) -> Result<(), MultiAgentError> {
        if self.lock().iter().any(|p| p.agent.id() == agent.id()) {
            Ok(())
        } else {
            Err(MultiAgentError::NotParticipant {
                agent: agent.name().to_owned(),
            })
        }
    }

    /// Fails unless every one of `agents` is a participant (checked before anything runs).
    pub(super) fn check_all(&self, agents: &[Arc<dyn Agent>]) -> Result<(), MultiAgentError> {
        agents.iter().try_for_each(|agent| self.check(&**agent))
    }

    /// `input` without the messages the hub already gave the participant `agent_id`.
    pub(super) fn unseen(&self, agent_id: &str, input: &[Msg]) -> Vec<Msg> {
        let participants = self.lock();
        let seen = participants
            .iter()
            .find(|p| p.agent.id() == agent_id)
            .map(|p| &p.seen);
        input
            .iter()
            .filter(|m| seen.is_none_or(|seen| !seen.contains(&m.id)))
            .cloned()
            .collect()
    }

    /// Records that the participant `agent_id` has these messages.
    pub(super) fn mark(&self, agent_id: &str, ids: impl IntoIterator<Item = SharedString>) {
        if let Some(participant) = self.lock().iter_mut().find(|p| p.agent.id() == agent_id) {
            participant.seen.extend(ids);
        }
    }

    /// One call of `agent` in the hub, its reply broadcast to the others.
    pub(super) async fn speak(&self, agent: &dyn Agent, input: Vec<Msg>) -> Result<Msg, Unsaid> {
        let input = self.unseen(agent.id(), &input);
        let ids: Vec<SharedString> = input.iter().map(|m| m.id.clone()).collect();
        let reply = match agent.call(input.into()).await {
            Ok(reply) => reply,
            Err(error) => {
                return Err(Unsaid {
                    reply: None,
                    failures: vec![AgentFailure::reply(agent.name(), error)],
                });
            }
        };
        self.mark(agent.id(), ids.into_iter().chain([reply.id.clone()]));
        let failures = self.share(&reply, agent.id()).await;
        if failures.is_empty() {
            Ok(reply)
        } else {
            Err(Unsaid {
                reply: Some(reply),
                failures,
            })
        }
    }

    /// Every participant but `speaker` (an id) observes what it heard of `message` (a
    /// participant's words): nothing when nothing was said. Returns the failures.
    pub(super) async fn share(&self, message: &Msg, speaker: &str) -> Vec<AgentFailure> {
        match heard(message) {
            Some(heard) => self.deliver(&heard, Some(speaker)).await,
            None => Vec::new(),
        }
    }

    /// Every participant but `speaker` (an id) observes `message`, concurrently. Returns
    /// the failures, in participant order.
    pub(super) async fn deliver(&self, message: &Msg, speaker: Option<&str>) -> Vec<AgentFailure> {
        let listeners: Vec<Arc<dyn Agent>> = self
            .lock()
            .iter()
            .filter(|p| speaker != Some(p.agent.id()))
            .map(|p| Arc::clone(&p.agent))
            .collect();
        let outcomes = join_all(
            listeners
                .iter()
                .map(|agent| agent.observe(message.clone().into())),
        )
        .await;
        let mut failures = Vec::new();
        let mut observed = Vec::new();
        for (agent, outcome) in listeners.iter().zip(outcomes) {
            match outcome {
                Ok(()) => observed.push(agent.id()),
                Err(error) => failures.push(AgentFailure::observe(agent.name(), message, error)),
            }
        }
        for participant in self.lock().iter_mut() {
            if observed.contains(&participant.agent.id()) {
                participant.seen.insert(message.id.clone());
            }
        }
        failures
    }
}

/// What another agent hears of `message`: what was said (its text and images, not the
/// speaker's thinking or tool calls), as a [`Role::User`] message (from the listener's
/// point of view, only its own replies are assistant turns) with the same id, name, time
/// and metadata. Another agent's reply starts with its speaker's name (`"alice: ..."`), so
/// a model that reads the conversation knows who said what (a `Msg`'s name does not reach
/// every provider's API). `None` when nothing was said (a tool message, a reply of tool
/// calls only).
pub(super) fn heard(message: &Msg) -> Option<Msg> {
    let mut said: Vec<ContentBlock> = message
        .content
        .iter()
        .filter(|block| matches!(block, ContentBlock::Text(_) | ContentBlock::Image(_)))
        .cloned()
        .collect();
    if said.is_empty() || message.role == Role::System {
        return None;
    }
    if message.role == Role::Assistant {
        let speaker = format!("{}: ", message.name);
        match said.first_mut() {
            Some(ContentBlock::Text(first)) => {
                first.text = format!("{speaker}{}", first.text).into();
            }
            _ => said.insert(0, ContentBlock::text(speaker.trim_end())),
        }
    }
    let mut heard = message.clone();
    heard.role = Role::User;
    heard.content = said.into();
    Some(heard)
}

/// The name of the participant that `agent` clashes with (same name or id), if any.
fn clash(participants: &[Participant], agent: &dyn Agent) -> Option<String> {
    participants
        .iter()
        .any(|p| p.agent.id() == agent.id() || p.agent.name() == agent.name())
        .then(|| agent.name().to_owned())
}

fn position(participants: &[Participant], who: &str) -> Option<usize> {
    participants
        .iter()
        .position(|p| p.agent.id() == who)
        .or_else(|| participants.iter().position(|p| p.agent.name() == who))
}
