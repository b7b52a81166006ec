//! Content blocks: the pieces of a message ([`ContentBlock`]: text, thinking, tool calls,
//! tool results, images) and the block types. Their JSON shape is on [`Msg`](crate::Msg).

use serde::{Deserialize, Serialize};

use crate::text::SharedString;
use crate::tool_input::ToolInput;

/// A plain text block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text.
    pub text: SharedString,
}

/// A block of model reasoning ("thinking") that precedes the answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The reasoning text.
    pub thinking: SharedString,
    /// The provider's signature over the reasoning (Anthropic's extended thinking), which
    /// must be sent back unchanged with the thinking in the next request of a tool loop.
    /// `None` for providers that sign nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<SharedString>,
}

/// Model reasoning the provider returned encrypted instead of readable: Anthropic's
/// `redacted_thinking` (thinking its safety systems flagged, with extended thinking on).
///
/// Nobody can read it, but the provider needs it back: in a tool loop with thinking on,
/// the next request must carry the model's thinking blocks, this one included, unchanged
/// and in their place. So it is kept in the message like any block (memory, sessions,
/// hooks), sent back as it came by the client of the provider that produced it, and left
/// out by every other client (the OpenAI client never sends it).
/// [`Msg::thinking`](crate::Msg::thinking) and [`Msg::text`](crate::Msg::text) do not
/// show it.
///
/// Its JSON is the provider's own block: `{"type": "redacted_thinking", "data": "..."}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RedactedThinkingBlock {
    /// The encrypted reasoning, opaque: sent back byte for byte.
    pub data: SharedString,
}

/// An image, by URL (`https:` or a `data:` URL).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ImageBlock {
    /// Where the image is.
    pub url: String,
}

/// A request from the model to call a tool.
///
/// In a final message `input` holds the parsed JSON arguments. While a model streams, a
/// chunk carries a fragment: `id` is empty when the fragment continues the current call, and
/// `raw_input` holds a piece of the argument text. In a final message `raw_input` is `Some`
/// only when the model's argument text was not valid JSON; the engine then reports an
/// argument error to the model instead of running the tool.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolUseBlock {
    /// The call id, unique within a conversation; results refer to it.
    pub id: SharedString,
    /// The tool's name.
    pub name: SharedString,
    /// The JSON arguments, shared copy-on-write (see [`ToolInput`]).
    pub input: ToolInput,
    /// Unparsed argument text (see the type docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<String>,
}

impl ToolUseBlock {
    /// Creates a tool call with parsed arguments.
    pub fn new(
        id: impl Into<SharedString>,
        name: impl Into<SharedString>,
        input: impl Into<ToolInput>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input: input.into(),
            raw_input: None,
        }
    }
}

/// The result of a tool call, matched to its [`ToolUseBlock`] by `id`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The id of the tool call this answers.
    pub id: SharedString,
    /// The tool's name.
    pub name: SharedString,
    /// What the tool returned.
    pub output: Vec<ContentBlock>,
    /// Whether the output describes a failure (unknown tool, bad arguments, tool error).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResultBlock {
    /// A successful result holding one text block.
    pub fn text(
        id: impl Into<SharedString>,
        name: impl Into<SharedString>,
        text: impl Into<SharedString>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            output: vec![ContentBlock::text(text)],
            is_error: false,
        }
    }

    /// A failed result holding one text block describing the failure.
    pub fn error(
        id: impl Into<SharedString>,
        name: impl Into<SharedString>,
        text: impl Into<SharedString>,
    ) -> Self {
        Self {
            is_error: true,
            ..Self::text(id, name, text)
        }
    }

    /// The text blocks of the output joined by `"\n"`.
    pub fn text_output(&self) -> String {
        join_text(&self.output)
    }
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text.
    Text(TextBlock),
    /// Model reasoning.
    Thinking(ThinkingBlock),
    /// Model reasoning the provider encrypted, kept to be sent back unchanged (see
    /// [`RedactedThinkingBlock`]).
    RedactedThinking(RedactedThinkingBlock),
    /// A tool call requested by the model.
    ToolUse(ToolUseBlock),
    /// The result of a tool call.
    ToolResult(ToolResultBlock),
    /// An image.
    Image(ImageBlock),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<SharedString>) -> Self {
        ContentBlock::Text(TextBlock { text: text.into() })
    }

    /// A thinking block.
    pub fn thinking(thinking: impl Into<SharedString>) -> Self {
        ContentBlock::Thinking(ThinkingBlock {
            thinking: thinking.into(),
            signature: None,
        })
    }

    /// The text of a text block, `None` for every other kind.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(block) => Some(&block.text),
            _ => None,
        }
    }

    /// The tool call of a tool-use block, `None` for every other kind.
    ///
    /// ```
    /// use agentscope_core::{ContentBlock, ToolUseBlock};
    /// use serde_json::json;
    ///
    /// let block = ContentBlock::from(ToolUseBlock::new("c1", "search", json!({"q": "x"})));
    /// assert_eq!(block.as_tool_use().map(|call| call.name.as_str()), Some("search"));
    /// assert!(ContentBlock::text("hi").as_tool_use().is_none());
    /// ```
    pub fn as_tool_use(&self) -> Option<&ToolUseBlock> {
        match self {
            ContentBlock::ToolUse(call) => Some(call),
            _ => None,
        }
    }
}

impl From<&str> for ContentBlock {
    fn from(text: &str) -> Self {
        ContentBlock::text(text)
    }
}

impl From<SharedString> for ContentBlock {
    fn from(text: SharedString) -> Self {
        ContentBlock::text(text)
    }
}

impl From<String> for ContentBlock {
    fn from(text: String) -> Self {
        ContentBlock::text(text)
    }
}

impl From<ToolUseBlock> for ContentBlock {
    fn from(block: ToolUseBlock) -> Self {
        ContentBlock::ToolUse(block)
    }
}

impl From<ToolResultBlock> for ContentBlock {
    fn from(block: ToolResultBlock) -> Self {
        ContentBlock::ToolResult(block)
    }
}

/// The text blocks of `blocks` joined by `"\n"`.
pub(crate) fn join_text(blocks: &[ContentBlock]) -> String {
    let mut parts = blocks.iter().filter_map(ContentBlock::as_text);
    join_parts(&mut parts)
}

/// `parts` joined by `"\n"`.
pub(crate) fn join_parts(parts: &mut dyn Iterator<Item = &str>) -> String {
    let mut out = String::new();
    for (i, part) in parts.enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(part);
    }
    out
}
