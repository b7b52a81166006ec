//! What the scripts get and give: a [`StateChange`] as script arguments, a load's reply as an
//! [`AgentState`].

use agentscope_core::Msg;
use agentscope_core::rfc3339;
use agentscope_core::session::{
    AgentState, AgentStateParts, SessionError, SessionSummary, StateChange, validate_session_id,
};
use redis::Value;
use serde::de::DeserializeOwned;

use crate::scripts::{RECENCY_KEY_LEN, SAVE_FIXED_ARGS, STATE_FIELDS};

/// The save script's `ARGV`, in order (see [`crate::scripts::SAVE`]).
pub(crate) fn save_args(
    session: &str,
    change: &StateChange,
    ttl_ms: u64,
) -> Result<Vec<Vec<u8>>, SessionError> {
    let new_revision = change
        .base
        .checked_add(1)
        .ok_or_else(|| SessionError::InvalidChange {
            session: session.to_owned(),
            message: format!("revision {} is the last one", change.base),
        })?;
    let mut args = Vec::with_capacity(SAVE_FIXED_ARGS + change.appended.len());
    args.push(session.as_bytes().to_vec());
    args.push(change.base.to_string().into_bytes());
    args.push(new_revision.to_string().into_bytes());
    args.push(change.kept.to_string().into_bytes());
    args.push(ttl_ms.to_string().into_bytes());
    args.push(AgentState::CURRENT_VERSION.to_string().into_bytes());
    args.push(json(session, &change.agent)?);
    args.push(json(session, &change.metadata)?);
    args.push(json(session, &change.running_tools)?);
    args.push(json(session, &change.hooks)?);
    args.push(rfc3339::format(&change.saved_at).into_bytes());
    args.push(change.fence.as_deref().unwrap_or("").as_bytes().to_vec());
    args.push(SessionSummary::recency_key(&change.saved_at).into_bytes());
    for msg in &change.appended {
        args.push(json(session, msg)?);
    }
    Ok(args)
}

fn json(session: &str, value: &impl serde::Serialize) -> Result<Vec<u8>, SessionError> {
    serde_json::to_vec(value)
        .map_err(|error| SessionError::corrupt(session, format_args!("cannot serialise: {error}")))
}

/// What the save script answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SaveReply {
    /// Saved: the new revision.
    Saved(u64),
    /// Refused, nothing written: the stored revision and message count.
    Refused { revision: u64, messages: usize },
    /// Refused, nothing written: another lease than the change's fence holds the session.
    Fenced,
}

pub(crate) fn save_reply(session: &str, value: Value) -> Result<SaveReply, SessionError> {
    let unexpected = || {
        SessionError::corrupt(
            session,
            "the save script answered something other than a status and a revision",
        )
    };
    let Value::Array(items) = value else {
        return Err(unexpected());
    };
    let mut items = items.into_iter();
    let status = items.next().ok_or_else(unexpected)?;
    if status == Value::Int(2) {
        return Ok(SaveReply::Fenced);
    }
    let revision = items.next().ok_or_else(unexpected)?;
    let revision = integer(session, "revision", &revision)?;
    match status {
        Value::Int(1) => Ok(SaveReply::Saved(revision)),
        Value::Int(0) => {
            let count = items.next().ok_or_else(unexpected)?;
            let count = integer(session, "message count", &count)?;
            let messages = usize::try_from(count).map_err(|_| {
                SessionError::corrupt(
                    session,
                    format_args!("the message count {count} is out of range"),
                )
            })?;
            Ok(SaveReply::Refused { revision, messages })
        }
        _ => Err(unexpected()),
    }
}

/// The sessions a `list_recent` page script found (`member, revision, saved_at` triples;
/// see [`crate::scripts::LIST_RECENT`]), with the last member; members whose id is not a
/// valid session id are skipped (and logged).
pub(crate) fn recent_page(
    prefix: &str,
    found: Vec<Value>,
) -> Result<(Vec<SessionSummary>, Option<String>), SessionError> {
    let unexpected = |what: &str| {
        SessionError::backend_message(
            None,
            format_args!("listing sessions: the list_recent script answered {what}"),
        )
    };
    let mut page = Vec::with_capacity(found.len() / 3);
    let mut last = None;
    let mut items = found.into_iter();
    while let Some(member) = items.next() {
        let (Some(revision), Some(saved_at)) = (items.next(), items.next()) else {
            return Err(unexpected("a member without its revision and saved_at"));
        };
        let member = member_text(&member).ok_or_else(|| unexpected("a member that is not text"))?;
        let id = member.get(RECENCY_KEY_LEN..).unwrap_or_default().to_owned();
        last = Some(member);
        if validate_session_id(&id).is_err() {
            tracing::warn!(
                target: "agentscope_redis",
                prefix = %prefix,
                id = %id,
                "ignoring an invalid session id in the Redis recency index"
            );
            continue;
        }
        page.push(summary(id, &revision, &saved_at)?);
    }
    Ok((page, last))
}

/// The summary of session `id` from its state hash's `revision` and `saved_at` fields.
pub(crate) fn summary(
    id: String,
    revision: &Value,
    saved_at: &Value,
) -> Result<SessionSummary, SessionError> {
    let revision = integer(&id, "revision", revision)?;
    let saved_at = rfc3339::parse_saved_at(&id, text(&id, "the saved_at field", saved_at)?)?;
    Ok(SessionSummary::new(id, revision, saved_at))
}

/// A bulk or simple string as text.
fn member_text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(text) => Some(text.clone()),
        _ => None,
    }
}

/// A non-negative integer, sent as a Redis integer or as decimal text.
fn integer(session: &str, what: &str, value: &Value) -> Result<u64, SessionError> {
    match value {
        Value::Int(number) => u64::try_from(*number).map_err(|_| {
            SessionError::corrupt(session, format_args!("the {what} {number} is negative"))
        }),
        Value::BulkString(bytes) => decimal(session, what, bytes),
        Value::SimpleString(text) => decimal(session, what, text.as_bytes()),
        other => Err(SessionError::corrupt(
            session,
            format_args!("the {what} is {}, not an integer", kind(other)),
        )),
    }
}

fn decimal(session: &str, what: &str, bytes: &[u8]) -> Result<u64, SessionError> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| {
            SessionError::corrupt(
                session,
                format_args!(
                    "the {what} '{}' is not a non-negative integer",
                    String::from_utf8_lossy(bytes)
                ),
            )
        })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Nil => "missing",
        Value::Int(_) => "an integer",
        Value::BulkString(_) | Value::SimpleString(_) | Value::VerbatimString { .. } => "text",
        Value::Array(_) | Value::Set(_) => "an array",
        Value::Map(_) => "a map",
        _ => "of another type",
    }
}

/// The state a load script's reply holds (`Nil`: no session), checked with
/// [`AgentState::check_for`]. Reads the version first, so that a state of another version is
/// reported as such.
pub(crate) fn load_reply(session: &str, value: Value) -> Result<Option<AgentState>, SessionError> {
    let unexpected = || {
        SessionError::corrupt(
            session,
            "the load script answered something other than the state and its messages",
        )
    };
    let (fields, messages) = match value {
        Value::Nil => return Ok(None),
        Value::Array(parts) => {
            let mut parts = parts.into_iter();
            match (parts.next(), parts.next(), parts.next()) {
                (Some(Value::Array(fields)), Some(Value::Array(messages)), None) => {
                    (fields, messages)
                }
                _ => return Err(unexpected()),
            }
        }
        _ => return Err(unexpected()),
    };
    let fields: [Value; STATE_FIELDS.len()] =
        <[Value; STATE_FIELDS.len()]>::try_from(fields).map_err(|_| unexpected())?;
    let [
        revision,
        version,
        agent,
        metadata,
        running_tools,
        hooks,
        saved_at,
        count,
    ] = fields;

    // The version first: a newer format is reported as such, not as whatever it changed.
    let version = AgentState::check_version(
        session,
        i128::from(integer(session, "format version", &version)?),
    )?;
    let revision = integer(session, "revision", &revision)?;
    let count = integer(session, "message count", &count)?;
    // Fields are read in the order written: the first damaged one is the one reported.
    let parts = AgentStateParts {
        version,
        revision,
        agent: field(session, "the agent field", &agent)?,
        metadata: field(session, "the metadata field", &metadata)?,
        running_tools: field(session, "the running_tools field", &running_tools)?,
        hooks: field(session, "the hooks field", &hooks)?,
        saved_at: rfc3339::parse_saved_at(
            session,
            text(session, "the saved_at field", &saved_at)?,
        )?,
        messages: listed_messages(session, count, &messages)?,
    };
    AgentState::from_parts(session, parts).map(Some)
}

/// The messages of a session's list, which must hold the `count` its state hash records.
fn listed_messages(session: &str, count: u64, list: &[Value]) -> Result<Vec<Msg>, SessionError> {
    if u64::try_from(list.len()).ok() != Some(count) {
        return Err(SessionError::corrupt(
            session,
            format_args!(
                "the state counts {count} messages but the message list holds {}",
                list.len()
            ),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(position, value)| field::<Msg>(session, &format!("message {position}"), value))
        .collect()
}

fn bytes<'v>(session: &str, what: &str, value: &'v Value) -> Result<&'v [u8], SessionError> {
    match value {
        Value::BulkString(bytes) => Ok(bytes),
        Value::SimpleString(text) => Ok(text.as_bytes()),
        other => Err(SessionError::corrupt(
            session,
            format_args!("{what} is {}, not text", kind(other)),
        )),
    }
}

fn text<'v>(session: &str, what: &str, value: &'v Value) -> Result<&'v str, SessionError> {
    std::str::from_utf8(bytes(session, what, value)?).map_err(|error| {
        SessionError::corrupt(session, format_args!("{what} is not UTF-8: {error}"))
    })
}

fn field<T: DeserializeOwned>(session: &str, what: &str, value: &Value) -> Result<T, SessionError> {
    serde_json::from_slice(bytes(session, what, value)?).map_err(|error| {
        SessionError::corrupt(session, format_args!("{what} is not valid: {error}"))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use agentscope_core::session::AgentIdentity;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    fn reply(fields: [Value; 8], messages: Vec<Value>) -> Value {
        Value::Array(vec![Value::Array(fields.into()), Value::Array(messages)])
    }

    fn good_fields() -> [Value; 8] {
        [
            bulk("3"),
            bulk("1"),
            bulk(r#"{"name":"a","id":"1"}"#),
            bulk(r#"{"big":18446744073709551615}"#),
            bulk(r#"["call-1"]"#),
            bulk("{}"),
            bulk("2026-11-30T10:00:01.123456789Z"),
            bulk("1"),
        ]
    }

    fn message() -> Value {
        Value::BulkString(serde_json::to_vec(&Msg::user("hi")).unwrap())
    }

    #[test]
    fn a_stored_state_decodes() {
        let state = load_reply("s", reply(good_fields(), vec![message()]))
            .unwrap()
            .unwrap();
        assert_eq!(state.revision, 3);
        assert_eq!(state.running_tools, ["call-1"]);
        assert_eq!(state.metadata["big"], serde_json::json!(u64::MAX));
        assert_eq!(state.messages[0].text(), "hi");
        assert_eq!(state.saved_at.timestamp_subsec_nanos(), 123_456_789);
        assert_eq!(load_reply("s", Value::Nil).unwrap(), None);
    }

    #[test]
    fn damage_is_reported_naming_the_session() {
        let err = |fields: [Value; 8], messages: Vec<Value>| {
            load_reply("s1", reply(fields, messages))
                .unwrap_err()
                .to_string()
        };
        let mut newer = good_fields();
        newer[1] = bulk("2");
        newer[2] = bulk("not json");
        assert_eq!(
            err(newer, vec![message()]),
            "session 's1' has state format version 2; this build reads version 1"
        );
        assert_eq!(
            err(good_fields(), vec![]),
            "session 's1' is corrupt: the state counts 1 messages but the message list holds 0"
        );
        let mut no_agent = good_fields();
        no_agent[2] = Value::Nil;
        assert_eq!(
            err(no_agent, vec![message()]),
            "session 's1' is corrupt: the agent field is missing, not text"
        );
        assert_eq!(
            err(good_fields(), vec![bulk("{")]),
            "session 's1' is corrupt: message 0 is not valid: EOF while parsing an object at \
             line 1 column 1"
        );
        let system = Value::BulkString(serde_json::to_vec(&Msg::system("x")).unwrap());
        assert_eq!(
            err(good_fields(), vec![system]),
            "session 's1' is corrupt: message 0 has the system role; agent memory never holds \
             system messages"
        );
        let mut bad_time = good_fields();
        bad_time[6] = bulk("yesterday");
        assert!(
            err(bad_time, vec![message()]).starts_with(
                "session 's1' is corrupt: saved_at 'yesterday' is not an RFC 3339 time"
            )
        );
        let mut negative = good_fields();
        negative[0] = bulk("-1");
        assert_eq!(
            err(negative, vec![message()]),
            "session 's1' is corrupt: the revision '-1' is not a non-negative integer"
        );
    }

    #[test]
    fn save_replies() {
        let saved = Value::Array(vec![Value::Int(1), bulk("4")]);
        assert_eq!(save_reply("s", saved).unwrap(), SaveReply::Saved(4));
        let refused = Value::Array(vec![Value::Int(0), bulk("7"), Value::Int(12)]);
        assert_eq!(
            save_reply("s", refused).unwrap(),
            SaveReply::Refused {
                revision: 7,
                messages: 12
            }
        );
        assert!(save_reply("s", Value::Okay).is_err());
    }

    #[test]
    fn save_args_are_in_script_order() {
        let change = StateChange::new(
            2,
            1,
            vec![Msg::assistant("a"), Msg::assistant("b")],
            AgentIdentity::new("n", "i"),
        );
        let args = save_args("chat", &change, 60_000).unwrap();
        let text = |i: usize| String::from_utf8(args[i].clone()).unwrap();
        assert_eq!(args.len(), SAVE_FIXED_ARGS + 2);
        assert_eq!(
            [text(0), text(1), text(2), text(3), text(4), text(5)],
            ["chat", "2", "3", "1", "60000", "1"]
        );
        assert_eq!(text(6), r#"{"name":"n","id":"i"}"#);
        assert_eq!(text(8), "[]");
    }
}
