//! Turns the chat-completions wire format (SSE bytes, or one JSON completion) into
//! [`ChatResponse`] delta chunks.
//!
//! # Tool-call fragments
//!
//! OpenAI streams a tool call as `delta.tool_calls[{index, id?, function{name?, arguments?}}]`:
//! the first fragment of an index carries the id and name, later ones pieces of the argument
//! text. The engine's [`ChatAccumulator`](agentscope_core::ChatAccumulator) continues only the
//! most recent call (a fragment with an empty id), so fragments can be forwarded live only
//! for one call at a time. The decoder therefore streams the **first** call of a response
//! live (first fragment with id and name, continuations with an empty id) and buffers every
//! other call per index; buffered calls are emitted whole, in index order, when the response
//! ends (`[DONE]` or end of body). That assembles correctly whatever order the provider sends
//! fragments in, including interleaved parallel calls, and still streams the arguments of
//! the common single call as they arrive.

use std::borrow::Cow;

use agentscope_core::{ChatResponse, ChatUsage, ContentBlock, ModelError, ToolInput, ToolUseBlock};
use serde::Deserialize;
use serde_json::Value;

use agentscope_http::Decode;
use agentscope_http::lenient::{error_text, non_empty, not_json, snippet};
use agentscope_http::sse::{self, SseBody};

use crate::response::{Chunk, Content, Delta, ToolCallDelta};

/// Decodes one streamed response.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    body: SseBody,
    id: String,
    calls: Vec<CallState>,
    /// The position in `calls` of the call that is streamed live.
    live: Option<usize>,
    usage: Option<ChatUsage>,
    /// The model that answered, sent on the final chunk.
    model: Option<String>,
    done: bool,
    /// Whether a choice said why it finished (`finish_reason`): a body that ends without
    /// `[DONE]` and without one was cut off.
    finished: bool,
}

#[derive(Debug)]
struct CallState {
    /// The provider's index (or a synthetic one when it sent none).
    index: u64,
    id: String,
    name: String,
    /// Argument text received so far (buffered calls only).
    arguments: String,
}

impl Decode for Decoder {
    /// Whether the response ended (`[DONE]`, a final JSON completion or an error).
    fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds a piece of the SSE body; returns the chunks it completes. An `Err` item is
    /// always the last one: the response is over.
    ///
    /// After `[DONE]` the final chunk (buffered tool calls and usage) is returned and further
    /// input is ignored.
    fn feed(&mut self, bytes: &[u8]) -> Vec<Result<ChatResponse, ModelError>> {
        if self.done {
            return Vec::new();
        }
        self.body.feed(bytes);
        self.drain_events()
    }

    /// Ends the body: dispatches an unterminated last event, then returns the final chunk
    /// (buffered tool calls and usage), if any.
    fn finish(&mut self) -> Vec<Result<ChatResponse, ModelError>> {
        if self.done {
            return Vec::new();
        }
        self.body.finish();
        let mut out = self.drain_events();
        if !self.done
            && let Some(error) = self.body.not_an_event_stream()
        {
            // Something else answered (an HTML error page from a proxy, ...).
            self.done = true;
            out.push(Err(error));
        }
        if !self.done && !self.finished && self.body.recognised() {
            // Neither `[DONE]` nor a finish reason: the connection was cut mid-answer. What
            // arrived is not an answer; the caller may retry.
            self.done = true;
            out.push(Err(sse::cut_off("[DONE] and no finish_reason")));
        }
        if !self.done {
            self.done = true;
            out.extend(self.final_chunk().map(Ok));
        }
        out
    }

    /// Decodes a whole (non-streamed) chat completion, for servers that ignore `stream`.
    fn decode_json(&mut self, body: &[u8]) -> Vec<Result<ChatResponse, ModelError>> {
        self.done = true;
        let value: Value = match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(err) => return vec![Err(not_json("chunk", body, &err))],
        };
        match self.handle_value(&value, false) {
            Ok(chunk) => chunk
                .into_iter()
                .chain(self.final_chunk())
                .map(Ok)
                .collect(),
            Err(err) => vec![Err(err)],
        }
    }
}

impl Decoder {
    fn drain_events(&mut self) -> Vec<Result<ChatResponse, ModelError>> {
        let mut events = self.body.take_events();
        let mut out = Vec::with_capacity(events.len());
        for event in events.drain(..) {
            let data = event.data.trim();
            if data == "[DONE]" {
                self.done = true;
                out.extend(self.final_chunk().map(Ok));
                break;
            }
            if data.is_empty() {
                continue;
            }
            let is_error_event = event.event.as_deref() == Some("error");
            match self.handle_data(data, is_error_event) {
                Ok(chunk) => out.extend(chunk.map(Ok)),
                Err(err) => {
                    self.done = true;
                    out.push(Err(err));
                    break;
                }
            }
        }
        self.body.recycle(events);
        out
    }

    /// Handles one event's data.
    ///
    /// A chunk object is deserialized straight into [`Chunk`] (its texts borrowed from
    /// `data`). Anything that does not read so (an `error` event, data that is not an
    /// object, is not JSON, or repeats a key) is read into a [`Value`] first, as the error
    /// messages and the last-key-wins reading of repeated keys need.
    fn handle_data(
        &mut self,
        data: &str,
        is_error_event: bool,
    ) -> Result<Option<ChatResponse>, ModelError> {
        if !is_error_event
            && data.starts_with('{')
            && let Ok(chunk) = serde_json::from_str::<Chunk<'_>>(data)
        {
            return self.handle_chunk(chunk, None);
        }
        match serde_json::from_str::<Value>(data) {
            Ok(value) => self.handle_value(&value, is_error_event),
            Err(_) if is_error_event => Err(ModelError::Stream {
                message: data.to_owned(),
            }),
            Err(err) => Err(not_json("chunk", data.as_bytes(), &err)),
        }
    }

    /// Handles one chunk read as a [`Value`] (`chat.completion.chunk`, or a whole
    /// `chat.completion`).
    fn handle_value(
        &mut self,
        value: &Value,
        is_error_event: bool,
    ) -> Result<Option<ChatResponse>, ModelError> {
        if !value.is_object() {
            let text = value.to_string();
            return Err(if is_error_event {
                ModelError::Stream { message: text }
            } else {
                ModelError::InvalidResponse {
                    message: format!("expected a JSON object, got: {}", snippet(&text)),
                }
            });
        }
        let event_text = is_error_event.then(|| value.to_string());
        // Never the default in practice: every field of a chunk is read leniently.
        let chunk = Chunk::deserialize(value).unwrap_or_default();
        self.handle_chunk(chunk, event_text)
    }

    /// Handles one chunk; `event_text` is the payload of an `error` event.
    fn handle_chunk(
        &mut self,
        chunk: Chunk<'_>,
        event_text: Option<String>,
    ) -> Result<Option<ChatResponse>, ModelError> {
        if let Some(error) = chunk.error {
            return Err(ModelError::Stream {
                message: error_text(*error),
            });
        }
        // An `error` event without an `error` field: its whole payload is the message.
        if let Some(message) = event_text {
            return Err(ModelError::Stream { message });
        }
        if self.id.is_empty()
            && let Some(id) = chunk.id
        {
            self.id = id.into_owned();
        }
        if let Some(usage) = chunk.usage {
            // Deferred to the final chunk: some servers repeat cumulative usage on every
            // chunk, and the accumulator sums what it is given.
            let mut total = ChatUsage::new(
                usage.prompt_tokens.unwrap_or(0),
                usage.completion_tokens.unwrap_or(0),
            );
            total.cache_read_input_tokens = usage
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens)
                // A zero is no cache use: reported as none, as every client does.
                .filter(|n| *n > 0);
            self.usage = Some(total);
        }
        if self.model.is_none() {
            self.model = chunk.model.map(Cow::into_owned);
        }
        let Some(choice) = chunk.choice else {
            return Ok(None);
        };
        // Mostly one block: a text, a thinking or a tool-call fragment.
        let mut content = Vec::with_capacity(1);
        if let Some(delta) = choice.delta.or(choice.message) {
            self.handle_delta(*delta, &mut content);
        }
        self.finished |= choice.finish_reason.is_some();
        if content.is_empty() && choice.finish_reason.is_none() {
            return Ok(None);
        }
        let mut response = ChatResponse::new(content).with_id(self.id.clone());
        response.finish_reason = choice.finish_reason.map(Cow::into_owned);
        Ok(Some(response))
    }

    fn handle_delta(&mut self, delta: Delta<'_>, content: &mut Vec<ContentBlock>) {
        let reasoning = non_empty(delta.reasoning_content).or_else(|| non_empty(delta.reasoning));
        if let Some(thinking) = reasoning {
            content.push(ContentBlock::thinking(&*thinking));
        }
        match delta.content {
            Some(Content::Text(text)) if !text.is_empty() => {
                content.push(ContentBlock::text(&*text));
            }
            Some(Content::Parts(parts)) => {
                for part in parts {
                    if part.kind.as_deref() == Some("text")
                        && let Some(text) = non_empty(part.text)
                    {
                        content.push(ContentBlock::text(&*text));
                    }
                }
            }
            _ => {}
        }
        if let Some(refusal) = non_empty(delta.refusal) {
            content.push(ContentBlock::text(&*refusal));
        }
        for fragment in delta.tool_calls {
            if let Some(block) = self.tool_fragment(fragment) {
                content.push(block);
            }
        }
    }

    /// Records one tool-call fragment; returns the block to emit now (live call only).
    fn tool_fragment(&mut self, fragment: ToolCallDelta<'_>) -> Option<ContentBlock> {
        let index = fragment.index;
        let id = non_empty(fragment.id);
        let id = id.as_deref();
        let function = fragment.function.unwrap_or_default();
        let name = non_empty(function.name);
        let name = name.as_deref();
        // A few servers send the arguments as an object: its JSON text.
        let piece = function.arguments.unwrap_or_default();

        let existing = match index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|call| call.index == index)
                // The same index with another id is a new call (seen from servers that
                // number every call 0).
                .filter(|&at| id.is_none_or(|id| self.calls[at].id == id)),
            None => match self.calls.last() {
                Some(last) if id.is_none_or(|id| last.id == id) => Some(self.calls.len() - 1),
                _ => None,
            },
        };

        match existing {
            Some(at) => {
                let live = self.live == Some(at);
                let call = &mut self.calls[at];
                let named_now = call.name.is_empty() && name.is_some();
                if let Some(name) = name
                    && call.name.is_empty()
                {
                    name.clone_into(&mut call.name);
                }
                if !live {
                    call.arguments.push_str(&piece);
                    return None;
                }
                if piece.is_empty() && !named_now {
                    return None;
                }
                Some(
                    ToolUseBlock {
                        id: Default::default(),
                        name: if named_now {
                            call.name.clone().into()
                        } else {
                            Default::default()
                        },
                        input: ToolInput::null(),
                        raw_input: Some(piece.into_owned()),
                    }
                    .into(),
                )
            }
            None => {
                let index = index
                    .unwrap_or_else(|| self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0));
                let call = CallState {
                    index,
                    id: id.map_or_else(generated_call_id, str::to_owned),
                    name: name.unwrap_or_default().to_owned(),
                    arguments: String::new(),
                };
                if self.live.is_none() {
                    let block = ToolUseBlock {
                        id: call.id.clone().into(),
                        name: call.name.clone().into(),
                        input: ToolInput::null(),
                        raw_input: Some(piece.into_owned()),
                    };
                    self.calls.push(call);
                    self.live = Some(self.calls.len() - 1);
                    Some(block.into())
                } else {
                    let mut call = call;
                    call.arguments = piece.into_owned();
                    self.calls.push(call);
                    None
                }
            }
        }
    }

    /// The last chunk: buffered tool calls in index order, and the usage.
    fn final_chunk(&mut self) -> Option<ChatResponse> {
        let live = self.live;
        let mut buffered: Vec<CallState> = std::mem::take(&mut self.calls)
            .into_iter()
            .enumerate()
            .filter(|(at, _)| Some(*at) != live)
            .map(|(_, call)| call)
            .collect();
        buffered.sort_by_key(|call| call.index); // stable: same-index calls keep arrival order
        let content: Vec<ContentBlock> = buffered
            .into_iter()
            .map(|call| {
                ToolUseBlock {
                    id: call.id.into(),
                    name: call.name.into(),
                    input: ToolInput::null(),
                    raw_input: Some(call.arguments),
                }
                .into()
            })
            .collect();
        let usage = self.usage.take();
        let model = self.model.take();
        if content.is_empty() && usage.is_none() && model.is_none() {
            return None;
        }
        let mut response = ChatResponse::new(content).with_id(self.id.clone());
        response.usage = usage;
        response.model = model;
        Some(response)
    }
}

fn generated_call_id() -> String {
    format!("call_{:016x}", fastrand::u64(..))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_http::testing::{self, assemble};
    use serde_json::json;

    const PARALLEL: &str = include_str!("../tests/fixtures/parallel_tool_calls.sse");

    /// The transcripts of the conformance scenarios, and the fixtures of edge cases.
    fn fixtures() -> Vec<(String, String)> {
        testing::sse_fixtures(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
    }

    fn decode(pieces: &[&[u8]]) -> (Vec<ChatResponse>, Option<ModelError>) {
        testing::decode::<Decoder>(pieces)
    }

    agentscope_http::fixture_split_tests!(Decoder, fixtures());

    #[test]
    fn first_tool_call_streams_live_with_continuations_and_others_are_buffered() {
        let (chunks, _) = decode(&[PARALLEL.as_bytes()]);
        let tool_blocks = testing::tool_use_blocks(&chunks);
        let first = tool_blocks[0];
        assert_eq!(
            (
                first.id.as_str(),
                first.name.as_str(),
                first.raw_input.as_deref()
            ),
            ("call_Qx1Hc0mKo9bW2c3P4jrT8fGv", "get_weather", Some(""))
        );
        assert_eq!(first.input, Value::Null);
        // Continuations of the live call have an empty id and name.
        assert!(
            tool_blocks[1..tool_blocks.len() - 1]
                .iter()
                .all(|t| t.id.is_empty() && t.name.is_empty() && t.raw_input.is_some())
        );
        // The second call arrives whole in the final chunk, with the usage.
        let last = chunks.last().unwrap();
        assert!(last.usage.is_some());
        assert_eq!(
            last.content,
            vec![ContentBlock::ToolUse(ToolUseBlock {
                id: "call_Zb4k1lJ7tYbU2WqfE5nRxC3a".into(),
                name: "get_time".into(),
                input: ToolInput::null(),
                raw_input: Some("{\"timezone\": \"Europe/Paris\"}".into()),
            })]
        );
    }

    fn sse(values: &[Value]) -> String {
        let mut body = String::new();
        for value in values {
            body.push_str(&format!("data: {value}\n\n"));
        }
        body.push_str("data: [DONE]\n\n");
        body
    }

    fn tool_delta(tool_calls: Value) -> Value {
        json!({"id": "r1", "choices": [{"index": 0, "delta": {"tool_calls": tool_calls}}]})
    }

    #[test]
    fn calls_numbered_all_zero_with_distinct_ids_stay_distinct() {
        let body = sse(&[
            tool_delta(
                json!([{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"x\":1}"}}]),
            ),
            tool_delta(
                json!([{"index": 0, "id": "b", "function": {"name": "g", "arguments": "{\"y\":2}"}}]),
            ),
        ]);
        let msg = assemble(&decode(&[body.as_bytes()]).0);
        let uses = msg.tool_uses();
        assert_eq!(uses.len(), 2);
        assert_eq!(
            (uses[0].id.as_str(), &*uses[0].input),
            ("a", &json!({"x": 1}))
        );
        assert_eq!(
            (uses[1].id.as_str(), &*uses[1].input),
            ("b", &json!({"y": 2}))
        );
    }

    #[test]
    fn calls_without_index_or_id_and_object_arguments() {
        let body = sse(&[
            tool_delta(json!([
                {"function": {"name": "f", "arguments": {"x": 1}}},
                {"id": "k", "function": {"name": "g", "arguments": ""}}
            ])),
            tool_delta(json!([{"function": {"arguments": "{}"}}])),
        ]);
        let msg = assemble(&decode(&[body.as_bytes()]).0);
        let uses = msg.tool_uses();
        assert_eq!(uses.len(), 2);
        assert!(
            uses[0].id.starts_with("call_") && uses[0].id.len() == 21,
            "{}",
            uses[0].id
        );
        assert_eq!(
            (uses[0].name.as_str(), &*uses[0].input),
            ("f", &json!({"x": 1}))
        );
        assert_eq!((uses[1].id.as_str(), &*uses[1].input), ("k", &json!({})));
    }

    #[test]
    fn late_name_fills_in() {
        let body = sse(&[
            tool_delta(json!([{"index": 0, "id": "a", "function": {"arguments": "{"}}])),
            tool_delta(json!([{"index": 0, "function": {"name": "f", "arguments": "}"}}])),
        ]);
        let msg = assemble(&decode(&[body.as_bytes()]).0);
        assert_eq!(msg.tool_uses()[0].name, "f");
        assert_eq!(msg.tool_uses()[0].input, json!({}));
    }

    #[test]
    fn openrouter_reasoning_field_and_refusal_and_content_parts() {
        let body = sse(&[
            json!({"id": "r", "choices": [{"index": 0, "delta": {"reasoning": "hmm"}}]}),
            json!({"id": "r", "choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": "a"}]}}]}),
            json!({"id": "r", "choices": [{"index": 0, "delta": {"refusal": "b"}}]}),
        ]);
        let msg = assemble(&decode(&[body.as_bytes()]).0);
        assert_eq!(
            msg.content,
            vec![ContentBlock::thinking("hmm"), ContentBlock::text("ab")]
        );
    }

    #[test]
    fn cumulative_usage_is_reported_once() {
        let body = sse(&[
            json!({"id": "r", "choices": [{"index": 0, "delta": {"content": "a"}}], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}),
            json!({"id": "r", "choices": [{"index": 0, "delta": {"content": "b"}}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
        ]);
        let msg = assemble(&decode(&[body.as_bytes()]).0);
        assert_eq!(
            msg.metadata["usage"],
            json!({"input_tokens": 5, "output_tokens": 2})
        );
    }

    #[test]
    fn error_frames_and_garbage_end_the_stream() {
        let body = "data: {\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n\
                    data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n\
                    data: {\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n";
        let (chunks, err) = decode(&[body.as_bytes()]);
        assert_eq!(chunks.len(), 1);
        assert!(matches!(err, Some(ModelError::Stream { ref message }) if message == "overloaded"));

        let (_, err) = decode(&[b"event: error\ndata: upstream went away\n\n"]);
        assert!(
            matches!(err, Some(ModelError::Stream { ref message }) if message == "upstream went away")
        );

        let (_, err) = decode(&[b"data: {not json\n\n"]);
        assert!(
            matches!(err, Some(ModelError::InvalidResponse { ref message }) if message.contains("{not json"))
        );

        let (_, err) = decode(&[b"data: [1, 2]\n\n"]);
        assert!(matches!(err, Some(ModelError::InvalidResponse { .. })));
    }

    /// The message of the error that ends the stream made of these `data:` lines.
    fn error_of(data: &[&str]) -> String {
        let body: String = data.iter().map(|d| format!("data: {d}\n\n")).collect();
        match decode(&[body.as_bytes()]).1 {
            Some(ModelError::InvalidResponse { message }) => message,
            other => panic!("an invalid response expected, got {other:?}"),
        }
    }

    #[test]
    fn a_malformed_known_field_is_a_clear_error() {
        assert_eq!(
            error_of(&[r#"{"choices":[{"delta":{"content":"a}}]}"#]),
            r#"not a JSON chunk (EOF while parsing a string at line 1 column 38): {"choices":[{"delta":{"content":"a}}]}"#
        );
        assert_eq!(
            error_of(&[r#"{"choices":[{"index":0,"delta":{"content":tru}}]}"#]),
            r#"not a JSON chunk (expected ident at line 1 column 46): {"choices":[{"index":0,"delta":{"content":tru}}]}"#
        );
        assert_eq!(
            error_of(&[r#"{"id":"x","usage":{"prompt_tokens":1e}}"#]),
            r#"not a JSON chunk (invalid number at line 1 column 38): {"id":"x","usage":{"prompt_tokens":1e}}"#
        );
        // An unknown field is skipped, but still has to be JSON.
        assert_eq!(
            error_of(&[r#"{"logprobs":{"a":[1,}],"choices":[]}"#]),
            r#"not a JSON chunk (expected value at line 1 column 21): {"logprobs":{"a":[1,}],"choices":[]}"#
        );
        assert_eq!(error_of(&["[1, 2]"]), "expected a JSON object, got: [1,2]");
    }

    /// The items `decoder.feed(piece)` yields, an error as its text.
    fn feed(decoder: &mut Decoder, piece: &str) -> Vec<Result<ChatResponse, String>> {
        let items = decoder.feed(piece.as_bytes()).into_iter();
        items.map(|item| item.map_err(|e| e.to_string())).collect()
    }

    fn text_chunk(text: &str) -> ChatResponse {
        ChatResponse::new(vec![ContentBlock::text(text)]).with_id("r")
    }

    #[test]
    fn an_error_mid_piece_is_the_last_item_and_nothing_follows_it() {
        let chunk = |content: &str| {
            format!(
                "data: {{\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"choices\":\
                 [{{\"index\":0,\"delta\":{{\"content\":{content}}},\"logprobs\":null}}]}}\n\n"
            )
        };
        let mut decoder = Decoder::default();
        // Two events of one piece: the piece's vector is given back and reused.
        assert_eq!(
            feed(&mut decoder, &(chunk(r#""a""#) + &chunk(r#""\"b\"""#))),
            [Ok(text_chunk("a")), Ok(text_chunk("\"b\""))]
        );
        let piece = chunk(r#""c""#)
            + "data: {\"choices\":[{\"delta\":{\"content\":\"x}}]}\n\n"
            + &chunk(r#""d""#);
        assert_eq!(
            feed(&mut decoder, &piece),
            [
                Ok(text_chunk("c")),
                Err(r#"invalid model response: not a JSON chunk (EOF while parsing a string at line 1 column 38): {"choices":[{"delta":{"content":"x}}]}"#.to_owned())
            ]
        );
        assert_eq!(feed(&mut decoder, &chunk(r#""e""#)), []);
        assert!(decoder.finish().is_empty());
    }

    #[test]
    fn a_repeated_key_reads_as_before_the_last_one_wins() {
        let body = "data: {\"id\":\"a\",\"id\":\"b\",\"choices\":[{\"delta\":\
                    {\"content\":\"x\",\"content\":\"y\"},\"finish_reason\":\"stop\"}]}\n\n\
                    data: [DONE]\n\n";
        let (chunks, err) = decode(&[body.as_bytes()]);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            chunks,
            [ChatResponse::new(vec![ContentBlock::text("y")])
                .with_id("b")
                .with_finish_reason("stop")]
        );
    }

    #[test]
    fn a_body_that_is_not_an_event_stream_is_reported() {
        testing::assert_html_is_not_an_event_stream::<Decoder>();
        // Only keep-alives, then the end: the connection was cut before any answer.
        let (chunks, err) = decode(&[b": ping\n\n", b""]);
        assert!(chunks.is_empty());
        assert!(matches!(err, Some(ModelError::Stream { .. })), "{err:?}");
        let (chunks, err) = decode(&[b""]);
        assert!(chunks.is_empty() && err.is_none());
    }

    #[test]
    fn nothing_after_done_is_read_and_a_missing_done_needs_a_finish_reason() {
        let (chunks, err) = decode(&[b"data: [DONE]\n\ndata: {broken\n\n"]);
        assert!(chunks.is_empty() && err.is_none());
        // Cut off mid-answer: no [DONE], no finish_reason. The text that came is not an
        // answer.
        let cut = "data: {\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Partial answer before \"}}]}\n\n";
        testing::assert_chunks_then_error::<Decoder>(
            cut.as_bytes(),
            1,
            "model stream error: the response stream ended before the model finished (no \
             [DONE] and no finish_reason): the connection was cut; the partial answer is \
             discarded",
        );
        // A finish reason without [DONE] (some servers omit it) is a finished answer.
        let body = "data: {\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}";
        let (chunks, err) = decode(&[body.as_bytes()]);
        assert!(err.is_none());
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[1].usage, Some(ChatUsage::new(1, 1)));
    }

    #[test]
    fn whole_completion_decodes_like_a_stream() {
        let body = json!({
            "id": "chatcmpl-9", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Checking.", "reasoning_content": "Need weather.",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "t", "arguments": "{}"}}
                ]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}
        });
        let (chunks, err) = testing::decode_json::<Decoder>(body.to_string().as_bytes());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(chunks[0].finish_reason.as_deref(), Some("tool_calls"));
        let msg = assemble(&chunks);
        assert_eq!(msg.thinking(), "Need weather.");
        assert_eq!(msg.text(), "Checking.");
        let uses = msg.tool_uses();
        assert_eq!(
            (uses[0].id.as_str(), &*uses[0].input),
            ("c1", &json!({"city": "Paris"}))
        );
        assert_eq!((uses[1].id.as_str(), &*uses[1].input), ("c2", &json!({})));
        assert_eq!(
            msg.metadata["usage"],
            json!({"input_tokens": 10, "output_tokens": 20})
        );
    }

    /// The prompt-cache count (`prompt_tokens_details.cached_tokens`), the response id and the
    /// answering model reach the message, streamed and whole; a zero cache count is none.
    #[test]
    fn cached_tokens_response_id_and_model_are_decoded() {
        let streamed = sse(&[
            json!({"id": "chatcmpl-7", "model": "gpt-4o-2024-08-06",
                   "choices": [{"index": 0, "delta": {"content": "Hi"}}]}),
            json!({"id": "chatcmpl-7", "model": "gpt-4o-2024-08-06",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"id": "chatcmpl-7", "model": "gpt-4o-2024-08-06", "choices": [],
                   "usage": {"prompt_tokens": 1200, "completion_tokens": 2,
                             "prompt_tokens_details": {"cached_tokens": 1024}}}),
        ]);
        let (chunks, err) = decode(&[streamed.as_bytes()]);
        assert!(err.is_none(), "{err:?}");
        let last = chunks.last().unwrap();
        assert_eq!(last.model.as_deref(), Some("gpt-4o-2024-08-06"));
        assert_eq!(
            last.usage,
            Some(ChatUsage::new(1200, 2).with_cache_read(1024))
        );
        let msg = assemble(&chunks);
        assert_eq!(msg.response_id(), Some("chatcmpl-7"));
        assert_eq!(msg.response_model(), Some("gpt-4o-2024-08-06"));
        assert_eq!(
            msg.metadata["usage"],
            json!({"input_tokens": 1200, "output_tokens": 2, "cache_read_input_tokens": 1024})
        );

        let whole = json!({
            "id": "chatcmpl-8", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Hello."}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2,
                      "prompt_tokens_details": {"cached_tokens": 0}}
        });
        let (chunks, err) = testing::decode_json::<Decoder>(whole.to_string().as_bytes());
        assert!(err.is_none(), "{err:?}");
        let msg = assemble(&chunks);
        assert_eq!(msg.response_id(), Some("chatcmpl-8"));
        assert_eq!(msg.response_model(), Some("gpt-4o-mini-2024-07-18"));
        assert_eq!(
            msg.metadata["usage"],
            json!({"input_tokens": 10, "output_tokens": 2})
        );
    }

    #[test]
    fn generated_call_ids_differ() {
        let ids: std::collections::HashSet<String> = (0..20).map(|_| generated_call_id()).collect();
        assert!(ids.len() > 15);
    }
}
