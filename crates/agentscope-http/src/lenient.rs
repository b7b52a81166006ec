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
//! ```
//! use agentscope_http::lenient::{from_object, lenient, objects};
//! use serde::Deserialize;
//!
//! #[derive(Debug, Default, Deserialize)]
//! #[serde(default)]
//! struct Event {
//!     #[serde(deserialize_with = "lenient")]
//!     index: Option<u64>,
//!     #[serde(deserialize_with = "objects")]
//!     parts: Vec<Part>,
//! }
//! #[derive(Debug, Default, Deserialize)]
//! #[serde(default)]
//! struct Part {
//!     #[serde(deserialize_with = "lenient")]
//!     text: Option<String>,
//! }
//!
//! let event: Event =
//!     from_object(serde_json::json!({"index": "x", "parts": [null, {"text": "hi"}]})).unwrap();
//! assert_eq!(event.index, None);
//! assert_eq!(event.parts[1].text.as_deref(), Some("hi"));
//! assert!(from_object::<Event>(serde_json::json!([1])).is_none());
//! ```

use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// `T` read from `value` when it is a JSON object; `None` for anything else.
pub fn from_object<T: DeserializeOwned>(value: Value) -> Option<T> {
    if value.is_object() {
        T::deserialize(value).ok()
    } else {
        None
    }
}

/// A field that is `Some` only when its value is a `T`.
///
/// # Errors
///
/// Only when the input is not JSON at all.
pub fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Value::deserialize(d).map(|value| T::deserialize(value).ok())
}

/// A field that is `Some` only when its value is an object.
///
/// # Errors
///
/// Only when the input is not JSON at all.
pub fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Value::deserialize(d).map(from_object)
}

/// A field that is `Some` whenever it is present: its object, or an empty one.
///
/// # Errors
///
/// Only when the input is not JSON at all.
pub fn object_or_empty<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Value::deserialize(d).map(|value| Some(from_object(value).unwrap_or_default()))
}

/// The elements of an array (an element that is not an object reads as an empty one); no
/// elements when the value is not an array.
///
/// # Errors
///
/// Only when the input is not JSON at all.
pub fn objects<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items
            .into_iter()
            .map(|item| from_object(item).unwrap_or_default())
            .collect(),
        _ => Vec::new(),
    })
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
pub fn non_empty(text: Option<String>) -> Option<String> {
    text.filter(|text| !text.is_empty())
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

    #[test]
    fn snippet_cuts_on_char_boundaries() {
        let long = "é".repeat(300);
        let cut = snippet(&long);
        assert_eq!(cut.chars().count(), 203);
        assert!(cut.ends_with("..."));
        assert_eq!(snippet("short"), "short");
    }
}
