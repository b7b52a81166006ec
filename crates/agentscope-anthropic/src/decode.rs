//! Turns the Messages API wire format (SSE events, or one JSON message) into
//! [`ChatResponse`] delta chunks.
//!
//! # Events
//!
//! A streamed response is `message_start` (the id and the input usage), then per content
//! block a `content_block_start`, its `content_block_delta`s and a `content_block_stop`,
//! then `message_delta` (the stop reason and the cumulative output usage) and
//! `message_stop`; `ping` events may come anywhere and an `error` event ends the stream.
//! Each text, thinking or signature delta becomes one chunk as it arrives. Usage and the
//! stop reason are emitted once, on the final chunk.
//!
//! # Tool calls
//!
//! Anthropic streams content blocks one after the other, so every tool call streams live,
//! as [`ChatAccumulator`](agentscope_core::ChatAccumulator) expects: a start fragment with
//! the call's id and name (`input` null, `raw_input` empty), then each `input_json_delta`
//! piece as a fragment with an empty id. A call that starts while another is still open
//! (which Anthropic does not do) cannot be continued live: it is buffered and emitted whole
//! on the final chunk.

use agentscope_core::{
    ChatResponse, ChatUsage, ContentBlock, ModelError, RedactedThinkingBlock, ThinkingBlock,
    ToolInput, ToolUseBlock,
};
use std::borrow::Cow;

use agentscope_http::Decode;
use agentscope_http::lenient::{error_text, non_empty, not_json, snippet};
use agentscope_http::sse::{self, SseBody, SseEvent};
use serde::Deserialize;
use serde_json::Value;

use crate::response::{Block, Event, Message, Usage};

/// Decodes one streamed response.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    body: SseBody,
    /// The message id (`message_start`).
    id: String,
    /// The latest usage counts.
    usage: Usage,
    /// The model that answered (`message_start`), sent on the final chunk.
    model: Option<String>,
    /// Why the model stopped (`message_delta`).
    stop_reason: Option<String>,
    /// The content blocks started so far.
    blocks: Vec<BlockState>,
    /// The index of the tool call streaming live, while it is open.
    live_tool: Option<u64>,
    /// Set at `message_stop`, an error, or the end of the body.
    done: bool,
}

#[derive(Debug)]
struct BlockState {
    index: u64,
    kind: BlockKind,
}

#[derive(Debug)]
enum BlockKind {
    Text,
    Thinking,
    Tool(ToolState),
    /// A block that takes no deltas: redacted thinking (whole at its start), and the
    /// blocks this client does not keep (server tools, ...).
    Ignored,
}

#[derive(Debug)]
struct ToolState {
    id: String,
    name: String,
    /// Argument text received so far (buffered calls only).
    arguments: String,
    live: bool,
}

type Items = Vec<Result<ChatResponse, ModelError>>;

impl Decode for Decoder {
    /// Feeds a piece of the SSE body; returns the chunks it completes. After `message_stop`
    /// (or an error) further input is ignored.
    fn feed(&mut self, bytes: &[u8]) -> Items {
        if self.done {
            return Vec::new();
        }
        self.body.feed(bytes);
        self.drain_events()
    }

    /// Ends the body: dispatches an unterminated last event; then the final chunk, or the
    /// error that says the body was cut off or was not an event stream.
    fn finish(&mut self) -> Items {
        if self.done {
            return Vec::new();
        }
        self.body.finish();
        let mut out = self.drain_events();
        if self.done {
            return out;
        }
        self.done = true;
        if let Some(error) = self.body.not_an_event_stream() {
            // Something else answered (an HTML error page from a proxy, ...).
            out.push(Err(error));
        } else if self.body.recognised() && self.stop_reason.is_none() {
            // Neither `message_stop` nor a stop reason: the connection was cut mid-answer.
            // What arrived is not an answer; the caller may retry.
            out.push(Err(sse::cut_off("message_stop and no stop_reason")));
        } else {
            // A stop reason without `message_stop` is a finished answer.
            out.extend(self.final_chunk().map(Ok));
        }
        out
    }

    /// Decodes a whole (non-streamed) Messages response into the chunks its stream would
    /// have given: one with the content, then the final one with usage and stop reason.
    fn decode_json(&mut self, body: &[u8]) -> Items {
        self.done = true;
        let value: Value = match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(err) => return vec![Err(not_json("event", body, &err))],
        };
        if !value.is_object() {
            return vec![Err(not_an_object(&value))];
        }
        if value.get("type").and_then(Value::as_str) == Some("error")
            || value.get("error").is_some_and(|error| !error.is_null())
        {
            return vec![Err(stream_error(value))];
        }
        // Never the default in practice: every field of a message is read leniently.
        let message = Message::deserialize(&value).unwrap_or_default();
        if let Some(id) = message.id {
            self.id = id.into_owned();
        }
        if message.model.is_some() {
            self.model = message.model.map(Cow::into_owned);
        }
        if let Some(usage) = message.usage {
            self.usage.update(usage);
        }
        self.stop_reason = message.stop_reason.map(Cow::into_owned);
        let content: Vec<ContentBlock> = message
            .content
            .into_iter()
            .filter_map(whole_block)
            .collect();
        let mut out = Vec::new();
        if !content.is_empty() {
            out.push(Ok(self.chunk(content)));
        }
        out.extend(self.final_chunk().map(Ok));
        out
    }

    /// Whether the response ended (`message_stop`, an error, or the end of the body).
    fn is_done(&self) -> bool {
        self.done
    }
}

impl Decoder {
    fn drain_events(&mut self) -> Items {
        let mut events = self.body.take_events();
        let mut out = Vec::with_capacity(events.len());
        for event in events.drain(..) {
            if self.done {
                break;
            }
            match self.handle_event(event) {
                Ok(chunk) => out.extend(chunk.map(Ok)),
                Err(err) => {
                    self.done = true;
                    out.push(Err(err));
                }
            }
        }
        self.body.recycle(events);
        out
    }

    /// Handles one SSE event; returns the chunk it makes, if any.
    ///
    /// An event object is deserialized straight into [`Event`] (its texts borrowed from the
    /// data). Anything that does not read so (an error, data that is not an object, is not
    /// JSON, or repeats a key) is read into a [`Value`] first, as the error messages and the
    /// last-key-wins reading of repeated keys need.
    fn handle_event(&mut self, event: SseEvent) -> Result<Option<ChatResponse>, ModelError> {
        let data = event.data.trim();
        let named_error = event.event.as_deref() == Some("error");
        if data.is_empty() {
            return Ok(None);
        }
        if !named_error
            && data.starts_with('{')
            && let Ok(mut parsed) = serde_json::from_str::<Event<'_>>(data)
            && parsed.kind.as_deref() != Some("error")
        {
            return Ok(self.handle_parsed(&mut parsed, event.event.as_deref()));
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(_) if named_error => {
                return Err(ModelError::Stream {
                    message: data.to_owned(),
                });
            }
            Err(err) => return Err(not_json("event", data.as_bytes(), &err)),
        };
        if !value.is_object() {
            return Err(if named_error {
                ModelError::Stream {
                    message: value.to_string(),
                }
            } else {
                not_an_object(&value)
            });
        }
        let is_error = named_error || value.get("type").and_then(Value::as_str) == Some("error");
        if is_error {
            return Err(stream_error(value));
        }
        // Never the default in practice: every field of an event is read leniently.
        let mut parsed = Event::deserialize(&value).unwrap_or_default();
        Ok(self.handle_parsed(&mut parsed, event.event.as_deref()))
    }

    /// Handles one event (not an error); `name` is its SSE `event:` line.
    fn handle_parsed(
        &mut self,
        parsed: &mut Event<'_>,
        name: Option<&str>,
    ) -> Option<ChatResponse> {
        // The payload's `type` names the event; the SSE `event:` line is the fallback.
        let kind = parsed.kind.take();
        match kind.as_deref().or(name).unwrap_or_default() {
            "content_block_delta" => self.block_delta(parsed.index, *parsed.delta.take()?),
            "message_start" => {
                self.message_start(parsed.message.take());
                None
            }
            "content_block_start" => self.block_start(parsed.index, parsed.content_block.take()),
            "content_block_stop" => {
                if parsed.index.is_some() && parsed.index == self.live_tool {
                    self.live_tool = None;
                }
                None
            }
            "message_delta" => {
                if let Some(reason) = parsed.delta.take().and_then(|delta| delta.stop_reason) {
                    self.stop_reason = Some(reason.into_owned());
                }
                if let Some(usage) = parsed.usage.take() {
                    self.usage.update(*usage);
                }
                None
            }
            "message_stop" => {
                self.done = true;
                self.final_chunk()
            }
            "ping" => None,
            other => {
                // Anthropic may add event types; they are not errors.
                tracing::debug!(event = other, "ignoring an unknown Messages stream event");
                None
            }
        }
    }

    fn message_start(&mut self, message: Option<Box<Message<'_>>>) {
        let Some(message) = message else {
            return;
        };
        if let Some(id) = non_empty(message.id) {
            self.id = id.into_owned();
        }
        if message.model.is_some() {
            self.model = message.model.map(Cow::into_owned);
        }
        if let Some(usage) = message.usage {
            self.usage.update(usage);
        }
    }

    fn block_start(
        &mut self,
        index: Option<u64>,
        block: Option<Box<Block<'_>>>,
    ) -> Option<ChatResponse> {
        let index =
            index.unwrap_or_else(|| self.blocks.iter().map(|b| b.index + 1).max().unwrap_or(0));
        let block = block.map(|block| *block).unwrap_or_default();
        let (kind, content) = match block.kind.as_deref() {
            Some("text") => (
                BlockKind::Text,
                non_empty(block.text).map(|text| ContentBlock::text(&*text)),
            ),
            Some("thinking") => (
                BlockKind::Thinking,
                thinking(block.thinking, block.signature),
            ),
            Some("tool_use") => {
                let (state, content) = self.tool_start(index, block);
                (BlockKind::Tool(state), content)
            }
            // Whole in its start event: nothing streams after it.
            Some("redacted_thinking") => (BlockKind::Ignored, redacted_thinking(block.data)),
            other => {
                tracing::debug!(
                    block = other.unwrap_or(""),
                    "ignoring a content block of a kind this client does not handle"
                );
                (BlockKind::Ignored, None)
            }
        };
        self.blocks.push(BlockState { index, kind });
        content.map(|block| self.chunk(vec![block]))
    }

    /// A tool call starts: live when no other call is open, buffered otherwise.
    fn tool_start(&mut self, index: u64, block: Block<'_>) -> (ToolState, Option<ContentBlock>) {
        let id = non_empty(block.id).map_or_else(generated_call_id, Cow::into_owned);
        let name = block.name.map(Cow::into_owned).unwrap_or_default();
        // A streamed call starts with `input: {}` and its arguments arrive as deltas; a
        // server that sends the whole call at once has them here.
        let arguments = match block.input {
            Some(Value::Object(input)) if !input.is_empty() => Value::Object(input).to_string(),
            _ => String::new(),
        };
        if self.live_tool.is_some() {
            let state = ToolState {
                id,
                name,
                arguments,
                live: false,
            };
            return (state, None);
        }
        self.live_tool = Some(index);
        let fragment = ToolUseBlock {
            id: id.clone().into(),
            name: name.clone().into(),
            input: ToolInput::null(),
            raw_input: Some(arguments),
        };
        let state = ToolState {
            id,
            name,
            arguments: String::new(),
            live: true,
        };
        (state, Some(fragment.into()))
    }

    fn block_delta(&mut self, index: Option<u64>, delta: Block<'_>) -> Option<ChatResponse> {
        let content = match delta.kind.as_deref() {
            Some("text_delta") => non_empty(delta.text).map(|text| ContentBlock::text(&*text)),
            Some("thinking_delta") => thinking(delta.thinking, None),
            Some("signature_delta") => thinking(None, delta.signature),
            Some("input_json_delta") => {
                let piece = non_empty(delta.partial_json)?;
                let block = self
                    .blocks
                    .iter_mut()
                    .rev()
                    .find(|block| Some(block.index) == index)?;
                match &mut block.kind {
                    BlockKind::Tool(tool) if tool.live => Some(
                        ToolUseBlock {
                            id: Default::default(),
                            name: Default::default(),
                            input: ToolInput::null(),
                            raw_input: Some(piece.into_owned()),
                        }
                        .into(),
                    ),
                    BlockKind::Tool(tool) => {
                        tool.arguments.push_str(&piece);
                        None
                    }
                    _ => None,
                }
            }
            // `citations_delta` and kinds added later carry nothing this client keeps.
            _ => None,
        }?;
        Some(self.chunk(vec![content]))
    }

    fn chunk(&self, content: Vec<ContentBlock>) -> ChatResponse {
        ChatResponse::new(content).with_id(self.id.clone())
    }

    /// The last chunk: buffered tool calls in index order, the usage and the stop reason.
    fn final_chunk(&mut self) -> Option<ChatResponse> {
        let mut buffered: Vec<(u64, ToolState)> = std::mem::take(&mut self.blocks)
            .into_iter()
            .filter_map(|block| match block.kind {
                BlockKind::Tool(tool) if !tool.live => Some((block.index, tool)),
                _ => None,
            })
            .collect();
        buffered.sort_by_key(|(index, _)| *index);
        let content: Vec<ContentBlock> = buffered
            .into_iter()
            .map(|(_, tool)| {
                ToolUseBlock {
                    id: tool.id.into(),
                    name: tool.name.into(),
                    input: ToolInput::null(),
                    raw_input: Some(tool.arguments),
                }
                .into()
            })
            .collect();
        let usage = self.usage.is_known().then(|| {
            let mut usage = ChatUsage::new(
                self.usage.total_input(),
                self.usage.output_tokens.unwrap_or(0),
            );
            // A zero is no cache use: reported as none, as every client does.
            usage.cache_read_input_tokens = self.usage.cache_read_input_tokens.filter(|n| *n > 0);
            usage.cache_creation_input_tokens =
                self.usage.cache_creation_input_tokens.filter(|n| *n > 0);
            usage
        });
        self.usage = Usage::default();
        let finish_reason = self.stop_reason.take();
        let model = self.model.take();
        if content.is_empty() && usage.is_none() && finish_reason.is_none() && model.is_none() {
            return None;
        }
        let mut response = ChatResponse::new(content).with_id(self.id.clone());
        response.usage = usage;
        response.finish_reason = finish_reason;
        response.model = model;
        Some(response)
    }
}

/// A block of a whole (non-streamed) message.
fn whole_block(block: Block<'_>) -> Option<ContentBlock> {
    match block.kind.as_deref() {
        Some("text") => non_empty(block.text).map(|text| ContentBlock::text(&*text)),
        Some("thinking") => thinking(block.thinking, block.signature),
        Some("tool_use") => Some(
            ToolUseBlock::new(
                non_empty(block.id).map_or_else(generated_call_id, Cow::into_owned),
                block.name.as_deref().unwrap_or_default(),
                block.input.unwrap_or(Value::Null),
            )
            .into(),
        ),
        Some("redacted_thinking") => redacted_thinking(block.data),
        other => {
            tracing::debug!(
                block = other.unwrap_or(""),
                "ignoring a content block of a kind this client does not handle"
            );
            None
        }
    }
}

/// A thinking block with this text and signature; `None` when both are empty.
fn thinking(text: Option<Cow<'_, str>>, signature: Option<Cow<'_, str>>) -> Option<ContentBlock> {
    let text = non_empty(text);
    let signature = non_empty(signature);
    if text.is_none() && signature.is_none() {
        return None;
    }
    Some(ContentBlock::Thinking(ThinkingBlock {
        thinking: text.as_deref().unwrap_or_default().into(),
        signature: signature.as_deref().map(Into::into),
    }))
}

/// A redacted thinking block with this encrypted data; `None` without data (there would
/// be nothing to send back).
fn redacted_thinking(data: Option<Cow<'_, str>>) -> Option<ContentBlock> {
    let Some(data) = non_empty(data) else {
        tracing::debug!("dropping a redacted_thinking block without data");
        return None;
    };
    Some(ContentBlock::RedactedThinking(RedactedThinkingBlock {
        data: (&*data).into(),
    }))
}

/// An `error` event (or body): its `error`'s message, else the whole payload.
fn stream_error(value: Value) -> ModelError {
    let message = match value {
        Value::Object(mut fields) => match fields.remove("error") {
            Some(error) if !error.is_null() => error_text(error),
            _ => Value::Object(fields).to_string(),
        },
        other => other.to_string(),
    };
    ModelError::Stream { message }
}

fn not_an_object(value: &Value) -> ModelError {
    ModelError::InvalidResponse {
        message: format!(
            "expected a JSON object, got: {}",
            snippet(&value.to_string())
        ),
    }
}

/// An id for a tool call that came without one (the engine matches results by id).
fn generated_call_id() -> String {
    format!("toolu_{:016x}", fastrand::u64(..))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use agentscope_http::testing::{self, assemble};
    use agentscope_test::model_conformance::{Scenario, Stop, scenarios};
    use serde_json::json;

    const THINKING: &str = include_str!("../tests/fixtures/thinking_text.sse");
    const TOOL: &str = include_str!("../tests/fixtures/tool_call.sse");

    /// The transcripts of the conformance scenarios (each named after its scenario).
    fn fixtures() -> Vec<(String, String)> {
        testing::sse_fixtures(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
    }

    fn decode(pieces: &[&[u8]]) -> (Vec<ChatResponse>, Option<ModelError>) {
        testing::decode::<Decoder>(pieces)
    }

    fn decode_ok(body: &str) -> Vec<ChatResponse> {
        let (chunks, err) = decode(&[body.as_bytes()]);
        assert!(err.is_none(), "{err:?}");
        chunks
    }

    fn scenario(name: &str) -> Scenario {
        scenarios()
            .into_iter()
            .find(|scenario| scenario.name == name)
            .unwrap()
    }

    #[test]
    fn every_fixture_assembles_into_its_scenarios_message() {
        let fixtures = fixtures();
        let names: Vec<&str> = fixtures.iter().map(|(name, _)| name.as_str()).collect();
        let mut scenario_names: Vec<&str> = scenarios().iter().map(|s| s.name).collect();
        scenario_names.sort_unstable();
        assert_eq!(names, scenario_names);
        for (name, body) in &fixtures {
            let scenario = scenario(name);
            let msg = assemble(&decode_ok(body));
            assert_eq!(msg.content, scenario.expected, "{name}");
            // The conversation's counts, plus the cache counts this recording reports
            // (non-zero only in the parallel one).
            let mut usage = json!({
                "input_tokens": scenario.usage.input_tokens,
                "output_tokens": scenario.usage.output_tokens
            });
            if *name == "parallel_tool_calls" {
                usage["cache_read_input_tokens"] = json!(64);
                usage["cache_creation_input_tokens"] = json!(14);
            }
            assert_eq!(msg.metadata["usage"], usage, "{name}");
            let reason = match scenario.stop {
                Stop::Answer => "end_turn",
                Stop::ToolUse => "tool_use",
                Stop::MaxTokens => "max_tokens",
            };
            assert_eq!(msg.finish_reason(), Some(reason), "{name}");
        }
    }

    agentscope_http::fixture_split_tests!(Decoder, fixtures());

    #[test]
    fn tool_calls_stream_live_start_fragment_then_pieces_with_empty_ids() {
        let chunks = decode_ok(TOOL);
        let tool_blocks = testing::tool_use_blocks(&chunks);
        assert_eq!(
            tool_blocks[0],
            &ToolUseBlock {
                id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
                name: "get_weather".into(),
                input: ToolInput::null(),
                raw_input: Some(String::new()),
            }
        );
        let pieces: Vec<&str> = tool_blocks[1..]
            .iter()
            .map(|t| {
                assert!(t.id.is_empty() && t.name.is_empty() && t.input.is_null());
                t.raw_input.as_deref().unwrap()
            })
            .collect();
        // The empty first `partial_json` is not sent on.
        assert_eq!(
            pieces,
            ["{\"", "location", "\":\"", "Paris", ",", " France", "\"}"]
        );
        // Every chunk carries the message id; usage and stop reason only the last.
        assert!(chunks.iter().all(|c| c.id == "msg_01ToolCallAbCdEf"));
        let (last, rest) = chunks.split_last().unwrap();
        assert!(
            rest.iter()
                .all(|c| c.usage.is_none() && c.finish_reason.is_none())
        );
        assert_eq!(
            last,
            &ChatResponse::new(Vec::new())
                .with_id("msg_01ToolCallAbCdEf")
                .with_usage(ChatUsage::new(67, 16))
                .with_finish_reason("tool_use")
                .with_model("claude-sonnet-4-5")
        );
    }

    #[test]
    fn a_signature_delta_is_a_thinking_block_with_only_a_signature() {
        let chunks = decode_ok(THINKING);
        let signatures: Vec<&ContentBlock> = chunks
            .iter()
            .flat_map(|c| &c.content)
            .filter(|b| matches!(b, ContentBlock::Thinking(t) if t.signature.is_some()))
            .collect();
        assert_eq!(
            signatures,
            [&ContentBlock::Thinking(ThinkingBlock {
                thinking: "".into(),
                signature: Some("EqQBCkgIARABGAIiQMp1kJmH".into()),
            })]
        );
    }

    /// An event stream from parts: `(event name, payload)`.
    fn sse(events: &[(&str, Value)]) -> String {
        events
            .iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect()
    }

    fn start(id: &str, input_tokens: u64) -> (&'static str, Value) {
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "content": [],
                "model": "claude-test", "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
        )
    }

    /// The start of message `id` (3 input tokens) whose first block is text, begun with
    /// `text`.
    fn text_begun(id: &str, text: &str) -> Vec<(&'static str, Value)> {
        vec![
            start(id, 3),
            block_start(0, json!({"type": "text", "text": ""})),
            text_delta(0, text),
        ]
    }

    fn block_start(index: u64, block: Value) -> (&'static str, Value) {
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    }

    fn delta(index: u64, delta: Value) -> (&'static str, Value) {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    }

    fn text_delta(index: u64, text: &str) -> (&'static str, Value) {
        delta(index, json!({"type": "text_delta", "text": text}))
    }

    fn json_delta(index: u64, piece: &str) -> (&'static str, Value) {
        delta(
            index,
            json!({"type": "input_json_delta", "partial_json": piece}),
        )
    }

    fn block_stop(index: u64) -> (&'static str, Value) {
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    }

    fn message_delta(stop_reason: &str, usage: Value) -> (&'static str, Value) {
        (
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": usage}),
        )
    }

    fn stop() -> (&'static str, Value) {
        ("message_stop", json!({"type": "message_stop"}))
    }

    fn tool_start(index: u64, id: &str, name: &str) -> (&'static str, Value) {
        block_start(
            index,
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
        )
    }

    #[test]
    fn error_events_end_the_stream_with_the_providers_message() {
        let mut events = text_begun("msg_e", "Partial");
        events.extend([
            (
                "error",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
            text_delta(0, " never seen"),
        ]);
        let body = sse(&events);
        let (chunks, err) = decode(&[body.as_bytes()]);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].content, vec![ContentBlock::text("Partial")]);
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("model stream error: Overloaded")
        );

        // An error payload without the `event:` line.
        let (_, err) = decode(&[
            b"data: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}\n\n",
        ]);
        assert!(
            matches!(err, Some(ModelError::Stream { ref message }) if message == "Internal server error"),
            "{err:?}"
        );
        // An `error` event whose data is not JSON, or has no `error` field.
        let (_, err) = decode(&[b"event: error\ndata: upstream went away\n\n"]);
        assert!(
            matches!(err, Some(ModelError::Stream { ref message }) if message == "upstream went away"),
            "{err:?}"
        );
        let (_, err) = decode(&[b"event: error\ndata: {\"type\":\"error\",\"detail\":\"x\"}\n\n"]);
        assert!(
            matches!(err, Some(ModelError::Stream { ref message }) if message == r#"{"detail":"x","type":"error"}"#),
            "{err:?}"
        );
        // Garbage where an event should be.
        let (_, err) = decode(&[b"event: message_start\ndata: {not json\n\n"]);
        assert!(
            matches!(err, Some(ModelError::InvalidResponse { ref message }) if message.contains("{not json")),
            "{err:?}"
        );
        let (_, err) = decode(&[b"data: [1, 2]\n\n"]);
        assert!(
            matches!(err, Some(ModelError::InvalidResponse { ref message }) if message == "expected a JSON object, got: [1,2]"),
            "{err:?}"
        );
    }

    #[test]
    fn a_malformed_known_field_is_a_clear_error() {
        let error_of = |data: &str| {
            let body = format!("event: content_block_delta\ndata: {data}\n\n");
            match decode(&[body.as_bytes()]).1 {
                Some(ModelError::InvalidResponse { message }) => message,
                other => panic!("an invalid response expected, got {other:?}"),
            }
        };
        assert_eq!(
            error_of(r#"{"type":"content_block_delta","index":0,"delta":{"text":"a}}"#),
            r#"not a JSON event (EOF while parsing a string at line 1 column 60): {"type":"content_block_delta","index":0,"delta":{"text":"a}}"#
        );
        assert_eq!(
            error_of(r#"{"type":"content_block_delta","index":01}"#),
            r#"not a JSON event (invalid number at line 1 column 40): {"type":"content_block_delta","index":01}"#
        );
        // An unknown field is skipped, but still has to be JSON.
        assert_eq!(
            error_of(r#"{"type":"ping","extra":[1,,2]}"#),
            r#"not a JSON event (expected value at line 1 column 27): {"type":"ping","extra":[1,,2]}"#
        );
    }

    #[test]
    fn an_error_mid_piece_is_the_last_item_and_nothing_follows_it() {
        let text_chunk =
            |text: &str| ChatResponse::new(vec![ContentBlock::text(text)]).with_id("msg_e");
        // The items of a feed, an error as its text.
        let messages = |items: Vec<Result<ChatResponse, ModelError>>| {
            let items = items.into_iter();
            items
                .map(|item| item.map_err(|e| e.to_string()))
                .collect::<Vec<_>>()
        };
        let mut decoder = Decoder::default();
        // Several events of one piece: the piece's vector is given back and reused.
        let first = sse(&text_begun("msg_e", "caf\u{e9} \"a\""));
        assert_eq!(
            messages(decoder.feed(first.as_bytes())),
            [Ok(text_chunk("café \"a\""))]
        );
        let mut piece = sse(&[text_delta(0, "b")]);
        piece.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"text\":\"x}}\n\n");
        piece.push_str(&sse(&[text_delta(0, "c"), stop()]));
        assert_eq!(
            messages(decoder.feed(piece.as_bytes())),
            [
                Ok(text_chunk("b")),
                Err(r#"invalid model response: not a JSON event (EOF while parsing a string at line 1 column 60): {"type":"content_block_delta","index":0,"delta":{"text":"x}}"#.to_owned())
            ]
        );
        assert!(
            decoder
                .feed(sse(&[text_delta(0, "d")]).as_bytes())
                .is_empty()
        );
        assert!(decoder.finish().is_empty());
    }

    #[test]
    fn a_repeated_key_reads_as_before_the_last_one_wins() {
        let mut events = text_begun("msg_d", "a");
        events.extend([
            block_stop(0),
            message_delta("end_turn", json!({"output_tokens": 2})),
        ]);
        let mut body = sse(&events);
        body.push_str(
            "event: message_stop\ndata: {\"type\":\"content_block_delta\",\"index\":0,\
             \"delta\":{\"type\":\"text_delta\",\"text\":\"x\",\"text\":\"y\"},\
             \"type\":\"message_stop\"}\n\n",
        );
        let chunks = decode_ok(&body);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].content, vec![ContentBlock::text("a")]);
        assert_eq!(chunks[1].finish_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn a_cut_off_body_is_a_stream_error_and_a_stop_reason_is_enough_to_finish() {
        let cut = sse(&text_begun("msg_c", "Partial answer before "));
        testing::assert_chunks_then_error::<Decoder>(
            cut.as_bytes(),
            1,
            "model stream error: the response stream ended before the model finished (no \
             message_stop and no stop_reason): the connection was cut; the partial answer \
             is discarded",
        );
        // Only keep-alives, then the end: cut before any answer.
        let (chunks, err) = decode(&[b": ping\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n"]);
        assert!(chunks.is_empty());
        assert!(matches!(err, Some(ModelError::Stream { .. })), "{err:?}");
        // A stop reason without message_stop (a proxy dropped the last event).
        let mut events = text_begun("msg_s", "Done.");
        events.extend([
            block_stop(0),
            message_delta("end_turn", json!({"output_tokens": 2})),
        ]);
        let body = sse(&events);
        let chunks = decode_ok(&body);
        assert_eq!(
            chunks.last().unwrap(),
            &ChatResponse::new(Vec::new())
                .with_id("msg_s")
                .with_usage(ChatUsage::new(3, 2))
                .with_finish_reason("end_turn")
                .with_model("claude-test")
        );
        // An empty body is no error here (the transport sends the request once more).
        let (chunks, err) = decode(&[b""]);
        assert!(chunks.is_empty() && err.is_none());
    }

    #[test]
    fn a_body_that_is_not_an_event_stream_is_reported() {
        testing::assert_html_is_not_an_event_stream::<Decoder>();
    }

    #[test]
    fn nothing_after_message_stop_is_read() {
        let body = format!(
            "{}data: {{broken\n\n",
            sse(&[
                start("msg_n", 1),
                message_delta("end_turn", json!({"output_tokens": 1})),
                stop()
            ])
        );
        let (chunks, err) = decode(&[body.as_bytes()]);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].finish_reason.as_deref(), Some("end_turn"));
        let mut decoder = Decoder::default();
        decoder.feed(body.as_bytes());
        assert!(decoder.is_done());
        assert!(decoder.feed(b"event: ping\ndata: {}\n\n").is_empty());
        assert!(decoder.finish().is_empty());
    }

    #[test]
    fn usage_counts_cache_tokens_as_input_and_takes_the_latest_counts() {
        let body = sse(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_u", "content": [],
                    "usage": {"input_tokens": 12, "cache_creation_input_tokens": 300,
                              "cache_read_input_tokens": 2000, "output_tokens": 1}}}),
            ),
            block_start(0, json!({"type": "text", "text": "Hi"})),
            block_stop(0),
            message_delta("end_turn", json!({"output_tokens": 5})),
            message_delta("end_turn", json!({"output_tokens": 9, "input_tokens": 14})),
            stop(),
        ]);
        let chunks = decode_ok(&body);
        // Initial text in `content_block_start` counts.
        assert_eq!(chunks[0].content, vec![ContentBlock::text("Hi")]);
        assert_eq!(
            chunks[1].usage,
            Some(
                ChatUsage::new(2314, 9)
                    .with_cache_read(2000)
                    .with_cache_creation(300)
            )
        );
        assert_eq!(chunks.len(), 2);
    }

    #[test]
    fn redacted_thinking_is_kept_and_server_blocks_are_dropped() {
        let body = sse(&[
            start("msg_r", 5),
            block_start(
                0,
                json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p"}),
            ),
            block_stop(0),
            block_start(
                1,
                json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
            ),
            json_delta(1, "{\"query\": \"rust\"}"),
            block_stop(1),
            block_start(2, json!({"type": "text", "text": ""})),
            text_delta(2, "Found it."),
            delta(
                2,
                json!({"type": "citations_delta", "citation": {"type": "web_search_result_location"}}),
            ),
            block_stop(2),
            ("surprise", json!({"type": "surprise", "x": 1})),
            message_delta("end_turn", json!({"output_tokens": 7})),
            stop(),
        ]);
        let msg = assemble(&decode_ok(&body));
        assert_eq!(
            msg.content,
            vec![
                ContentBlock::RedactedThinking(RedactedThinkingBlock {
                    data: "EmwKAhgBEgy3va3p".into()
                }),
                ContentBlock::text("Found it.")
            ]
        );
        assert_eq!(msg.finish_reason(), Some("end_turn"));
    }

    #[test]
    fn a_call_that_starts_while_another_is_open_is_buffered_and_arrives_whole() {
        let body = sse(&[
            start("msg_i", 5),
            tool_start(0, "toolu_a", "f"),
            tool_start(1, "toolu_b", "g"),
            json_delta(0, "{\"x\":"),
            json_delta(1, "{\"y\":"),
            json_delta(0, " 1}"),
            json_delta(1, " 2}"),
            block_stop(0),
            block_stop(1),
            tool_start(2, "", "h"),
            json_delta(2, "{}"),
            block_stop(2),
            message_delta("tool_use", json!({"output_tokens": 30})),
            stop(),
        ]);
        let chunks = decode_ok(&body);
        assert_eq!(
            chunks.last().unwrap().content,
            vec![ContentBlock::ToolUse(ToolUseBlock {
                id: "toolu_b".into(),
                name: "g".into(),
                input: ToolInput::null(),
                raw_input: Some("{\"y\": 2}".into()),
            })]
        );
        let msg = assemble(&chunks);
        let uses = msg.tool_uses();
        assert_eq!(uses.len(), 3);
        assert_eq!(
            (uses[0].id.as_str(), uses[0].name.as_str(), &*uses[0].input),
            ("toolu_a", "f", &json!({"x": 1}))
        );
        // A call without an id gets one, so it does not continue the previous call.
        assert!(
            uses[1].id.starts_with("toolu_") && uses[1].id.len() == 22,
            "{}",
            uses[1].id
        );
        assert_eq!((uses[1].name.as_str(), &*uses[1].input), ("h", &json!({})));
        assert_eq!(
            (uses[2].id.as_str(), &*uses[2].input),
            ("toolu_b", &json!({"y": 2}))
        );
    }

    #[test]
    fn whole_message_decodes_like_a_stream() {
        let body = json!({
            "id": "msg_01Whole", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [
                {"type": "thinking", "thinking": "Need weather.", "signature": "EqQBsig"},
                {"type": "redacted_thinking", "data": "xyz"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "t", "input": {}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 20}
        });
        let (chunks, err) = testing::decode_json::<Decoder>(body.to_string().as_bytes());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(chunks.len(), 2);
        assert!(chunks.iter().all(|c| c.id == "msg_01Whole"));
        assert_eq!(chunks[1].finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            chunks[1].usage,
            Some(ChatUsage::new(100, 20).with_cache_read(90))
        );
        let msg = assemble(&chunks);
        assert_eq!(
            msg.content,
            vec![
                ContentBlock::Thinking(ThinkingBlock {
                    thinking: "Need weather.".into(),
                    signature: Some("EqQBsig".into()),
                }),
                ContentBlock::RedactedThinking(RedactedThinkingBlock { data: "xyz".into() }),
                ContentBlock::text("Checking."),
                ToolUseBlock::new("toolu_1", "w", json!({"city": "Paris"})).into(),
                ToolUseBlock::new("toolu_2", "t", json!({})).into(),
            ]
        );
        assert_eq!(msg.finish_reason(), Some("tool_use"));
    }

    #[test]
    fn json_error_bodies_and_garbage() {
        let decode_json = |body: &str| Decoder::default().decode_json(body.as_bytes());
        let items = decode_json(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert!(
            matches!(&items[..], [Err(ModelError::Stream { message })] if message == "Overloaded"),
            "{items:?}"
        );
        let items = decode_json("<html>");
        assert!(
            matches!(&items[..], [Err(ModelError::InvalidResponse { message })] if message.ends_with(": <html>")),
            "{items:?}"
        );
        let items = decode_json("\"text\"");
        assert!(
            matches!(&items[..], [Err(ModelError::InvalidResponse { .. })]),
            "{items:?}"
        );
    }

    #[test]
    fn generated_call_ids_differ() {
        let ids: std::collections::HashSet<String> = (0..20).map(|_| generated_call_id()).collect();
        assert!(ids.len() > 15);
    }
}
