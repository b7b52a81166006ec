//! Between states and rows: a [`StateChange`] serialised for its rows, and a session row
//! with its messages read back into an [`AgentState`], every damaged column reported as
//! [`SessionError::Corrupt`] naming the session.

use agentscope_core::Msg;
use agentscope_core::rfc3339;
use agentscope_core::session::{
    AgentState, AgentStateParts, ChangeColumns, SessionError, SessionSummary, StateChange,
};
use serde::de::DeserializeOwned;
use tokio_postgres::Row;

/// A change serialised for its rows, before a connection is taken.
pub(crate) struct EncodedChange {
    pub(crate) kept: i32,
    pub(crate) revision: i64,
    pub(crate) message_count: i32,
    pub(crate) columns: ChangeColumns,
    /// [`SessionSummary::recency_key`] of the change's `saved_at`.
    pub(crate) recency: String,
}

impl EncodedChange {
    pub(crate) fn new(session: &str, change: &StateChange) -> Result<Self, SessionError> {
        let out_of_range = |what: &str, value: u128| SessionError::InvalidChange {
            session: session.to_owned(),
            message: format!("{what} {value} is out of range"),
        };
        let count = change.kept as u128 + change.appended.len() as u128;
        Ok(Self {
            kept: i32::try_from(change.kept)
                .map_err(|_| out_of_range("kept", change.kept as u128))?,
            revision: i64::try_from(change.revision())
                .map_err(|_| out_of_range("revision", u128::from(change.revision())))?,
            message_count: i32::try_from(count)
                .map_err(|_| out_of_range("message count", count))?,
            columns: ChangeColumns::of(session, change)?,
            recency: SessionSummary::recency_key(&change.saved_at),
        })
    }
}

/// The stored revision and message count of a locked session row.
pub(crate) fn head(session: &str, row: &Row) -> Result<(u64, usize), SessionError> {
    let revision: i64 = column(session, row, 0, "revision")?;
    let count: i32 = column(session, row, 1, "message_count")?;
    Ok((
        to_u64(session, "revision", revision)?,
        to_usize(session, "message_count", count)?,
    ))
}

/// The state in a row of the load statement (see `Statements::load`).
pub(crate) fn state(session: &str, row: &Row) -> Result<AgentState, SessionError> {
    // The version first: a newer format is reported as such, not as whatever it changed.
    let version: i32 = column(session, row, 1, "version")?;
    let version = AgentState::check_version(session, i128::from(version))?;
    let revision: i64 = column(session, row, 0, "revision")?;
    let count: i32 = column(session, row, 6, "message_count")?;
    let saved_at: String = column(session, row, 7, "saved_at")?;
    let positions: Option<Vec<i32>> = column(session, row, 8, "position")?;
    let messages: Option<Vec<String>> = column(session, row, 9, "message")?;
    // Columns are read in the order written: the first damaged one is the one reported.
    let parts = AgentStateParts {
        version,
        revision: to_u64(session, "revision", revision)?,
        agent: json(
            session,
            "the agent column",
            &column::<String>(session, row, 2, "agent")?,
        )?,
        metadata: json(
            session,
            "the metadata column",
            &column::<String>(session, row, 3, "metadata")?,
        )?,
        running_tools: json(
            session,
            "the running_tools column",
            &column::<String>(session, row, 4, "running_tools")?,
        )?,
        hooks: json(
            session,
            "the hooks column",
            &column::<String>(session, row, 5, "hooks")?,
        )?,
        saved_at: rfc3339::parse_saved_at(session, &saved_at)?,
        messages: message_rows(
            session,
            to_usize(session, "message_count", count)?,
            positions.unwrap_or_default(),
            messages.unwrap_or_default(),
        )?,
    };
    AgentState::from_parts(session, parts)
}

/// The messages of `session`, whose rows must be numbered 0, 1, 2, ... and be the `count`
/// its session row records.
fn message_rows(
    session: &str,
    count: usize,
    positions: Vec<i32>,
    rows: Vec<String>,
) -> Result<Vec<Msg>, SessionError> {
    let mut messages = Vec::with_capacity(rows.len());
    for (position, json_text) in positions.into_iter().zip(rows) {
        if usize::try_from(position).ok() != Some(messages.len()) {
            return Err(SessionError::corrupt(
                session,
                format_args!(
                    "message rows are not numbered 0, 1, 2, ...: found position {position} \
                     where {} was expected",
                    messages.len()
                ),
            ));
        }
        messages.push(json(session, &format!("message {position}"), &json_text)?);
    }
    if messages.len() != count {
        return Err(SessionError::corrupt(
            session,
            format_args!(
                "the session row counts {count} messages but {} message rows are stored",
                messages.len()
            ),
        ));
    }
    Ok(messages)
}

/// The revision in column `index` of a row of session `session` (a `list_recent` row).
pub(crate) fn revision(session: &str, row: &Row, index: usize) -> Result<u64, SessionError> {
    let revision: i64 = column(session, row, index, "revision")?;
    to_u64(session, "revision", revision)
}

/// Column `index` (named `what`) of `row`.
fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    session: &str,
    row: &'a Row,
    index: usize,
    what: &str,
) -> Result<T, SessionError> {
    row.try_get(index).map_err(|error| {
        SessionError::corrupt(
            session,
            format_args!("the {what} column cannot be read: {error}"),
        )
    })
}

/// Decodes the JSON in column `what` of session `session`.
fn json<T: DeserializeOwned>(session: &str, what: &str, text: &str) -> Result<T, SessionError> {
    serde_json::from_str(text).map_err(|error| {
        SessionError::corrupt(session, format_args!("{what} is not valid: {error}"))
    })
}

fn to_u64(session: &str, what: &str, value: i64) -> Result<u64, SessionError> {
    u64::try_from(value)
        .map_err(|_| SessionError::corrupt(session, format_args!("the {what} {value} is negative")))
}

fn to_usize(session: &str, what: &str, value: i32) -> Result<usize, SessionError> {
    usize::try_from(value)
        .map_err(|_| SessionError::corrupt(session, format_args!("the {what} {value} is negative")))
}
