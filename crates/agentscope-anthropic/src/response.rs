//! The response side of the wire format: the events of a streamed Messages response (or one
//! whole message), as derived serde types.
//!
//! Each event's JSON is deserialized straight into these types (no intermediate
//! [`serde_json::Value`]): texts are borrowed from the event's data where they need no
//! unescaping, and unknown fields are skipped unread (only their JSON syntax is checked).
//!
//! An `error` event is read as a [`Value`] by the decoder, so [`Event`] has no `error`
//! field.
//!
//! Every field is read leniently (see [`agentscope_http::lenient`]): unknown fields are
//! ignored, and a field that is missing, `null` or of an unexpected type reads as absent
//! instead of failing the whole event. One type per shape covers every event: an event's
//! fields are the union of what `message_start`, `content_block_start`,
//! `content_block_delta`, `message_delta` and `error` carry.

use std::borrow::Cow;

use agentscope_http::lenient::{count, object, objects, text};
use serde::Deserialize;
use serde_json::Value;

/// One streamed event (its `type` says which), or a whole message.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Event<'a> {
    /// `message_start`, `content_block_delta`, ... (`message` for a whole message).
    #[serde(default, rename = "type", borrow, deserialize_with = "text")]
    pub(crate) kind: Option<Cow<'a, str>>,
    /// `message_start`: the message so far (id, usage).
    #[serde(default, borrow, deserialize_with = "object")]
    pub(crate) message: Option<Box<Message<'a>>>,
    /// `content_block_*`: the block's position in the message.
    #[serde(default, deserialize_with = "count")]
    pub(crate) index: Option<u64>,
    /// `content_block_start`: the block, empty or nearly so.
    #[serde(default, borrow, deserialize_with = "object")]
    pub(crate) content_block: Option<Box<Block<'a>>>,
    /// `content_block_delta` (a piece of a block) or `message_delta` (the stop reason).
    #[serde(default, borrow, deserialize_with = "object")]
    pub(crate) delta: Option<Box<Block<'a>>>,
    /// `message_delta`: cumulative usage.
    #[serde(default, deserialize_with = "object")]
    pub(crate) usage: Option<Box<Usage>>,
}

/// A message: the one `message_start` carries (no content yet), or a whole response.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Message<'a> {
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) id: Option<Cow<'a, str>>,
    /// The model that answered.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) model: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "objects")]
    pub(crate) content: Vec<Block<'a>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) stop_reason: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "object")]
    pub(crate) usage: Option<Usage>,
}

/// A content block (`content_block_start`'s, or one of a whole message's content), or what
/// a delta event adds (`content_block_delta`: a piece of a block; `message_delta`: the stop
/// reason). Their fields overlap, so one type reads both.
///
/// A block's kind is `text`, `thinking`, `redacted_thinking`, `tool_use`, or one this
/// client does not handle (server tools, ...); a delta's is `text_delta`,
/// `thinking_delta`, `signature_delta`, `input_json_delta`, ...
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Block<'a> {
    #[serde(default, rename = "type", borrow, deserialize_with = "text")]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) text: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) signature: Option<Cow<'a, str>>,
    /// A `redacted_thinking` block's encrypted reasoning.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) data: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) name: Option<Cow<'a, str>>,
    /// A tool call's arguments (`{}` at the start of a streamed call).
    #[serde(default)]
    pub(crate) input: Option<Value>,
    /// An `input_json_delta`'s piece of a tool call's arguments.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) partial_json: Option<Cow<'a, str>>,
    /// A `message_delta`'s stop reason.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) stop_reason: Option<Cow<'a, str>>,
}

/// Token counts. Cache writes and reads are counted apart from `input_tokens`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "count")]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(crate) cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(crate) cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(crate) output_tokens: Option<u64>,
}

impl Usage {
    /// Takes every count `newer` has (counts are cumulative: the latest wins).
    pub(crate) fn update(&mut self, newer: Usage) {
        let pairs = [
            (&mut self.input_tokens, newer.input_tokens),
            (
                &mut self.cache_creation_input_tokens,
                newer.cache_creation_input_tokens,
            ),
            (
                &mut self.cache_read_input_tokens,
                newer.cache_read_input_tokens,
            ),
            (&mut self.output_tokens, newer.output_tokens),
        ];
        for (count, newer) in pairs {
            if newer.is_some() {
                *count = newer;
            }
        }
    }

    /// Whether any count is known.
    pub(crate) fn is_known(&self) -> bool {
        self.input_tokens.is_some()
            || self.cache_creation_input_tokens.is_some()
            || self.cache_read_input_tokens.is_some()
            || self.output_tokens.is_some()
    }

    /// Every input token: uncached, written to the cache and read from it.
    pub(crate) fn total_input(&self) -> u64 {
        [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ]
        .into_iter()
        .flatten()
        .fold(0, u64::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    /// `T` read both ways the decoder reads it: from the JSON text (`value`'s), and from
    /// the `Value`.
    fn both<'a, T: Deserialize<'a>>(text: &'a str, value: &'a Value) -> [T; 2] {
        assert_eq!(text, value.to_string());
        [
            serde_json::from_str(text).unwrap(),
            T::deserialize(value).unwrap(),
        ]
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let value = json!({
            "type": 3, "index": "0", "message": [1], "usage": null, "extra": {"x": [1, {}]},
            "content_block": {"type": "tool_use", "id": 7, "name": "f", "input": {"a": 1}},
            "delta": {"type": "text_delta", "text": ["x"]}
        });
        let text = value.to_string();
        for event in both::<Event<'_>>(&text, &value) {
            assert!(event.kind.is_none() && event.index.is_none());
            assert!(event.message.is_none() && event.usage.is_none());
            let block = event.content_block.unwrap();
            assert_eq!(block.kind.as_deref(), Some("tool_use"));
            assert!(block.id.is_none());
            assert_eq!(block.input, Some(json!({"a": 1})));
            let delta = event.delta.unwrap();
            assert_eq!(delta.kind.as_deref(), Some("text_delta"));
            assert!(delta.text.is_none());
        }
    }

    #[test]
    fn texts_are_borrowed_unless_escaped_and_content_elements_are_objects() {
        let data = r#"{"type":"content_block_delta","delta":{"text":"caf\u00e9"}}"#;
        let event: Event<'_> = serde_json::from_str(data).unwrap();
        assert!(matches!(
            event.kind,
            Some(Cow::Borrowed("content_block_delta"))
        ));
        assert!(matches!(event.delta.unwrap().text, Some(Cow::Owned(ref t)) if t == "café"));
        let value = json!({"content": [null, {"type": "text", "text": "a"}], "id": -1});
        let text = value.to_string();
        for message in both::<Message<'_>>(&text, &value) {
            let kinds: Vec<_> = message
                .content
                .iter()
                .map(|b| (b.kind.as_deref(), b.text.as_deref()))
                .collect();
            assert_eq!(kinds, [(None, None), (Some("text"), Some("a"))]);
            assert!(message.id.is_none());
        }
    }

    #[test]
    fn usage_counts_are_cumulative_and_cache_counts_are_input() {
        let counts = |value: Value| {
            let text = value.to_string();
            let [a, b] = both::<Usage>(&text, &value);
            assert_eq!(a, b);
            a
        };
        let mut usage = counts(json!({
            "input_tokens": 5, "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 1000, "output_tokens": 1
        }));
        assert_eq!(usage.total_input(), 1105);
        usage.update(counts(json!({"output_tokens": 42, "input_tokens": -1})));
        assert_eq!((usage.total_input(), usage.output_tokens), (1105, Some(42)));
        usage.update(counts(json!({"input_tokens": 6, "output_tokens": 43.5})));
        assert_eq!((usage.total_input(), usage.output_tokens), (1106, Some(42)));
        assert!(!Usage::default().is_known());
        assert_eq!(Usage::default().total_input(), 0);
    }
}
