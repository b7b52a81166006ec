//! What the retrieval hooks ([`GenericRAGHook`](super::GenericRAGHook) and
//! [`StaticLongTermMemoryHook`](super::StaticLongTermMemoryHook)) share: what a call
//! retrieves for, and how what was retrieved joins this call's system message. Each hook
//! keeps its own store, its own entry format and its own answer to a failing store.

use agentscope_core::{Msg, PreCallEvent, Role, SharedString};

/// How many hits a retrieval hook appends at most, and the text before them.
#[derive(Debug, Clone)]
pub(super) struct Retrieval {
    /// At most this many hits; 0 turns retrieval off.
    pub(super) top_k: usize,
    pub(super) header: SharedString,
}

impl Retrieval {
    pub(super) fn new(top_k: usize, header: &'static str) -> Self {
        Retrieval {
            top_k,
            header: header.into(),
        }
    }

    /// What this call retrieves for: the text of the last user message of its new input.
    /// `None` when retrieval is off, when the event is an observation (messages stored
    /// without a call: nothing to retrieve for), or when the input has no user text (a
    /// resume, tool results).
    pub(super) fn query(&self, event: &PreCallEvent) -> Option<String> {
        if self.top_k == 0 || event.is_observation() {
            return None;
        }
        last_user_text(event.input_messages())
    }

    /// Appends the header and the first [`top_k`](Self::top_k) of `hits`, each written by
    /// `entry`, to this call's system message (so every reasoning step of the call sees
    /// them, and memory never holds them). Nothing when there are no hits.
    pub(super) fn append<T>(
        &self,
        event: &mut PreCallEvent,
        hits: impl IntoIterator<Item = T>,
        mut entry: impl FnMut(&mut String, T),
    ) {
        let mut hits = hits.into_iter().take(self.top_k).peekable();
        if hits.peek().is_none() {
            return;
        }
        let mut text = self.header.to_string();
        for hit in hits {
            entry(&mut text, hit);
        }
        event.append_system_content(text);
    }
}

/// The text of the last user message of `messages`, when it has any (not blank).
fn last_user_text(messages: &[Msg]) -> Option<String> {
    let text = messages.iter().rev().find(|m| m.role == Role::User)?.text();
    (!text.trim().is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn last_user_text_skips_other_roles_and_blank_text() {
        let msgs = [Msg::user("first"), Msg::user("second"), Msg::assistant("x")];
        assert_eq!(last_user_text(&msgs).as_deref(), Some("second"));
        assert_eq!(last_user_text(&[Msg::user("  ")]), None);
        assert_eq!(last_user_text(&[]), None);
    }
}
