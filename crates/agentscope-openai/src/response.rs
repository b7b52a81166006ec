//! The response side of the wire format: a streamed `chat.completion.chunk` (or one whole
//! `chat.completion`) and an error body, as derived serde types.
//!
//! Servers that copy OpenAI's API differ in the details, so every field is read leniently:
//! unknown fields are ignored, and a field that is missing, `null` or of an unexpected type
//! reads as absent instead of failing the whole chunk. Objects are only read from JSON
//! objects (a derived struct would also accept an array, field by field, which no server
//! means), and an element of an array that is not an object reads as an empty one.

use agentscope_http::lenient::{lenient, object, object_or_empty, objects};
use serde::Deserialize;
use serde_json::Value;

/// One chunk of a streamed response, or a whole completion (whose choices carry `message`
/// where chunks carry `delta`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Chunk {
    #[serde(deserialize_with = "lenient")]
    pub(crate) id: Option<String>,
    /// The model that answered (often more specific than the requested one).
    #[serde(deserialize_with = "lenient")]
    pub(crate) model: Option<String>,
    #[serde(deserialize_with = "objects")]
    pub(crate) choices: Vec<Choice>,
    #[serde(deserialize_with = "object")]
    pub(crate) usage: Option<Usage>,
    /// An `{"error": ...}` sent in place of a chunk (see
    /// [`error_text`](agentscope_http::lenient::error_text)).
    pub(crate) error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Choice {
    #[serde(deserialize_with = "lenient")]
    pub(crate) index: Option<u64>,
    /// `Some` whenever the field is present (even `null`): a present `delta` is used, and
    /// `message` only when there is none.
    #[serde(deserialize_with = "object_or_empty")]
    pub(crate) delta: Option<Delta>,
    #[serde(deserialize_with = "object_or_empty")]
    pub(crate) message: Option<Delta>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) finish_reason: Option<String>,
}

/// What one chunk adds to the message.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta {
    pub(crate) content: Option<Content>,
    /// Thinking, as DeepSeek, Qwen and vLLM name it.
    #[serde(deserialize_with = "lenient")]
    pub(crate) reasoning_content: Option<String>,
    /// Thinking, as OpenRouter names it.
    #[serde(deserialize_with = "lenient")]
    pub(crate) reasoning: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) refusal: Option<String>,
    #[serde(deserialize_with = "objects")]
    pub(crate) tool_calls: Vec<ToolCallDelta>,
}

/// A message's content: a string, or (from some servers) an array of parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    Text(String),
    /// Anything that is not a string; only an array has parts.
    Parts(#[serde(deserialize_with = "objects")] Vec<Part>),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Part {
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(crate) kind: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) text: Option<String>,
}

/// A fragment of a tool call: the first of an index carries the id and name, later ones
/// pieces of the argument text.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolCallDelta {
    #[serde(deserialize_with = "lenient")]
    pub(crate) index: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) id: Option<String>,
    #[serde(deserialize_with = "object")]
    pub(crate) function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FunctionDelta {
    #[serde(deserialize_with = "lenient")]
    pub(crate) name: Option<String>,
    /// A piece of the argument text; a few servers send the arguments as an object.
    pub(crate) arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Usage {
    #[serde(deserialize_with = "lenient")]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(deserialize_with = "object")]
    pub(crate) prompt_tokens_details: Option<PromptTokensDetails>,
}

/// Where the prompt's tokens came from: `cached_tokens` were read from the prompt cache.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PromptTokensDetails {
    #[serde(deserialize_with = "lenient")]
    pub(crate) cached_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_http::lenient::from_object;
    use serde_json::json;

    fn chunk(value: Value) -> Chunk {
        from_object(value).unwrap()
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let chunk = chunk(json!({
            "id": 7, "usage": [1, 2], "error": null, "extra": {"x": 1},
            "choices": [null, {"index": -1, "delta": [1], "finish_reason": 1}]
        }));
        assert!(chunk.id.is_none() && chunk.usage.is_none() && chunk.error.is_none());
        assert_eq!(chunk.choices.len(), 2);
        assert!(chunk.choices[0].index.is_none() && chunk.choices[0].delta.is_none());
        let second = &chunk.choices[1];
        assert!(second.index.is_none() && second.finish_reason.is_none());
        let delta = second.delta.as_ref().unwrap();
        assert!(delta.content.is_none() && delta.tool_calls.is_empty());
    }

    #[test]
    fn a_present_delta_wins_over_message_even_when_null() {
        let choice: Choice =
            from_object(json!({"delta": null, "message": {"content": "x"}})).unwrap();
        assert!(choice.delta.is_some());
        let choice: Choice = from_object(json!({"message": {"content": "x"}})).unwrap();
        assert!(choice.delta.is_none() && choice.message.is_some());
    }
}
