//! Cancellation: a property test that drops the call future (or the stream) after every possible number of polls k, over random scenarios with tools, hooks, stops, suspensions, faults and interrupts, and checks the invariants of docs/reliability.md after each drop and a follow-up call; and `interrupt()` fired from a hook at each of the twelve event kinds, with the exact outcome.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::describe::memory_of;
use crate::support::fixtures::{
    ELEVEN_KINDS_EVENTS, SwapModel, YieldingHook, cut_after, eleven_kinds_builder,
    eleven_kinds_memory, eleven_kinds_model, poll_stream_times, poll_times, run_counting,
    work_tool, yield_once,
};
use crate::support::invariants::{
    Ending, Pending, assert_follow_up_call, assert_invariants, assert_invariants_after_drops,
    endings,
};
use crate::support::recorded::kinds;
use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT};
use agentscope::prelude::*;
use agentscope_test::tools::{FailingTool, PanickingTool, SuspendingTool};
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedResponse};
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::json;

type K = HookEventType;

/// No scenario needs anywhere near this many polls; reaching it means a hang.
const POLL_LIMIT: usize = 100_000;

// ---------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum ToolKind {
    /// `work`: progress chunks and yields (runtime-free), then a result.
    Work {
        yields: u8,
        progress: u8,
    },
    Fail,
    Panic,
    Suspend,
    Unknown,
    BadArgs,
}

#[derive(Debug, Clone)]
enum Step {
    Text { chunks: u8, thinking: bool },
    Tools { calls: Vec<ToolKind>, text: bool },
    ErrorBefore,
    ErrorMidStream,
    Empty,
}

#[derive(Debug, Clone, Copy)]
enum Action {
    Nothing,
    StopAfterReasoning,
    StopAfterActing,
    Fail(HookEventType),
    Panic(HookEventType),
    Interrupt(HookEventType),
    SkipTools,
}

#[derive(Debug, Clone)]
struct HookSpec {
    priority: i32,
    yields: bool,
    action: Action,
}

#[derive(Debug, Clone)]
struct Scenario {
    steps: Vec<Step>,
    hooks: Vec<HookSpec>,
    max_iters: usize,
    parallel: bool,
    stream: bool,
    incremental: bool,
}

fn kind() -> impl Strategy<Value = HookEventType> {
    prop::sample::select(HookEventType::ALL.to_vec())
}

fn tool_kind() -> impl Strategy<Value = ToolKind> {
    prop_oneof![
        6 => (0u8..3, 0u8..3).prop_map(|(yields, progress)| ToolKind::Work { yields, progress }),
        1 => Just(ToolKind::Fail),
        1 => Just(ToolKind::Panic),
        1 => Just(ToolKind::Suspend),
        1 => Just(ToolKind::Unknown),
        1 => Just(ToolKind::BadArgs),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1u8..4, any::<bool>()).prop_map(|(chunks, thinking)| Step::Text { chunks, thinking }),
        6 => (prop::collection::vec(tool_kind(), 1..4), any::<bool>())
            .prop_map(|(calls, text)| Step::Tools { calls, text }),
        1 => Just(Step::ErrorBefore),
        1 => Just(Step::ErrorMidStream),
        1 => Just(Step::Empty),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => Just(Action::Nothing),
        1 => Just(Action::StopAfterReasoning),
        1 => Just(Action::StopAfterActing),
        1 => kind().prop_map(Action::Fail),
        1 => kind().prop_map(Action::Panic),
        2 => kind().prop_map(Action::Interrupt),
        1 => Just(Action::SkipTools),
    ]
}

fn hook_spec() -> impl Strategy<Value = HookSpec> {
    (
        prop::sample::select(vec![10, 100, 500]),
        any::<bool>(),
        action(),
    )
        .prop_map(|(priority, yields, action)| HookSpec {
            priority,
            yields,
            action,
        })
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(step(), 1..5),
        prop::collection::vec(hook_spec(), 0..4),
        1usize..4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(mut steps, hooks, max_iters, parallel, stream, incremental)| {
                // Most runs end with an answer (when nothing failed before).
                steps.push(Step::Text {
                    chunks: 2,
                    thinking: false,
                });
                Scenario {
                    steps,
                    hooks,
                    max_iters,
                    parallel,
                    stream,
                    incremental,
                }
            },
        )
}

fn script(steps: &[Step]) -> Vec<ScriptedResponse> {
    steps
        .iter()
        .enumerate()
        .map(|(s, step)| match step {
            Step::Text { chunks, thinking } => {
                let mut parts = Vec::new();
                if *thinking {
                    parts.push(ScriptedChunk::thinking("Thinking."));
                }
                for c in 0..*chunks {
                    parts.push(ScriptedChunk::text(format!("t{s}.{c} ")));
                }
                ScriptedResponse::chunks(parts)
            }
            Step::Tools { calls, text } => {
                let mut parts = Vec::new();
                if *text {
                    parts.push(ScriptedChunk::text("Using tools."));
                }
                for (c, call) in calls.iter().enumerate() {
                    let id = format!("s{s}c{c}");
                    parts.push(match call {
                        ToolKind::Work { yields, progress } => ScriptedChunk::tool_call(
                            id,
                            "work",
                            json!({"text": format!("r{s}.{c}"), "yields": yields, "progress": progress}),
                        ),
                        ToolKind::Fail => ScriptedChunk::tool_call(id, "fail", json!({"message": "no"})),
                        ToolKind::Panic => ScriptedChunk::tool_call(id, "panic", json!({})),
                        ToolKind::Suspend => ScriptedChunk::tool_call(id, "external", json!({})),
                        ToolKind::Unknown => ScriptedChunk::tool_call(id, "ghost", json!({})),
                        ToolKind::BadArgs => ScriptedChunk::tool_call(id, "work", json!({"text": 5})),
                    });
                }
                ScriptedResponse::chunks(parts)
            }
            Step::ErrorBefore => ScriptedResponse::error("model down"),
            Step::ErrorMidStream => cut_after("partial", "connection reset"),
            Step::Empty => ScriptedResponse::empty(),
        })
        .collect()
}

/// A hook doing `action` (while armed), yielding first when `yields`.
struct ActionHook {
    spec: HookSpec,
    armed: Arc<AtomicBool>,
    agent: Arc<Mutex<Option<ReActAgent>>>,
}

impl Hook for ActionHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        if self.spec.yields {
            yield_once().await;
        }
        if !self.armed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let kind = event.event_type();
        match (self.spec.action, event) {
            (Action::StopAfterReasoning, HookEvent::PostReasoning(e)) => e.stop_agent(),
            (Action::StopAfterActing, HookEvent::PostActing(e)) => e.stop_agent(),
            (Action::SkipTools, HookEvent::PreActing(e)) => {
                e.skip_with(ToolResultBlock::text("", "", "skipped"));
            }
            (Action::Fail(at), _) if at == kind => return Err(HookError::msg("injected")),
            (Action::Panic(at), _) if at == kind => panic!("injected panic"),
            (Action::Interrupt(at), _) if at == kind => {
                if let Some(agent) = self.agent.lock().unwrap().as_ref() {
                    agent.interrupt();
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn priority(&self) -> i32 {
        self.spec.priority
    }

    fn name(&self) -> &str {
        "action"
    }
}

/// One agent for a scenario, with recorders before and after every other hook.
struct Setup {
    agent: ReActAgent,
    model: SwapModel,
    early: RecordingHook,
    late: RecordingHook,
    armed: Arc<AtomicBool>,
    handle: Arc<Mutex<Option<ReActAgent>>>,
}

impl Setup {
    fn new(scenario: &Scenario) -> Self {
        let model = SwapModel::yielding(script(&scenario.steps));
        let early = RecordingHook::new(-1000).with_name("early");
        let late = RecordingHook::new(1000).with_name("late");
        let armed = Arc::new(AtomicBool::new(true));
        let handle: Arc<Mutex<Option<ReActAgent>>> = Arc::default();
        let mut builder = ReActAgent::builder()
            .sys_prompt("You are tested.")
            .model(model.clone())
            .toolkit(
                Toolkit::new()
                    .tool(work_tool())
                    .tool(FailingTool::new())
                    .tool(PanickingTool::new())
                    .tool(SuspendingTool::new())
                    .parallel(scenario.parallel),
            )
            .max_iters(scenario.max_iters)
            .hook(early.clone())
            .hook(late.clone())
            // Every event is an await point: a drop can land on each of them.
            .hook(YieldingHook::new(50, HookEventTypes::ALL));
        for spec in &scenario.hooks {
            builder = builder.hook(ActionHook {
                spec: spec.clone(),
                armed: Arc::clone(&armed),
                agent: Arc::clone(&handle),
            });
        }
        let agent = builder.build().unwrap();
        *handle.lock().unwrap() = Some(agent.clone());
        Self {
            agent,
            model,
            early,
            late,
            armed,
            handle,
        }
    }

    fn options(scenario: &Scenario) -> StreamOptions {
        StreamOptions::default().incremental(scenario.incremental)
    }

    /// Runs the call to its end; returns how many polls that took (for a stream: until it
    /// yields `None`).
    fn run_to_end(&self, scenario: &Scenario) -> usize {
        if scenario.stream {
            let mut stream = self.agent.stream("q", Self::options(scenario));
            let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
            let mut last = None;
            for polls in 1..=POLL_LIMIT {
                match stream.poll_next_unpin(&mut cx) {
                    std::task::Poll::Ready(Some(item)) => last = Some(item),
                    std::task::Poll::Ready(None) => {
                        let last = last.expect("a stream has a last item");
                        assert!(
                            last.as_ref()
                                .map_or(true, |e| e.event_type == EventType::AgentResult),
                            "the last item is neither the result nor an error"
                        );
                        return polls;
                    }
                    std::task::Poll::Pending => {}
                }
            }
            panic!("the stream did not end within {POLL_LIMIT} polls");
        } else {
            let (_result, polls) = run_counting(self.agent.call("q"), POLL_LIMIT);
            polls
        }
    }

    /// Starts the call, polls it `k` times and drops it (unless it finished first).
    fn drop_after(&self, scenario: &Scenario, k: usize) -> bool {
        if scenario.stream {
            let mut stream = self.agent.stream("q", Self::options(scenario));
            let (_items, ended) = poll_stream_times(&mut stream, k);
            drop(stream);
            ended
        } else {
            let mut call = std::pin::pin!(self.agent.call("q"));
            poll_times(call.as_mut(), k).is_some()
        }
    }

    fn recorders(&self) -> [&RecordingHook; 2] {
        [&self.early, &self.late]
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        // Breaks the agent -> hook -> agent cycle.
        self.handle.lock().unwrap().take();
    }
}

fn check_scenario(scenario: &Scenario) {
    let total = Setup::new(scenario).run_to_end(scenario);
    for k in 0..=total {
        let setup = Setup::new(scenario);
        let finished = setup.drop_after(scenario, k);
        assert_eq!(finished, k == total, "k = {k} of {total}");
        let dropped = usize::from(!finished);
        assert_invariants_after_drops(
            &setup.agent,
            &setup.recorders(),
            Pending::Deliberate,
            dropped,
        );
        if !finished {
            // A dropped call fires neither PostCall nor Error after the drop; hooks that
            // had not seen its PreCall see nothing of it.
            for rec in setup.recorders() {
                assert!(endings(rec).len() <= 1, "k = {k}: {:?}", rec.types());
            }
        }
        setup.armed.store(false, Ordering::SeqCst);
        futures::executor::block_on(assert_follow_up_call(
            &setup.agent,
            &setup.model,
            &setup.recorders(),
        ));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    /// For every k, dropping the call (or the stream) after k polls leaves the agent free,
    /// memory well-formed, no SYSTEM message stored and hook endings paired; the agent then
    /// serves a follow-up call.
    #[test]
    fn dropping_after_any_number_of_polls_keeps_the_invariants(scenario in scenario()) {
        check_scenario(&scenario);
    }
}

#[test]
fn dropping_a_call_with_a_parallel_batch_after_every_poll() {
    // A fixed, tool-heavy scenario, so the interesting drop points are always covered.
    let scenario = Scenario {
        steps: vec![
            Step::Tools {
                calls: vec![
                    ToolKind::Work {
                        yields: 2,
                        progress: 2,
                    },
                    ToolKind::Suspend,
                    ToolKind::Work {
                        yields: 1,
                        progress: 0,
                    },
                    ToolKind::Fail,
                ],
                text: true,
            },
            Step::Text {
                chunks: 3,
                thinking: true,
            },
        ],
        hooks: vec![HookSpec {
            priority: 100,
            yields: true,
            action: Action::Nothing,
        }],
        max_iters: 3,
        parallel: true,
        stream: false,
        incremental: true,
    };
    check_scenario(&scenario);
    check_scenario(&Scenario {
        stream: true,
        parallel: false,
        ..scenario
    });
}

// ---------------------------------------------------------------------------------------
// interrupt() from a hook at each event kind
// ---------------------------------------------------------------------------------------

const USER: &str = r#"user/user: text "q""#;
const CALL: &str =
    r#"assistant/assistant: text "Let me check." | tool_use c1 progress {"steps":2}"#;
const DONE: &str = r#"tool/progress: tool_result c1 progress "done""#;

fn interrupted_reply() -> String {
    format!("assistant/assistant: text {INTERRUPT_REPLY:?} <Interrupted>")
}

/// The reply and memory after an interrupt at `kind` in the eleven-kinds scenario, and the
/// events a recorder after the interrupting hook saw (chunks included).
fn expected_after_interrupt_at(kind: HookEventType) -> (String, Vec<String>, Vec<HookEventType>) {
    let interrupted_call =
        format!("tool/progress: tool_result c1 progress error {INTERRUPTED_RESULT:?}");
    let reasoning =
        kinds("PreCall PreReasoning ReasoningChunk ReasoningChunk ReasoningChunk PostReasoning");
    let with = |tail: &[HookEventType]| -> Vec<HookEventType> {
        let mut all = reasoning.to_vec();
        all.extend_from_slice(tail);
        all
    };
    let reply = interrupted_reply();
    match kind {
        K::PreCall => (
            INTERRUPT_REPLY.to_owned(),
            vec![USER.to_owned(), reply],
            vec![K::PreCall, K::PostCall],
        ),
        K::PreReasoning => (
            INTERRUPT_REPLY.to_owned(),
            vec![USER.to_owned(), reply],
            vec![K::PreCall, K::PreReasoning, K::PostCall],
        ),
        // The partial message is stored.
        K::ReasoningChunk => (
            INTERRUPT_REPLY.to_owned(),
            vec![
                USER.to_owned(),
                r#"assistant/assistant: text "Let me""#.to_owned(),
                reply,
            ],
            vec![K::PreCall, K::PreReasoning, K::ReasoningChunk, K::PostCall],
        ),
        K::PostReasoning => (
            INTERRUPT_REPLY.to_owned(),
            vec![USER.to_owned(), CALL.to_owned(), interrupted_call, reply],
            with(&[K::PostCall]),
        ),
        K::PreActing => (
            INTERRUPT_REPLY.to_owned(),
            vec![USER.to_owned(), CALL.to_owned(), interrupted_call, reply],
            with(&[K::PreActing, K::PostCall]),
        ),
        // The tool had finished when the interrupt was seen: its real result is kept, and
        // no PostActing fires for an interrupted batch.
        K::ActingChunk => (
            INTERRUPT_REPLY.to_owned(),
            vec![USER.to_owned(), CALL.to_owned(), DONE.to_owned(), reply],
            with(&[K::PreActing, K::ActingChunk, K::ActingChunk, K::PostCall]),
        ),
        K::PostActing => (
            INTERRUPT_REPLY.to_owned(),
            vec![USER.to_owned(), CALL.to_owned(), DONE.to_owned(), reply],
            with(&kinds(
                "PreActing ActingChunk ActingChunk PostActing PostCall",
            )),
        ),
        K::PreSummary => (
            INTERRUPT_REPLY.to_owned(),
            vec![USER.to_owned(), CALL.to_owned(), DONE.to_owned(), reply],
            with(&kinds(
                "PreActing ActingChunk ActingChunk PostActing PreSummary PostCall",
            )),
        ),
        // A partial summary is dropped.
        K::SummaryChunk => (
            INTERRUPT_REPLY.to_owned(),
            vec![USER.to_owned(), CALL.to_owned(), DONE.to_owned(), reply],
            with(&kinds(
                "PreActing ActingChunk ActingChunk PostActing PreSummary SummaryChunk \
                 PostCall",
            )),
        ),
        // The summary is complete: nothing is left to interrupt.
        K::PostSummary | K::PostCall => (
            "summary".to_owned(),
            eleven_kinds_memory(),
            ELEVEN_KINDS_EVENTS.to_vec(),
        ),
        K::Error => panic!("Error has its own scenario"),
    }
}

async fn assert_interrupt_at(kind: HookEventType) {
    for stream in [false, true] {
        let case = format!("interrupt at {kind} (stream: {stream})");
        let model = eleven_kinds_model(kind);
        let early = RecordingHook::new(0).with_name("early");
        let late = RecordingHook::new(1000).with_name("late");
        let agent = eleven_kinds_builder(&model)
            .sys_prompt("You are tested.")
            .hook(early.clone())
            .hook(late.clone())
            .build()
            .unwrap();
        let armed = Arc::new(AtomicBool::new(true));
        let interrupter = {
            let handle = agent.clone();
            let armed = Arc::clone(&armed);
            hook_fn(move |_| {
                if armed.load(Ordering::SeqCst) {
                    handle.interrupt();
                }
                Ok(())
            })
            .with_interests(kind)
            .with_priority(100)
            .with_name("interrupter")
        };
        let interrupter_id = agent.add_hook(interrupter);

        let outcome = if stream {
            let mut events = agent.stream("q", StreamOptions::default());
            let mut last = None;
            while let Some(item) = events.next().await {
                last = Some(item);
            }
            match last.expect("no items") {
                Ok(event) => {
                    assert_eq!(event.event_type, EventType::AgentResult, "{case}");
                    Ok(event.message)
                }
                Err(err) => Err(err),
            }
        } else {
            agent.call("q").await
        };

        if kind == K::Error {
            let err = outcome.expect_err(&case);
            assert_eq!(err.to_string(), "model error: model down", "{case}");
            // The model failed before answering: the input is taken back.
            assert!(memory_of(&agent).is_empty(), "{case}");
            assert_eq!(endings(&late), [Ending::Error], "{case}");
        } else {
            let (reply, memory, events) = expected_after_interrupt_at(kind);
            let msg = outcome.unwrap_or_else(|err| panic!("{case}: {err:?}"));
            assert_eq!(msg.text(), reply, "{case}");
            let reason = if reply == INTERRUPT_REPLY {
                GenerateReason::Interrupted
            } else {
                GenerateReason::MaxIterations
            };
            assert_eq!(msg.generate_reason(), Some(reason), "{case}");
            assert_eq!(memory_of(&agent), memory, "{case}");
            assert_eq!(late.types(), events, "{case}");
            assert_eq!(endings(&early), [Ending::PostCall], "{case}");
        }
        assert_invariants(&agent, &[&early, &late], Pending::None);
        // The next call gets a fresh start: the interrupt does not linger.
        armed.store(false, Ordering::SeqCst);
        assert_follow_up_call(&agent, &model, &[&early, &late]).await;
        // Breaks the agent -> hook -> agent cycle.
        assert!(agent.remove_hook(interrupter_id));
    }
}

#[tokio::test]
async fn interrupt_from_a_hook_at_pre_call() {
    assert_interrupt_at(K::PreCall).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_post_call() {
    assert_interrupt_at(K::PostCall).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_pre_reasoning() {
    assert_interrupt_at(K::PreReasoning).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_post_reasoning() {
    assert_interrupt_at(K::PostReasoning).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_reasoning_chunk() {
    assert_interrupt_at(K::ReasoningChunk).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_pre_acting() {
    assert_interrupt_at(K::PreActing).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_post_acting() {
    assert_interrupt_at(K::PostActing).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_acting_chunk() {
    assert_interrupt_at(K::ActingChunk).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_pre_summary() {
    assert_interrupt_at(K::PreSummary).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_post_summary() {
    assert_interrupt_at(K::PostSummary).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_summary_chunk() {
    assert_interrupt_at(K::SummaryChunk).await;
}

#[tokio::test]
async fn interrupt_from_a_hook_at_error() {
    assert_interrupt_at(K::Error).await;
}
