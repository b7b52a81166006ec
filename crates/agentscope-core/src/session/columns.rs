//! [`ChangeColumns`]: a [`StateChange`] as the JSON texts a store keeps in its columns.

use serde::Serialize;

use super::{SessionError, StateChange};
use crate::rfc3339;

/// A [`StateChange`] serialised for a store that keeps a state's parts in columns (a row per
/// session, a row per message): each part's JSON text, and the time as RFC 3339. The SQLite
/// and PostgreSQL stores write these; a store of yours can too, so that sessions read the
/// same everywhere.
///
/// ```
/// use agentscope_core::session::ChangeColumns;
/// use agentscope_core::session::{AgentIdentity, StateChange};
/// use agentscope_core::Msg;
///
/// let change = StateChange::new(0, 0, vec![Msg::user("hi")], AgentIdentity::new("a", "1"));
/// let columns = ChangeColumns::of("s1", &change)?;
/// assert_eq!(columns.agent, r#"{"name":"a","id":"1"}"#);
/// assert_eq!(columns.running_tools, "[]");
/// assert_eq!(columns.appended.len(), 1);
/// # Ok::<(), agentscope_core::session::SessionError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChangeColumns {
    /// [`StateChange::agent`] as JSON.
    pub agent: String,
    /// [`StateChange::metadata`] as JSON.
    pub metadata: String,
    /// [`StateChange::running_tools`] as JSON.
    pub running_tools: String,
    /// [`StateChange::hooks`] as JSON.
    pub hooks: String,
    /// [`StateChange::saved_at`] as RFC 3339 ([`rfc3339::format`]).
    pub saved_at: String,
    /// Each appended message as JSON, in order.
    pub appended: Vec<String>,
}

impl ChangeColumns {
    /// The columns of `change` to session `session`.
    ///
    /// # Errors
    ///
    /// [`SessionError::Corrupt`] naming the session when a part does not serialise.
    pub fn of(session: &str, change: &StateChange) -> Result<Self, SessionError> {
        Ok(Self {
            agent: json(session, &change.agent)?,
            metadata: json(session, &change.metadata)?,
            running_tools: json(session, &change.running_tools)?,
            hooks: json(session, &change.hooks)?,
            saved_at: rfc3339::format(&change.saved_at),
            appended: change
                .appended
                .iter()
                .map(|msg| json(session, msg))
                .collect::<Result<_, _>>()?,
        })
    }
}

fn json(session: &str, value: &impl Serialize) -> Result<String, SessionError> {
    serde_json::to_string(value)
        .map_err(|error| SessionError::corrupt(session, format_args!("cannot serialise: {error}")))
}
