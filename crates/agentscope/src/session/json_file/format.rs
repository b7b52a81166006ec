//! The record format of a log: one JSON object per line. A record as written ([`RecordOut`],
//! borrowed from the change or the state it stores) and as read ([`Record`], its messages
//! decoded or only counted); the parse of one line, with the version probe that tells a
//! record of another format version from a corrupt one; and the log id that a file's first
//! record carries.

use std::fmt;
use std::io::{self, Write};
use std::path::Path;

use agentscope_core::session::{AgentIdentity, AgentState, SessionError, StateChange};
use agentscope_core::{Msg, Role};
use chrono::{DateTime, Utc};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A record as written: borrowed from the change or the state it stores.
#[derive(Clone, Copy, Serialize)]
pub(super) struct RecordOut<'a> {
    pub(super) version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) log: Option<&'a str>,
    pub(super) revision: u64,
    pub(super) kept: usize,
    pub(super) agent: &'a AgentIdentity,
    pub(super) metadata: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "slice_is_empty")]
    pub(super) running_tools: &'a [String],
    #[serde(skip_serializing_if = "map_is_empty")]
    pub(super) hooks: &'a Map<String, Value>,
    #[serde(serialize_with = "saved_at")]
    pub(super) saved_at: &'a DateTime<Utc>,
    /// Last: [`encode`](Self::encode) writes the messages into the header's `[]`.
    pub(super) appended: &'a [Msg],
}

fn saved_at<S: serde::Serializer>(at: &&DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    agentscope_core::rfc3339::serialize(at, serializer)
}

fn slice_is_empty(slice: &&[String]) -> bool {
    slice.is_empty()
}

fn map_is_empty(map: &&Map<String, Value>) -> bool {
    map.is_empty()
}

impl<'a> RecordOut<'a> {
    /// The record appending `change` (no `log` id: not the first record of a file).
    pub(super) fn of_change(change: &'a StateChange) -> Self {
        Self {
            version: AgentState::CURRENT_VERSION,
            log: None,
            revision: change.revision(),
            kept: change.kept,
            agent: &change.agent,
            metadata: &change.metadata,
            running_tools: &change.running_tools,
            hooks: &change.hooks,
            saved_at: &change.saved_at,
            appended: &change.appended,
        }
    }

    /// The record of a whole state (no `log` id: see [`first_in`](Self::first_in)).
    pub(super) fn of_state(state: &'a AgentState) -> Self {
        Self {
            version: AgentState::CURRENT_VERSION,
            log: None,
            revision: state.revision,
            kept: 0,
            agent: &state.agent,
            metadata: &state.metadata,
            running_tools: &state.running_tools,
            hooks: &state.hooks,
            saved_at: &state.saved_at,
            appended: &state.messages,
        }
    }

    /// This record of a whole state (a state, or a change keeping no stored message) as the
    /// first of the log file `log`.
    pub(super) fn first_in<'b>(self, log: &'b str) -> RecordOut<'b>
    where
        'a: 'b,
    {
        RecordOut {
            log: Some(log),
            ..self
        }
    }

    /// The record's line (with its `\n`), and the bytes of it that are not messages (what
    /// becomes dead once another record follows). The header (the record with no messages)
    /// is serialised once; the messages are written between its closing `[]`, which gives
    /// serde_json's bytes for the whole record.
    pub(super) fn encode(&self, session: &str) -> Result<(Vec<u8>, u64), SessionError> {
        let cannot = |error: serde_json::Error| {
            SessionError::corrupt(session, format_args!("cannot serialise: {error}"))
        };
        let header = RecordOut {
            appended: &[],
            ..*self
        };
        // A step's record is a few hundred bytes to a few kilobytes: start past the sizes
        // `to_vec` would grow through.
        let mut line = Vec::with_capacity(1024);
        serde_json::to_writer(&mut line, &header).map_err(cannot)?;
        let header_len = line.len() as u64 + 1;
        if !line.ends_with(b"[]}") {
            // Unreachable while `appended` is the last field: serialise the whole record.
            line = serde_json::to_vec(self).map_err(cannot)?;
            line.push(b'\n');
            return Ok((line, header_len));
        }
        line.truncate(line.len() - 2);
        for (position, message) in self.appended.iter().enumerate() {
            if position > 0 {
                line.push(b',');
            }
            serde_json::to_writer(&mut line, message).map_err(cannot)?;
        }
        line.extend_from_slice(b"]}\n");
        Ok((line, header_len))
    }

    /// The length of the record's line without its messages.
    fn header_len(&self) -> Result<u64, serde_json::Error> {
        let mut counter = ByteCounter(0);
        serde_json::to_writer(
            &mut counter,
            &RecordOut {
                appended: &[],
                ..*self
            },
        )?;
        Ok(counter.0 + 1)
    }
}

/// Counts the bytes written to it.
struct ByteCounter(u64);

impl Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A record as read, with its messages as `M`: [`Msg`] to load, [`IgnoredAny`] to count
/// them.
#[derive(Deserialize)]
pub(super) struct Record<M> {
    pub(super) version: u32,
    #[serde(default)]
    pub(super) log: Option<String>,
    pub(super) revision: u64,
    pub(super) kept: usize,
    pub(super) agent: AgentIdentity,
    #[serde(default)]
    pub(super) metadata: Map<String, Value>,
    #[serde(default)]
    pub(super) running_tools: Vec<String>,
    #[serde(default)]
    pub(super) hooks: Map<String, Value>,
    pub(super) saved_at: DateTime<Utc>,
    pub(super) appended: Vec<M>,
}

impl<M> Record<M> {
    /// The length of the record's line without its messages, as this store writes it.
    pub(super) fn header_len(&self) -> Result<u64, serde_json::Error> {
        RecordOut {
            version: self.version,
            log: self.log.as_deref(),
            revision: self.revision,
            kept: self.kept,
            agent: &self.agent,
            metadata: &self.metadata,
            running_tools: &self.running_tools,
            hooks: &self.hooks,
            saved_at: &self.saved_at,
            appended: &[],
        }
        .header_len()
    }
}

/// Just the version, to report a record of another format version as such.
#[derive(Deserialize)]
struct VersionProbe {
    version: u32,
}

/// What a replay keeps of each message.
pub(super) trait LogMessage: DeserializeOwned {
    fn is_system(&self) -> bool;
}

impl LogMessage for Msg {
    fn is_system(&self) -> bool {
        self.role == Role::System
    }
}

impl LogMessage for IgnoredAny {
    fn is_system(&self) -> bool {
        false
    }
}

/// Where a record is in its log, for errors: `line 3`, or `the last record` (read from
/// the end of the log, without counting the lines before).
#[derive(Debug, Clone, Copy)]
pub(super) enum At {
    Line(u64),
    Last,
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Line(line) => write!(f, "line {line}"),
            At::Last => f.write_str("the last record"),
        }
    }
}

/// A corrupt-state error about line `line` of log `path`.
pub(super) fn corrupt(
    session: &str,
    path: &Path,
    line: u64,
    message: impl fmt::Display,
) -> SessionError {
    corrupt_at(session, path, At::Line(line), message)
}

/// A corrupt-state error about the record `at` of log `path`.
fn corrupt_at(session: &str, path: &Path, at: At, message: impl fmt::Display) -> SessionError {
    SessionError::corrupt(session, format_args!("{}: {at}: {message}", path.display()))
}

/// Parses line `number` of log `path`.
pub(super) fn parse_line<M: LogMessage>(
    session: &str,
    path: &Path,
    number: u64,
    line: &[u8],
) -> Result<Record<M>, SessionError> {
    let at = At::Line(number);
    let unsupported = |found: u32| SessionError::UnsupportedVersion {
        session: session.to_owned(),
        found,
        supported: AgentState::CURRENT_VERSION,
    };
    // serde reads a struct from an array too; a record is always an object.
    if line
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|first| *first != b'{')
    {
        return Err(corrupt_at(
            session,
            path,
            at,
            "the record is not a JSON object",
        ));
    }
    match serde_json::from_slice::<Record<M>>(line) {
        Ok(record) if record.version == AgentState::CURRENT_VERSION => Ok(record),
        Ok(record) => Err(unsupported(record.version)),
        Err(error) => match serde_json::from_slice::<VersionProbe>(line) {
            Ok(probe) if probe.version != AgentState::CURRENT_VERSION => {
                Err(unsupported(probe.version))
            }
            _ => Err(corrupt_at(session, path, at, error)),
        },
    }
}

/// What a record says before its messages: the revision it made and when its change was
/// saved (the state's `revision` and `saved_at` when it is the log's last record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) revision: u64,
    pub(super) saved_at: DateTime<Utc>,
}

/// Reads the head of the record `at` of log `path` (a line without its `\n`): its
/// version, revision and `saved_at`, stopping at its messages, which [`RecordOut`] always
/// writes last, so they are neither decoded nor scanned.
///
/// # Errors
///
/// [`SessionError::UnsupportedVersion`] for another format version; a line that is not a
/// record (not an object, broken JSON before the messages, a field missing or of the wrong
/// type) is [`SessionError::Corrupt`] naming the session, the log and `at`.
pub(super) fn parse_head(
    session: &str,
    path: &Path,
    at: At,
    line: &[u8],
) -> Result<Head, SessionError> {
    use serde::de::{self, MapAccess, Visitor};

    /// The fields read so far, and whether the messages were reached.
    #[derive(Default)]
    struct Fields {
        version: Option<u32>,
        revision: Option<u64>,
        saved_at: Option<DateTime<Utc>>,
        at_messages: bool,
    }

    struct HeadVisitor<'a>(&'a mut Fields);

    impl<'de> Visitor<'de> for HeadVisitor<'_> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a log record (a JSON object)")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "version" => self.0.version = Some(map.next_value()?),
                    "revision" => self.0.revision = Some(map.next_value()?),
                    "saved_at" => self.0.saved_at = Some(map.next_value()?),
                    // The last field: stop before it.
                    "appended" => {
                        self.0.at_messages = true;
                        return Err(de::Error::custom("the record's messages"));
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
    }

    let mut fields = Fields::default();
    let mut deserializer = serde_json::Deserializer::from_slice(line);
    let read = serde::Deserializer::deserialize_map(&mut deserializer, HeadVisitor(&mut fields));
    if let Some(found) = fields.version
        && found != AgentState::CURRENT_VERSION
    {
        return Err(SessionError::UnsupportedVersion {
            session: session.to_owned(),
            found,
            supported: AgentState::CURRENT_VERSION,
        });
    }
    if let Err(error) = read
        && !fields.at_messages
    {
        return Err(corrupt_at(session, path, at, error));
    }
    let missing =
        |field: &str| corrupt_at(session, path, at, format_args!("missing field `{field}`"));
    if fields.version.is_none() {
        return Err(missing("version"));
    }
    Ok(Head {
        revision: fields.revision.ok_or_else(|| missing("revision"))?,
        saved_at: fields.saved_at.ok_or_else(|| missing("saved_at"))?,
    })
}

/// The first bytes of a log file of id `id`: its first record, as [`RecordOut::first_in`]
/// makes it, starts with the version and the id.
pub(super) fn log_prefix(id: &str) -> String {
    format!(
        "{{\"version\":{},\"log\":\"{id}\"",
        AgentState::CURRENT_VERSION
    )
}

/// A new random id, for a log file (its first record's `log`) or a lease's fence.
pub(super) fn new_log_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::json_file::test_support::{hooks, state, step};

    /// The head of a record is read without its messages: what follows them is not even
    /// looked at; a record of another version is reported as such, a broken head as
    /// corrupt at the place named.
    #[test]
    fn a_head_is_read_without_its_messages() {
        let path = Path::new("/logs/s.jsonl");
        let mut change = step(6, 2, &["a", "b"]);
        change
            .metadata
            .insert("appended".to_owned(), serde_json::json!([1]));
        let (line, _) = RecordOut::of_change(&change).encode("s").unwrap();
        let line = &line[..line.len() - 1];
        let head = parse_head("s", path, At::Last, line).unwrap();
        assert_eq!((head.revision, head.saved_at), (7, change.saved_at));
        // Broken messages do not matter: they are not read.
        let key = b"\"appended\":[";
        let in_metadata = line.windows(key.len()).position(|w| w == key).unwrap();
        let appended = line.windows(key.len()).rposition(|w| w == key).unwrap();
        assert!(in_metadata < appended, "the metadata's key comes first");
        let mut broken = line[..appended + key.len()].to_vec();
        broken.extend_from_slice(b"{not json");
        assert_eq!(parse_head("s", path, At::Last, &broken).unwrap(), head);
        // Another version, a broken head, a missing field.
        let error = parse_head("s", path, At::Last, br#"{"version":2,"revision":1}"#).unwrap_err();
        assert!(
            matches!(error, SessionError::UnsupportedVersion { found: 2, .. }),
            "{error:?}"
        );
        let error = parse_head("s", path, At::Line(3), br#"{"version":1,"revision":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("session 's' is corrupt: /logs/s.jsonl: line 3: invalid type"),
            "{error}"
        );
        let error = parse_head(
            "s",
            path,
            At::Last,
            br#"{"version":1,"revision":1,"appended":[]}"#,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "session 's' is corrupt: /logs/s.jsonl: the last record: missing field `saved_at`"
        );
        let error = parse_head("s", path, At::Last, b"[1]")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(
                "session 's' is corrupt: /logs/s.jsonl: the last record: invalid type"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_record_line_is_serde_jsons_serialisation_of_the_whole_record() {
        let mut with_all = step(4, 1, &["a", "b \"quoted\"", "c"]);
        with_all.running_tools = vec!["call-1".to_owned()];
        with_all.hooks = hooks("x");
        with_all
            .metadata
            .insert("k".to_owned(), serde_json::json!([1, 2]));
        let changes = [step(1, 0, &[]), step(2, 1, &["one"]), with_all];
        for change in &changes {
            let record = RecordOut::of_change(change);
            let (line, header_len) = record.encode("s").unwrap();
            let mut whole = serde_json::to_vec(&record).unwrap();
            whole.push(b'\n');
            assert_eq!(
                String::from_utf8(line).unwrap(),
                String::from_utf8(whole).unwrap()
            );
            assert_eq!(header_len, record.header_len().unwrap());
        }
        let whole_state = state(&["q", "r"]);
        let record = RecordOut::of_state(&whole_state).first_in("log-1");
        let (line, _) = record.encode("s").unwrap();
        assert_eq!(
            &line[..line.len() - 1],
            &serde_json::to_vec(&record).unwrap()[..]
        );
    }
}
