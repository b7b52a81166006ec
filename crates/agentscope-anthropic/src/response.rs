//! The response side of the wire format: the events of a streamed Messages response (or one
//! whole message), as derived serde types.
//!
//! Every field is read leniently (see [`agentscope_http::lenient`]): unknown fields are
//! ignored, and a field that is missing, `null` or of an unexpected type reads as absent
//! instead of failing the whole event. One type per shape covers every event: an event's
//! fields are the union of what `message_start`, `content_block_start`,
//! `content_block_delta`, `message_delta` and `error` carry.

use agentscope_http::lenient::{lenient, object, objects};
use serde::Deserialize;
use serde_json::Value;

/// One streamed event (its `type` says which), or a whole message.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Event {
    /// `message_start`, `content_block_delta`, ... (`message` for a whole message).
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(crate) kind: Option<String>,
    /// `message_start`: the message so far (id, usage).
    #[serde(deserialize_with = "object")]
    pub(crate) message: Option<Message>,
    /// `content_block_*`: the block's position in the message.
    #[serde(deserialize_with = "lenient")]
    pub(crate) index: Option<u64>,
    /// `content_block_start`: the block, empty or nearly so.
    #[serde(deserialize_with = "object")]
    pub(crate) content_block: Option<Block>,
    /// `content_block_delta` (a piece of a block) or `message_delta` (the stop reason).
    #[serde(deserialize_with = "object")]
    pub(crate) delta: Option<Delta>,
    /// `message_delta`: cumulative usage.
    #[serde(deserialize_with = "object")]
    pub(crate) usage: Option<Usage>,
    /// `error`: `{"type": "overloaded_error", "message": "Overloaded"}` (see
    /// [`error_text`](agentscope_http::lenient::error_text)).
    pub(crate) error: Option<Value>,
}

/// A message: the one `message_start` carries (no content yet), or a whole response.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Message {
    #[serde(deserialize_with = "lenient")]
    pub(crate) id: Option<String>,
    /// The model that answered.
    #[serde(deserialize_with = "lenient")]
    pub(crate) model: Option<String>,
    #[serde(deserialize_with = "objects")]
    pub(crate) content: Vec<Block>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) stop_reason: Option<String>,
    #[serde(deserialize_with = "object")]
    pub(crate) usage: Option<Usage>,
}

/// A content block: `text`, `thinking`, `redacted_thinking`, `tool_use`, or a kind this
/// client does not handle (server tools, ...).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Block {
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(crate) kind: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) text: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) thinking: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) signature: Option<String>,
    /// A `redacted_thinking` block's encrypted reasoning.
    #[serde(deserialize_with = "lenient")]
    pub(crate) data: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) id: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) name: Option<String>,
    /// A tool call's arguments (`{}` at the start of a streamed call).
    pub(crate) input: Option<Value>,
}

/// What a delta event adds: a piece of a block, or (`message_delta`) the stop reason.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta {
    /// `text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`, ...
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(crate) kind: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) text: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) thinking: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) signature: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) partial_json: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) stop_reason: Option<String>,
}

/// Token counts. Cache writes and reads are counted apart from `input_tokens`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct Usage {
    #[serde(deserialize_with = "lenient")]
    pub(crate) input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) cache_creation_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) cache_read_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
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
    use agentscope_http::lenient::from_object;
    use serde_json::json;

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let event: Event = from_object(json!({
            "type": 3, "index": "0", "message": [1], "usage": null, "extra": {"x": 1},
            "content_block": {"type": "tool_use", "id": 7, "name": "f", "input": {"a": 1}},
            "delta": {"type": "text_delta", "text": ["x"]}
        }))
        .unwrap();
        assert!(event.kind.is_none() && event.index.is_none());
        assert!(event.message.is_none() && event.usage.is_none() && event.error.is_none());
        let block = event.content_block.unwrap();
        assert_eq!(block.kind.as_deref(), Some("tool_use"));
        assert!(block.id.is_none());
        assert_eq!(block.input, Some(json!({"a": 1})));
        let delta = event.delta.unwrap();
        assert_eq!(delta.kind.as_deref(), Some("text_delta"));
        assert!(delta.text.is_none());
    }

    #[test]
    fn usage_counts_are_cumulative_and_cache_counts_are_input() {
        let mut usage: Usage = from_object(json!({
            "input_tokens": 5, "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 1000, "output_tokens": 1
        }))
        .unwrap();
        assert_eq!(usage.total_input(), 1105);
        usage.update(from_object(json!({"output_tokens": 42})).unwrap());
        assert_eq!((usage.total_input(), usage.output_tokens), (1105, Some(42)));
        usage.update(from_object(json!({"input_tokens": 6, "output_tokens": 43})).unwrap());
        assert_eq!((usage.total_input(), usage.output_tokens), (1106, Some(43)));
        assert!(!Usage::default().is_known());
        assert_eq!(Usage::default().total_input(), 0);
    }
}
