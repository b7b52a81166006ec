//! The response side of the wire format: a streamed `chat.completion.chunk` (or one whole
//! `chat.completion`) and an error body, as derived serde types.
//!
//! Each event's JSON is deserialized straight into these types (no intermediate
//! [`serde_json::Value`]): texts are borrowed from the event's data where they need no
//! unescaping, unknown fields are skipped unread (only their JSON syntax is checked), and
//! of the choices only the first one with index 0 is built.
//!
//! Servers that copy OpenAI's API differ in the details, so every field is read leniently
//! (see [`agentscope_http::lenient`], whose readers these types use, beside three of their
//! own: the first choice, a message's content and a tool call's arguments): unknown fields
//! are ignored, and a field that is missing, `null` or of an unexpected type reads as
//! absent instead of failing the whole chunk.

use std::borrow::Cow;

use agentscope_http::lenient::{
    Keep, OrEmpty, count, keep, object, object_or_empty, objects, text,
};
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess};
use serde_json::Value;

/// One chunk of a streamed response, or a whole completion (whose choices carry `message`
/// where chunks carry `delta`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Chunk<'a> {
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) id: Option<Cow<'a, str>>,
    /// The model that answered (often more specific than the requested one).
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) model: Option<Cow<'a, str>>,
    /// The first choice whose `index` is 0 (or missing): the only one the client reads.
    #[serde(default, borrow, rename = "choices", deserialize_with = "first_choice")]
    pub(crate) choice: Option<Choice<'a>>,
    #[serde(default, deserialize_with = "object")]
    pub(crate) usage: Option<Box<Usage>>,
    /// An `{"error": ...}` sent in place of a chunk (see
    /// [`error_text`](agentscope_http::lenient::error_text)).
    #[serde(default)]
    pub(crate) error: Option<Box<Value>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice<'a> {
    #[serde(default, deserialize_with = "count")]
    pub(crate) index: Option<u64>,
    /// `Some` whenever the field is present (even `null`): a present `delta` is used, and
    /// `message` only when there is none.
    #[serde(default, borrow, deserialize_with = "object_or_empty")]
    pub(crate) delta: Option<Box<Delta<'a>>>,
    #[serde(default, borrow, deserialize_with = "object_or_empty")]
    pub(crate) message: Option<Box<Delta<'a>>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) finish_reason: Option<Cow<'a, str>>,
}

/// What one chunk adds to the message.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta<'a> {
    #[serde(default, borrow, deserialize_with = "content")]
    pub(crate) content: Option<Content<'a>>,
    /// Thinking, as DeepSeek, Qwen and vLLM name it.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) reasoning_content: Option<Cow<'a, str>>,
    /// Thinking, as OpenRouter names it.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "objects")]
    pub(crate) tool_calls: Vec<ToolCallDelta<'a>>,
}

/// A message's content: a string, or (from some servers) an array of parts. Any other
/// value reads as no content.
#[derive(Debug)]
pub(crate) enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Part<'a> {
    #[serde(default, rename = "type", borrow, deserialize_with = "text")]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) text: Option<Cow<'a, str>>,
}

/// A fragment of a tool call: the first of an index carries the id and name, later ones
/// pieces of the argument text.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolCallDelta<'a> {
    #[serde(default, deserialize_with = "count")]
    pub(crate) index: Option<u64>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "object")]
    pub(crate) function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct FunctionDelta<'a> {
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) name: Option<Cow<'a, str>>,
    /// A piece of the argument text; a few servers send the arguments as an object, which
    /// reads as its JSON text. `None` when missing or `null`.
    #[serde(default, borrow, deserialize_with = "arguments")]
    pub(crate) arguments: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "count")]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(default, deserialize_with = "object")]
    pub(crate) prompt_tokens_details: Option<PromptTokensDetails>,
}

/// Where the prompt's tokens came from: `cached_tokens` were read from the prompt cache.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromptTokensDetails {
    #[serde(default, deserialize_with = "count")]
    pub(crate) cached_tokens: Option<u64>,
}

// The readers of OpenAI's own shapes; the rest are `agentscope_http::lenient`'s.

/// The first element of `choices` whose `index` is 0 or missing (elements that are not
/// objects read as empty choices); the elements after it are skipped unread. Any value
/// that is not an array reads as no choice.
fn first_choice<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Choice<'de>>, D::Error> {
    struct First;
    impl<'de> Keep<'de> for First {
        type Value = Option<Choice<'de>>;
        fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while let Some(OrEmpty(choice)) = seq.next_element::<OrEmpty<Choice<'de>>>()? {
                if choice.index.unwrap_or(0) == 0 {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    return Ok(Some(choice));
                }
            }
            Ok(None)
        }
    }
    keep(d, First)
}

/// `content`: a string, an array of parts, or (any other value, `null` included) none.
fn content<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Content<'de>>, D::Error> {
    struct ContentReader;
    impl<'de> Keep<'de> for ContentReader {
        type Value = Option<Content<'de>>;
        fn text(self, text: Cow<'de, str>) -> Self::Value {
            Some(Content::Text(text))
        }
        fn seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            objects(SeqAccessDeserializer::new(seq)).map(|parts| Some(Content::Parts(parts)))
        }
    }
    keep(d, ContentReader)
}

/// A tool call's `arguments`: a string as it is, any other value but `null` as its JSON text.
fn arguments<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Arguments;
    /// A value that is not a string, as its JSON text.
    fn json(value: impl Into<Value>) -> Option<Cow<'static, str>> {
        Some(Cow::Owned(value.into().to_string()))
    }
    impl<'de> Keep<'de> for Arguments {
        type Value = Option<Cow<'de, str>>;
        fn text(self, text: Cow<'de, str>) -> Self::Value {
            Some(text)
        }
        fn bool(self, v: bool) -> Self::Value {
            json(v)
        }
        fn i64(self, v: i64) -> Self::Value {
            json(v)
        }
        fn u64(self, v: u64) -> Self::Value {
            json(v)
        }
        fn f64(self, v: f64) -> Self::Value {
            json(v)
        }
        fn seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Value::deserialize(SeqAccessDeserializer::new(seq)).map(json)
        }
        fn map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Value::deserialize(MapAccessDeserializer::new(map)).map(json)
        }
    }
    keep(d, Arguments)
}

#[cfg(test)]
mod tests {
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
            "id": 7, "usage": [1, 2], "error": null, "extra": {"x": [1, {"y": null}]},
            "choices": [{"index": -1, "delta": [1], "finish_reason": 1},
                        {"index": 0.0, "delta": {"content": {"a": 1}, "tool_calls": 3,
                                                 "refusal": false}}]
        });
        let text = value.to_string();
        for chunk in [
            serde_json::from_str::<Chunk<'_>>(&text).unwrap(),
            Chunk::deserialize(&value).unwrap(),
        ] {
            assert!(chunk.id.is_none() && chunk.usage.is_none() && chunk.error.is_none());
            // Neither index is a count: the first choice reads as index 0.
            let choice = chunk.choice.unwrap();
            assert!(choice.index.is_none() && choice.finish_reason.is_none());
            let delta = choice.delta.unwrap();
            assert!(delta.content.is_none() && delta.tool_calls.is_empty());
        }
    }

    #[test]
    fn the_first_choice_with_index_0_is_read_and_an_element_not_an_object_is_empty() {
        let value = json!({"choices": [
            {"index": 1, "delta": {"content": "one"}},
            {"index": 0, "delta": {"content": "zero"}},
            {"index": 0, "delta": {"content": "again"}}
        ]});
        let text = value.to_string();
        for chunk in [
            serde_json::from_str::<Chunk<'_>>(&text).unwrap(),
            Chunk::deserialize(&value).unwrap(),
        ] {
            let delta = chunk.choice.unwrap().delta.unwrap();
            assert!(matches!(delta.content, Some(Content::Text(t)) if t == "zero"));
        }
        let chunk: Chunk<'_> =
            serde_json::from_str(r#"{"choices": [null, {"index": 0}]}"#).unwrap();
        let choice = chunk.choice.unwrap();
        assert!(choice.index.is_none() && choice.delta.is_none());
        let chunk: Chunk<'_> = serde_json::from_str(r#"{"choices": {"index": 0}}"#).unwrap();
        assert!(chunk.choice.is_none());
    }

    #[test]
    fn texts_are_borrowed_unless_escaped() {
        let data = r#"{"id":"chatcmpl-1","choices":[{"delta":{"content":"caf\u00e9 \"x\""}}]}"#;
        let chunk: Chunk<'_> = serde_json::from_str(data).unwrap();
        assert!(matches!(chunk.id, Some(Cow::Borrowed("chatcmpl-1"))));
        let delta = chunk.choice.unwrap().delta.unwrap();
        assert!(
            matches!(delta.content, Some(Content::Text(Cow::Owned(ref t))) if t == "café \"x\"")
        );
    }

    #[test]
    fn counts_and_arguments() {
        let value = json!({"prompt_tokens": 5, "completion_tokens": -2,
                           "prompt_tokens_details": {"cached_tokens": "3"}});
        let text = value.to_string();
        for usage in both::<Usage>(&text, &value) {
            assert_eq!(usage.prompt_tokens, Some(5));
            assert_eq!(usage.completion_tokens, None);
            assert_eq!(usage.prompt_tokens_details.unwrap().cached_tokens, None);
        }
        for (arguments, expected) in [
            (json!("{\"a\":"), Some("{\"a\":")),
            (
                json!({"b": [1, 2.5, true], "a": null}),
                Some(r#"{"a":null,"b":[1,2.5,true]}"#),
            ),
            (json!([1]), Some("[1]")),
            (json!(3), Some("3")),
            (json!(false), Some("false")),
            (json!(null), None),
        ] {
            let value = json!({ "arguments": arguments });
            let text = value.to_string();
            for function in both::<FunctionDelta<'_>>(&text, &value) {
                assert_eq!(function.arguments.as_deref(), expected);
            }
        }
    }

    #[test]
    fn content_parts() {
        let value = json!({"content": [{"type": "text", "text": "a"}, 7, {"type": "image"}]});
        let text = value.to_string();
        for delta in both::<Delta<'_>>(&text, &value) {
            let Some(Content::Parts(parts)) = delta.content else {
                panic!("parts expected");
            };
            let kinds: Vec<_> = parts
                .iter()
                .map(|p| (p.kind.as_deref(), p.text.as_deref()))
                .collect();
            assert_eq!(
                kinds,
                [
                    (Some("text"), Some("a")),
                    (None, None),
                    (Some("image"), None)
                ]
            );
        }
    }

    #[test]
    fn a_present_delta_wins_over_message_even_when_null() {
        let value = json!({"delta": null, "message": {"content": "x"}});
        let text = value.to_string();
        for choice in both::<Choice<'_>>(&text, &value) {
            assert!(choice.delta.is_some());
        }
        let value = json!({"message": {"content": "x"}});
        let text = value.to_string();
        for choice in both::<Choice<'_>>(&text, &value) {
            assert!(choice.delta.is_none() && choice.message.is_some());
        }
    }
}
