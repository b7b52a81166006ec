//! One conformance suite for model clients: the same conversations, played by
//! [`ScriptedModel`] and by a real client against a local server speaking its protocol,
//! must assemble into the same messages and fail the same way, so every model feeds the
//! engine identically.
//!
//! Each [`Scenario`] is a response described as abstract delta [`Step`]s (what
//! [`ScriptedModel`] plays) with the message it must assemble into. A client crate
//! implements [`Wire`], which says how its protocol writes each scenario (a transcript,
//! recorded or written from the provider's reference), and runs [`check`] in one test:
//!
//! ```no_run
//! # use agentscope_test::model_conformance::{Scenario, Stop, Wire};
//! # use agentscope_test::ScriptedModel;
//! # use serde_json::Value;
//! # struct MyWire;
//! # impl Wire for MyWire {
//! #     type Model = ScriptedModel;
//! #     fn model(&self, base_url: &str) -> ScriptedModel { unimplemented!() }
//! #     fn transcript(&self, scenario: &Scenario) -> String { unimplemented!() }
//! #     fn finish_reason(&self, stop: Stop) -> &'static str { unimplemented!() }
//! #     fn empty_response(&self) -> String { unimplemented!() }
//! #     fn mid_stream_error(&self, partial: &str, message: &str) -> String { unimplemented!() }
//! #     fn cut_off(&self, partial: &str) -> String { unimplemented!() }
//! #     fn error_body(&self, message: &str) -> Value { unimplemented!() }
//! #     fn signs_thinking(&self) -> bool { false }
//! # }
//! // In a client crate: `#[tokio::test] async fn conformance() { ... }`
//! # async fn run() {
//! agentscope_test::model_conformance::check(&MyWire).await;
//! # }
//! ```
//!
//! [`check`] panics with the scenario's name and both outcomes at the first difference.
//! [`secrets`] holds the secret checks every client runs with its own builder.

use agentscope_core::{
    ChatAccumulator, ChatResponse, ChatUsage, ContentBlock, GenerateReason, Model, ModelError,
    ModelRequest, Msg, ThinkingBlock, ToolUseBlock,
};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::http::{HttpReply, TestServer};
use crate::{ScriptedChunk, ScriptedModel, ScriptedResponse};

pub mod secrets;

/// One delta of a scripted response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A text fragment.
    Text(&'static str),
    /// A thinking fragment.
    Thinking(&'static str),
    /// The thinking's signature (only for protocols that sign thinking).
    Signature(&'static str),
    /// The start of a streamed tool call.
    ToolStart {
        /// The call id.
        id: &'static str,
        /// The tool name.
        name: &'static str,
    },
    /// A piece of the current tool call's argument text.
    ToolArgs(&'static str),
}

/// Why a scenario's response ended, as the engine classifies it; each protocol has its own
/// word for each ([`Wire::finish_reason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The model finished its answer (`stop`, `end_turn`).
    Answer,
    /// The model asks for tool calls (`tool_calls`, `tool_use`).
    ToolUse,
    /// The output limit cut the answer (`length`, `max_tokens`).
    MaxTokens,
}

/// A response scenario, and the message it must assemble into.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// A short name, also the transcript's file name in client crates (`<name>.sse`).
    pub name: &'static str,
    /// The deltas, as a scripted model plays them.
    pub steps: Vec<Step>,
    /// The usage the response reports.
    pub usage: ChatUsage,
    /// Why it ended.
    pub stop: Stop,
    /// The content of the assembled message.
    pub expected: Vec<ContentBlock>,
}

impl Scenario {
    /// The scenario as a protocol sees it: without thinking signatures unless it signs
    /// thinking.
    pub fn for_protocol(&self, signs_thinking: bool) -> Self {
        let mut scenario = self.clone();
        if !signs_thinking {
            scenario
                .steps
                .retain(|step| !matches!(step, Step::Signature(_)));
            for block in &mut scenario.expected {
                if let ContentBlock::Thinking(thinking) = block {
                    thinking.signature = None;
                }
            }
        }
        scenario
    }

    /// The scenario as a [`ScriptedModel`] response, with the protocol's finish reason.
    pub fn scripted(&self, finish_reason: &str) -> ScriptedResponse {
        let chunks = self.steps.iter().map(|step| match *step {
            Step::Text(text) => ScriptedChunk::text(text),
            Step::Thinking(text) => ScriptedChunk::thinking(text),
            Step::Signature(signature) => ScriptedChunk::thinking_signature(signature),
            Step::ToolStart { id, name } => ScriptedChunk::tool_call_start(id, name),
            Step::ToolArgs(piece) => ScriptedChunk::tool_call_args(piece),
        });
        ScriptedResponse::chunks(chunks)
            .with_usage(self.usage.input_tokens, self.usage.output_tokens)
            .with_finish_reason(finish_reason)
    }
}

/// How a client's protocol writes the suite's responses, and the client under test.
pub trait Wire {
    /// The client.
    type Model: Model;

    /// The client pointed at `base_url` (a [`TestServer`]'s), with retries off.
    fn model(&self, base_url: &str) -> Self::Model;

    /// The body a server of this protocol sends for `scenario` (its deltas in order, its
    /// usage and its finish reason), ending as the protocol ends a response.
    fn transcript(&self, scenario: &Scenario) -> String;

    /// The protocol's finish reason for `stop`.
    fn finish_reason(&self, stop: Stop) -> &'static str;

    /// A complete response with no content at all (the model stopped at once).
    fn empty_response(&self) -> String;

    /// A stream that sends the text `partial`, then the protocol's error event with
    /// `message`.
    fn mid_stream_error(&self, partial: &str, message: &str) -> String;

    /// A stream that sends the text `partial` and then ends without the protocol's end of
    /// response (the connection was cut).
    fn cut_off(&self, partial: &str) -> String;

    /// The JSON body of an HTTP error with `message`.
    fn error_body(&self, message: &str) -> Value;

    /// Whether the protocol signs thinking (the signature is sent back in the next
    /// request).
    fn signs_thinking(&self) -> bool;
}

/// What a model call produced: the chunks received, and the assembled message or the
/// error that ended the call or its stream.
#[derive(Debug)]
pub struct Outcome {
    /// Every chunk, in order.
    pub chunks: Vec<ChatResponse>,
    /// The assembled message, or the error.
    pub result: Result<Msg, ModelError>,
}

/// Calls `model`, reads its stream to the end and assembles the chunks.
///
/// # Panics
///
/// When the stream yields anything after an error (a stream must end at its first error).
#[allow(clippy::panic)]
pub async fn run(model: &impl Model, request: ModelRequest) -> Outcome {
    let mut chunks = Vec::new();
    let mut stream = match model.stream(request).await {
        Ok(stream) => stream,
        Err(err) => {
            return Outcome {
                chunks,
                result: Err(err),
            };
        }
    };
    let mut acc = ChatAccumulator::new("assistant");
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => {
                acc.push(&chunk);
                chunks.push(chunk);
            }
            Err(err) => {
                if stream.next().await.is_some() {
                    panic!("the stream continued after {err}");
                }
                return Outcome {
                    chunks,
                    result: Err(err),
                };
            }
        }
    }
    Outcome {
        chunks,
        result: Ok(acc.finish()),
    }
}

/// Every text an error shows, one after the other: `Display`, `Debug`, pretty `Debug`,
/// and each source's `Display` and `Debug`. For checking that no secret is in any of them.
///
/// ```
/// use agentscope::ModelError;
///
/// let error = ModelError::Timeout;
/// assert!(agentscope_test::model_conformance::error_texts(&error).contains("Timeout"));
/// ```
pub fn error_texts(error: &ModelError) -> String {
    let mut texts = format!("{error}\n{error:?}\n{error:#?}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        texts.push_str(&format!("\n{cause}\n{cause:?}"));
        source = cause.source();
    }
    texts
}

/// The last attempt's error of a request a client (or a retry layer) gave up on after
/// `attempts` attempts: the source of [`ModelError::RetriesExhausted`].
///
/// ```
/// use agentscope::ModelError;
/// use agentscope_test::model_conformance::given_up_after;
///
/// let error = ModelError::gave_up_after(3, ModelError::Timeout);
/// assert!(matches!(given_up_after(&error, 3), ModelError::Timeout));
/// ```
///
/// # Panics
///
/// When `error` is not a request given up on after exactly `attempts` attempts.
#[allow(clippy::panic)]
pub fn given_up_after(error: &ModelError, attempts: u32) -> &ModelError {
    match error {
        ModelError::RetriesExhausted {
            attempts: made,
            source,
        } if *made == attempts => source,
        other => panic!("expected a request given up on after {attempts} attempts, got {other:?}"),
    }
}

/// A request with one user message, `Hello`.
pub fn hello() -> ModelRequest {
    ModelRequest::new(
        vec![Msg::user("Hello")],
        Default::default(),
        Default::default(),
    )
}

/// Runs the whole suite against `wire`'s client.
///
/// For every [`scenario`](scenarios): the client's message equals the scripted model's and
/// the scenario's expected content, with the same usage, and a finish reason the engine
/// classifies as the scenario's [`Stop`]. Then the failures: an error event mid-stream ends
/// the stream after the partial text with [`ModelError::Stream`] carrying the provider's
/// message; a 429 before any output is a rate-limit error with the same text from both
/// models; a cut-off stream is a retryable error, never a partial answer; and an empty
/// response is sent once more (two requests) before its answer is used.
///
/// # Panics
///
/// At the first difference, naming the scenario.
#[allow(clippy::panic)]
pub async fn check<W: Wire>(wire: &W) {
    for scenario in scenarios() {
        let scenario = scenario.for_protocol(wire.signs_thinking());
        let name = scenario.name;
        let finish_reason = wire.finish_reason(scenario.stop);
        let client = play(wire, HttpReply::sse(&wire.transcript(&scenario))).await;
        let scripted = run(
            &ScriptedModel::new([scenario.scripted(finish_reason)]),
            hello(),
        )
        .await;
        let (client, scripted) = match (client.result, scripted.result) {
            (Ok(client), Ok(scripted)) => (client, scripted),
            (client, scripted) => panic!("{name}: client {client:?}, scripted {scripted:?}"),
        };
        assert_eq!(client.content, scenario.expected, "{name}: client content");
        assert_eq!(
            scripted.content, scenario.expected,
            "{name}: scripted content"
        );
        // The provider's response id and model, and its prompt-cache counts (what the
        // protocol's transcript reports, e.g. a recorded response), are the client's own;
        // the rest of the metadata is the scripted model's.
        let mut metadata = client.metadata.clone();
        if let Some(response) = metadata.remove("response") {
            assert!(
                response["id"].is_string() && response["model"].is_string(),
                "{name}: response {response}"
            );
        }
        if let Some(Value::Object(usage)) = metadata.get_mut("usage") {
            for cache in ["cache_read_input_tokens", "cache_creation_input_tokens"] {
                if let Some(count) = usage.remove(cache) {
                    assert!(
                        count.as_u64().is_some_and(|n| n > 0),
                        "{name}: {cache} {count}"
                    );
                }
            }
        }
        assert_eq!(metadata, scripted.metadata, "{name}: metadata");
        assert_eq!(
            metadata.get("usage"),
            Some(&json!({
                "input_tokens": scenario.usage.input_tokens,
                "output_tokens": scenario.usage.output_tokens
            })),
            "{name}: usage"
        );
        assert_eq!(client.finish_reason(), Some(finish_reason), "{name}");
        let expected_reason = match scenario.stop {
            Stop::MaxTokens => GenerateReason::MaxTokens,
            Stop::Answer | Stop::ToolUse => GenerateReason::ModelStop,
        };
        assert_eq!(
            GenerateReason::of_answer(client.finish_reason()),
            expected_reason,
            "{name}: how the engine classifies the finish reason"
        );
        assert_eq!(
            (client.role, &client.name),
            (scripted.role, &scripted.name),
            "{name}"
        );
    }
    check_mid_stream_error(wire).await;
    check_failure_before_output(wire).await;
    check_cut_off(wire).await;
    check_empty_response(wire).await;
}

async fn play<W: Wire>(wire: &W, reply: HttpReply) -> Outcome {
    let server = TestServer::start([reply]).await;
    run(&wire.model(&server.base_url()), hello()).await
}

fn text_of(outcome: &Outcome) -> Vec<ContentBlock> {
    let mut acc = ChatAccumulator::new("assistant");
    for chunk in &outcome.chunks {
        acc.push(chunk);
    }
    acc.finish().content.into_vec()
}

#[allow(clippy::panic)]
async fn check_mid_stream_error<W: Wire>(wire: &W) {
    let message = "The server had an error while processing your request.";
    let client = play(
        wire,
        HttpReply::sse(&wire.mid_stream_error("Partial", message)),
    )
    .await;
    let scripted = run(
        &ScriptedModel::new([ScriptedResponse::chunks([
            ScriptedChunk::text("Partial"),
            ScriptedChunk::error(message),
        ])]),
        hello(),
    )
    .await;
    for (who, outcome) in [("client", &client), ("scripted", &scripted)] {
        assert_eq!(
            text_of(outcome),
            vec![ContentBlock::text("Partial")],
            "mid-stream error: {who}'s chunks"
        );
        match &outcome.result {
            Err(ModelError::Stream { message: m }) if m == message => {}
            other => panic!("mid-stream error: {who} ended with {other:?}"),
        }
    }
}

#[allow(clippy::panic)]
async fn check_failure_before_output<W: Wire>(wire: &W) {
    let client = play(
        wire,
        HttpReply::json(429, &wire.error_body("Rate limit reached")),
    )
    .await;
    let scripted = run(
        &ScriptedModel::new([ScriptedResponse::failure(ModelError::Status {
            status: 429,
            message: "Rate limit reached".into(),
            retry_after: None,
        })]),
        hello(),
    )
    .await;
    for (who, outcome) in [("client", &client), ("scripted", &scripted)] {
        assert!(outcome.chunks.is_empty(), "429: {who} streamed chunks");
        match &outcome.result {
            Err(err) if err.is_rate_limited() => {
                assert_eq!(
                    err.to_string(),
                    "HTTP 429: Rate limit reached",
                    "429: {who}"
                );
            }
            other => panic!("429: {who} ended with {other:?}"),
        }
    }
}

#[allow(clippy::panic)]
async fn check_cut_off<W: Wire>(wire: &W) {
    let client = play(
        wire,
        HttpReply::sse(&wire.cut_off("Partial answer before ")),
    )
    .await;
    match &client.result {
        Err(err @ ModelError::Stream { .. }) if err.is_retryable() => {}
        other => panic!("cut-off stream: the client ended with {other:?}"),
    }
}

#[allow(clippy::panic)]
async fn check_empty_response<W: Wire>(wire: &W) {
    let text = text_scenario();
    let server = TestServer::start([
        HttpReply::sse(&wire.empty_response()),
        HttpReply::sse(&wire.transcript(&text)),
    ])
    .await;
    let outcome = run(&wire.model(&server.base_url()), hello()).await;
    match &outcome.result {
        Ok(message) => assert_eq!(message.content, text.expected, "empty response"),
        Err(err) => panic!("empty response: the client ended with {err:?}"),
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "empty response: requests sent");
    assert_eq!(
        requests[0].body, requests[1].body,
        "empty response: the same request is sent again"
    );
}

fn usage(input_tokens: u64, output_tokens: u64) -> ChatUsage {
    ChatUsage::new(input_tokens, output_tokens)
}

fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ToolUseBlock::new(id, name, input).into()
}

fn text_scenario() -> Scenario {
    Scenario {
        name: "text",
        steps: ["Hello", "!", " How can I", " help you", " today?"]
            .map(Step::Text)
            .to_vec(),
        usage: usage(19, 10),
        stop: Stop::Answer,
        expected: vec![ContentBlock::text("Hello! How can I help you today?")],
    }
}

/// Every scenario:
///
/// - `text`: a streamed answer;
/// - `thinking_text`: thinking (signed, where the protocol signs it) then the answer;
/// - `tool_call`: one tool call whose arguments arrive in pieces;
/// - `parallel_tool_calls`: two calls in one response;
/// - `text_then_tool_calls`: text, then two calls;
/// - `invalid_arguments`: the output limit cuts a call's arguments (kept raw);
/// - `keepalive_multiline`: keep-alive comments and multi-line events between deltas.
pub fn scenarios() -> Vec<Scenario> {
    let mut thinking_steps: Vec<Step> =
        ["The user", " asks for", " 6 times 7", ".", " That is 42."]
            .map(Step::Thinking)
            .to_vec();
    thinking_steps.push(Step::Signature("EqQBCkgIARABGAIiQMp1kJmH"));
    thinking_steps.extend(["6", " × 7", " = **42**."].map(Step::Text));
    let mut tool_steps = vec![Step::ToolStart {
        id: "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        name: "get_weather",
    }];
    tool_steps
        .extend(["{\"", "location", "\":\"", "Paris", ",", " France", "\"}"].map(Step::ToolArgs));
    vec![
        text_scenario(),
        Scenario {
            name: "thinking_text",
            steps: thinking_steps,
            usage: usage(17, 86),
            stop: Stop::Answer,
            expected: vec![
                ContentBlock::Thinking(ThinkingBlock {
                    thinking: "The user asks for 6 times 7. That is 42.".into(),
                    signature: Some("EqQBCkgIARABGAIiQMp1kJmH".into()),
                }),
                ContentBlock::text("6 × 7 = **42**."),
            ],
        },
        Scenario {
            name: "tool_call",
            steps: tool_steps,
            usage: usage(67, 16),
            stop: Stop::ToolUse,
            expected: vec![tool_use(
                "call_DdmO9pD3xa9XTPNJ32zg2hcA",
                "get_weather",
                json!({"location": "Paris, France"}),
            )],
        },
        Scenario {
            name: "parallel_tool_calls",
            steps: vec![
                Step::ToolStart {
                    id: "call_Qx1Hc0mKo9bW2c3P4jrT8fGv",
                    name: "get_weather",
                },
                Step::ToolArgs("{\"lo"),
                Step::ToolArgs("cation\": \"Pa"),
                Step::ToolArgs("ris\"}"),
                Step::ToolStart {
                    id: "call_Zb4k1lJ7tYbU2WqfE5nRxC3a",
                    name: "get_time",
                },
                Step::ToolArgs("{\"time"),
                Step::ToolArgs("zone\": \"Europe/Paris\"}"),
            ],
            usage: usage(82, 51),
            stop: Stop::ToolUse,
            expected: vec![
                tool_use(
                    "call_Qx1Hc0mKo9bW2c3P4jrT8fGv",
                    "get_weather",
                    json!({"location": "Paris"}),
                ),
                tool_use(
                    "call_Zb4k1lJ7tYbU2WqfE5nRxC3a",
                    "get_time",
                    json!({"timezone": "Europe/Paris"}),
                ),
            ],
        },
        Scenario {
            name: "text_then_tool_calls",
            steps: vec![
                Step::Text("Let me look that up."),
                Step::ToolStart {
                    id: "call_itl_0",
                    name: "search",
                },
                Step::ToolArgs("{\"query\": \"rust sse\"}"),
                Step::ToolStart {
                    id: "call_itl_1",
                    name: "calculator",
                },
                Step::ToolArgs("{\"expression\": \"6*7\"}"),
            ],
            usage: usage(120, 40),
            stop: Stop::ToolUse,
            expected: vec![
                ContentBlock::text("Let me look that up."),
                tool_use("call_itl_0", "search", json!({"query": "rust sse"})),
                tool_use("call_itl_1", "calculator", json!({"expression": "6*7"})),
            ],
        },
        Scenario {
            name: "invalid_arguments",
            steps: vec![
                Step::ToolStart {
                    id: "call_len_1",
                    name: "write_file",
                },
                Step::ToolArgs("{\"path\": "),
                Step::ToolArgs("\"/tmp/rep"),
                Step::ToolArgs("ort.md\", \"content\": \"# Rep"),
            ],
            usage: usage(30, 16),
            stop: Stop::MaxTokens,
            expected: vec![ContentBlock::ToolUse(ToolUseBlock {
                id: "call_len_1".into(),
                name: "write_file".into(),
                input: Value::Null.into(),
                raw_input: Some("{\"path\": \"/tmp/report.md\", \"content\": \"# Rep".into()),
            })],
        },
        Scenario {
            name: "keepalive_multiline",
            steps: vec![
                Step::Thinking("Greeting."),
                Step::Text("Hi"),
                Step::Text(" there!"),
            ],
            usage: usage(9, 12),
            stop: Stop::Answer,
            expected: vec![
                ContentBlock::thinking("Greeting."),
                ContentBlock::text("Hi there!"),
            ],
        },
    ]
}
