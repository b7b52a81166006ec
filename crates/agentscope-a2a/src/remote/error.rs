//! [`RemoteError`]: why a remote agent cannot be reached or answered.

use std::fmt;

/// Why a [`RemoteAgent`](crate::RemoteAgent) could not be connected, or a
/// [`RemoteAgentTool`](crate::RemoteAgentTool) answer not be given.
///
/// URLs in it are shown without their secrets (password, query values) and header values
/// are never shown, whatever went wrong. A call of a connected agent that fails is an
/// [`AgentError`](agentscope::AgentError) (of the tool, a `ToolError` result), not this.
///
/// ```
/// use agentscope_a2a::{RemoteAgent, RemoteError};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let error = RemoteAgent::builder("ftp://user:hunter22@agents.example.com/a2a")
///     .connect()
///     .await
///     .unwrap_err();
/// assert!(matches!(error, RemoteError::InvalidUrl { .. }));
/// assert_eq!(
///     error.to_string(),
///     "not an http(s) URL of an A2A agent: ftp://user:<redacted>@agents.example.com/a2a"
/// );
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteError {
    /// The URL is not an `http` or `https` URL.
    InvalidUrl {
        /// The URL, without its secrets.
        url: String,
    },
    /// An origin given to
    /// [`RemoteAgentBuilder::send_credentials_to`](crate::RemoteAgentBuilder::send_credentials_to)
    /// is not an origin: an `http` or `https` URL with a host and nothing more (no path,
    /// query or user information).
    InvalidOrigin {
        /// What was given, without its secrets.
        origin: String,
    },
    /// A configured header cannot be sent: its name or its value is not valid in HTTP.
    InvalidHeader {
        /// The header's name (its value is never shown).
        name: String,
    },
    /// The agent card could not be read: the server could not be reached, answered with
    /// an error status, or answered with something that is not an A2A 1.0 agent card.
    Card {
        /// The card's URL, without its secrets.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The local agent that holds the conversation cannot be built (see
    /// [`RemoteAgentBuilder::configure`](crate::RemoteAgentBuilder::configure)).
    Agent {
        /// Why.
        message: String,
    },
    /// [`RemoteAgentTool::answer`](crate::RemoteAgentTool::answer) named a tool call that
    /// is not waiting for an answer of the remote agent.
    NotWaiting {
        /// The tool call's id.
        call_id: String,
    },
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::InvalidUrl { url } => {
                write!(f, "not an http(s) URL of an A2A agent: {url}")
            }
            RemoteError::InvalidOrigin { origin } => write!(
                f,
                "not an origin (scheme://host[:port], nothing more): {origin}"
            ),
            RemoteError::InvalidHeader { name } => write!(
                f,
                "the header {name:?} cannot be sent: its name or its value is not valid in HTTP"
            ),
            RemoteError::Card { url, reason } => {
                write!(f, "the agent card at {url} cannot be used: {reason}")
            }
            RemoteError::Agent { message } => {
                write!(
                    f,
                    "the local agent of the remote agent cannot be built: {message}"
                )
            }
            RemoteError::NotWaiting { call_id } => write!(
                f,
                "the tool call {call_id:?} is not waiting for an answer of the remote agent"
            ),
        }
    }
}

impl std::error::Error for RemoteError {}
