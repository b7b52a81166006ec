use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agentscope_core::{
    ChatResponse, ChatStream, ChatUsage, ContentBlock, Model, ModelError, ModelRequest,
    SharedString, ToolInput, ToolUseBlock,
};
use futures::StreamExt;
use serde_json::Value;

/// One streamed chunk of a [`ScriptedResponse`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ScriptedChunk {
    /// A text fragment.
    Text(SharedString),
    /// A thinking fragment.
    Thinking(SharedString),
    /// A fragment of the thinking's signature (Anthropic signs its thinking).
    ThinkingSignature(SharedString),
    /// A whole tool call in one chunk.
    ToolCall {
        /// Call id.
        id: SharedString,
        /// Tool name.
        name: SharedString,
        /// Arguments (shared: replaying the script copies none).
        input: ToolInput,
    },
    /// The first fragment of a tool call: id and name, no arguments yet.
    ToolCallStart {
        /// Call id.
        id: SharedString,
        /// Tool name.
        name: SharedString,
    },
    /// A fragment of the current tool call's argument text.
    ToolCallArgs(String),
    /// The stream fails here (a mid-stream error).
    Error(ModelError),
}

impl ScriptedChunk {
    /// A text fragment.
    pub fn text(text: impl Into<SharedString>) -> Self {
        ScriptedChunk::Text(text.into())
    }

    /// A thinking fragment.
    pub fn thinking(text: impl Into<SharedString>) -> Self {
        ScriptedChunk::Thinking(text.into())
    }

    /// A fragment of the thinking's signature.
    pub fn thinking_signature(signature: impl Into<SharedString>) -> Self {
        ScriptedChunk::ThinkingSignature(signature.into())
    }

    /// A whole tool call.
    pub fn tool_call(
        id: impl Into<SharedString>,
        name: impl Into<SharedString>,
        input: impl Into<ToolInput>,
    ) -> Self {
        ScriptedChunk::ToolCall {
            id: id.into(),
            name: name.into(),
            input: input.into(),
        }
    }

    /// The start of a streamed tool call.
    pub fn tool_call_start(id: impl Into<SharedString>, name: impl Into<SharedString>) -> Self {
        ScriptedChunk::ToolCallStart {
            id: id.into(),
            name: name.into(),
        }
    }

    /// A piece of the current tool call's argument text.
    pub fn tool_call_args(piece: impl Into<String>) -> Self {
        ScriptedChunk::ToolCallArgs(piece.into())
    }

    /// A mid-stream error.
    pub fn error(message: impl std::fmt::Display) -> Self {
        ScriptedChunk::Error(ModelError::Stream {
            message: message.to_string(),
        })
    }

    fn into_item(self) -> Result<ChatResponse, ModelError> {
        let block: ContentBlock = match self {
            ScriptedChunk::Text(text) => ContentBlock::text(text),
            ScriptedChunk::Thinking(text) => ContentBlock::thinking(text),
            ScriptedChunk::ThinkingSignature(signature) => {
                ContentBlock::Thinking(agentscope_core::ThinkingBlock {
                    thinking: SharedString::default(),
                    signature: Some(signature),
                })
            }
            ScriptedChunk::ToolCall { id, name, input } => {
                ToolUseBlock::new(id, name, input).into()
            }
            ScriptedChunk::ToolCallStart { id, name } => ToolUseBlock {
                id,
                name,
                input: ToolInput::null(),
                raw_input: Some(String::new()),
            }
            .into(),
            ScriptedChunk::ToolCallArgs(piece) => ToolUseBlock {
                raw_input: Some(piece),
                ..ToolUseBlock::default()
            }
            .into(),
            ScriptedChunk::Error(err) => return Err(err),
        };
        Ok(ChatResponse::new(vec![block]))
    }
}

/// What a [`ScriptedModel`] plays for one request.
///
/// ```
/// use agentscope_test::{ScriptedChunk, ScriptedResponse};
/// use serde_json::json;
///
/// let answer = ScriptedResponse::text("42").with_usage(10, 2);
/// let call = ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"}));
/// let streamed = ScriptedResponse::chunks([
///     ScriptedChunk::thinking("Multiply."),
///     ScriptedChunk::text("The answer "),
///     ScriptedChunk::text("is 42."),
/// ]);
/// let failing = ScriptedResponse::error("model overloaded");
/// # let _ = (answer, call, streamed, failing);
/// ```
#[derive(Debug, Clone)]
pub struct ScriptedResponse {
    /// Shared, so that a cycling model replays a response without copying it.
    chunks: Arc<[ScriptedChunk]>,
    fail_before: Option<ModelError>,
    usage: Option<ChatUsage>,
    delay: Option<Duration>,
    /// The wait between one chunk and the next (none by default).
    chunk_interval: Option<Duration>,
    /// The finish reason of the last chunk (none by default).
    finish_reason: Option<String>,
    /// The provider's response id and model on the last chunk (none by default).
    response: Option<(String, String)>,
}

impl ScriptedResponse {
    /// A response streamed as the given chunks.
    pub fn chunks(chunks: impl IntoIterator<Item = ScriptedChunk>) -> Self {
        Self {
            chunks: chunks.into_iter().collect(),
            fail_before: None,
            usage: None,
            delay: None,
            chunk_interval: None,
            finish_reason: None,
            response: None,
        }
    }

    /// A text answer in one chunk.
    pub fn text(text: impl Into<SharedString>) -> Self {
        Self::chunks([ScriptedChunk::text(text)])
    }

    /// One tool call in one chunk.
    pub fn tool_call(
        id: impl Into<SharedString>,
        name: impl Into<SharedString>,
        input: Value,
    ) -> Self {
        Self::chunks([ScriptedChunk::tool_call(id, name, input)])
    }

    /// Several tool calls (a parallel batch), one chunk each.
    pub fn tool_calls<I, S, N>(calls: I) -> Self
    where
        I: IntoIterator<Item = (S, N, Value)>,
        S: Into<SharedString>,
        N: Into<SharedString>,
    {
        Self::chunks(
            calls
                .into_iter()
                .map(|(id, name, input)| ScriptedChunk::tool_call(id, name, input)),
        )
    }

    /// A text followed by tool calls, in one response.
    pub fn text_and_tool_call(
        text: impl Into<SharedString>,
        id: impl Into<SharedString>,
        name: impl Into<SharedString>,
        input: Value,
    ) -> Self {
        Self::chunks([
            ScriptedChunk::text(text),
            ScriptedChunk::tool_call(id, name, input),
        ])
    }

    /// The model call fails before any output.
    pub fn error(message: impl std::fmt::Display) -> Self {
        Self::failure(ModelError::msg(message))
    }

    /// The model call fails before any output with the given error.
    pub fn failure(error: ModelError) -> Self {
        Self {
            fail_before: Some(error),
            ..Self::chunks([])
        }
    }

    /// A response with no content at all.
    pub fn empty() -> Self {
        Self::chunks([])
    }

    /// Adds a final usage-only chunk.
    #[must_use]
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(ChatUsage::new(input_tokens, output_tokens));
        self
    }

    /// Adds a final usage-only chunk with these counts (cache counts included), as
    /// [`with_usage`](Self::with_usage) does.
    #[must_use]
    pub fn with_usage_detail(mut self, usage: ChatUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Ends the response with a last chunk naming the provider's response id and the model
    /// that answered, as real providers do (`"chatcmpl-1"`, `"gpt-4o-2024-08-06"`).
    #[must_use]
    pub fn with_response(mut self, id: impl Into<String>, model: impl Into<String>) -> Self {
        self.response = Some((id.into(), model.into()));
        self
    }

    /// Ends the response with a last chunk carrying this finish reason, as real models do
    /// (`"stop"`, `"tool_calls"`, `"length"` for an answer cut off at the token limit, ...).
    /// Without it the response carries none (or `"stop"` with [`with_usage`](Self::with_usage)).
    #[must_use]
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// Waits this long (on the tokio timer) before the response starts.
    #[must_use]
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Waits this long (on the tokio timer) between one scripted chunk and the next, as a
    /// model streams tokens: the first chunk comes at once (after
    /// [`with_delay`](Self::with_delay), if any), each later one `interval` after the one
    /// before, and the last chunk (usage, finish reason) right after the last scripted one.
    /// A response of `n` chunks takes `(n - 1) × interval`, plus the timer's lateness.
    ///
    /// ```
    /// use std::time::Duration;
    /// use agentscope_test::{ScriptedChunk, ScriptedResponse};
    ///
    /// // 50 tokens, 10 ms apart: about half a second of streaming.
    /// let tokens = ScriptedResponse::chunks((0..50).map(|i| ScriptedChunk::text(format!("t{i} "))))
    ///     .with_chunk_interval(Duration::from_millis(10));
    /// # let _ = tokens;
    /// ```
    #[must_use]
    pub fn with_chunk_interval(mut self, interval: Duration) -> Self {
        self.chunk_interval = Some(interval);
        self
    }

    fn into_stream(self) -> Result<ChatStream, ModelError> {
        if let Some(err) = self.fail_before {
            return Err(err);
        }
        let finish_reason = match (self.finish_reason, &self.usage) {
            (Some(reason), _) => Some(reason),
            (None, Some(_)) => Some("stop".to_owned()),
            (None, None) => None,
        };
        let (id, model) = match self.response {
            Some((id, model)) => (id, Some(model)),
            None => (String::new(), None),
        };
        let last =
            (finish_reason.is_some() || self.usage.is_some() || model.is_some()).then(|| {
                let mut last = ChatResponse::new(Vec::new()).with_id(id);
                last.usage = self.usage;
                last.finish_reason = finish_reason;
                last.model = model;
                Ok(last)
            });
        let chunks = self.chunks;
        let count = chunks.len();
        let items = (0..count)
            .map(move |i| chunks[i].clone().into_item())
            .chain(last);
        match self.chunk_interval.filter(|interval| !interval.is_zero()) {
            None => Ok(futures::stream::iter(items).boxed()),
            // Every scripted chunk but the first waits; the last (usage) one does not.
            Some(interval) => Ok(futures::stream::iter(items.enumerate())
                .then(move |(i, item)| async move {
                    if i > 0 && i < count {
                        tokio::time::sleep(interval).await;
                    }
                    item
                })
                .boxed()),
        }
    }
}

/// A [`Model`] that plays scripted responses, one per request, and records every request.
///
/// When the script runs out, requests fail with a [`ModelError`] saying so (or, with
/// [`cycling`](Self::cycling), the script starts over).
///
/// # Clones share one script
///
/// A clone is the same model, as a clone of a real model client is the same client: it
/// plays from the same script and records into the same list. That is what a test wants
/// when an agent holds the model: the test keeps a clone to [`push`](Self::push) the next
/// responses and to read [`requests`](Self::requests).
///
/// It also means that several agents on clones take turns on one script: the first request
/// of any of them plays the first response, the next request of any of them the second. A
/// server whose agent factory clones a one-answer model answers the first run and fails
/// the second (`no scripted response left for request #2`). When each agent should play
/// the script on its own, give each a [`fork`](Self::fork) (its own copy of the script and
/// its own record of requests); when any number of requests should be answered, make the
/// script repeat with [`cycling`](Self::cycling):
///
/// ```
/// use agentscope::{Model, ModelRequest};
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
/// // Forks: every agent (every run of a server) plays the whole script.
/// let (a, b) = (model.fork(), model.fork());
/// assert!(a.stream(ModelRequest::default()).await.is_ok());
/// assert!(b.stream(ModelRequest::default()).await.is_ok());
/// assert_eq!((model.request_count(), a.request_count(), b.request_count()), (0, 1, 1));
/// // Clones: one script between them.
/// let (c, d) = (model.clone(), model.clone());
/// assert!(c.stream(ModelRequest::default()).await.is_ok());
/// assert!(d.stream(ModelRequest::default()).await.is_err()); // the script is used up
/// assert_eq!(model.request_count(), 2);
/// # });
/// ```
///
/// ```
/// use agentscope::{Model, ModelRequest, Msg};
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let model = ScriptedModel::new([ScriptedResponse::text("hi")]);
/// let request = ModelRequest::new(vec![Msg::user("hello")], Default::default(), Default::default());
/// let _stream = model.stream(request).await.unwrap();
/// assert_eq!(model.requests()[0].messages[0].text(), "hello");
/// assert!(model.stream(ModelRequest::default()).await.is_err()); // script exhausted
/// # });
/// ```
pub struct ScriptedModel {
    inner: Arc<Inner>,
}

impl Clone for ScriptedModel {
    /// The same model: the clone shares the script and the record of requests (see
    /// [Clones share one script](ScriptedModel#clones-share-one-script)). For a model with
    /// its own script, [`fork`](ScriptedModel::fork).
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner {
    name: String,
    state: Mutex<State>,
}

struct State {
    script: VecDeque<ScriptedResponse>,
    played: VecDeque<ScriptedResponse>,
    cycling: bool,
    requests: Vec<ModelRequest>,
    record_requests: bool,
    request_count: usize,
    /// How many responses have been played (for the message of a used-up script).
    played_count: usize,
}

impl ScriptedModel {
    /// A model named `"scripted-model"` that plays `responses` in order.
    pub fn new(responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: "scripted-model".to_owned(),
                state: Mutex::new(State {
                    script: responses.into_iter().collect(),
                    played: VecDeque::new(),
                    cycling: false,
                    requests: Vec::new(),
                    record_requests: true,
                    request_count: 0,
                    played_count: 0,
                }),
            }),
        }
    }

    /// The same script under another model name.
    #[must_use]
    pub fn with_name(self, name: impl Into<String>) -> Self {
        let state = self.take_state();
        Self {
            inner: Arc::new(Inner {
                name: name.into(),
                state: Mutex::new(state),
            }),
        }
    }

    /// Starts the script over when it runs out (for benchmarks and soak tests).
    #[must_use]
    pub fn cycling(self) -> Self {
        self.lock().cycling = true;
        self
    }

    /// Stops recording requests (for benchmarks: recording copies every request).
    #[must_use]
    pub fn without_recording(self) -> Self {
        self.lock().record_requests = false;
        self
    }

    fn take_state(&self) -> State {
        let mut state = self.lock();
        State {
            script: std::mem::take(&mut state.script),
            played: std::mem::take(&mut state.played),
            cycling: state.cycling,
            requests: std::mem::take(&mut state.requests),
            record_requests: state.record_requests,
            request_count: state.request_count,
            played_count: state.played_count,
        }
    }

    /// A model of its own that starts where this one is: the same name, the responses this
    /// one has left to play (for a model not called yet, the whole script; for a cycling
    /// one, its cycle), the same settings, and no requests recorded. Unlike a
    /// [`clone`](Clone::clone), it shares nothing: what it plays and records is its own, and
    /// this model does not see it.
    ///
    /// For several agents that should each play the script, as the agents a server's
    /// factory makes, one per run:
    /// `AgentSpec::new(move || ReActAgent::builder().model(model.fork()))`.
    #[must_use]
    pub fn fork(&self) -> Self {
        let state = self.lock();
        Self {
            inner: Arc::new(Inner {
                name: self.inner.name.clone(),
                state: Mutex::new(State {
                    script: state.script.clone(),
                    played: state.played.clone(),
                    cycling: state.cycling,
                    requests: Vec::new(),
                    record_requests: state.record_requests,
                    request_count: 0,
                    played_count: 0,
                }),
            }),
        }
    }

    /// Appends a response to the script.
    pub fn push(&self, response: ScriptedResponse) {
        self.lock().script.push_back(response);
    }

    /// Drops the responses not played yet (a call that failed or was interrupted before it
    /// used its script).
    pub fn clear(&self) {
        self.lock().script.clear();
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// The last request received.
    pub fn last_request(&self) -> Option<ModelRequest> {
        self.lock().requests.last().cloned()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        self.lock().request_count
    }

    /// How many scripted responses are left.
    pub fn remaining(&self) -> usize {
        self.lock().script.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn next_response(&self, request: ModelRequest) -> Result<ScriptedResponse, ModelError> {
        let mut state = self.lock();
        state.request_count += 1;
        let number = state.request_count;
        if state.record_requests {
            state.requests.push(request);
        }
        if state.script.is_empty() && state.cycling {
            // The played responses become the script; both queues keep their capacity.
            let state = &mut *state;
            std::mem::swap(&mut state.script, &mut state.played);
        }
        match state.script.pop_front() {
            Some(response) => {
                state.played_count += 1;
                if state.cycling {
                    state.played.push_back(response.clone());
                }
                Ok(response)
            }
            None => Err(ModelError::msg(format!(
                "ScriptedModel '{}': no scripted response left for request #{number} ({}). \
                 Clones of a ScriptedModel share one script: give each agent its own with \
                 `fork()`, repeat the script with `cycling()`, or `push` more responses",
                self.inner.name,
                match state.played_count {
                    0 => "the script is empty".to_owned(),
                    1 => "its only response was played".to_owned(),
                    played => format!("all {played} responses were played"),
                }
            ))),
        }
    }
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("name", &self.inner.name)
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}

impl Model for ScriptedModel {
    fn model_name(&self) -> &str {
        &self.inner.name
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let response = self.next_response(request)?;
        if let Some(delay) = response.delay.filter(|delay| !delay.is_zero()) {
            tokio::time::sleep(delay).await;
        }
        response.into_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::ChatAccumulator;
    use futures::executor::block_on;
    use serde_json::json;

    async fn assemble(model: &ScriptedModel) -> Result<agentscope_core::Msg, ModelError> {
        let mut stream = model.stream(ModelRequest::default()).await?;
        let mut acc = ChatAccumulator::new("a");
        while let Some(chunk) = stream.next().await {
            acc.push(&chunk?);
        }
        Ok(acc.finish())
    }

    #[test]
    fn plays_in_order_and_records() {
        let model = ScriptedModel::new([
            ScriptedResponse::text("one"),
            ScriptedResponse::tool_call("c1", "calc", json!({"a": 1})).with_usage(5, 6),
        ]);
        let first = block_on(assemble(&model)).unwrap();
        assert_eq!(first.text(), "one");
        let second = block_on(assemble(&model)).unwrap();
        assert_eq!(second.tool_uses()[0].input, json!({"a": 1}));
        assert_eq!(second.metadata["usage"]["output_tokens"], 6);
        assert_eq!(model.request_count(), 2);
        let err = block_on(assemble(&model)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ScriptedModel 'scripted-model': no scripted response left for request #3 (all 2 \
             responses were played). Clones of a ScriptedModel share one script: give each \
             agent its own with `fork()`, repeat the script with `cycling()`, or `push` more \
             responses"
        );
    }

    /// Clones take turns on one script and one record; forks each play what was left when
    /// they were made, and record only their own requests.
    #[test]
    fn clones_share_the_script_and_forks_have_their_own() {
        let model =
            ScriptedModel::new([ScriptedResponse::text("one"), ScriptedResponse::text("two")])
                .with_name("template");
        let clone = model.clone();
        assert_eq!(block_on(assemble(&clone)).unwrap().text(), "one");
        // The fork starts where the model is: "two" is left.
        let fork = model.fork();
        assert_eq!(block_on(assemble(&model)).unwrap().text(), "two");
        let err = block_on(assemble(&clone)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ScriptedModel 'template': no scripted response left for request #3 (all 2 \
             responses were played). Clones of a ScriptedModel share one script: give each \
             agent its own with `fork()`, repeat the script with `cycling()`, or `push` more \
             responses"
        );
        assert_eq!((model.request_count(), model.requests().len()), (3, 3));
        assert_eq!(fork.model_name(), "template");
        assert_eq!(block_on(assemble(&fork)).unwrap().text(), "two");
        assert_eq!((fork.request_count(), fork.requests().len()), (1, 1));
        assert_eq!(model.request_count(), 3);
        // What is pushed to one is not the other's.
        fork.push(ScriptedResponse::text("three"));
        assert_eq!((fork.remaining(), model.remaining()), (1, 0));
        // A fork of a cycling model cycles through the same script.
        let cycling =
            ScriptedModel::new([ScriptedResponse::text("a"), ScriptedResponse::text("b")])
                .cycling();
        assert_eq!(block_on(assemble(&cycling)).unwrap().text(), "a");
        let fork = cycling.fork();
        let texts: Vec<String> = (0..3)
            .map(|_| block_on(assemble(&fork)).unwrap().text())
            .collect();
        assert_eq!(texts, ["b", "a", "b"]);
        // An empty script says so.
        let empty = ScriptedModel::new([]);
        assert_eq!(
            block_on(assemble(&empty)).unwrap_err().to_string(),
            "ScriptedModel 'scripted-model': no scripted response left for request #1 (the \
             script is empty). Clones of a ScriptedModel share one script: give each agent its \
             own with `fork()`, repeat the script with `cycling()`, or `push` more responses"
        );
        let one = ScriptedModel::new([ScriptedResponse::text("x")]);
        block_on(assemble(&one)).unwrap();
        assert!(
            block_on(assemble(&one))
                .unwrap_err()
                .to_string()
                .contains("request #2 (its only response was played). Clones")
        );
    }

    #[test]
    fn streamed_tool_call_fragments_assemble() {
        let model = ScriptedModel::new([ScriptedResponse::chunks([
            ScriptedChunk::tool_call_start("c9", "search"),
            ScriptedChunk::tool_call_args("{\"q\":"),
            ScriptedChunk::tool_call_args("\"rust\"}"),
        ])]);
        let msg = block_on(assemble(&model)).unwrap();
        assert_eq!(msg.tool_uses()[0].id, "c9");
        assert_eq!(msg.tool_uses()[0].input, json!({"q": "rust"}));
    }

    #[test]
    fn errors_before_and_during_the_stream() {
        let model = ScriptedModel::new([
            ScriptedResponse::error("down"),
            ScriptedResponse::chunks([ScriptedChunk::text("par"), ScriptedChunk::error("cut")]),
        ]);
        assert_eq!(block_on(assemble(&model)).unwrap_err().to_string(), "down");
        let err = block_on(assemble(&model)).unwrap_err();
        assert!(matches!(err, ModelError::Stream { ref message } if message == "cut"));
    }

    #[test]
    fn cycling_restarts_the_script() {
        let model = ScriptedModel::new([ScriptedResponse::text("a"), ScriptedResponse::text("b")])
            .cycling()
            .with_name("loop");
        let texts: Vec<String> = (0..5)
            .map(|_| block_on(assemble(&model)).unwrap().text())
            .collect();
        assert_eq!(texts, ["a", "b", "a", "b", "a"]);
        assert_eq!(model.model_name(), "loop");
    }

    #[tokio::test]
    async fn delay_waits_on_the_timer() {
        let model = ScriptedModel::new([
            ScriptedResponse::text("late").with_delay(Duration::from_millis(30))
        ]);
        let start = std::time::Instant::now();
        assemble(&model).await.unwrap();
        assert!(start.elapsed() >= Duration::from_millis(30));
    }

    /// The first chunk comes at once, each later one no sooner than an interval after the
    /// one before, and the usage chunk right after the last scripted one.
    #[tokio::test]
    async fn chunk_interval_spaces_the_chunks() {
        use futures::FutureExt;
        let model = ScriptedModel::new([ScriptedResponse::chunks([
            ScriptedChunk::text("a"),
            ScriptedChunk::text("b"),
            ScriptedChunk::text("c"),
        ])
        .with_usage(1, 3)
        .with_chunk_interval(Duration::from_millis(10))]);
        let text = |chunk: Option<Result<ChatResponse, ModelError>>| {
            let chunk = chunk.unwrap().unwrap();
            let text: String = chunk.content.iter().filter_map(|b| b.as_text()).collect();
            (text, chunk.usage.is_some())
        };
        let start = std::time::Instant::now();
        let mut stream = model.stream(ModelRequest::default()).await.unwrap();
        // "a" is ready at once; "b" is not.
        assert_eq!(
            text(stream.next().now_or_never().unwrap()),
            ("a".into(), false)
        );
        assert!(stream.next().now_or_never().is_none());
        // That poll started "b"'s wait: it comes 10 ms later, "c" 10 ms after it.
        assert_eq!(text(stream.next().await), ("b".into(), false));
        let b = start.elapsed();
        assert!(b >= Duration::from_millis(10), "{b:?}");
        assert_eq!(text(stream.next().await), ("c".into(), false));
        assert!(start.elapsed() >= b + Duration::from_millis(10));
        // The usage chunk does not wait.
        assert_eq!(
            text(stream.next().now_or_never().unwrap()),
            (String::new(), true)
        );
        assert!(stream.next().now_or_never().unwrap().is_none());
    }
}
