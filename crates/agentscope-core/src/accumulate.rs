//! [`ChatAccumulator`]: turns streamed [`ChatResponse`] chunks into one message.

use serde_json::Value;
use std::borrow::Cow;

use crate::block::{ContentBlock, ToolUseBlock};
use crate::content::Content;
use crate::message::{Msg, Role};
use crate::model::{ChatResponse, ChatUsage};

/// Assembles streamed model chunks into the final assistant message.
///
/// - text fragments are concatenated into one text block, thinking fragments into one
///   thinking block (their signature fragments too, into its
///   [`signature`](crate::ThinkingBlock::signature));
/// - a tool-use fragment with a new, non-empty id starts a call; one with an empty id (or the
///   current id) continues it: its `raw_input` is appended to the argument text and a name
///   fills in a missing one;
/// - redacted thinking ([`RedactedThinkingBlock`](crate::RedactedThinkingBlock)) is kept
///   whole, never merged, next to the thinking block in the order the blocks came;
/// - blocks are ordered thinking (the thinking block and any redacted thinking), text, then
///   tool calls (then anything else);
/// - usage is summed and stored under `metadata["usage"]`.
///
/// At [`finish`](Self::finish), argument text is parsed as JSON; text that does not parse is
/// kept in `raw_input` (with `input` null) so the engine reports an argument error to the
/// model instead of failing.
///
/// Every model feeds the engine through this type, so a model (scripted or real) and its
/// conformance tests assemble messages identically.
///
/// ```
/// use agentscope_core::{ChatAccumulator, ChatResponse, ContentBlock, ToolInput, ToolUseBlock};
/// use serde_json::json;
///
/// let mut acc = ChatAccumulator::new("assistant");
/// acc.push(&ChatResponse::new(vec![ContentBlock::text("The answer")]));
/// acc.push(&ChatResponse::new(vec![ContentBlock::text(" is 42.")]));
/// let fragment = |id: &str, args: &str| ToolUseBlock {
///     id: id.into(), name: if id.is_empty() { "".into() } else { "calc".into() },
///     input: ToolInput::null(), raw_input: Some(args.into()),
/// };
/// acc.push(&ChatResponse::new(vec![fragment("c1", "{\"expr\":").into()]));
/// acc.push(&ChatResponse::new(vec![fragment("", "\"6*7\"}").into()]));
/// let msg = acc.finish();
/// assert_eq!(msg.text(), "The answer is 42.");
/// assert_eq!(msg.tool_uses()[0].input, json!({"expr": "6*7"}));
/// ```
#[derive(Debug, Clone)]
pub struct ChatAccumulator {
    message: Msg,
    // The thinking blocks (the merged thinking block, redacted thinking) open the message:
    // `thinking_len` of them, the merged one at `thinking_at`; text comes right after.
    thinking_at: Option<usize>,
    thinking_len: usize,
    has_text: bool,
    current_tool_at: Option<usize>,
    usage: Option<ChatUsage>,
    finish_reason: Option<String>,
    /// The provider's response id (empty until a chunk names it).
    response_id: String,
    /// The model that answered, from the first chunk that names it.
    response_model: Option<String>,
}

impl ChatAccumulator {
    /// Starts an empty assistant message with the given name.
    pub fn new(name: impl Into<crate::SharedString>) -> Self {
        Self::with_role(Role::Assistant, name)
    }

    /// Starts an empty message with the given role and name.
    pub fn with_role(role: Role, name: impl Into<crate::SharedString>) -> Self {
        Self {
            message: Msg::new(role, name, Vec::new()),
            thinking_at: None,
            thinking_len: 0,
            has_text: false,
            current_tool_at: None,
            usage: None,
            finish_reason: None,
            response_id: String::new(),
            response_model: None,
        }
    }

    /// Applies one chunk.
    pub fn push(&mut self, chunk: &ChatResponse) {
        for block in &chunk.content {
            self.push_block(Cow::Borrowed(block));
        }
        self.push_totals(chunk);
    }

    /// Applies one chunk, taking its blocks: a block that starts a new part of the message
    /// (a tool call, the first text) is moved in instead of copied.
    pub fn push_owned(&mut self, mut chunk: ChatResponse) {
        for block in std::mem::take(&mut chunk.content) {
            self.push_block(Cow::Owned(block));
        }
        self.push_totals(&chunk);
    }

    /// Applies one chunk whose blocks are wanted as well (a chunk event's delta): returns
    /// them as a [`Content`]. When they are the whole message so far (a first chunk whose
    /// blocks each start a part, in order; every chunk of a model that answers in one), the
    /// returned content shares the message's blocks instead of being a second vector.
    ///
    /// ```
    /// use agentscope_core::{ChatAccumulator, ChatResponse, ContentBlock};
    ///
    /// let mut acc = ChatAccumulator::new("assistant");
    /// let delta = acc.push_delta(ChatResponse::new(vec![ContentBlock::text("Hel")]));
    /// assert!(delta.ptr_eq(&acc.message().content));
    /// let delta = acc.push_delta(ChatResponse::new(vec![ContentBlock::text("lo")]));
    /// assert_eq!(delta[..], [ContentBlock::text("lo")]);
    /// assert_eq!(acc.message().text(), "Hello");
    /// ```
    pub fn push_delta(&mut self, chunk: ChatResponse) -> Content {
        if !self.message.content.is_empty() {
            self.push(&chunk);
            return Content::from(chunk.content);
        }
        let mut whole = !chunk.content.is_empty();
        for block in &chunk.content {
            whole &= self.push_block(Cow::Borrowed(block));
        }
        self.push_totals(&chunk);
        match whole {
            true => self.message.content.clone(),
            false => Content::from(chunk.content),
        }
    }

    fn push_totals(&mut self, chunk: &ChatResponse) {
        if let Some(usage) = chunk.usage {
            self.usage
                .get_or_insert_with(ChatUsage::default)
                .add(&usage);
        }
        if let Some(reason) = &chunk.finish_reason {
            self.finish_reason = Some(reason.clone());
        }
        // The provider's response id and model, once (chunks repeat them).
        if self.response_id.is_empty() && !chunk.id.is_empty() {
            self.response_id.clone_from(&chunk.id);
        }
        if self.response_model.is_none() && chunk.model.is_some() {
            self.response_model.clone_from(&chunk.model);
        }
    }

    /// Applies one block; returns whether it became the message's last block as it is (a
    /// new part appended at the end), rather than merged, skipped or put before others.
    fn push_block(&mut self, block: Cow<'_, ContentBlock>) -> bool {
        match &*block {
            ContentBlock::Text(delta) => {
                if delta.text.is_empty() {
                    return false;
                }
                let at = self.thinking_len;
                if self.has_text {
                    if let ContentBlock::Text(text) = &mut self.message.content[at] {
                        text.text.push_str(&delta.text);
                    }
                    false
                } else {
                    let last = at == self.message.content.len();
                    self.insert_front(at, block.into_owned());
                    self.has_text = true;
                    last
                }
            }
            ContentBlock::Thinking(delta) => {
                if delta.thinking.is_empty() && delta.signature.is_none() {
                    return false;
                }
                if let Some(at) = self.thinking_at {
                    if let ContentBlock::Thinking(thinking) = &mut self.message.content[at] {
                        thinking.thinking.push_str(&delta.thinking);
                        if let Some(piece) = &delta.signature {
                            match &mut thinking.signature {
                                Some(signature) => signature.push_str(piece),
                                None => thinking.signature = Some(piece.clone()),
                            }
                        }
                    }
                    false
                } else {
                    self.thinking_at = Some(self.thinking_len);
                    self.push_thinking(block.into_owned())
                }
            }
            ContentBlock::RedactedThinking(_) => self.push_thinking(block.into_owned()),
            ContentBlock::ToolUse(fragment) => {
                if self.continue_tool(fragment) {
                    return false;
                }
                self.message.content.push(block.into_owned());
                self.current_tool_at = Some(self.message.content.len() - 1);
                true
            }
            _ => {
                self.message.content.push(block.into_owned());
                true
            }
        }
    }

    /// Adds `fragment` to the tool call being streamed when it continues it (no id, or the
    /// same id); returns whether it did.
    fn continue_tool(&mut self, fragment: &ToolUseBlock) -> bool {
        let continues = match self.current_tool_at {
            Some(at) => match &self.message.content[at] {
                ContentBlock::ToolUse(current) => {
                    fragment.id.is_empty() || fragment.id == current.id
                }
                _ => false,
            },
            None => false,
        };
        if !continues {
            return false;
        }
        if let Some(ContentBlock::ToolUse(current)) = self
            .current_tool_at
            .and_then(|at| self.message.content.get_mut(at))
        {
            if current.name.is_empty() && !fragment.name.is_empty() {
                current.name.clone_from(&fragment.name);
            }
            match &fragment.raw_input {
                Some(piece) => current
                    .raw_input
                    .get_or_insert_with(String::new)
                    .push_str(piece),
                None if !fragment.input.is_null() => current.input = fragment.input.clone(),
                None => {}
            }
        }
        true
    }

    /// Adds a block at the end of the thinking blocks; returns whether it is the last block.
    fn push_thinking(&mut self, block: ContentBlock) -> bool {
        let at = self.thinking_len;
        let last = at == self.message.content.len();
        self.insert_front(at, block);
        self.thinking_len += 1;
        last
    }

    /// Inserts a thinking or text block before the tool calls.
    fn insert_front(&mut self, at: usize, block: ContentBlock) {
        self.message.content.insert(at, block);
        if let Some(i) = &mut self.current_tool_at {
            *i += 1;
        }
    }

    /// The message so far. Tool calls still being streamed have their argument text in
    /// `raw_input`.
    pub fn message(&self) -> &Msg {
        &self.message
    }

    /// Whether nothing has been received that would make a message (no text, thinking, tool
    /// call or other block).
    pub fn is_empty(&self) -> bool {
        self.message.content.is_empty()
    }

    /// The usage received so far.
    pub fn usage(&self) -> Option<ChatUsage> {
        self.usage
    }

    /// The finish reason, when the model sent one.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// Finishes the message: parses tool-call arguments, gives id-less calls an id, and
    /// records usage (`"usage"`), the finish reason
    /// (`"finish_reason"`, read it with [`Msg::finish_reason`]) and the provider's response
    /// id and model (`"response"`: `{"id": .., "model": ..}`, when the provider sent
    /// either; read them with [`Msg::response_id`] and [`Msg::response_model`]) in the metadata.
    pub fn finish(mut self) -> Msg {
        if !self.response_id.is_empty() || self.response_model.is_some() {
            let mut response = serde_json::Map::new();
            if !self.response_id.is_empty() {
                let id = std::mem::take(&mut self.response_id);
                response.insert("id".to_owned(), Value::String(id));
            }
            if let Some(model) = self.response_model.take() {
                response.insert("model".to_owned(), Value::String(model));
            }
            self.message.metadata.insert(
                crate::message::RESPONSE_KEY.to_owned(),
                Value::Object(response),
            );
        }
        if let Some(reason) = self.finish_reason.take() {
            self.message.metadata.insert(
                crate::message::FINISH_REASON_KEY.to_owned(),
                Value::String(reason),
            );
        }
        for block in &mut self.message.content {
            if let ContentBlock::ToolUse(tool_use) = block {
                finish_tool_use(tool_use);
            }
        }
        if let Some(value) = self
            .usage
            .and_then(|usage| serde_json::to_value(usage).ok())
        {
            self.message.metadata.insert("usage".to_owned(), value);
        }
        self.message
    }
}

fn finish_tool_use(tool_use: &mut ToolUseBlock) {
    if tool_use.id.is_empty() {
        tool_use.id = format!("call_{}", crate::message::new_id()).into();
    }
    let Some(raw) = tool_use.raw_input.take() else {
        if tool_use.input.is_null() {
            tool_use.input = Value::Object(Default::default()).into();
        }
        return;
    };
    if raw.trim().is_empty() {
        tool_use.input = Value::Object(Default::default()).into();
        return;
    }
    match serde_json::from_str::<Value>(&raw) {
        Ok(value) => tool_use.input = value.into(),
        Err(_) => {
            tool_use.input = Value::Null.into();
            tool_use.raw_input = Some(raw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(blocks: Vec<ContentBlock>) -> ChatResponse {
        ChatResponse::new(blocks)
    }

    fn fragment(id: &str, name: &str, raw: &str) -> ContentBlock {
        ToolUseBlock {
            id: id.into(),
            name: name.into(),
            input: Value::Null.into(),
            raw_input: Some(raw.into()),
        }
        .into()
    }

    /// `push_delta` returns each chunk's blocks as they came, and assembles what `push` does;
    /// its delta shares the message's blocks exactly when they are the same blocks.
    #[test]
    fn push_delta_returns_the_chunk_and_shares_only_a_whole_message() {
        let tool = || ContentBlock::from(ToolUseBlock::new("c1", "calc", json!({"a": 1})));
        let cases: Vec<(Vec<Vec<ContentBlock>>, Vec<bool>)> = vec![
            // A one-chunk answer: text and a tool call, in message order.
            (
                vec![vec![
                    ContentBlock::thinking("th"),
                    ContentBlock::text("hi"),
                    tool(),
                ]],
                vec![true],
            ),
            // Streamed text: only the first chunk is the whole message.
            (
                vec![
                    vec![ContentBlock::text("hel")],
                    vec![ContentBlock::text("lo")],
                ],
                vec![true, false],
            ),
            // Text after a tool call goes before it: not the chunk's order.
            (vec![vec![tool(), ContentBlock::text("x")]], vec![false]),
            // Two text blocks merge into one.
            (
                vec![vec![ContentBlock::text("a"), ContentBlock::text("b")]],
                vec![false],
            ),
            // An empty text block is skipped.
            (
                vec![vec![ContentBlock::text(""), ContentBlock::text("a")]],
                vec![false],
            ),
            // A tool call's fragments continue one block.
            (
                vec![
                    vec![fragment("c1", "calc", "{\"a\":")],
                    vec![fragment("", "", "1}")],
                ],
                vec![true, false],
            ),
        ];
        for (chunks, shared) in cases {
            let mut with_delta = ChatAccumulator::new("a");
            let mut plain = ChatAccumulator::new("a");
            let mut deltas = Vec::new();
            for (blocks, shared) in chunks.into_iter().zip(shared) {
                plain.push(&chunk(blocks.clone()));
                let delta = with_delta.push_delta(chunk(blocks.clone()));
                assert_eq!(delta[..], blocks[..]);
                assert_eq!(
                    delta.ptr_eq(&with_delta.message().content),
                    shared,
                    "{blocks:?}"
                );
                assert_eq!(with_delta.message().content, plain.message().content);
                deltas.push((delta, blocks));
            }
            // Deltas keep their blocks while the message grows (a shared one is copied on
            // the next change).
            let more = vec![ContentBlock::text("more")];
            plain.push(&chunk(more.clone()));
            with_delta.push_delta(chunk(more));
            for (delta, blocks) in &deltas {
                assert_eq!(delta[..], blocks[..]);
            }
            assert_eq!(with_delta.finish().content, plain.finish().content);
        }
    }

    /// Taking the chunks (`push_owned`) assembles exactly what borrowing them does.
    #[test]
    fn owned_and_borrowed_chunks_assemble_the_same_message() {
        let chunks = || {
            vec![
                chunk(vec![ContentBlock::thinking("th")]),
                chunk(vec![ContentBlock::text("hel")]),
                chunk(vec![fragment("c1", "calc", "{\"a\":")]),
                chunk(vec![fragment("", "", "1}")]),
                chunk(vec![
                    ContentBlock::text("lo"),
                    ContentBlock::thinking("ink"),
                ]),
                chunk(vec![
                    ToolUseBlock::new("c2", "echo", json!({"text": "x"})).into(),
                ]),
                ChatResponse {
                    usage: Some(ChatUsage::new(3, 4)),
                    finish_reason: Some("tool_calls".into()),
                    ..ChatResponse::default()
                },
            ]
        };
        let (mut borrowed, mut owned) = (ChatAccumulator::new("a"), ChatAccumulator::new("a"));
        for chunk in chunks() {
            borrowed.push(&chunk);
            owned.push_owned(chunk);
        }
        let (mut a, b) = (borrowed.finish(), owned.finish());
        a.id = b.id.clone();
        a.timestamp = b.timestamp;
        assert_eq!(a, b);
        assert_eq!(b.text(), "hello");
        assert_eq!(b.thinking(), "think");
        let calls: Vec<_> = b
            .tool_uses()
            .iter()
            .map(|c| (c.id.as_str(), c.input.clone().into_value()))
            .collect();
        assert_eq!(
            calls,
            [("c1", json!({"a": 1})), ("c2", json!({"text": "x"}))]
        );
        assert_eq!(b.metadata["usage"]["output_tokens"], 4);
    }

    #[test]
    fn orders_thinking_text_tools_whatever_the_arrival_order() {
        let mut acc = ChatAccumulator::new("a");
        acc.push(&chunk(vec![fragment("c1", "calc", "{}")]));
        acc.push(&chunk(vec![ContentBlock::text("hel")]));
        acc.push(&chunk(vec![ContentBlock::thinking("th")]));
        acc.push(&chunk(vec![ContentBlock::text("lo")]));
        acc.push(&chunk(vec![ContentBlock::thinking("ink")]));
        let msg = acc.finish();
        assert_eq!(msg.content.len(), 3);
        assert!(matches!(&msg.content[0], ContentBlock::Thinking(t) if t.thinking == "think"));
        assert!(matches!(&msg.content[1], ContentBlock::Text(t) if t.text == "hello"));
        assert!(
            matches!(&msg.content[2], ContentBlock::ToolUse(t) if t.id == "c1" && t.input == json!({}))
        );
    }

    #[test]
    fn thinking_signature_fragments_join_the_thinking_block() {
        let signed = |thinking: &str, signature: Option<&str>| {
            ContentBlock::Thinking(crate::ThinkingBlock {
                thinking: thinking.into(),
                signature: signature.map(Into::into),
            })
        };
        let mut acc = ChatAccumulator::new("a");
        acc.push(&chunk(vec![signed("Let me ", None)]));
        acc.push(&chunk(vec![signed("think.", None)]));
        acc.push(&chunk(vec![ContentBlock::text("Done.")]));
        acc.push(&chunk(vec![signed("", Some("EqQB"))]));
        acc.push(&chunk(vec![signed("", Some("Kgw="))]));
        let msg = acc.finish();
        assert_eq!(
            msg.content,
            vec![
                signed("Let me think.", Some("EqQBKgw=")),
                ContentBlock::text("Done.")
            ]
        );
        // A signature alone (redacted or empty thinking) still makes a block.
        let mut acc = ChatAccumulator::new("a");
        acc.push(&chunk(vec![signed("", Some("sig"))]));
        assert_eq!(acc.finish().content, vec![signed("", Some("sig"))]);
    }

    #[test]
    fn parallel_tool_calls_with_fragmented_arguments() {
        let mut acc = ChatAccumulator::new("a");
        acc.push(&chunk(vec![fragment("c1", "calc", "{\"a\":")]));
        acc.push(&chunk(vec![fragment("", "", "1}")]));
        acc.push(&chunk(vec![fragment("c2", "search", "")]));
        acc.push(&chunk(vec![fragment("", "", "{\"q\":\"x\"}")]));
        let msg = acc.finish();
        let uses = msg.tool_uses();
        assert_eq!(uses.len(), 2);
        assert_eq!(
            (uses[0].name.as_str(), &*uses[0].input),
            ("calc", &json!({"a": 1}))
        );
        assert_eq!(
            (uses[1].name.as_str(), &*uses[1].input),
            ("search", &json!({"q": "x"}))
        );
        assert!(uses.iter().all(|u| u.raw_input.is_none()));
    }

    #[test]
    fn invalid_json_arguments_are_kept_raw() {
        let mut acc = ChatAccumulator::new("a");
        acc.push(&chunk(vec![fragment("c1", "calc", "{\"a\": 1")]));
        let msg = acc.finish();
        let tool_use = msg.tool_uses()[0];
        assert_eq!(tool_use.input, Value::Null);
        assert_eq!(tool_use.raw_input.as_deref(), Some("{\"a\": 1"));
    }

    #[test]
    fn complete_tool_calls_and_usage() {
        let mut acc = ChatAccumulator::new("a");
        acc.push(&ChatResponse {
            content: vec![ToolUseBlock::new("c1", "calc", json!({"x": 1})).into()],
            usage: Some(ChatUsage::new(3, 4)),
            finish_reason: Some("tool_calls".into()),
            ..ChatResponse::default()
        });
        assert_eq!(acc.finish_reason(), Some("tool_calls"));
        let msg = acc.finish();
        assert_eq!(msg.tool_uses()[0].input, json!({"x": 1}));
        assert_eq!(
            msg.metadata["usage"],
            json!({"input_tokens": 3, "output_tokens": 4})
        );
    }

    #[test]
    fn response_id_model_and_cache_counts_are_kept() {
        let mut acc = ChatAccumulator::new("a");
        acc.push(&ChatResponse {
            id: "chatcmpl-1".into(),
            content: vec![ContentBlock::text("hi")],
            usage: Some(ChatUsage {
                cache_read_input_tokens: Some(2),
                ..ChatUsage::new(5, 1)
            }),
            ..ChatResponse::default()
        });
        acc.push(&ChatResponse {
            id: "chatcmpl-1".into(),
            usage: Some(ChatUsage {
                cache_creation_input_tokens: Some(3),
                ..ChatUsage::new(1, 1)
            }),
            model: Some("gpt-4o-2024-08-06".into()),
            ..ChatResponse::default()
        });
        let msg = acc.finish();
        assert_eq!(msg.response_id(), Some("chatcmpl-1"));
        assert_eq!(msg.response_model(), Some("gpt-4o-2024-08-06"));
        assert_eq!(
            msg.metadata["usage"],
            json!({"input_tokens": 6, "output_tokens": 2, "cache_read_input_tokens": 2,
                   "cache_creation_input_tokens": 3})
        );
        // Nothing said, nothing stored.
        let mut acc = ChatAccumulator::new("a");
        acc.push(&chunk(vec![ContentBlock::text("hi")]));
        let msg = acc.finish();
        assert_eq!((msg.response_id(), msg.response_model()), (None, None));
        assert!(!msg.metadata.contains_key("response"));
    }

    #[test]
    fn empty_text_is_empty() {
        let mut acc = ChatAccumulator::new("a");
        acc.push(&chunk(vec![ContentBlock::text("")]));
        acc.push(&ChatResponse {
            usage: Some(ChatUsage::default()),
            ..ChatResponse::default()
        });
        assert!(acc.is_empty());
    }

    /// Redacted thinking is kept whole, among the thinking blocks in the order they came,
    /// before the text and the tool calls; the thinking block still merges its pieces.
    #[test]
    fn redacted_thinking_is_kept_in_its_place_among_the_thinking_blocks() {
        use crate::block::{RedactedThinkingBlock, ThinkingBlock};
        let redacted = |data: &str| {
            ContentBlock::RedactedThinking(RedactedThinkingBlock { data: data.into() })
        };
        let signature = ContentBlock::Thinking(ThinkingBlock {
            thinking: "".into(),
            signature: Some("sig".into()),
        });
        let mut acc = ChatAccumulator::new("a");
        let mut last = Vec::new();
        for block in [
            redacted("R1"),
            ContentBlock::thinking("Let me "),
            ContentBlock::text("Sure."),
            ContentBlock::thinking("think."),
            signature,
            redacted("R2"),
            fragment("c1", "calc", "{}"),
        ] {
            let delta = acc.push_delta(chunk(vec![block]));
            last.push(delta.ptr_eq(&acc.message().content));
        }
        // Only the first block was the whole message as it came.
        assert_eq!(last, [true, false, false, false, false, false, false]);
        let msg = acc.finish();
        assert_eq!(
            msg.content,
            vec![
                redacted("R1"),
                ContentBlock::Thinking(ThinkingBlock {
                    thinking: "Let me think.".into(),
                    signature: Some("sig".into()),
                }),
                redacted("R2"),
                ContentBlock::text("Sure."),
                ToolUseBlock::new("c1", "calc", json!({})).into(),
            ]
        );
        assert_eq!(msg.thinking(), "Let me think.");
        assert_eq!(msg.text(), "Sure.");
    }
}
