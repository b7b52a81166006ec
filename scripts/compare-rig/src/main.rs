//! The rig 0.44 side of `scripts/compare-peers.sh`: the same ReAct call as agentscope's
//! `peers` bench (an instant scripted model that asks for one `echo` tool call, then answers
//! `done`; one instant tool; a system prompt), with 0 and with 10 no-op hooks.
//!
//! Prints one line per figure, `rig <figure> <value>`, the format the script reads:
//!
//! - `rig react_call_0 <ns>`: median ns per run with no hook,
//! - `rig react_call_10 <ns>`: median ns per run with 10 no-op hooks,
//! - `rig hook_calls_per_run <n>`: how many times rig calls one hook's `on_*` methods in one
//!   run, counted by a hook that increments an atomic in each of them.
//!
//! Lines starting with `#` are comments (the per-method counts). Each time is the median of
//! 151 batches of about 2 ms (`--quick`: 41), the two agents' batches interleaved, as in the
//! `peers` bench. Arguments: `--quick`; anything else is ignored.

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rig_agent::agent::{
    Agent, AgentBuilder, AgentHook, CompletionCallAction, CompletionCallEvent, DispatchAction,
    DispatchEvent, HookContext, InvalidToolCallAction, InvalidToolCallContext, ModelSelection,
    ModelSelectionAction, ModelTurnAction, ModelTurnFinished, ObservationAction, OutcomeAction,
    OutcomeEvent, ReasoningDelta, RunSettled, RunStart, RunStartAction, StepEventKind, TextDelta,
    ToolCallDelta,
};
use rig_agent::tool::{Tool, ToolContext};
use rig_core::completion::{AssistantContent, CompletionRequest, CompletionResponse, Usage};
use rig_core::driver::{Exchange, Model, Opened, Opening, Transport};
use rig_core::message::{Message, Origin, ToolCall, ToolFunction, ToolName, UserContent};
use rig_core::test_utils::{MOCK_API, MOCK_PROVIDER, MockFrame, MockScript, MockTurn};
use rig_core::wire::Mode;
use serde::Deserialize;
use serde_json::json;

/// A model that answers at once, from the request: a tool call `echo({"text": "pong"})` when
/// the last message holds no tool result, the text `done` otherwise. Both responses are built
/// once and cloned per request (agentscope's `ScriptedModel` clones its scripted response
/// too). Nothing is recorded, so a long benchmark does not grow.
#[derive(Clone)]
struct InstantModel {
    tool_call: Arc<(CompletionResponse, serde_json::Value)>,
    answer: Arc<(CompletionResponse, serde_json::Value)>,
}

/// A response with `choice`, as rig's own `MockRuntime` builds it from a scripted turn (its
/// document is the turn, serialized).
fn response(choice: AssistantContent, turn: MockTurn) -> (CompletionResponse, serde_json::Value) {
    let raw = turn.raw().expect("a response turn has a document");
    let origin = Origin::new(MOCK_API, MOCK_PROVIDER, "");
    let response = CompletionResponse::new(vec![choice], Usage::default(), origin, raw.clone());
    (response, raw)
}

impl InstantModel {
    fn new() -> Self {
        Self {
            tool_call: Arc::new(response(
                AssistantContent::ToolCall(ToolCall::from_wire(
                    "c1",
                    ToolFunction::new(ToolName::new("echo").unwrap(), json!({"text": "pong"})),
                )),
                MockTurn::tool_call("c1", "echo", json!({"text": "pong"})),
            )),
            answer: Arc::new(response(
                AssistantContent::text("done"),
                MockTurn::text("done"),
            )),
        }
    }
}

impl Transport<MockScript> for InstantModel {
    fn send(&self, request: CompletionRequest, exchange: Exchange) -> Opening<MockFrame> {
        assert!(matches!(exchange.mode, Mode::Unary), "a blocking run");
        let answered = match request.chat_history.last() {
            Some(Message::User { content }) => content
                .iter()
                .any(|part| matches!(part, UserContent::ToolResult(_))),
            _ => false,
        };
        let (response, raw) = if answered {
            &*self.answer
        } else {
            &*self.tool_call
        };
        Opening::ready(
            Opened::new(futures::stream::iter([Ok(MockFrame::Response(Box::new(
                response.clone(),
            )))]))
            .with_document(raw.clone()),
        )
    }
}

#[derive(Debug)]
struct EchoError;

impl std::fmt::Display for EchoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("echo failed")
    }
}

impl std::error::Error for EchoError {}

#[derive(Deserialize)]
struct EchoArgs {
    text: String,
}

/// An instant tool that echoes its `text` argument.
struct Echo;

impl Tool for Echo {
    const NAME: &'static str = "echo";
    type Args = EchoArgs;
    type Output = String;
    type Error = EchoError;

    fn description(&self) -> String {
        "Echoes text.".to_string()
    }

    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }

    async fn call(&self, _context: &mut ToolContext, args: EchoArgs) -> Result<String, EchoError> {
        Ok(args.text)
    }
}

/// A hook that does nothing: every method keeps rig's default.
struct Noop;

impl AgentHook for Noop {}

/// Counts every call rig makes into it; otherwise behaves like [`Noop`].
struct Counting(Arc<Counts>);

#[derive(Default)]
struct Counts([AtomicUsize; 12]);

const METHODS: [&str; 12] = [
    "on_run_start",
    "on_run_settled",
    "on_model_select",
    "on_completion_call",
    "on_model_turn_finished",
    "on_invalid_tool_call",
    "on_text_delta",
    "on_reasoning_delta",
    "on_tool_call_delta",
    "on_dispatch",
    "on_outcome",
    "observes",
];

impl Counting {
    fn hit(&self, method: usize) {
        self.0.0[method].fetch_add(1, Ordering::Relaxed);
    }
}

impl AgentHook for Counting {
    fn on_run_start(
        &self,
        _ctx: &HookContext,
        _event: RunStart<'_>,
    ) -> impl Future<Output = RunStartAction> + Send {
        self.hit(0);
        async { RunStartAction::Continue }
    }

    fn on_run_settled(
        &self,
        _ctx: &HookContext,
        _event: RunSettled<'_>,
    ) -> impl Future<Output = ()> + Send {
        self.hit(1);
        async {}
    }

    fn on_model_select(
        &self,
        _ctx: &HookContext,
        _event: ModelSelection<'_>,
    ) -> ModelSelectionAction {
        self.hit(2);
        ModelSelectionAction::Continue
    }

    fn on_completion_call(
        &self,
        _ctx: &HookContext,
        _event: CompletionCallEvent<'_>,
    ) -> impl Future<Output = CompletionCallAction> + Send {
        self.hit(3);
        async { CompletionCallAction::Continue }
    }

    fn on_model_turn_finished(
        &self,
        _ctx: &HookContext,
        _event: ModelTurnFinished<'_>,
    ) -> impl Future<Output = ModelTurnAction> + Send {
        self.hit(4);
        async { ModelTurnAction::Continue }
    }

    fn on_invalid_tool_call(
        &self,
        _ctx: &HookContext,
        _event: &InvalidToolCallContext,
    ) -> impl Future<Output = Option<InvalidToolCallAction>> + Send {
        self.hit(5);
        async { None }
    }

    fn on_text_delta(
        &self,
        _ctx: &HookContext,
        _event: TextDelta<'_>,
    ) -> impl Future<Output = ObservationAction> + Send {
        self.hit(6);
        async { ObservationAction::Continue }
    }

    fn on_reasoning_delta(
        &self,
        _ctx: &HookContext,
        _event: ReasoningDelta<'_>,
    ) -> impl Future<Output = ObservationAction> + Send {
        self.hit(7);
        async { ObservationAction::Continue }
    }

    fn on_tool_call_delta(
        &self,
        _ctx: &HookContext,
        _event: ToolCallDelta<'_>,
    ) -> impl Future<Output = ObservationAction> + Send {
        self.hit(8);
        async { ObservationAction::Continue }
    }

    fn on_dispatch(
        &self,
        _ctx: &HookContext,
        _event: DispatchEvent<'_>,
    ) -> impl Future<Output = DispatchAction> + Send {
        self.hit(9);
        async { DispatchAction::Proceed }
    }

    fn on_outcome(
        &self,
        _ctx: &HookContext,
        _event: OutcomeEvent<'_>,
    ) -> impl Future<Output = OutcomeAction> + Send {
        self.hit(10);
        async { OutcomeAction::Proceed }
    }

    fn observes(&self, kind: StepEventKind) -> bool {
        self.hit(11);
        // rig's default.
        !matches!(
            kind,
            StepEventKind::EmbedDispatch
                | StepEventKind::RerankDispatch
                | StepEventKind::MemoryDispatch
                | StepEventKind::RetrieveDispatch
                | StepEventKind::CustomDispatch
        )
    }
}

/// The agent: the instant model, a preamble, the `echo` tool, then `hooks` no-op hooks.
fn agent(hooks: usize, counting: Option<Arc<Counts>>) -> Agent {
    let model = Model::new(MockScript::default(), InstantModel::new());
    let mut builder = AgentBuilder::new(model)
        .preamble("You are a benchmark.")
        .tool(Echo);
    for _ in 0..hooks {
        builder = builder.add_hook(Noop);
    }
    if let Some(counts) = counting {
        builder = builder.add_hook(Counting(counts));
    }
    builder.build()
}

/// `runs` runs one after another under one `block_on`; the elapsed time.
fn runs(agent: &Agent, runs: u64) -> Duration {
    futures::executor::block_on(async {
        let start = Instant::now();
        for _ in 0..runs {
            let response = agent.prompt("ping").max_turns(4).await.expect("the run");
            assert_eq!(black_box(response).output(), "done");
        }
        start.elapsed()
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let batches = if quick { 41 } else { 151 };
    let batch_time = Duration::from_millis(2);

    // How often rig calls one hook per run.
    let counts = Arc::new(Counts::default());
    let counted = agent(0, Some(counts.clone()));
    runs(&counted, 1);
    let mut per_run = 0;
    let mut detail = String::new();
    for (method, count) in METHODS.iter().zip(&counts.0) {
        let count = count.load(Ordering::Relaxed);
        if *method != "observes" {
            per_run += count;
        }
        detail.push_str(&format!(" {method}={count}"));
    }
    println!("#{detail}");
    println!("rig hook_calls_per_run {per_run}");

    // Batches of the two agents, interleaved, so a noisy moment hits both; the median of each.
    let agents = [agent(0, None), agent(10, None)];
    let mut sizes = [0u64; 2];
    for (size, agent) in sizes.iter_mut().zip(&agents) {
        runs(agent, 50);
        let mut n = 50u64;
        let mut elapsed = runs(agent, n);
        while elapsed < Duration::from_millis(50) {
            n *= 2;
            elapsed = runs(agent, n);
        }
        *size = ((n as f64) * batch_time.as_secs_f64() / elapsed.as_secs_f64()).max(1.0) as u64;
    }
    let mut samples = [Vec::new(), Vec::new()];
    for _ in 0..batches {
        for ((samples, agent), size) in samples.iter_mut().zip(&agents).zip(sizes) {
            samples.push(runs(agent, size).as_nanos() as f64 / size as f64);
        }
    }
    let [zero, ten] = samples;
    println!("rig react_call_0 {:.1}", median(zero));
    println!("rig react_call_10 {:.1}", median(ten));
}
