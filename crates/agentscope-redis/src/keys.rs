//! Key naming (see the crate docs, "Keys"): the keys of a session under a prefix, the
//! prefix's indexes, the pattern a cluster scan matches state keys with, and the rule for
//! prefixes.
//!
//! The session id is the keys' hash tag (`P{<id>}:...`), so all keys of a session are in one
//! hash slot of a cluster. Session ids are checked by the callers
//! ([`validate_session_id`](agentscope_core::session::validate_session_id)) before they
//! name a key.

use agentscope_core::session::SessionError;

use crate::error::config_error;

/// The key prefix stores use unless told otherwise.
pub const DEFAULT_KEY_PREFIX: &str = "agentscope:";

/// Refuses a prefix holding `{` or `}`: the session id must be the keys' only hash tag.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), SessionError> {
    if prefix.contains(['{', '}']) {
        return Err(config_error(format!(
            "invalid key prefix '{prefix}': it must not hold '{{' or '}}' (the session id is \
             the keys' hash tag)"
        )));
    }
    Ok(())
}

/// The state hash of `session`: `<prefix>{<session>}:state`.
pub(crate) fn state_key(prefix: &str, session: &str) -> String {
    format!("{prefix}{{{session}}}:state")
}

/// The message list of `session`: `<prefix>{<session>}:messages`.
pub(crate) fn messages_key(prefix: &str, session: &str) -> String {
    format!("{prefix}{{{session}}}:messages")
}

/// The lease of `session`: `<prefix>{<session>}:lease`.
pub(crate) fn lease_key(prefix: &str, session: &str) -> String {
    format!("{prefix}{{{session}}}:lease")
}

/// The interrupt flag of `session`: `<prefix>{<session>}:interrupt`.
pub(crate) fn flag_key(prefix: &str, session: &str) -> String {
    format!("{prefix}{{{session}}}:interrupt")
}

/// The prefix's session index (standalone only): `<prefix>sessions`.
pub(crate) fn index_key(prefix: &str) -> String {
    format!("{prefix}sessions")
}

/// The prefix's recency index (standalone only): `<prefix>recent`, a sorted set of
/// `<recency key><id>` members.
pub(crate) fn recent_key(prefix: &str) -> String {
    format!("{prefix}recent")
}

/// The prefix's recency keys (standalone only): `<prefix>recent-keys`, a hash from each id
/// to its recency key.
pub(crate) fn recent_keys_key(prefix: &str) -> String {
    format!("{prefix}recent-keys")
}

/// The `SCAN` pattern matching every state key of `prefix`: `<prefix>{*}:state`, with the
/// prefix's glob characters escaped.
pub(crate) fn state_key_pattern(prefix: &str) -> String {
    format!("{}{{*}}:state", glob_escape(prefix))
}

/// The session id of a state key of `prefix` (the inverse of [`state_key`]).
pub(crate) fn session_of_state_key(prefix: &str, key: &str) -> Option<String> {
    key.strip_prefix(prefix)?
        .strip_prefix('{')?
        .strip_suffix("}:state")
        .map(str::to_owned)
}

/// `text` with the glob characters of Redis patterns escaped.
fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("app:*?[x]\\"), "app:\\*\\?\\[x\\]\\\\");
        assert_eq!(glob_escape("agentscope:"), "agentscope:");
    }

    #[test]
    fn prefixes_with_braces_are_refused() {
        assert!(check_prefix("agentscope:").is_ok());
        assert!(check_prefix("").is_ok());
        let error = check_prefix("a{b}:").unwrap_err().to_string();
        assert_eq!(
            error,
            "session store: storage backend error: invalid key prefix 'a{b}:': it must not hold \
             '{' or '}' (the session id is the keys' hash tag)"
        );
    }
}
