//! Messages and content blocks.
//!
//! A [`Msg`] is one turn of a conversation: who said it ([`Role`] and `name`), what was said
//! (a list of [`ContentBlock`]s), free-form `metadata`, an `id` and a `timestamp`.
//!
//! # JSON shape
//!
//! Messages serialise with serde as plain JSON objects; content blocks are tagged by `type`:
//!
//! ```json
//! {
//!   "id": "0b5c…", "name": "assistant", "role": "assistant",
//!   "content": [
//!     {"type": "thinking", "thinking": "The user wants 6*7."},
//!     {"type": "text", "text": "Let me compute that."},
//!     {"type": "tool_use", "id": "call_1", "name": "calculator", "input": {"expression": "6*7"}}
//!   ],
//!   "metadata": {"generate_reason": "model_stop"},
//!   "timestamp": "2026-11-30T10:00:00Z"
//! }
//! ```
//!
//! A tool result is `{"type": "tool_result", "id": "call_1", "name": "calculator",
//! "output": [{"type": "text", "text": "42"}], "is_error": false}`; Anthropic's signed
//! thinking carries `"signature"`, and its encrypted thinking is
//! `{"type": "redacted_thinking", "data": "..."}`. Unknown block types fail to deserialise
//! with an error (never a panic).

use std::fmt;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::block::{ContentBlock, ToolResultBlock, ToolUseBlock, join_parts, join_text};
use crate::content::Content;
use crate::metadata::Metadata;
use crate::text::SharedString;

/// The metadata key under which [`Msg::generate_reason`] is stored.
pub(crate) const GENERATE_REASON_KEY: &str = "generate_reason";
/// The metadata key under which a model message keeps the provider's finish reason, as the
/// provider said it (`"stop"`, `"length"`, `"tool_calls"`, `"end_turn"`, ...).
pub(crate) const FINISH_REASON_KEY: &str = "finish_reason";
/// The metadata key under which a model message keeps what the provider said about its
/// response: `{"id": "chatcmpl-1", "model": "gpt-4o-2024-08-06"}` (each when sent).
pub(crate) const RESPONSE_KEY: &str = "response";

/// Who produced a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A human or calling program.
    User,
    /// The agent (model output).
    Assistant,
    /// Instructions for the model. Never stored in an agent's memory.
    System,
    /// The result of a tool call.
    Tool,
}

impl Role {
    /// The role's name, as in the default name of its messages: `"user"`, `"assistant"`,
    /// `"system"` or `"tool"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the agent's reply ended the way it did; read it with [`Msg::generate_reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GenerateReason {
    /// The model answered without calling tools.
    ModelStop,
    /// The model's answer was cut off at its output-token limit (the provider's finish
    /// reason `length` or `max_tokens`): the text is incomplete. Raise `max_tokens`, or ask
    /// the model to continue.
    MaxTokens,
    /// The provider's content filter stopped the answer (finish reason `content_filter`,
    /// `refusal` or `safety`): the text is incomplete or empty.
    ContentFiltered,
    /// A tool suspended for external execution; its call stays pending.
    ToolSuspended,
    /// Tool calls were found in doubt (started in an earlier call, their result never
    /// stored) and their policy is [`InDoubt::Stop`](crate::InDoubt::Stop): the reply holds
    /// those calls, and they stay pending until the application resolves them.
    ToolInDoubt,
    /// A `PostReasoning` hook called `stop_agent()`.
    ReasoningStopRequested,
    /// A `PostActing` hook called `stop_agent()`.
    ActingStopRequested,
    /// The call was interrupted with `interrupt()`.
    Interrupted,
    /// The iteration limit was reached and the reply is a summary.
    MaxIterations,
    /// A structured-output call produced its value.
    StructuredOutput,
}

impl GenerateReason {
    /// Why a model answer without tool calls ended, from the provider's finish reason:
    /// [`MaxTokens`](Self::MaxTokens) for `length` / `max_tokens`,
    /// [`ContentFiltered`](Self::ContentFiltered) for `content_filter` / `refusal` /
    /// `safety`, [`ModelStop`](Self::ModelStop) otherwise (also without a finish reason).
    ///
    /// ```
    /// use agentscope_core::GenerateReason;
    ///
    /// assert_eq!(GenerateReason::of_answer(Some("length")), GenerateReason::MaxTokens);
    /// assert_eq!(GenerateReason::of_answer(Some("end_turn")), GenerateReason::ModelStop);
    /// assert_eq!(GenerateReason::of_answer(None), GenerateReason::ModelStop);
    /// ```
    pub fn of_answer(finish_reason: Option<&str>) -> Self {
        match finish_reason {
            Some("length" | "max_tokens") => GenerateReason::MaxTokens,
            Some("content_filter" | "refusal" | "safety") => GenerateReason::ContentFiltered,
            _ => GenerateReason::ModelStop,
        }
    }
}

/// One message of a conversation.
///
/// ```
/// use agentscope_core::{Msg, Role};
///
/// let msg = Msg::user("What is 6*7?");
/// assert_eq!(msg.role, Role::User);
/// assert_eq!(msg.name, "user");
/// assert_eq!(msg.text(), "What is 6*7?");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Msg {
    /// A unique id: unless set otherwise, a random UUID in 22 characters of base64url
    /// (`A`-`Z`, `a`-`z`, `0`-`9`, `-`, `_`), like the 22-character ids of AgentScope-Python.
    pub id: SharedString,
    /// The speaker's name: `"user"`, the agent's name, a tool's name, ...
    pub name: SharedString,
    /// The speaker's role.
    pub role: Role,
    /// The content, in order (a `Vec<ContentBlock>` shared between clones; see [`Content`]).
    pub content: Content,
    /// Free-form metadata. The engine stores the generate reason under
    /// `"generate_reason"` and model usage under `"usage"`.
    #[serde(default)]
    pub metadata: Metadata,
    /// When the message was created.
    #[serde(serialize_with = "crate::rfc3339::serialize")]
    pub timestamp: DateTime<Utc>,
}

impl Msg {
    /// Creates a message with the given role, name and content, a new id and the current time.
    pub fn new(role: Role, name: impl Into<SharedString>, content: Vec<ContentBlock>) -> Self {
        Self {
            id: new_id(),
            name: name.into(),
            role,
            content: content.into(),
            metadata: Metadata::new(),
            timestamp: Utc::now(),
        }
    }

    /// A user message named `"user"` holding one text block.
    pub fn user(text: impl Into<SharedString>) -> Self {
        Self::new(
            Role::User,
            role_name(Role::User),
            vec![ContentBlock::text(text)],
        )
    }

    /// An assistant message named `"assistant"` holding one text block.
    pub fn assistant(text: impl Into<SharedString>) -> Self {
        Self::new(
            Role::Assistant,
            role_name(Role::Assistant),
            vec![ContentBlock::text(text)],
        )
    }

    /// A system message named `"system"` holding one text block.
    pub fn system(text: impl Into<SharedString>) -> Self {
        Self::new(
            Role::System,
            role_name(Role::System),
            vec![ContentBlock::text(text)],
        )
    }

    /// A tool message carrying one result, named after the tool.
    ///
    /// This is how a caller resumes an agent whose tool calls are pending (for example after a
    /// tool suspended for external execution).
    pub fn tool_result(result: ToolResultBlock) -> Self {
        Self::new(
            Role::Tool,
            result.name.clone(),
            vec![ContentBlock::ToolResult(result)],
        )
    }

    /// Starts a builder (role [`Role::User`] unless set with [`MsgBuilder::role`]).
    ///
    /// ```
    /// use agentscope_core::{Msg, Role};
    ///
    /// let msg = Msg::builder().role(Role::User)
    ///     .name("alice")
    ///     .text("hello")
    ///     .metadata("channel", "web")
    ///     .build();
    /// assert_eq!(msg.name, "alice");
    /// assert_eq!(msg.metadata["channel"], "web");
    /// ```
    pub fn builder() -> MsgBuilder {
        MsgBuilder {
            msg: Self::new(Role::User, SharedString::new(), Vec::new()),
            named: false,
        }
    }

    /// The text blocks joined by `"\n"` (other blocks are skipped).
    pub fn text(&self) -> String {
        join_text(&self.content)
    }

    /// The thinking blocks joined by `"\n"`.
    pub fn thinking(&self) -> String {
        let mut parts = self.content.iter().filter_map(|block| match block {
            ContentBlock::Thinking(t) => Some(t.thinking.as_str()),
            _ => None,
        });
        join_parts(&mut parts)
    }

    /// The tool calls in this message, in order.
    pub fn tool_uses(&self) -> Vec<&ToolUseBlock> {
        self.content
            .iter()
            .filter_map(ContentBlock::as_tool_use)
            .collect()
    }

    /// Whether this message holds at least one tool call.
    pub fn has_tool_uses(&self) -> bool {
        self.content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolUse(_)))
    }

    /// Whether this message holds at least one tool result.
    pub fn has_tool_results(&self) -> bool {
        self.content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolResult(_)))
    }

    /// The tool results in this message, in order.
    pub fn tool_results(&self) -> Vec<&ToolResultBlock> {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult(t) => Some(t),
                _ => None,
            })
            .collect()
    }

    /// Why generation ended, when the engine recorded it (final replies carry one).
    pub fn generate_reason(&self) -> Option<GenerateReason> {
        self.metadata
            .get(GENERATE_REASON_KEY)
            .and_then(|value| GenerateReason::deserialize(value).ok())
    }

    /// The provider's finish reason for a model message (metadata key `"finish_reason"`), when the
    /// model said one.
    pub fn finish_reason(&self) -> Option<&str> {
        self.metadata.get(FINISH_REASON_KEY).and_then(Value::as_str)
    }

    /// The provider's id for the response that made this model message (`"chatcmpl-1"`),
    /// when the provider sent one.
    pub fn response_id(&self) -> Option<&str> {
        self.metadata.get(RESPONSE_KEY)?.get("id")?.as_str()
    }

    /// The model that answered with this message, as the provider names it
    /// (`"gpt-4o-2024-08-06"`), when the provider said.
    pub fn response_model(&self) -> Option<&str> {
        self.metadata.get(RESPONSE_KEY)?.get("model")?.as_str()
    }

    /// Records why generation ended.
    pub fn set_generate_reason(&mut self, reason: GenerateReason) {
        // Most replies have no other metadata: they share one map per reason.
        if self.metadata.is_empty()
            && let Some(shared) = reason_only(reason)
        {
            self.metadata = shared;
        } else if let Ok(value) = serde_json::to_value(reason) {
            self.metadata.insert(GENERATE_REASON_KEY.to_owned(), value);
        }
    }

    /// Returns this message with the given generate reason.
    #[must_use]
    pub fn with_generate_reason(mut self, reason: GenerateReason) -> Self {
        self.set_generate_reason(reason);
        self
    }
}

/// Builds a [`Msg`]; start with [`Msg::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct MsgBuilder {
    msg: Msg,
    named: bool,
}

impl MsgBuilder {
    /// Sets the id (default: a new random UUID in 22 base64url characters).
    pub fn id(mut self, id: impl Into<SharedString>) -> Self {
        self.msg.id = id.into();
        self
    }

    /// Sets the role (default [`Role::User`]).
    pub fn role(mut self, role: Role) -> Self {
        self.msg.role = role;
        self
    }

    /// Sets the name (default: the role, e.g. `"user"`).
    pub fn name(mut self, name: impl Into<SharedString>) -> Self {
        self.msg.name = name.into();
        self.named = true;
        self
    }

    /// Appends a text block.
    pub fn text(mut self, text: impl Into<SharedString>) -> Self {
        self.msg.content.push(ContentBlock::text(text));
        self
    }

    /// Appends a block.
    pub fn block(mut self, block: impl Into<ContentBlock>) -> Self {
        self.msg.content.push(block.into());
        self
    }

    /// Appends blocks.
    pub fn blocks(mut self, blocks: impl IntoIterator<Item = ContentBlock>) -> Self {
        self.msg.content.extend(blocks);
        self
    }

    /// Sets one metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.msg.metadata.insert(key.into(), value.into());
        self
    }

    /// Sets the timestamp (default: now).
    pub fn timestamp(mut self, timestamp: DateTime<Utc>) -> Self {
        self.msg.timestamp = timestamp;
        self
    }

    /// Finishes the message.
    pub fn build(mut self) -> Msg {
        if !self.named {
            self.msg.name = role_name(self.msg.role);
        }
        self.msg
    }
}

/// The metadata `{"generate_reason": reason}`, one shared map per reason (built on first
/// use); `None` for a reason the table does not hold.
fn reason_only(reason: GenerateReason) -> Option<Metadata> {
    const REASONS: usize = 9;
    static SHARED: [OnceLock<Option<Metadata>>; REASONS] = [const { OnceLock::new() }; REASONS];
    SHARED
        .get(reason as usize)?
        .get_or_init(|| {
            let value = serde_json::to_value(reason).ok()?;
            let mut map = serde_json::Map::new();
            map.insert(GENERATE_REASON_KEY.to_owned(), value);
            Some(Metadata::from(map))
        })
        .clone()
}

/// A new message id: a random (version 4) UUID's 16 bytes in unpadded base64url, 22
/// characters, stored in place (no allocation).
pub(crate) fn new_id() -> SharedString {
    const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bits = uuid::Uuid::new_v4().as_u128();
    // 22 digits of 6 bits from the top: 21 whole digits, then the last 2 bits padded with
    // 4 zero bits.
    let mut text = [0u8; 22];
    for (i, digit) in text.iter_mut().enumerate() {
        let bits = match i {
            21 => bits << 4,
            _ => bits >> (122 - 6 * i),
        };
        *digit = DIGITS[(bits & 63) as usize];
    }
    SharedString::from(std::str::from_utf8(&text).unwrap_or_default())
}

/// The default name of a message of `role` (`"user"`, ...), without allocating.
fn role_name(role: Role) -> SharedString {
    SharedString::from_static(role.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_22_base64url_characters_of_a_random_uuid() {
        let ids: std::collections::HashSet<String> =
            (0..1000).map(|_| new_id().into_string()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            assert_eq!(id.len(), 22, "{id}");
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{id}"
            );
            // Digit 8 holds bits 48-53 from the top, the first four of them the version
            // nibble of a v4 UUID (`0100`): 16-19, `Q` to `T`.
            assert!(matches!(id.as_bytes()[8], b'Q'..=b'T'), "{id}");
            // The last digit holds the lowest 2 bits, then 4 zero bits: 0, 16, 32 or 48.
            assert!(
                matches!(id.as_bytes()[21], b'A' | b'Q' | b'g' | b'w'),
                "{id}"
            );
        }
    }

    #[test]
    fn text_joins_text_blocks_only() {
        let msg = Msg::builder()
            .role(Role::Assistant)
            .block(ContentBlock::thinking("hmm"))
            .text("a")
            .block(ToolUseBlock::new("1", "t", json!({})))
            .text("b")
            .build();
        assert_eq!(msg.text(), "a\nb");
        assert_eq!(msg.thinking(), "hmm");
        assert_eq!(msg.tool_uses().len(), 1);
        assert!(msg.has_tool_uses());
        assert!(msg.tool_results().is_empty());
    }

    #[test]
    fn generate_reason_round_trips_through_metadata() {
        let msg = Msg::assistant("x").with_generate_reason(GenerateReason::MaxIterations);
        assert_eq!(msg.generate_reason(), Some(GenerateReason::MaxIterations));
        assert_eq!(msg.metadata[GENERATE_REASON_KEY], "max_iterations");
        assert_eq!(Msg::assistant("x").generate_reason(), None);
    }

    #[test]
    fn json_shape_is_documented_shape() {
        let mut msg = Msg::builder()
            .role(Role::Assistant)
            .id("m1")
            .name("assistant")
            .text("hi")
            .block(ToolUseBlock::new(
                "c1",
                "calc",
                json!({"expression": "1+1"}),
            ))
            .block(ToolResultBlock::text("c1", "calc", "2"))
            .build();
        msg.timestamp = DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let value = serde_json::to_value(&msg).unwrap();
        assert_eq!(
            value,
            json!({
                "id": "m1", "name": "assistant", "role": "assistant",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "tool_use", "id": "c1", "name": "calc", "input": {"expression": "1+1"}},
                    {"type": "tool_result", "id": "c1", "name": "calc",
                     "output": [{"type": "text", "text": "2"}], "is_error": false}
                ],
                "metadata": {},
                "timestamp": "2026-11-30T10:00:00Z"
            })
        );
        let back: Msg = serde_json::from_value(value).unwrap();
        assert_eq!(back, msg);
    }

    #[test]
    fn unknown_block_type_is_an_error_not_a_panic() {
        let err = serde_json::from_value::<Msg>(json!({
            "id": "m", "name": "n", "role": "user",
            "content": [{"type": "hologram", "data": 1}],
            "timestamp": "2026-11-30T10:00:00Z"
        }))
        .unwrap_err();
        assert!(err.to_string().contains("hologram"), "{err}");
    }
}
