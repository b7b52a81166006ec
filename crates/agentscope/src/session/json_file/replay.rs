//! Reading a log back: replaying its complete records, each checked against the one before
//! (the revisions in sequence, no more messages kept than are stored, no system message),
//! into what they say ([`LogInfo`], without the messages) and, when the messages are decoded,
//! the state they hold; and reading a whole-state file of an earlier version.

use std::fs;
use std::io;
use std::path::Path;

use agentscope_core::ConversationError;
use agentscope_core::Msg;
use agentscope_core::session::{AgentIdentity, AgentState, SessionError};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::files::io_error;
use super::format::{self, LogMessage, Record, RecordOut, corrupt, parse_line};

/// What the complete records of a log say, without the messages: what the cache keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct LogInfo {
    /// The id of the log file (from its first record); `None` for a log this store did not
    /// write, which is never trusted from the cache and is rewritten by the next save.
    pub(super) id: Option<String>,
    /// The bytes of the complete records, up to and including the last `\n`.
    pub(super) len: u64,
    /// The number of complete records.
    pub(super) records: u64,
    /// The revision the last record made.
    pub(super) revision: u64,
    /// The number of messages stored.
    pub(super) messages: usize,
    /// The bytes a rewrite would drop (at most `len`; estimated: the non-message bytes of
    /// every record but the last, or the whole log after a record that dropped messages).
    pub(super) dead: u64,
    /// The non-message bytes of the last record (dead once another record follows).
    pub(super) last_header: u64,
}

impl LogInfo {
    /// The first bytes of the log file when it has this id.
    pub(super) fn prefix(&self) -> Option<String> {
        self.id.as_deref().map(format::log_prefix)
    }
}

/// The end of a replay: the log's info, its messages, and the rest of its last record.
pub(super) struct Replayed<M> {
    pub(super) info: LogInfo,
    messages: Vec<M>,
    last: Option<LastRecord>,
    /// Whether bytes follow the last complete record (an interrupted append).
    pub(super) torn: bool,
}

/// What the last record says besides its messages.
pub(super) struct LastRecord {
    agent: AgentIdentity,
    metadata: Map<String, Value>,
    running_tools: Vec<String>,
    hooks: Map<String, Value>,
    saved_at: DateTime<Utc>,
}

impl LastRecord {
    /// What the record `record` says besides its messages.
    pub(super) fn of(record: &RecordOut<'_>) -> Self {
        Self {
            agent: record.agent.clone(),
            metadata: record.metadata.clone(),
            running_tools: record.running_tools.to_vec(),
            hooks: record.hooks.clone(),
            saved_at: *record.saved_at,
        }
    }

    /// The state of a log whose last record is this one, of revision `revision`, holding
    /// `messages`.
    pub(super) fn into_state(self, messages: Vec<Msg>, revision: u64) -> AgentState {
        let mut state = AgentState::new(self.agent, messages).with_metadata(self.metadata);
        state.revision = revision;
        state.running_tools = self.running_tools;
        state.hooks = self.hooks;
        state.saved_at = self.saved_at;
        state
    }
}

/// Replays the records in `bytes`, the part of log `path` after what `info` and `messages`
/// describe (all of it for `LogInfo::default()` and no messages).
pub(super) fn replay<M: LogMessage>(
    session: &str,
    path: &Path,
    bytes: &[u8],
    mut info: LogInfo,
    mut messages: Vec<M>,
) -> Result<Replayed<M>, SessionError> {
    let mut rest = bytes;
    let mut last = None;
    while let Some(end) = rest.iter().position(|byte| *byte == b'\n') {
        let line = &rest[..end];
        rest = &rest[end + 1..];
        let number = info.records + 1;
        let record: Record<M> = parse_line(session, path, number, line)?;
        if info.records == 0 {
            if record.revision == 0 {
                return Err(corrupt(session, path, number, "revision 0 is never stored"));
            }
            info.id = record.log.clone();
        } else if Some(record.revision) != info.revision.checked_add(1) {
            return Err(corrupt(
                session,
                path,
                number,
                format_args!(
                    "revision {} follows revision {}",
                    record.revision, info.revision
                ),
            ));
        }
        if record.kept > messages.len() {
            return Err(corrupt(
                session,
                path,
                number,
                format_args!(
                    "the record keeps {} messages but {} are stored",
                    record.kept,
                    messages.len()
                ),
            ));
        }
        if let Some(index) = record.appended.iter().position(M::is_system) {
            let error = ConversationError::SystemInMemory {
                index: record.kept + index,
            };
            return Err(corrupt(session, path, number, error));
        }
        let header = record
            .header_len()
            .map_err(|error| corrupt(session, path, number, error))?;
        let truncates = record.kept < messages.len();
        if info.records > 0 {
            info.dead = info.dead.saturating_add(info.last_header);
        }
        messages.truncate(record.kept);
        messages.extend(record.appended);
        info.len += line.len() as u64 + 1;
        info.records += 1;
        info.revision = record.revision;
        info.messages = messages.len();
        info.last_header = header;
        if truncates {
            // The dropped messages' bytes are not known: count the whole log as dead, so
            // the next save rewrites it.
            info.dead = info.len;
        }
        info.dead = info.dead.min(info.len);
        last = Some(LastRecord {
            agent: record.agent,
            metadata: record.metadata,
            running_tools: record.running_tools,
            hooks: record.hooks,
            saved_at: record.saved_at,
        });
    }
    Ok(Replayed {
        info,
        messages,
        last,
        torn: !rest.is_empty(),
    })
}

/// The state log `path` holds, and its info: `bytes` is the log after what `base` (the
/// info and state of the log's first bytes, as the cache keeps them) describes, the whole
/// file for `None`.
pub(super) fn state_of_log(
    session: &str,
    path: &Path,
    bytes: &[u8],
    base: Option<(LogInfo, AgentState)>,
) -> Result<(AgentState, LogInfo), SessionError> {
    let (info, mut base) = match base {
        Some((info, state)) => (info, Some(state)),
        None => (LogInfo::default(), None),
    };
    let messages = base
        .as_mut()
        .map(|state| std::mem::take(&mut state.messages))
        .unwrap_or_default();
    let replayed = replay::<Msg>(session, path, bytes, info, messages)?;
    let state = match (replayed.last, base) {
        (Some(last), _) => last.into_state(replayed.messages, replayed.info.revision),
        // No complete record after the base's: the base is the state.
        (None, Some(mut state)) => {
            state.messages = replayed.messages;
            state
        }
        (None, None) => return Err(no_complete_record(session, path)),
    };
    state
        .check_for(session)
        .map_err(|error| with_path(error, path))?;
    Ok((state, replayed.info))
}

/// The error about log `path` when it holds no complete record (a log is never written
/// without one).
pub(super) fn no_complete_record(session: &str, path: &Path) -> SessionError {
    SessionError::corrupt(
        session,
        format_args!("{}: the log holds no complete record", path.display()),
    )
}

/// Reads a session file written by an earlier version of the store, if there is one.
pub(super) fn read_legacy(session: &str, path: &Path) -> Result<Option<AgentState>, SessionError> {
    match fs::read(path) {
        Ok(bytes) => AgentState::decode(session, &bytes)
            .map(Some)
            .map_err(|error| with_path(error, path)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_error(session, "reading", path, error)),
    }
}

/// Names `path` in a corrupt-state error about a file's content.
fn with_path(error: SessionError, path: &Path) -> SessionError {
    match error {
        SessionError::Corrupt { session, message } => SessionError::Corrupt {
            session,
            message: format!("{}: {message}", path.display()),
        },
        other => other,
    }
}
