//! Provider JSON: read leniently, numbers written as a person writes them, and the
//! messages of provider errors.
//!
//! Servers that copy a provider's API differ in the details, so a client reads every field
//! leniently: unknown fields are ignored, and a field that is missing, `null` or of an
//! unexpected type reads as absent instead of failing the whole event. Use these functions
//! with `#[serde(default, deserialize_with = "...")]` on derived types. Objects are only
//! read from JSON objects (a derived struct would also accept an array, field by field,
//! which no server means), and an element of an array that is not an object reads as an
//! empty one.
//!
//! The readers are `serde` visitors: they read a JSON text without building a
//! [`Value`] first, and borrow strings from it where they have no escapes ([`text`]), so
//! a type read from a `&str` can hold `Cow<'de, str>` fields. They read a [`Value`] alike.
//! A value a reader does not keep is skipped, its JSON syntax still checked. A type for
//! a field of another shape implements [`Keep`] and is read with [`keep`].
//!
//! ```
//! use std::borrow::Cow;
//!
//! use agentscope_http::lenient::{count, objects, text};
//! use serde::Deserialize;
//!
//! #[derive(Debug, Default, Deserialize)]
//! struct Event<'a> {
//!     #[serde(default, deserialize_with = "count")]
//!     index: Option<u64>,
//!     #[serde(default, borrow, deserialize_with = "objects")]
//!     parts: Vec<Part<'a>>,
//! }
//! #[derive(Debug, Default, Deserialize)]
//! struct Part<'a> {
//!     #[serde(default, borrow, deserialize_with = "text")]
//!     text: Option<Cow<'a, str>>,
//! }
//!
//! let event: Event = serde_json::from_str(r#"{"index": "x", "parts": [null, {"text": "hi"}]}"#)
//!     .unwrap();
//! assert_eq!(event.index, None);
//! assert!(event.parts[0].text.is_none());
//! assert!(matches!(event.parts[1].text, Some(Cow::Borrowed("hi"))));
//! ```

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use reqwest::StatusCode;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// What a lenient reader keeps of one JSON value: a method for each kind of value it
/// keeps. Every kind it has no method for (and `null`) reads as `Self::Value::default()`
/// (absent), arrays and objects skipped whole. Read a value with [`keep`].
///
/// ```
/// use agentscope_http::lenient::{Keep, keep};
///
/// /// A flag: `true`, `false` or `"yes"`.
/// struct Flag;
/// impl<'de> Keep<'de> for Flag {
///     type Value = Option<bool>;
///     fn bool(self, v: bool) -> Option<bool> {
///         Some(v)
///     }
///     fn text(self, v: std::borrow::Cow<'de, str>) -> Option<bool> {
///         (v == "yes").then_some(true)
///     }
/// }
/// let mut de = serde_json::Deserializer::from_str("[1]");
/// assert_eq!(keep(&mut de, Flag).unwrap(), None);
/// assert_eq!(keep(serde_json::json!("yes"), Flag).unwrap(), Some(true));
/// ```
pub trait Keep<'de>: Sized {
    /// What the reader reads; its default is "absent".
    type Value: Default;

    /// A string: borrowed from the input when it has no escapes.
    fn text(self, _text: Cow<'de, str>) -> Self::Value {
        Self::Value::default()
    }
    /// `true` or `false`.
    fn bool(self, _v: bool) -> Self::Value {
        Self::Value::default()
    }
    /// A negative integer (serde may also give a non-negative one here).
    fn i64(self, _v: i64) -> Self::Value {
        Self::Value::default()
    }
    /// A non-negative integer.
    fn u64(self, _v: u64) -> Self::Value {
        Self::Value::default()
    }
    /// A number with a fraction or an exponent.
    fn f64(self, _v: f64) -> Self::Value {
        Self::Value::default()
    }
    /// An array; the reader must read it to its end (or fail).
    ///
    /// # Errors
    ///
    /// When the array is not valid JSON.
    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::Value::default())
    }
    /// An object; the reader must read it to its end (or fail).
    ///
    /// # Errors
    ///
    /// When the object is not valid JSON.
    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::Value::default())
    }
}

/// One JSON value read by `reader` (see [`Keep`]).
///
/// # Errors
///
/// When the input is not JSON, or the reader fails on what it keeps.
pub fn keep<'de, D: Deserializer<'de>, K: Keep<'de>>(
    d: D,
    reader: K,
) -> Result<K::Value, D::Error> {
    d.deserialize_any(Lenient(reader))
}

/// The [`Visitor`] of a [`Keep`].
struct Lenient<K>(K);

impl<'de, K: Keep<'de>> Visitor<'de> for Lenient<K> {
    type Value = K::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(self.0.text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.text(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(self.0.text(Cow::Owned(v)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(self.0.bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.0.i64(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.0.u64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(self.0.f64(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(K::Value::default())
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(K::Value::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.map(map)
    }
}

/// `T` read from `value` when it is a JSON object; `None` for anything else.
pub fn from_object<T: DeserializeOwned>(value: Value) -> Option<T> {
    if value.is_object() {
        T::deserialize(value).ok()
    } else {
        None
    }
}

/// A field that is `Some` only when its value is a `T`, read through a [`Value`] (for a
/// string, a count or an object, [`text`], [`count`] and [`object`] read without one).
///
/// # Errors
///
/// Only when the input is not JSON at all.
pub fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Value::deserialize(d).map(|value| T::deserialize(value).ok())
}

/// A string field: `Some` only when its value is a string, borrowed from the input when it
/// has no escapes.
///
/// # Errors
///
/// Only when the input is not JSON.
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Text;
    impl<'de> Keep<'de> for Text {
        type Value = Option<Cow<'de, str>>;
        fn text(self, text: Cow<'de, str>) -> Self::Value {
            Some(text)
        }
    }
    keep(d, Text)
}

/// A count: `Some` only when its value is a non-negative integer.
///
/// # Errors
///
/// Only when the input is not JSON.
pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    struct Count;
    impl Keep<'_> for Count {
        type Value = Option<u64>;
        fn u64(self, v: u64) -> Self::Value {
            Some(v)
        }
        fn i64(self, v: i64) -> Self::Value {
            u64::try_from(v).ok()
        }
    }
    keep(d, Count)
}

/// A field that is `Some` only when its value is an object, read as `T`.
///
/// # Errors
///
/// When the input is not JSON, or the object does not read as a `T` (with lenient fields:
/// when it repeats a key, which a derived type rejects).
pub fn object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Object<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Keep<'de> for Object<T> {
        type Value = Option<T>;
        fn map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map)).map(Some)
        }
    }
    keep(d, Object(PhantomData))
}

/// A field that is `Some` whenever it is present: its object, or an empty one.
///
/// # Errors
///
/// As [`object`].
pub fn object_or_empty<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    object(d).map(|object| Some(object.unwrap_or_default()))
}

/// An element of an array of objects: its object, or (any other value) an empty one.
#[derive(Debug)]
pub struct OrEmpty<T>(pub T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for OrEmpty<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object(d).map(|object| OrEmpty(object.unwrap_or_default()))
    }
}

/// The elements of an array (an element that is not an object reads as an empty one); no
/// elements when the value is not an array.
///
/// # Errors
///
/// As [`object`], for any element.
pub fn objects<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    struct Objects<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de> + Default> Keep<'de> for Objects<T> {
        type Value = Vec<T>;
        fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(OrEmpty(item)) = seq.next_element()? {
                items.push(item);
            }
            Ok(items)
        }
    }
    keep(d, Objects(PhantomData))
}

/// The message of a (non-null) `error` field: `error.message` when it has one, the string
/// itself, or else the error as JSON.
///
/// ```
/// use agentscope_http::lenient::error_text;
/// use serde_json::json;
///
/// assert_eq!(error_text(json!({"type": "overloaded_error", "message": "Overloaded"})), "Overloaded");
/// assert_eq!(error_text(json!("boom")), "boom");
/// assert_eq!(error_text(json!({"code": 1})), r#"{"code":1}"#);
/// ```
pub fn error_text(error: Value) -> String {
    match error {
        Value::String(message) => message,
        Value::Object(ref object) => match object.get("message") {
            Some(Value::String(message)) => message.clone(),
            _ => error.to_string(),
        },
        other => other.to_string(),
    }
}

/// The body of an HTTP error response: `{"error": ...}` (OpenAI, and Anthropic's
/// `{"type": "error", "error": {...}}`), or the `message` or `detail` other servers send.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorBody {
    error: Option<Value>,
    #[serde(deserialize_with = "lenient")]
    message: Option<String>,
    #[serde(deserialize_with = "lenient")]
    detail: Option<String>,
}

/// The provider's message from an HTTP error body: `error.message` (or `message`, or
/// `detail`) when it is JSON, otherwise the body text (cut to 200 characters), otherwise
/// the status's reason.
///
/// ```
/// use agentscope_http::lenient::status_message;
/// use reqwest::StatusCode;
///
/// let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad tools"}}"#;
/// assert_eq!(status_message(StatusCode::BAD_REQUEST, body), "bad tools");
/// assert_eq!(status_message(StatusCode::BAD_GATEWAY, ""), "Bad Gateway");
/// ```
pub fn status_message(status: StatusCode, body: &str) -> String {
    let message = serde_json::from_str(body)
        .ok()
        .and_then(from_object::<ErrorBody>)
        .and_then(|body| body.error.map(error_text).or(body.message).or(body.detail));
    if let Some(message) = message {
        return message;
    }
    let body = body.trim();
    if body.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("no error message")
            .to_owned()
    } else {
        snippet(body)
    }
}

/// An `f32` as the JSON number a person would write (`0.2`, not `0.20000000298023224`),
/// for options such as `temperature`; `null` for NaN and infinities.
///
/// ```
/// use agentscope_http::lenient::f32_number;
///
/// assert_eq!(f32_number(0.2).to_string(), "0.2");
/// assert_eq!(f32_number(1.0).to_string(), "1.0");
/// assert!(f32_number(f32::NAN).is_null());
/// ```
pub fn f32_number(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// `extra` merged into the top level of `body` (an object), last, so it overrides anything:
/// the [`GenerateOptions::extra`](agentscope_core::GenerateOptions::extra) fields.
pub fn merge_extra(body: &mut Value, extra: &serde_json::Map<String, Value>) {
    if let Value::Object(fields) = body {
        for (key, value) in extra {
            fields.insert(key.clone(), value.clone());
        }
    }
}

/// The error for a piece of a response that is not JSON: what it was (`"chunk"`,
/// `"event"`), the parser's reason and the start of the text.
pub fn not_json(what: &str, data: &[u8], err: &serde_json::Error) -> agentscope_core::ModelError {
    agentscope_core::ModelError::InvalidResponse {
        message: format!(
            "not a JSON {what} ({err}): {}",
            snippet(&String::from_utf8_lossy(data))
        ),
    }
}

/// `Some(text)` unless it is empty: a provider's empty string means "none".
pub fn non_empty<T: AsRef<str>>(text: Option<T>) -> Option<T> {
    text.filter(|text| !text.as_ref().is_empty())
}

/// At most 200 characters of `text` (cut on a character boundary, `...` appended), for
/// error messages.
pub fn snippet(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_messages() {
        let s = StatusCode::BAD_REQUEST;
        assert_eq!(
            status_message(
                s,
                r#"{"error":{"message":"bad tools","type":"invalid_request_error"}}"#
            ),
            "bad tools"
        );
        assert_eq!(
            status_message(s, r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(status_message(s, r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            status_message(s, "upstream exploded\n"),
            "upstream exploded"
        );
        assert_eq!(status_message(StatusCode::BAD_GATEWAY, ""), "Bad Gateway");
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Part<'a> {
        #[serde(default, borrow, deserialize_with = "text")]
        text: Option<Cow<'a, str>>,
        #[serde(default, deserialize_with = "count")]
        index: Option<u64>,
    }

    #[derive(Debug, Default, Deserialize)]
    struct Event<'a> {
        #[serde(default, borrow, deserialize_with = "object")]
        part: Option<Part<'a>>,
        #[serde(default, borrow, deserialize_with = "object_or_empty")]
        first: Option<Part<'a>>,
        #[serde(default, borrow, deserialize_with = "objects")]
        parts: Vec<Part<'a>>,
    }

    /// `text` read from the JSON text and from its `Value`.
    fn both(text: &str) -> [Event<'_>; 2] {
        let value: Value = serde_json::from_str(text).unwrap();
        [
            serde_json::from_str(text).unwrap(),
            Event::deserialize(value).unwrap(),
        ]
    }

    fn part(text: Option<&str>, index: Option<u64>) -> Part<'_> {
        Part {
            text: text.map(Cow::Borrowed),
            index,
        }
    }

    #[test]
    fn readers_keep_their_kind_and_read_anything_else_as_absent() {
        let json = r#"{"part": {"text": "a\u00e9", "index": 3, "x": [1, {"y": null}]},
                       "first": null,
                       "parts": [7, {"text": 1, "index": -1}, {"text": "b", "index": 1.5},
                                 {"text": null, "index": "2"}]}"#;
        for event in both(json) {
            assert_eq!(event.part, Some(part(Some("aé"), Some(3))));
            assert_eq!(event.first, Some(Part::default()));
            assert_eq!(
                event.parts,
                [
                    Part::default(),
                    Part::default(),
                    part(Some("b"), None),
                    Part::default()
                ]
            );
        }
        for event in both(r#"{"part": [1], "first": "x", "parts": {"text": "a"}}"#) {
            assert_eq!(event.part, None);
            assert_eq!(event.first, Some(Part::default()));
            assert!(event.parts.is_empty());
        }
        for event in both("{}") {
            assert!(event.part.is_none() && event.first.is_none() && event.parts.is_empty());
        }
    }

    #[test]
    fn texts_are_borrowed_unless_escaped() {
        let event: Event<'_> =
            serde_json::from_str(r#"{"parts": [{"text": "plain"}, {"text": "\"q\""}]}"#).unwrap();
        assert!(matches!(event.parts[0].text, Some(Cow::Borrowed("plain"))));
        assert!(matches!(event.parts[1].text, Some(Cow::Owned(ref t)) if t == "\"q\""));
    }

    #[test]
    fn a_repeated_key_in_a_read_object_and_bad_json_in_a_skipped_value_are_errors() {
        let err = serde_json::from_str::<Event<'_>>(r#"{"part": {"text": "a", "text": "b"}}"#)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "duplicate field `text` at line 1 column 29"
        );
        let err = serde_json::from_str::<Event<'_>>(r#"{"part": {"x": [1,,2]}}"#).unwrap_err();
        assert_eq!(err.to_string(), "expected value at line 1 column 19");
        // A `Value` keeps the last of repeated keys.
        let value: Value = serde_json::from_str(r#"{"part": {"text": "a", "text": "b"}}"#).unwrap();
        let event = Event::deserialize(&value).unwrap();
        assert_eq!(event.part, Some(part(Some("b"), None)));
    }

    #[test]
    fn non_empty_reads_an_empty_text_as_none() {
        assert_eq!(non_empty(Some(String::new())), None);
        assert_eq!(
            non_empty(Some(Cow::Borrowed("x"))),
            Some(Cow::Borrowed("x"))
        );
        assert_eq!(non_empty::<&str>(None), None);
    }

    #[test]
    fn snippet_cuts_on_char_boundaries() {
        let long = "é".repeat(300);
        let cut = snippet(&long);
        assert_eq!(cut.chars().count(), 203);
        assert!(cut.ends_with("..."));
        assert_eq!(snippet("short"), "short");
    }
}
