//! [`MsgHub`]: a conversation between agents, where every participant observes what any
//! participant says in it. The hub's face: its builder, its participants and its calls;
//! delivery is the [`Roster`]'s, and the pipelines run in it are `sequential.rs`'s and
//! `fanout.rs`'s.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use agentscope_core::Msg;

use super::error::{AgentFailure, MultiAgentError};
use super::roster::Roster;
use super::{fanout, sequential};
use crate::agent::CallInput;
use crate::agent_trait::{Agent, shared};

/// A conversation between agents: every participant observes every message any participant
/// says in the hub. The Rust counterpart of AgentScope Python's `MsgHub`.
///
/// # What is broadcast, and when
///
/// Python's `MsgHub` is a context manager that subscribes the participants to each other's
/// replies. Here nothing is subscribed: the agents know nothing of the hub, and **a reply
/// is broadcast when the call goes through the hub**: [`call`](Self::call), and the
/// pipelines [`sequential`](Self::sequential) and [`fanout`](Self::fanout). Calling an agent
/// directly (`agent.call(..)`) is a private exchange the others never see.
///
/// - **A participant's reply** is observed by every *other* participant ([`Agent::observe`],
///   so their PreCall hooks see it and may redact it); the speaker has it in memory already.
///   Listeners hear what was said: a [`Role::User`](agentscope_core::Role::User) message
///   carrying the speaker's name and the reply's id, with its text and images (not the
///   speaker's thinking or tool calls), the text starting with the speaker's name
///   (`"alice: ..."`). From an agent's point of view only its own replies
///   are assistant turns; so a participant whose memory ends with another's words can be
///   called with no input, and a model never sees another agent's words as its own.
///   The input of a call is the caller's message to one agent and is not broadcast: share
///   it with [`broadcast`](Self::broadcast) first if the others should know it.
/// - **The announcement** ([`MsgHubBuilder::announcement`]) is observed by every participant
///   when it enters the hub: the first ones at [`MsgHubBuilder::enter`], later ones at
///   [`add`](Self::add).
/// - **[`broadcast`](Self::broadcast)** makes every participant observe a message (a host's
///   or user's message from outside the hub), as given.
/// - **Nothing is delivered twice.** The hub remembers, per participant, the ids of the
///   messages it gave it (observed, or the input and reply of its own calls); such messages
///   are left out of the input of that participant's later calls through the hub. So in
///   `hub.sequential(&[alice, bob], input)`, Bob, who observed Alice's reply, is called with
///   no new input and answers from his memory, where the reply already is; it is not stored
///   twice.
/// - Observers observe concurrently; the replies of a fan-out are broadcast after every call
///   of the fan-out ended, in participant order (an agent cannot observe while it replies).
///   Calls through one hub should not otherwise overlap: a participant that is busy in
///   another call cannot observe ([`AgentError::Busy`](agentscope_core::AgentError::Busy)).
///
/// # Errors are reported, never swallowed
///
/// When some participants fail to observe a message, every other participant still
/// observes it, and the call returns [`MultiAgentError::Agents`] naming each participant that
/// failed ([`Activity::Observe`](super::Activity::Observe)) and holding the reply that was
/// made (it is in the speaker's memory and in the memory of everyone who observed it).
///
/// ```
/// use std::sync::Arc;
/// use agentscope::prelude::*;
/// use agentscope::Agent;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let agent = |name: &str, says: &str| -> Result<Arc<dyn Agent>, BuildError> {
///     let model = ScriptedModel::new([ScriptedResponse::text(says)]);
///     Ok(Arc::new(ReActAgent::builder().name(name).model(model).build()?))
/// };
/// let (alice, bob) = (agent("alice", "Hi, I'm Alice.")?, agent("bob", "Bob here.")?);
/// let hub = MsgHub::builder()
///     .participants([alice.clone(), bob.clone()])
///     .announcement(Msg::builder().name("host").text("Introduce yourselves.").build())
///     .enter()
///     .await?;
/// let replies = hub.sequential(&[alice, bob.clone()], ()).await?;
/// assert_eq!(replies.text(), "Bob here.");
/// // Bob observed the announcement and Alice's reply, then replied.
/// let state = bob.save_state()?;
/// let said: Vec<_> = state.messages.iter().map(|m| (m.name.as_str(), m.text())).collect();
/// assert_eq!(said, [
///     ("host", "Introduce yourselves.".to_owned()),
///     ("alice", "alice: Hi, I'm Alice.".to_owned()),
///     ("bob", "Bob here.".to_owned()),
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// `MsgHub` is a cheap handle (an `Arc` inside): clones share the participants.
#[derive(Clone)]
pub struct MsgHub {
    inner: Arc<HubInner>,
}

struct HubInner {
    announcement: Option<Msg>,
    roster: Roster,
}

/// Builds a [`MsgHub`]: its participants and announcement. Finish with
/// [`enter`](Self::enter).
#[must_use = "a hub builder does nothing until `enter` is awaited"]
#[derive(Default)]
pub struct MsgHubBuilder {
    participants: Vec<Arc<dyn Agent>>,
    announcement: Option<Msg>,
}

impl fmt::Debug for MsgHubBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsgHubBuilder")
            .field("participants", &names(&self.participants))
            .field("announcement", &self.announcement)
            .finish()
    }
}

impl MsgHubBuilder {
    /// Adds a participant (a [`ReActAgent`](crate::ReActAgent), a
    /// [`UserAgent`](super::UserAgent), an `Arc<dyn Agent>`, ...).
    pub fn participant(mut self, agent: impl Agent) -> Self {
        self.participants.push(shared(agent));
        self
    }

    /// Adds participants, in order.
    pub fn participants<A: Agent>(mut self, agents: impl IntoIterator<Item = A>) -> Self {
        self.participants.extend(agents.into_iter().map(shared));
        self
    }

    /// A message every participant observes on entering the hub (like Python's
    /// `MsgHub(participants, announcement=...)`): the topic, the rules, who is who.
    pub fn announcement(mut self, message: Msg) -> Self {
        self.announcement = Some(message);
        self
    }

    /// Opens the hub: every participant observes the announcement, if any (concurrently).
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::DuplicateParticipant`] when two participants share a name or an
    /// id (nothing was observed); [`MultiAgentError::Agents`] naming each participant that
    /// failed to observe the announcement (the others observed it; there is no hub).
    pub async fn enter(self) -> Result<MsgHub, MultiAgentError> {
        let hub = MsgHub {
            inner: Arc::new(HubInner {
                announcement: self.announcement,
                roster: Roster::new(self.participants)?,
            }),
        };
        if let Some(announcement) = &hub.inner.announcement {
            let failures = hub.roster().deliver(announcement, None).await;
            if !failures.is_empty() {
                return Err(MultiAgentError::Agents {
                    replies: Vec::new(),
                    failures,
                });
            }
        }
        Ok(hub)
    }
}

impl MsgHub {
    /// A builder: [`participants`](MsgHubBuilder::participants),
    /// [`announcement`](MsgHubBuilder::announcement), then [`enter`](MsgHubBuilder::enter).
    pub fn builder() -> MsgHubBuilder {
        MsgHubBuilder::default()
    }

    /// Runs one call of `agent` (a participant) in the hub: its input, minus the messages
    /// the hub already gave it, goes to the agent; its reply is observed by every other
    /// participant, then returned.
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::NotParticipant`] (nothing ran); [`MultiAgentError::Agents`] when
    /// the call failed (nothing was broadcast) or when participants failed to observe the
    /// reply (the reply is in the error, and every other participant observed it).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while the agent replies cancels its call (see
    /// [`ReActAgent::call`](crate::ReActAgent::call)); dropping it while the others observe
    /// leaves the reply observed by some of them.
    pub async fn call(
        &self,
        agent: &dyn Agent,
        input: impl Into<CallInput>,
    ) -> Result<Msg, MultiAgentError> {
        self.roster().check(agent)?;
        self.roster()
            .speak(agent, input.into().into_messages())
            .await
            .map_err(|unsaid| MultiAgentError::Agents {
                replies: vec![unsaid.reply],
                failures: unsaid.failures,
            })
    }

    /// Every participant observes `message` (concurrently): a message from outside the hub,
    /// a host's instructions, a user's question for everyone.
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::Agents`] naming each participant that failed to observe it; every
    /// other participant observed it.
    pub async fn broadcast(&self, message: Msg) -> Result<(), MultiAgentError> {
        let failures = self.roster().deliver(&message, None).await;
        if failures.is_empty() {
            Ok(())
        } else {
            Err(MultiAgentError::Agents {
                replies: Vec::new(),
                failures,
            })
        }
    }

    /// Every participant but `speaker` observes `message`, something `speaker` said outside
    /// the hub's calls: the reply of a call you streamed yourself
    /// (`speaker.stream(..)`), say, which is then shared as [`call`](Self::call) shares a
    /// reply.
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::NotParticipant`] when `speaker` is not a participant (nothing was
    /// delivered); [`MultiAgentError::Agents`] naming each participant that failed to observe
    /// it (every other participant observed it).
    pub async fn broadcast_from(
        &self,
        speaker: &dyn Agent,
        message: Msg,
    ) -> Result<(), MultiAgentError> {
        let roster = self.roster();
        roster.check(speaker)?;
        roster.mark(speaker.id(), [message.id.clone()]);
        let failures = roster.share(&message, speaker.id()).await;
        if failures.is_empty() {
            Ok(())
        } else {
            Err(MultiAgentError::Agents {
                replies: vec![Some(message)],
                failures,
            })
        }
    }

    /// Runs a sequential pipeline in the hub (see [`sequential`](super::sequential)): each
    /// agent's reply is observed by the other participants, and is the next agent's input
    /// (which the hub leaves out for a participant that observed it: the next agent replies
    /// from its memory). Returns the last reply.
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::NotParticipant`] when an agent is not a participant (nothing ran);
    /// [`MultiAgentError::NoAgents`]; [`MultiAgentError::Agents`] when an agent failed to
    /// reply or participants failed to observe a reply: the pipeline stops there, and the
    /// error holds the replies made so far.
    pub async fn sequential(
        &self,
        agents: &[Arc<dyn Agent>],
        input: impl Into<CallInput>,
    ) -> Result<Msg, MultiAgentError> {
        sequential::run(agents, input.into().into_messages(), Some(self.roster())).await
    }

    /// Runs a fan-out pipeline in the hub (see [`fanout`](super::fanout)): every agent gets
    /// `input` (minus what the hub already gave it) concurrently; when all calls ended,
    /// each reply, in the order of `agents`, is observed by the other participants. Returns
    /// the replies in the order of `agents`.
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::NotParticipant`] when an agent is not a participant (nothing ran);
    /// [`MultiAgentError::Agents`] when agents failed to reply or participants failed to
    /// observe: the replies that were made are in the error, and were broadcast.
    pub async fn fanout(
        &self,
        agents: &[Arc<dyn Agent>],
        input: impl Into<CallInput>,
    ) -> Result<Vec<Msg>, MultiAgentError> {
        fanout::run(agents, input.into().into_messages(), Some(self.roster())).await
    }

    /// Adds a participant; it observes the announcement, if any, and from then on every
    /// message said in the hub (not what was said before).
    ///
    /// # Errors
    ///
    /// [`MultiAgentError::DuplicateParticipant`] when a participant has its name or id;
    /// [`MultiAgentError::Agents`] when it failed to observe the announcement (it is not
    /// added).
    pub async fn add(&self, agent: impl Agent) -> Result<(), MultiAgentError> {
        let agent = shared(agent);
        if let Some(taken) = self.roster().clash(&*agent) {
            return Err(MultiAgentError::DuplicateParticipant { agent: taken });
        }
        let mut seen = HashSet::new();
        if let Some(announcement) = &self.inner.announcement {
            if let Err(error) = agent.observe(announcement.clone().into()).await {
                return Err(MultiAgentError::Agents {
                    replies: Vec::new(),
                    failures: vec![AgentFailure::observe(agent.name(), announcement, error)],
                });
            }
            seen.insert(announcement.id.clone());
        }
        // Checked again: another `add` may have won the race while this one observed.
        self.roster().admit(agent, seen)
    }

    /// Removes the participant whose id, or else whose name, is `who`; it observes nothing
    /// said in the hub from now on. Returns it, or `None` when there is no such participant.
    pub fn remove(&self, who: &str) -> Option<Arc<dyn Agent>> {
        self.roster().remove(who)
    }

    /// The participant whose id, or else whose name, is `who`.
    pub fn participant(&self, who: &str) -> Option<Arc<dyn Agent>> {
        self.roster().find(who)
    }

    /// The participants, in the order they entered.
    pub fn participants(&self) -> Vec<Arc<dyn Agent>> {
        self.roster().agents()
    }

    /// The participants' names, in the order they entered.
    pub fn names(&self) -> Vec<String> {
        self.roster().names()
    }

    /// How many participants the hub has.
    pub fn len(&self) -> usize {
        self.roster().len()
    }

    /// Whether the hub has no participants.
    pub fn is_empty(&self) -> bool {
        self.roster().len() == 0
    }

    /// The announcement every participant observes on entering.
    pub fn announcement(&self) -> Option<&Msg> {
        self.inner.announcement.as_ref()
    }

    fn roster(&self) -> &Roster {
        &self.inner.roster
    }
}

impl fmt::Debug for MsgHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsgHub")
            .field("participants", &self.names())
            .field("announcement", &self.inner.announcement)
            .finish()
    }
}

fn names(agents: &[Arc<dyn Agent>]) -> Vec<&str> {
    agents.iter().map(|a| a.name()).collect()
}
