//! The response side of the wire format: a streamed `chat.completion.chunk` (or one whole
//! `chat.completion`) and an error body, as derived serde types.
//!
//! Each event's JSON is deserialized straight into these types (no intermediate
//! [`serde_json::Value`]): texts are borrowed from the event's data where they need no
//! unescaping, unknown fields are skipped unread (only their JSON syntax is checked), and
//! of the choices only the first one with index 0 is built.
//!
//! Servers that copy OpenAI's API differ in the details, so every field is read leniently:
//! unknown fields are ignored, and a field that is missing, `null` or of an unexpected type
//! reads as absent instead of failing the whole chunk. Objects are only read from JSON
//! objects (a derived struct would also accept an array, field by field, which no server
//! means), and an element of an array that is not an object reads as an empty one.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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

// Lenient readers. Each reads any JSON value (skipping what it does not keep, so the
// deserializer moves past it) and keeps only the kind it wants; everything else reads as
// `Default` (absent). They are `serde` visitors, so they read a `serde_json` stream and a
// `Value` alike.

/// The `visit_*` methods for the kinds of JSON value a lenient reader does not keep: each
/// reads as `Default::default()`, arrays and objects skipped whole.
macro_rules! absent {
    (bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (i64) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (u64) => {
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (f64) => {
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (unit) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
    (map) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
    ($($kind:tt),+) => {
        $(absent!($kind);)+
    };
}

/// A string field: borrowed from the input when it has no escapes.
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Text;
    impl<'de> Visitor<'de> for Text {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        absent!(bool, i64, u64, f64, unit, seq, map);
    }
    d.deserialize_any(Text)
}

/// A count: a non-negative integer.
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    struct Count;
    impl<'de> Visitor<'de> for Count {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(u64::try_from(v).ok())
        }
        absent!(bool, f64, unit, str, seq, map);
    }
    d.deserialize_any(Count)
}

/// An object read as `T`; `None` for any other value.
fn object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Object<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map)).map(Some)
        }
        absent!(bool, i64, u64, f64, unit, str, seq);
    }
    d.deserialize_any(Object(PhantomData))
}

/// `Some` whenever the field is present: its object, or an empty one.
fn object_or_empty<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    object(d).map(|object| Some(object.unwrap_or_default()))
}

/// An element of an array of objects: its object, or an empty one.
struct OrEmpty<T>(T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for OrEmpty<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object(d).map(|object| OrEmpty(object.unwrap_or_default()))
    }
}

/// The elements of an array, as objects; no elements when the value is not an array.
fn objects<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    struct Objects<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for Objects<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(OrEmpty(item)) = seq.next_element()? {
                items.push(item);
            }
            Ok(items)
        }
        absent!(bool, i64, u64, f64, unit, str, map);
    }
    d.deserialize_any(Objects(PhantomData))
}

/// The first element of `choices` whose `index` is 0 or missing (elements that are not
/// objects read as empty choices); the elements after it are skipped unread.
fn first_choice<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Choice<'de>>, D::Error> {
    struct First;
    impl<'de> Visitor<'de> for First {
        type Value = Option<Choice<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while let Some(OrEmpty(choice)) = seq.next_element::<OrEmpty<Choice<'de>>>()? {
                if choice.index.unwrap_or(0) == 0 {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    return Ok(Some(choice));
                }
            }
            Ok(None)
        }
        absent!(bool, i64, u64, f64, unit, str, map);
    }
    d.deserialize_any(First)
}

/// `content`: a string, an array of parts, or (any other value, `null` included) none.
fn content<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Content<'de>>, D::Error> {
    struct ContentVisitor;
    impl<'de> Visitor<'de> for ContentVisitor {
        type Value = Option<Content<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Content::Text(Cow::Borrowed(v))))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Content::Text(Cow::Owned(v.to_owned()))))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Content::Text(Cow::Owned(v))))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            objects(SeqAccessDeserializer::new(seq)).map(|parts| Some(Content::Parts(parts)))
        }
        absent!(bool, i64, u64, f64, unit, map);
    }
    d.deserialize_any(ContentVisitor)
}

/// A tool call's `arguments`: a string as it is, any other value but `null` as its JSON text.
fn arguments<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Arguments;
    impl<'de> Visitor<'de> for Arguments {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(Value::from(v).to_string())))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(Value::from(v).to_string())))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(Value::from(v).to_string())))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(Value::from(v).to_string())))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            let value = Value::deserialize(SeqAccessDeserializer::new(seq))?;
            Ok(Some(Cow::Owned(value.to_string())))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let value = Value::deserialize(MapAccessDeserializer::new(map))?;
            Ok(Some(Cow::Owned(value.to_string())))
        }
        absent!(unit);
    }
    d.deserialize_any(Arguments)
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
