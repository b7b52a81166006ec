//! Deterministic fixtures: a model whose script can be swapped (and that can yield before
//! every chunk), a runtime-free "yield once" future, hooks and tools that yield, wait at a
//! gate or hang,
//! manual polling with a no-op waker, shared scripts, responses and agents (recorded ones
//! included), and the texts the engine writes for cancelled and interrupted calls.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use agentscope::prelude::*;
use agentscope::{BoxedHook, ChatStream, ModelError, ModelRequest, ReActAgentBuilder};
use agentscope_test::tools::ProgressTool;
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The result of a tool call that was still running when its agent call ended.
pub(crate) const CANCELLED: &str =
    "Error: Tool execution was cancelled because the agent call ended before it finished.";
/// What is stored for a tool result whose PostActing chain failed (or that a failed call's
/// PostActing hooks never saw).
pub(crate) const WITHHELD: &str = "Error: The tool ran, but its result was withheld because the agent call ended before the result passed the PostActing hooks.";

/// A future that is `Pending` once (waking itself at once), then `Ready`: an await point
/// that needs no runtime, so "after k polls" is exact.
pub(crate) fn yield_once() -> YieldOnce {
    YieldOnce(false)
}

/// See [`yield_once`].
pub(crate) struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// A model playing a [`ScriptedModel`] that can be replaced at any time (so a follow-up call
/// never plays what a failed or dropped call left over). With [`yielding`](Self::yielding)
/// it yields once before the response starts and once before every chunk.
#[derive(Clone)]
pub(crate) struct SwapModel {
    inner: Arc<SwapInner>,
}

struct SwapInner {
    current: Mutex<ScriptedModel>,
    yielding: bool,
}

impl SwapModel {
    /// Plays `responses`, without yielding.
    pub(crate) fn new(responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        Self::build(ScriptedModel::new(responses), false)
    }

    /// Plays `responses`, yielding before the response and before every chunk.
    pub(crate) fn yielding(responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        Self::build(ScriptedModel::new(responses), true)
    }

    /// Plays `model` (e.g. a cycling, non-recording one for soak tests).
    pub(crate) fn from_model(model: ScriptedModel) -> Self {
        Self::build(model, false)
    }

    fn build(model: ScriptedModel, yielding: bool) -> Self {
        Self {
            inner: Arc::new(SwapInner {
                current: Mutex::new(model),
                yielding,
            }),
        }
    }

    /// Replaces the script (what is left of the old one is forgotten).
    pub(crate) fn set_script(&self, responses: impl IntoIterator<Item = ScriptedResponse>) {
        self.set_model(ScriptedModel::new(responses));
    }

    /// Replaces the scripted model.
    pub(crate) fn set_model(&self, model: ScriptedModel) {
        *self
            .inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = model;
    }

    /// The current scripted model (shares its record of requests).
    pub(crate) fn script(&self) -> ScriptedModel {
        self.inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Model for SwapModel {
    fn model_name(&self) -> &str {
        "scripted-model"
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let yielding = self.inner.yielding;
        if yielding {
            yield_once().await;
        }
        let script = self.script();
        let stream = script.stream(request).await?;
        if yielding {
            Ok(stream
                .then(|item| async move {
                    yield_once().await;
                    item
                })
                .boxed())
        } else {
            Ok(stream)
        }
    }
}

/// An async hook that yields once on every event it is interested in.
pub(crate) struct YieldingHook {
    priority: i32,
    interests: HookEventTypes,
}

impl YieldingHook {
    pub(crate) fn new(priority: i32, interests: impl Into<HookEventTypes>) -> Self {
        Self {
            priority,
            interests: interests.into(),
        }
    }
}

impl Hook for YieldingHook {
    async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
        yield_once().await;
        Ok(())
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn interests(&self) -> HookEventTypes {
        self.interests
    }

    fn name(&self) -> &str {
        "yielding"
    }
}

/// `work {"text": s, "yields": n, "progress": m}`: emits `m` progress chunks `"p{i}"`, yields
/// `n` times (runtime-free), then returns `s`.
pub(crate) fn work_tool() -> impl Tool {
    tool_fn(
        "work",
        "Yields, reports progress, then returns its text.",
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "yields": {"type": "integer", "minimum": 0},
                "progress": {"type": "integer", "minimum": 0}
            },
            "required": ["text"]
        }),
        |input, ctx| async move {
            let text = input["text"].as_str().unwrap_or_default().to_owned();
            let yields = input["yields"].as_u64().unwrap_or(0);
            let progress = input["progress"].as_u64().unwrap_or(0);
            for i in 0..progress {
                ctx.emit(format!("p{i}")).await;
            }
            for _ in 0..yields {
                yield_once().await;
            }
            Ok(text)
        },
    )
}

/// Polls `future` with a no-op waker until it is ready; returns the output and how many
/// polls it took. Panics after `limit` polls.
pub(crate) fn run_counting<F: Future>(future: F, limit: usize) -> (F::Output, usize) {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    for polls in 1..=limit {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return (output, polls);
        }
    }
    panic!("the future did not finish within {limit} polls");
}

/// Polls `future` at most `polls` times with a no-op waker; `Some(output)` when it finished.
pub(crate) fn poll_times<F: Future>(mut future: Pin<&mut F>, polls: usize) -> Option<F::Output> {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    for _ in 0..polls {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Some(output);
        }
    }
    None
}

/// Polls `stream` at most `polls` times with a no-op waker, collecting its items; the flag
/// tells whether it ended (`None`).
pub(crate) fn poll_stream_times<S: Stream + Unpin>(
    stream: &mut S,
    polls: usize,
) -> (Vec<S::Item>, bool) {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    let mut items = Vec::new();
    for _ in 0..polls {
        match stream.poll_next_unpin(&mut cx) {
            Poll::Ready(Some(item)) => items.push(item),
            Poll::Ready(None) => return (items, true),
            Poll::Pending => {}
        }
    }
    (items, false)
}

/// A gate for a tool call: the tool [`Gate::tool`] signals `entered` when it starts, then
/// waits until `release` is notified (forever when nobody releases it).
#[derive(Default)]
pub(crate) struct Gate {
    pub(crate) entered: Notify,
    pub(crate) release: Notify,
}

impl Gate {
    /// A new gate, to share with its tool.
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// The tool `gate` that waits at this gate.
    pub(crate) fn tool(self: &Arc<Self>) -> impl Tool {
        let gate = Arc::clone(self);
        tool_fn(
            "gate",
            "Waits to be released.",
            json!({"type": "object"}),
            move |_, _| Arc::clone(&gate).pass(),
        )
    }

    async fn pass(self: Arc<Self>) -> Result<&'static str, ToolError> {
        self.entered.notify_one();
        self.release.notified().await;
        Ok("released")
    }
}

/// A tool named `name` that never finishes.
pub(crate) fn hang_tool(name: &'static str) -> impl Tool {
    tool_fn(
        name,
        "Never finishes.",
        json!({"type": "object"}),
        |_, _| async {
            futures::future::pending::<()>().await;
            Ok("unreachable")
        },
    )
}

/// The calculator's input `{"expression": e}`.
pub(crate) fn expr(e: &str) -> Value {
    json!({ "expression": e })
}

/// One calculator call `id` of `expression`.
pub(crate) fn calc_call(id: &str, expression: &str) -> ScriptedResponse {
    ScriptedResponse::tool_call(id, "calculator", json!({ "expression": expression }))
}

/// The script of agent `i` of many: one echo call `c{i}` of "agent {i}", then the answer
/// "done {i}".
pub(crate) fn numbered_echo_script(i: usize) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call(
            format!("c{i}"),
            "echo",
            json!({ "text": format!("agent {i}") }),
        ),
        ScriptedResponse::text(format!("done {i}")),
    ])
}

/// A response that streams `text`, then a call of the `progress` tool (call "c1") of `steps`
/// steps.
pub(crate) fn text_and_progress_call(text: &str, steps: u64) -> ScriptedResponse {
    ScriptedResponse::chunks([
        ScriptedChunk::text(text),
        ScriptedChunk::tool_call("c1", "progress", json!({ "steps": steps })),
    ])
}

/// A scenario that fires the eleven non-error kinds in one call (max_iters 1): a streamed
/// reasoning with a progress tool call, the tool's two progress chunks, and a streamed
/// summary.
pub(crate) fn eleven_kinds_script() -> Vec<ScriptedResponse> {
    vec![
        ScriptedResponse::chunks([
            ScriptedChunk::text("Let me"),
            ScriptedChunk::text(" check."),
            ScriptedChunk::tool_call("c1", "progress", json!({"steps": 2})),
        ]),
        ScriptedResponse::chunks([ScriptedChunk::text("sum"), ScriptedChunk::text("mary")]),
    ]
}

/// A builder for the eleven-kinds scenario ([`eleven_kinds_script`]): `model`, the `progress`
/// tool, and one iteration (so the tool call leads to the summary).
pub(crate) fn eleven_kinds_builder(model: &SwapModel) -> ReActAgentBuilder {
    ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(ProgressTool::new()))
        .max_iters(1)
}

/// The model of the eleven-kinds scenario, or, to provoke an Error event (`kind` Error), a
/// model that fails at once with "model down".
pub(crate) fn eleven_kinds_model(kind: HookEventType) -> SwapModel {
    if kind == HookEventType::Error {
        SwapModel::new([ScriptedResponse::error("model down")])
    } else {
        SwapModel::new(eleven_kinds_script())
    }
}

/// Every event of the eleven-kinds scenario ([`eleven_kinds_script`]) run to its end, chunks
/// included, in order.
pub(crate) const ELEVEN_KINDS_EVENTS: [HookEventType; 15] = [
    HookEventType::PreCall,
    HookEventType::PreReasoning,
    HookEventType::ReasoningChunk,
    HookEventType::ReasoningChunk,
    HookEventType::ReasoningChunk,
    HookEventType::PostReasoning,
    HookEventType::PreActing,
    HookEventType::ActingChunk,
    HookEventType::ActingChunk,
    HookEventType::PostActing,
    HookEventType::PreSummary,
    HookEventType::SummaryChunk,
    HookEventType::SummaryChunk,
    HookEventType::PostSummary,
    HookEventType::PostCall,
];

/// The memory (in the [`describe`](super::describe::describe) form) of the eleven-kinds
/// scenario run to its end with the input "q" and the `progress` tool.
pub(crate) fn eleven_kinds_memory() -> Vec<String> {
    vec![
        r#"user/user: text "q""#.to_owned(),
        r#"assistant/assistant: text "Let me check." | tool_use c1 progress {"steps":2}"#
            .to_owned(),
        r#"tool/progress: tool_result c1 progress "done""#.to_owned(),
        r#"assistant/assistant: text "summary" <MaxIterations>"#.to_owned(),
    ]
}

/// An agent with `model`, `toolkit` and `hooks`, and otherwise the defaults (no system
/// prompt).
pub(crate) fn build_agent<M: Model + Clone>(
    model: &M,
    toolkit: Toolkit,
    hooks: Vec<BoxedHook>,
) -> ReActAgent {
    ReActAgent::builder()
        .model(model.clone())
        .toolkit(toolkit)
        .hooks(hooks)
        .build()
        .unwrap()
}

/// An agent with `model` and `toolkit` (and otherwise the defaults), and the
/// [`RecordingHook`] (priority 100) that sees its every event.
pub(crate) fn recorded_agent<M: Model + Clone>(
    model: &M,
    toolkit: Toolkit,
) -> (ReActAgent, RecordingHook) {
    recorded(ReActAgent::builder().model(model.clone()).toolkit(toolkit))
}

/// Builds `builder` with a [`RecordingHook`] (priority 100, registered after the builder's
/// hooks) that sees the agent's every event.
pub(crate) fn recorded(builder: ReActAgentBuilder) -> (ReActAgent, RecordingHook) {
    let rec = RecordingHook::new(100);
    let agent = builder.hook(rec.clone()).build().unwrap();
    (agent, rec)
}

/// A response that streams `text`, then fails with the stream error `error`.
pub(crate) fn cut_after(text: &str, error: &str) -> ScriptedResponse {
    ScriptedResponse::chunks([ScriptedChunk::text(text), ScriptedChunk::error(error)])
}
