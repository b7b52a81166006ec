//! [`AgentState`]: what a session stores.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::conversation::{ConversationError, check_memory};
use crate::message::Msg;

use super::SessionError;

/// The durable state of an agent's conversation: what a [`SessionStore`](super::SessionStore)
/// saves and loads.
///
/// It holds the agent's memory (every message, including tool calls still waiting for a
/// result after a stop for approval or a suspended tool, and their results), the agent's
/// name and id at the time of saving, user metadata and the format version. The system
/// message is not part of it: it comes from the agent's configuration (`sys_prompt` and
/// hooks) on every call.
///
/// # JSON shape
///
/// ```json
/// {
///   "version": 1,
///   "agent": {"name": "assistant", "id": "8c1e…"},
///   "messages": [{"id": "…", "name": "user", "role": "user",
///                 "content": [{"type": "text", "text": "hi"}],
///                 "metadata": {}, "timestamp": "2026-11-30T10:00:00Z"}],
///   "metadata": {"user": "alice"},
///   "revision": 3,
///   "saved_at": "2026-11-30T10:00:01Z"
/// }
/// ```
///
/// Messages have the JSON shape of [`Msg`]. Read stored bytes with
/// [`decode`](Self::decode), which checks the version before anything else and names the
/// session in its errors; [`encode`](Self::encode) writes them.
///
/// ```
/// use agentscope_core::session::{AgentIdentity, AgentState};
/// use agentscope_core::Msg;
/// use serde_json::json;
///
/// let state = AgentState::new(
///     AgentIdentity::new("assistant", "agent-1"),
///     vec![Msg::user("hi"), Msg::assistant("Hello!")],
/// )
/// .with_metadata_entry("user", json!("alice"));
/// let bytes = state.encode("chat-1")?;
/// let back = AgentState::decode("chat-1", &bytes)?;
/// assert_eq!(back, state);
/// assert_eq!(back.metadata["user"], "alice");
/// # Ok::<(), agentscope_core::session::SessionError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentState {
    /// The format version ([`CURRENT_VERSION`](Self::CURRENT_VERSION) when written by this
    /// build).
    pub version: u32,
    /// The agent that saved the state (informational: loading does not require a match, so
    /// several agent instances can share one session).
    pub agent: AgentIdentity,
    /// The agent's memory, oldest first. Never holds a `System` message.
    pub messages: Vec<Msg>,
    /// User metadata (a title, the user's id, a tenant, ...); agentscope only stores it.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The revision of the session this state was loaded from: `0` for a state never
    /// stored, then one more per save. Saves are compare-and-swap on it (see
    /// [`StateChange`](super::StateChange)).
    #[serde(default)]
    pub revision: u64,
    /// Tool calls (by id) that started running and have no stored result yet. The engine
    /// records a call here before its tool runs and removes it with the stored result, so a
    /// call found here after a crash or a dropped call ran at most partly: on resume it is
    /// in doubt, and handled as its [`InDoubt`](crate::InDoubt) policy says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running_tools: Vec<String>,
    /// State hooks keep with the session, by hook name (a [`HookState`](super::HookState)
    /// during a call): the approval hook's decisions and remembered rejections, for example.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub hooks: Map<String, Value>,
    /// When the state was taken.
    #[serde(serialize_with = "crate::rfc3339::serialize")]
    pub saved_at: DateTime<Utc>,
}

/// The name and id of the agent that saved an [`AgentState`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentIdentity {
    /// The agent's name.
    pub name: String,
    /// The agent's id.
    pub id: String,
}

impl AgentIdentity {
    /// Describes an agent.
    pub fn new(name: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            id: id.into(),
        }
    }
}

/// The parts of an [`AgentState`] as a store keeps them (in columns, hash fields, rows of
/// messages), for [`AgentState::from_parts`], which puts them together and checks the
/// result. Stores that keep the JSON of [`AgentState::encode`] use
/// [`AgentState::decode`] instead.
///
/// Every field is public and there is no default: a store fills each one from what it
/// read, so a field added to the state is one the compiler makes every store read.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentStateParts {
    /// The stored format version ([`AgentState::check_version`] reads it first).
    pub version: u32,
    /// The agent that saved the state.
    pub agent: AgentIdentity,
    /// The stored messages, oldest first.
    pub messages: Vec<Msg>,
    /// The user metadata.
    pub metadata: Map<String, Value>,
    /// The stored revision.
    pub revision: u64,
    /// The tool calls recorded as running.
    pub running_tools: Vec<String>,
    /// The hooks' state, by hook name.
    pub hooks: Map<String, Value>,
    /// When the state was saved ([`rfc3339::parse_saved_at`](crate::rfc3339::parse_saved_at)
    /// reads the stored text).
    pub saved_at: DateTime<Utc>,
}

/// Just the version, read before the rest so that a newer format is reported as such rather
/// than as whatever field it changed.
#[derive(Deserialize)]
struct VersionProbe {
    version: u32,
}

impl AgentState {
    /// The state format version this build reads and writes.
    pub const CURRENT_VERSION: u32 = 1;

    /// Checks a stored format version for a store that reads one: the version as a `u32`
    /// when it is [`CURRENT_VERSION`](Self::CURRENT_VERSION).
    ///
    /// ```
    /// use agentscope_core::session::{AgentState, SessionError};
    ///
    /// assert!(matches!(AgentState::check_version("s", 1), Ok(1)));
    /// assert!(matches!(AgentState::check_version("s", 2),
    ///     Err(SessionError::UnsupportedVersion { found: 2, .. })));
    /// assert!(matches!(AgentState::check_version("s", -1), Err(SessionError::Corrupt { .. })));
    /// ```
    ///
    /// # Errors
    ///
    /// [`SessionError::UnsupportedVersion`] for another version (a newer format is reported
    /// as such, not as whatever it changed), [`SessionError::Corrupt`] for a number that is
    /// no version at all.
    pub fn check_version(session: &str, version: i128) -> Result<u32, SessionError> {
        let version = u32::try_from(version).map_err(|_| {
            SessionError::corrupt(
                session,
                format_args!("the format version {version} is out of range"),
            )
        })?;
        if version != Self::CURRENT_VERSION {
            return Err(SessionError::UnsupportedVersion {
                session: session.to_owned(),
                found: version,
                supported: Self::CURRENT_VERSION,
            });
        }
        Ok(version)
    }

    /// A state of the current version holding `messages`, with no metadata, taken now.
    pub fn new(agent: AgentIdentity, messages: Vec<Msg>) -> Self {
        Self {
            version: Self::CURRENT_VERSION,
            agent,
            messages,
            metadata: Map::new(),
            revision: 0,
            running_tools: Vec::new(),
            hooks: Map::new(),
            saved_at: Utc::now(),
        }
    }

    /// The state a store read as session `session`, put together from its parts and checked
    /// with [`check_for`](Self::check_for): what a store's [`load`](super::SessionStore::load)
    /// returns when it keeps the parts apart rather than the JSON of [`encode`](Self::encode).
    ///
    /// ```
    /// use agentscope_core::session::{AgentIdentity, AgentState, AgentStateParts, SessionError};
    /// use agentscope_core::Msg;
    /// use agentscope_core::rfc3339;
    /// use serde_json::Map;
    ///
    /// let parts = AgentStateParts {
    ///     version: AgentState::check_version("chat-1", 1)?,
    ///     agent: AgentIdentity::new("assistant", "agent-1"),
    ///     messages: vec![Msg::user("hi"), Msg::assistant("Hello!")],
    ///     metadata: Map::new(),
    ///     revision: 3,
    ///     running_tools: Vec::new(),
    ///     hooks: Map::new(),
    ///     saved_at: rfc3339::parse_saved_at("chat-1", "2026-12-01T10:00:00Z")?,
    /// };
    /// let state = AgentState::from_parts("chat-1", parts.clone())?;
    /// assert_eq!((state.revision, state.messages.len()), (3, 2));
    ///
    /// // Memory never holds a system message: such a stored state is corrupt.
    /// let with_system = AgentStateParts { messages: vec![Msg::system("x")], ..parts };
    /// assert!(matches!(
    ///     AgentState::from_parts("chat-1", with_system),
    ///     Err(SessionError::Corrupt { .. })
    /// ));
    /// # Ok::<(), SessionError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`check_for`](Self::check_for): [`SessionError::UnsupportedVersion`] for another
    /// version, [`SessionError::Corrupt`] for messages an agent cannot take; both name
    /// `session`.
    pub fn from_parts(session: &str, parts: AgentStateParts) -> Result<Self, SessionError> {
        let state = Self {
            version: parts.version,
            agent: parts.agent,
            messages: parts.messages,
            metadata: parts.metadata,
            revision: parts.revision,
            running_tools: parts.running_tools,
            hooks: parts.hooks,
            saved_at: parts.saved_at,
        };
        state.check_for(session)?;
        Ok(state)
    }

    /// Returns the state with `metadata` as its user metadata.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Returns the state with one more user metadata entry.
    #[must_use]
    pub fn with_metadata_entry(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Checks that an agent can take this state: the version is
    /// [`CURRENT_VERSION`](Self::CURRENT_VERSION) and no message is a `System` message
    /// (memory never holds one, see [`check_memory`]).
    ///
    /// # Errors
    ///
    /// The first problem found.
    pub fn check(&self) -> Result<(), InvalidState> {
        if self.version != Self::CURRENT_VERSION {
            return Err(InvalidState::Version {
                found: self.version,
                supported: Self::CURRENT_VERSION,
            });
        }
        check_memory(&self.messages)?;
        Ok(())
    }

    /// Serialises the state as compact JSON, for storing it as session `session`.
    ///
    /// # Errors
    ///
    /// [`SessionError::Corrupt`] naming the session if serialisation fails (it does not for
    /// states made of messages, which always serialise).
    pub fn encode(&self, session: &str) -> Result<Vec<u8>, SessionError> {
        serde_json::to_vec(self).map_err(|error| {
            SessionError::corrupt(session, format_args!("cannot serialise: {error}"))
        })
    }

    /// Reads a state stored as session `session` from JSON bytes: first the version, then the
    /// rest, then [`check`](Self::check).
    ///
    /// # Errors
    ///
    /// [`SessionError::UnsupportedVersion`] for another version; [`SessionError::Corrupt`]
    /// for anything else that is wrong (not JSON, truncated, missing or ill-typed fields,
    /// unknown content block types, a system message), with the parser's line and column.
    pub fn decode(session: &str, bytes: &[u8]) -> Result<Self, SessionError> {
        // serde reads a struct from an array too; a state is always an object.
        if bytes
            .iter()
            .find(|byte| !byte.is_ascii_whitespace())
            .is_some_and(|first| *first != b'{')
        {
            return Err(SessionError::corrupt(
                session,
                "not a valid agent state: the JSON is not an object",
            ));
        }
        let probe: VersionProbe = serde_json::from_slice(bytes).map_err(|error| {
            SessionError::corrupt(session, format_args!("not a valid agent state: {error}"))
        })?;
        if probe.version != Self::CURRENT_VERSION {
            return Err(SessionError::UnsupportedVersion {
                session: session.to_owned(),
                found: probe.version,
                supported: Self::CURRENT_VERSION,
            });
        }
        let state: AgentState = serde_json::from_slice(bytes).map_err(|error| {
            SessionError::corrupt(session, format_args!("not a valid agent state: {error}"))
        })?;
        state.check_for(session)?;
        Ok(state)
    }

    /// [`check`](Self::check) for a state stored as session `session`: another version is
    /// [`SessionError::UnsupportedVersion`], anything else [`SessionError::Corrupt`].
    ///
    /// # Errors
    ///
    /// As described: the error names `session`.
    pub fn check_for(&self, session: &str) -> Result<(), SessionError> {
        match self.check() {
            Ok(()) => Ok(()),
            Err(InvalidState::Version { found, supported }) => {
                Err(SessionError::UnsupportedVersion {
                    session: session.to_owned(),
                    found,
                    supported,
                })
            }
            Err(InvalidState::Conversation(error)) => Err(SessionError::corrupt(session, error)),
        }
    }
}

/// Why an agent cannot take an [`AgentState`] (see [`AgentState::check`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidState {
    /// Another format version.
    #[error(
        "unsupported agent state format version {found} (this build reads version {supported})"
    )]
    Version {
        /// The state's version.
        found: u32,
        /// The version this build reads ([`AgentState::CURRENT_VERSION`]).
        supported: u32,
    },
    /// The messages break a conversation rule (a `System` message).
    #[error(transparent)]
    Conversation(#[from] ConversationError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> AgentState {
        AgentState::new(AgentIdentity::new("a", "1"), vec![Msg::user("hi")])
    }

    #[test]
    fn json_shape() {
        let mut state = state().with_metadata_entry("k", 1);
        state.saved_at = DateTime::parse_from_rfc3339("2026-11-30T10:00:01Z")
            .unwrap()
            .with_timezone(&Utc);
        let value = serde_json::to_value(&state).unwrap();
        assert_eq!(value["version"], 1);
        assert_eq!(value["agent"], json!({"name": "a", "id": "1"}));
        assert_eq!(value["messages"][0]["role"], "user");
        assert_eq!(value["metadata"], json!({"k": 1}));
        assert_eq!(value["saved_at"], "2026-11-30T10:00:01Z");
        assert_eq!(value["revision"], 0);
        assert_eq!(value.as_object().unwrap().len(), 6);
        state.running_tools.push("call-1".into());
        let value = serde_json::to_value(&state).unwrap();
        assert_eq!(value["running_tools"], json!(["call-1"]));
    }

    #[test]
    fn decode_errors_name_the_session() {
        let err = |bytes: &[u8]| AgentState::decode("s1", bytes).unwrap_err().to_string();
        assert_eq!(
            err(b""),
            "session 's1' is corrupt: not a valid agent state: EOF while parsing a value at line 1 column 0"
        );
        assert_eq!(
            err(br#"{"version": 2, "whatever": true}"#),
            "session 's1' has state format version 2; this build reads version 1"
        );
        assert_eq!(
            err(br#"{"agent": {"name": "a", "id": "1"}}"#),
            "session 's1' is corrupt: not a valid agent state: missing field `version` at line 1 column 35"
        );
        let mut with_system = state();
        with_system.messages.push(Msg::system("x"));
        let bytes = serde_json::to_vec(&with_system).unwrap();
        assert_eq!(
            err(&bytes),
            "session 's1' is corrupt: message 1 has the system role; agent memory never holds system messages"
        );
        let full = state().encode("s1").unwrap();
        let truncated = &full[..full.len() - 10];
        assert!(
            err(truncated)
                .starts_with("session 's1' is corrupt: not a valid agent state: EOF while parsing"),
            "{}",
            err(truncated)
        );
    }

    #[test]
    fn metadata_defaults_to_empty() {
        let mut value = serde_json::to_value(state()).unwrap();
        value.as_object_mut().unwrap().remove("metadata");
        let back = AgentState::decode("s", &serde_json::to_vec(&value).unwrap()).unwrap();
        assert!(back.metadata.is_empty());
    }
}
