//! [`MultiAgentError`]: what can go wrong in a hub or a pipeline, and [`AgentFailure`], one
//! agent's part of it.

use std::fmt;

use agentscope_core::{AgentError, Msg};

/// What an agent was doing when it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Activity {
    /// Replying: its call failed.
    Reply,
    /// Observing a message said in a hub (a participant's reply, a broadcast, the
    /// announcement): nothing of it was stored.
    Observe {
        /// The name on the message (who said it).
        from: String,
        /// The message's id.
        message_id: String,
    },
}

/// One agent's failure inside a multi-agent block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentFailure {
    /// The agent's name.
    pub agent: String,
    /// What it was doing.
    pub activity: Activity,
    /// Its error.
    pub error: AgentError,
}

impl AgentFailure {
    pub(crate) fn reply(agent: &str, error: AgentError) -> Self {
        Self {
            agent: agent.to_owned(),
            activity: Activity::Reply,
            error,
        }
    }

    pub(crate) fn observe(agent: &str, message: &Msg, error: AgentError) -> Self {
        Self {
            agent: agent.to_owned(),
            activity: Activity::Observe {
                from: message.name.to_string(),
                message_id: message.id.to_string(),
            },
            error,
        }
    }

    /// Whether the agent failed while observing (rather than replying).
    pub fn is_observe(&self) -> bool {
        matches!(self.activity, Activity::Observe { .. })
    }
}

impl fmt::Display for AgentFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.activity {
            Activity::Reply => write!(f, "agent '{}' failed to reply: {}", self.agent, self.error),
            Activity::Observe { from, message_id } => write!(
                f,
                "agent '{}' failed to observe message {message_id} from '{from}': {}",
                self.agent, self.error
            ),
        }
    }
}

/// A [`MsgHub`](super::MsgHub) or a pipeline could not do what it was asked.
///
/// Agent failures are never swallowed: [`Agents`](Self::Agents) lists every agent that
/// failed and keeps the replies that were made, so no work is lost.
///
/// ```
/// use agentscope::multi_agent::{Activity, MultiAgentError};
///
/// let error = MultiAgentError::NotParticipant { agent: "carol".into() };
/// assert_eq!(error.to_string(), "agent 'carol' is not a participant of the hub");
/// assert!(error.failures().is_empty());
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MultiAgentError {
    /// Agents failed to reply, or participants failed to observe a message said in a hub.
    ///
    /// The others' work stands: `replies` holds, in the order of the agents given (one entry
    /// for a hub call, none for a broadcast), each reply that was made, `None` for an agent
    /// that failed or (in a sequential pipeline) never ran. A reply that some participants
    /// could not observe is here, and every other participant observed it.
    #[error("{}", list(failures))]
    Agents {
        /// The replies, in agent order.
        replies: Vec<Option<Msg>>,
        /// Every failure, in the order they were found (agent order within a step).
        failures: Vec<AgentFailure>,
    },
    /// The agent is not (or no longer) a participant of the hub; nothing ran.
    #[error("agent '{agent}' is not a participant of the hub")]
    NotParticipant {
        /// The agent's name.
        agent: String,
    },
    /// Another participant already has this agent's name or id; names identify
    /// participants, so they must be unique within a hub.
    #[error("the hub already has a participant named '{agent}' (or with its id)")]
    DuplicateParticipant {
        /// The agent's name.
        agent: String,
    },
    /// A sequential pipeline was given no agents, so there is no reply to return.
    #[error("a sequential pipeline needs at least one agent")]
    NoAgents,
}

fn list(failures: &[AgentFailure]) -> String {
    let shown: Vec<String> = failures.iter().map(ToString::to_string).collect();
    shown.join("; ")
}

impl MultiAgentError {
    /// The agents' failures (empty for the other variants).
    pub fn failures(&self) -> &[AgentFailure] {
        match self {
            MultiAgentError::Agents { failures, .. } => failures,
            _ => &[],
        }
    }

    /// The replies that were made despite the failures (empty for the other variants).
    pub fn replies(&self) -> &[Option<Msg>] {
        match self {
            MultiAgentError::Agents { replies, .. } => replies,
            _ => &[],
        }
    }

    /// The names of the agents that failed, in order.
    pub fn failed_agents(&self) -> Vec<&str> {
        self.failures().iter().map(|f| f.agent.as_str()).collect()
    }
}
