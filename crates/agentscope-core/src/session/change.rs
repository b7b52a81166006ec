//! [`StateChange`]: what one save writes, relative to the revision it was made from.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::conversation::check_memory;
use crate::message::Msg;

use super::{AgentIdentity, AgentState, SessionError};

/// One save of a session: the change from revision [`base`](Self::base) to the next.
///
/// A change keeps the first [`kept`](Self::kept) stored messages, drops the rest and appends
/// [`appended`](Self::appended); the agent, metadata and running tools replace the stored
/// ones. An agent appends a few messages per step, so its changes stay small however long
/// the conversation is, and a store that writes only the change (a log record, a few rows)
/// costs the same per step at 1,000 messages as at 10. [`replace`](Self::replace) makes a
/// change that rewrites a whole state.
///
/// Saving is compare-and-swap: a store applies a change only if the session's stored
/// revision is still [`base`](Self::base) (`0`: the session must not exist), and otherwise
/// fails with [`SessionError::Conflict`] without writing anything. The new revision is
/// `base + 1`.
///
/// ```
/// use agentscope_core::session::{AgentIdentity, AgentState, StateChange};
/// use agentscope_core::Msg;
///
/// let stored = AgentState::new(AgentIdentity::new("a", "1"), vec![Msg::user("hi")]);
/// // One step later: the agent's reply is appended to revision 0's one message.
/// let change = StateChange::new(0, 1, vec![Msg::assistant("Hello!")], stored.agent.clone());
/// let next = change.apply("chat-1", Some(stored))?;
/// assert_eq!(next.revision, 1);
/// assert_eq!(next.messages.len(), 2);
/// # Ok::<(), agentscope_core::session::SessionError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StateChange {
    /// The revision this change was made from (`0`: the session does not exist yet).
    pub base: u64,
    /// How many of the base's messages stay, oldest first.
    pub kept: usize,
    /// The messages after the kept ones.
    pub appended: Vec<Msg>,
    /// The agent saving the state.
    pub agent: AgentIdentity,
    /// The user metadata (replaces the stored metadata).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The tool calls (by id) that started and have no stored result yet (replaces the
    /// stored set); see [`AgentState::running_tools`].
    #[serde(default)]
    pub running_tools: Vec<String>,
    /// The hooks' session state (replaces the stored one); see [`AgentState::hooks`].
    #[serde(default)]
    pub hooks: Map<String, Value>,
    /// When the change was made.
    #[serde(serialize_with = "crate::rfc3339::serialize")]
    pub saved_at: DateTime<Utc>,
    /// The [`fence`](super::SessionLease::fence) of the lease the change is saved under, if
    /// any: a store that leases sessions refuses the change when another lease replaced
    /// this one ([`SessionError::LeaseLost`]). Not part of the stored state.
    #[serde(skip)]
    pub fence: Option<String>,
}

impl StateChange {
    /// A change from revision `base`, keeping its first `kept` messages and appending
    /// `appended`, with no metadata and no running tools, made now.
    pub fn new(base: u64, kept: usize, appended: Vec<Msg>, agent: AgentIdentity) -> Self {
        Self {
            base,
            kept,
            appended,
            agent,
            metadata: Map::new(),
            running_tools: Vec::new(),
            hooks: Map::new(),
            saved_at: Utc::now(),
            fence: None,
        }
    }

    /// A change that replaces the session's whole state with `state`, made from
    /// `state.revision` (so it fails with a conflict if the session changed since `state`
    /// was loaded, or, for a new state of revision 0, if the session exists).
    pub fn replace(state: &AgentState) -> Self {
        Self {
            base: state.revision,
            kept: 0,
            appended: state.messages.clone(),
            agent: state.agent.clone(),
            metadata: state.metadata.clone(),
            running_tools: state.running_tools.clone(),
            hooks: state.hooks.clone(),
            saved_at: state.saved_at,
            fence: None,
        }
    }

    /// Returns the change with `metadata` as the user metadata.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Returns the change with `running_tools` as the tool calls that are running.
    #[must_use]
    pub fn with_running_tools(mut self, running_tools: Vec<String>) -> Self {
        self.running_tools = running_tools;
        self
    }

    /// Returns the change with `hooks` as the hooks' session state.
    #[must_use]
    pub fn with_hooks(mut self, hooks: Map<String, Value>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Returns the change fenced by a lease's token (see [`fence`](Self::fence)).
    #[must_use]
    pub fn with_fence(mut self, fence: impl Into<String>) -> Self {
        self.fence = Some(fence.into());
        self
    }

    /// The revision the session has once this change is saved.
    pub fn revision(&self) -> u64 {
        self.base + 1
    }

    /// Checks the change against what is stored as session `session`: its revision
    /// (`stored_revision`, `0` if the session does not exist) and how many messages it holds
    /// (`stored_messages`), and that it appends no `System` message. Stores that don't
    /// materialise the stored state (appending to a log, to rows) call this before writing.
    ///
    /// # Errors
    ///
    /// [`SessionError::Conflict`] when the stored revision is not [`base`](Self::base);
    /// [`SessionError::InvalidChange`] when the change keeps more messages than are stored
    /// or appends a message memory cannot hold.
    pub fn check(
        &self,
        session: &str,
        stored_revision: u64,
        stored_messages: usize,
    ) -> Result<(), SessionError> {
        if stored_revision != self.base {
            return Err(SessionError::Conflict {
                session: session.to_owned(),
                expected: self.base,
                found: stored_revision,
            });
        }
        if self.kept > stored_messages {
            return Err(SessionError::InvalidChange {
                session: session.to_owned(),
                message: format!(
                    "the change keeps {} messages but revision {stored_revision} holds {stored_messages}",
                    self.kept
                ),
            });
        }
        check_memory(&self.appended).map_err(|error| SessionError::InvalidChange {
            session: session.to_owned(),
            message: error.to_string(),
        })
    }

    /// Applies the change to `stored` (what session `session` holds, `None` if nothing) and
    /// returns the new state, of revision [`revision`](Self::revision). For stores that
    /// keep whole states: load, apply, write back (atomically with the load).
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check).
    pub fn apply(
        &self,
        session: &str,
        stored: Option<AgentState>,
    ) -> Result<AgentState, SessionError> {
        let (revision, mut messages) = match stored {
            Some(state) => (state.revision, state.messages),
            None => (0, Vec::new()),
        };
        self.check(session, revision, messages.len())?;
        messages.truncate(self.kept);
        messages.extend(self.appended.iter().cloned());
        let mut state =
            AgentState::new(self.agent.clone(), messages).with_metadata(self.metadata.clone());
        state.revision = self.revision();
        state.running_tools = self.running_tools.clone();
        state.hooks = self.hooks.clone();
        state.saved_at = self.saved_at;
        Ok(state)
    }

    /// Whether `stored` is what this change produced: its revision, its message count, the
    /// appended messages (by id) at its end, and the same agent, metadata, running tools and
    /// hooks' state. A writer whose save failed in a way that may have written it (a lost
    /// acknowledgement, an error after a file's rename) loads the session and asks this.
    ///
    /// ```
    /// use agentscope_core::session::{AgentIdentity, StateChange};
    /// use agentscope_core::Msg;
    ///
    /// let change = StateChange::new(0, 0, vec![Msg::user("hi")], AgentIdentity::new("a", "1"));
    /// let stored = change.apply("s", None)?;
    /// assert!(change.is_applied_in(&stored));
    /// let other = StateChange::new(0, 0, vec![Msg::user("hi")], AgentIdentity::new("a", "1"));
    /// assert!(!other.is_applied_in(&stored)); // the same text, another message
    /// # Ok::<(), agentscope_core::session::SessionError>(())
    /// ```
    pub fn is_applied_in(&self, stored: &AgentState) -> bool {
        let len = self.kept + self.appended.len();
        stored.revision == self.revision()
            && stored.messages.len() == len
            && stored.messages[self.kept..]
                .iter()
                .zip(&self.appended)
                .all(|(stored, appended)| stored.id == appended.id)
            && stored.agent == self.agent
            && stored.metadata == self.metadata
            && stored.running_tools == self.running_tools
            && stored.hooks == self.hooks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> AgentIdentity {
        AgentIdentity::new("a", "1")
    }

    #[test]
    fn apply_keeps_truncates_and_appends() {
        let first = StateChange::new(0, 0, vec![Msg::user("1"), Msg::assistant("2")], identity())
            .with_running_tools(vec!["t1".into()]);
        let state = first.apply("s", None).unwrap();
        assert_eq!(state.revision, 1);
        assert_eq!(state.running_tools, ["t1"]);
        let second = StateChange::new(1, 1, vec![Msg::assistant("3")], identity());
        let state = second.apply("s", Some(state)).unwrap();
        assert_eq!(state.revision, 2);
        assert!(state.running_tools.is_empty());
        let texts: Vec<String> = state.messages.iter().map(Msg::text).collect();
        assert_eq!(texts, ["1", "3"]);
    }

    #[test]
    fn stale_and_invalid_changes_are_refused() {
        let stored = StateChange::new(0, 0, vec![Msg::user("1")], identity())
            .apply("s", None)
            .unwrap();
        let stale = StateChange::new(0, 0, vec![Msg::user("x")], identity());
        assert_eq!(
            stale
                .apply("s", Some(stored.clone()))
                .unwrap_err()
                .to_string(),
            "session 's' was changed by another writer: this save was made from revision 0, \
             but revision 1 is stored"
        );
        let too_many = StateChange::new(1, 2, Vec::new(), identity());
        assert_eq!(
            too_many
                .apply("s", Some(stored.clone()))
                .unwrap_err()
                .to_string(),
            "invalid change to session 's': the change keeps 2 messages but revision 1 holds 1"
        );
        let system = StateChange::new(1, 1, vec![Msg::system("x")], identity());
        assert!(matches!(
            system.apply("s", Some(stored)),
            Err(SessionError::InvalidChange { .. })
        ));
        let gone = StateChange::new(3, 0, Vec::new(), identity());
        assert!(matches!(
            gone.apply("s", None),
            Err(SessionError::Conflict {
                expected: 3,
                found: 0,
                ..
            })
        ));
    }
}
