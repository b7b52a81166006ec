//! `agent.stream(...)`: exact event sequences, incremental and accumulated chunks, every `StreamOptions` filter, tool progress, post-hook values, error and empty-response endings, parity with `call()`, per-stream isolation, cancellation by drop, and backpressure.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::fixtures::{
    CANCELLED, build_agent, calc_call, cut_after, recorded_agent, text_and_progress_call,
};
use crate::support::hooks::{counting, hooks};
use crate::support::invariants::assert_no_orphan_tool_use;
use crate::support::recorded::assert_chunks;
use crate::support::rows::{Row, rows, text};
use agentscope::prelude::*;
use agentscope::{BoxedHook, ModelError};
use agentscope_test::tools::{Calculator, EchoTool, ProgressTool};
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use futures::stream::FusedStream;
use serde_json::json;
use tokio::sync::Notify;

fn calc_use(id: &str, e: &str) -> ContentBlock {
    ToolUseBlock::new(id, "calculator", json!({ "expression": e })).into()
}

/// (type, is_last, content) of each event.
fn shape(events: &[Event]) -> Vec<(EventType, bool, Vec<ContentBlock>)> {
    events
        .iter()
        .map(|e| (e.event_type, e.is_last, e.message.content.to_vec()))
        .collect()
}

/// (type, is_last, a short description of the message) of each event.
fn keys(events: &[Event]) -> Vec<(EventType, bool, String)> {
    events
        .iter()
        .map(|e| (e.event_type, e.is_last, describe(&e.message)))
        .collect()
}

fn describe(msg: &Msg) -> String {
    let mut parts = Vec::new();
    if !msg.text().is_empty() {
        parts.push(msg.text());
    }
    for call in msg.tool_uses() {
        parts.push(format!("use:{}", call.id));
    }
    for result in msg.tool_results() {
        parts.push(format!("result:{}={}", result.id, result.text_output()));
    }
    parts.join("|")
}

fn key(event_type: EventType, is_last: bool, description: &str) -> (EventType, bool, String) {
    (event_type, is_last, description.to_owned())
}

async fn collect_ok(stream: AgentStream) -> Vec<Event> {
    tokio::time::timeout(
        Duration::from_secs(10),
        stream.map(Result::unwrap).collect(),
    )
    .await
    .expect("the stream did not end")
}

/// A tool call in chunks, then a chunked answer.
fn tool_then_answer() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::chunks([
            ScriptedChunk::text("Let me "),
            ScriptedChunk::text("compute."),
            ScriptedChunk::tool_call("c1", "calculator", json!({"expression": "6*7"})),
        ]),
        ScriptedResponse::chunks([
            ScriptedChunk::text("The answer "),
            ScriptedChunk::text("is 42."),
        ]),
    ])
}

fn calc_agent(model: &ScriptedModel, hooks: Vec<BoxedHook>) -> ReActAgent {
    ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hooks(hooks)
        .build()
        .unwrap()
}

#[tokio::test]
async fn tool_call_then_answer_streams_the_exact_event_sequence() {
    let model = tool_then_answer();
    let agent = calc_agent(&model, vec![]);

    let events = collect_ok(agent.stream("q", StreamOptions::default())).await;

    assert_eq!(
        shape(&events),
        [
            (EventType::Reasoning, false, vec![text("Let me ")]),
            (EventType::Reasoning, false, vec![text("compute.")]),
            (EventType::Reasoning, false, vec![calc_use("c1", "6*7")]),
            (
                EventType::Reasoning,
                true,
                vec![text("Let me compute."), calc_use("c1", "6*7")]
            ),
            (
                EventType::ToolResult,
                true,
                vec![ToolResultBlock::text("c1", "calculator", "42").into()]
            ),
            (EventType::Reasoning, false, vec![text("The answer ")]),
            (EventType::Reasoning, false, vec![text("is 42.")]),
            (EventType::Reasoning, true, vec![text("The answer is 42.")]),
            (
                EventType::AgentResult,
                true,
                vec![text("The answer is 42.")]
            ),
        ]
    );
    for event in &events {
        let (role, name) = match event.event_type {
            EventType::ToolResult => (Role::Tool, "calculator"),
            _ => (Role::Assistant, "assistant"),
        };
        assert_eq!(
            (event.message.role, event.message.name.as_str()),
            (role, name)
        );
    }
    let result = &events.last().unwrap().message;
    assert_eq!(result.generate_reason(), Some(GenerateReason::ModelStop));
    // The final values are the stored messages.
    let memory = agent.memory().messages();
    assert_eq!(events[3].message, memory[1]);
    assert_eq!(events[4].message, memory[2]);
    assert_eq!(events[7].message, memory[3]);
    assert_eq!(*result, memory[3]);
}

/// A chunk's delta shares the message's blocks when the chunk is the whole message so far
/// (the first chunk, here); the hooks' copy and the stream's copy must keep exactly that
/// chunk while the message grows, and a one-chunk answer's delta is its whole content.
#[tokio::test]
async fn hooks_and_the_stream_see_each_chunk_as_it_came_while_the_message_grows() {
    let model = ScriptedModel::new([
        ScriptedResponse::chunks([
            ScriptedChunk::text("Hel"),
            ScriptedChunk::text("lo"),
            ScriptedChunk::text("!"),
        ]),
        ScriptedResponse::text("again"),
    ]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());
    let deltas = |events: &[Event]| -> Vec<String> {
        events
            .iter()
            .filter(|e| e.event_type == EventType::Reasoning && !e.is_last)
            .map(|e| e.message.text())
            .collect()
    };

    let events = collect_ok(agent.stream("q", StreamOptions::default())).await;
    assert_eq!(deltas(&events), ["Hel", "lo", "!"]);
    assert_chunks(
        &rec,
        HookEventType::ReasoningChunk,
        &[("Hel", "Hel"), ("lo", "Hello"), ("!", "Hello!")],
    );
    assert_eq!(events.last().unwrap().message.text(), "Hello!");

    rec.clear();
    let events = collect_ok(agent.stream("q2", StreamOptions::default())).await;
    assert_eq!(deltas(&events), ["again"]);
    assert_chunks(&rec, HookEventType::ReasoningChunk, &[("again", "again")]);
    let memory = agent.memory().messages();
    assert_eq!(memory.last().unwrap().text(), "again");
    assert_eq!(memory[1].text(), "Hello!");
}

#[tokio::test]
async fn non_incremental_chunks_carry_the_accumulated_message() {
    let model = tool_then_answer();
    let agent = calc_agent(&model, vec![]);

    let events = collect_ok(agent.stream("q", StreamOptions::default().incremental(false))).await;

    let chunks: Vec<Vec<ContentBlock>> = events
        .iter()
        .filter(|e| e.event_type == EventType::Reasoning && !e.is_last)
        .map(|e| e.message.content.to_vec())
        .collect();
    assert_eq!(
        chunks,
        [
            vec![text("Let me ")],
            vec![text("Let me compute.")],
            vec![text("Let me compute."), calc_use("c1", "6*7")],
            vec![text("The answer ")],
            vec![text("The answer is 42.")],
        ]
    );
    assert_eq!(events.len(), 9);
}

/// A scenario producing every event type: a goto hint, reasoning chunks and results, tool
/// progress and result, summary chunks and result, and the agent result.
async fn every_kind(options: StreamOptions) -> Vec<(EventType, bool, String)> {
    let model = ScriptedModel::new([
        ScriptedResponse::text("draft"),
        text_and_progress_call("Working", 2),
        ScriptedResponse::chunks([ScriptedChunk::text("Sum"), ScriptedChunk::text("mary")]),
    ]);
    let goto_once = hook_fn(|event| {
        if let HookEvent::PostReasoning(e) = event
            && e.reasoning_message().text() == "draft"
        {
            e.goto_reasoning(vec![Msg::user("hint")])?;
        }
        Ok(())
    });
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(ProgressTool::new()))
        .max_iters(1)
        .hook(goto_once)
        .build()
        .unwrap();
    keys(&collect_ok(agent.stream("q", options)).await)
}

fn all_kinds() -> Vec<(EventType, bool, String)> {
    use EventType::{AgentResult, Hint, Reasoning, Summary, ToolResult};
    let chunk = |event_type, description| key(event_type, false, description);
    let last = |event_type, description| key(event_type, true, description);
    vec![
        chunk(Reasoning, "draft"),
        last(Reasoning, "draft"),
        last(Hint, "hint"),
        chunk(Reasoning, "Working"),
        chunk(Reasoning, "use:c1"),
        last(Reasoning, "Working|use:c1"),
        chunk(ToolResult, "result:c1=step 1/2"),
        chunk(ToolResult, "result:c1=step 2/2"),
        last(ToolResult, "result:c1=done"),
        chunk(Summary, "Sum"),
        chunk(Summary, "mary"),
        last(Summary, "Summary"),
        last(AgentResult, "Summary"),
    ]
}

fn all_kinds_without(drop: impl Fn(EventType, bool) -> bool) -> Vec<(EventType, bool, String)> {
    all_kinds()
        .into_iter()
        .filter(|(t, last, _)| !drop(*t, *last))
        .collect()
}

#[tokio::test]
async fn default_options_deliver_every_kind() {
    assert_eq!(every_kind(StreamOptions::default()).await, all_kinds());
}

#[tokio::test]
async fn event_types_filter_keeps_only_the_named_types() {
    for types in [
        vec![EventType::Reasoning],
        vec![EventType::ToolResult, EventType::AgentResult],
        vec![EventType::Hint],
        vec![EventType::Summary],
        vec![EventType::AgentResult],
        vec![],
    ] {
        let got = every_kind(StreamOptions::default().event_types(types.clone())).await;
        assert_eq!(
            got,
            all_kinds_without(|t, _| !types.contains(&t)),
            "event_types {types:?}"
        );
    }
}

/// One test per `include_*` option: set to `false` on the every-kind scenario, it drops
/// exactly the events `drop` names (by type and `is_last`) and keeps all others.
macro_rules! include_false_drops_only {
    ($($name:ident: $option:ident drops $drop:expr;)*) => {$(
        #[tokio::test]
        async fn $name() {
            let got = every_kind(StreamOptions::default().$option(false)).await;
            assert_eq!(got, all_kinds_without($drop));
        }
    )*};
}

include_false_drops_only! {
    include_reasoning_chunk_false_drops_only_reasoning_chunks:
        include_reasoning_chunk drops |t, last| t == EventType::Reasoning && !last;
    include_reasoning_result_false_drops_only_reasoning_results:
        include_reasoning_result drops |t, last| t == EventType::Reasoning && last;
    include_acting_chunk_false_drops_only_tool_progress:
        include_acting_chunk drops |t, last| t == EventType::ToolResult && !last;
    include_summary_chunk_false_drops_only_summary_chunks:
        include_summary_chunk drops |t, last| t == EventType::Summary && !last;
    include_summary_result_false_drops_only_the_summary_result:
        include_summary_result drops |t, last| t == EventType::Summary && last;
}

#[tokio::test]
async fn tool_progress_chunks_arrive_in_order_before_the_result() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "progress", json!({"steps": 3})),
        ScriptedResponse::text("ok"),
    ]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new().tool(ProgressTool::new()));

    let events = collect_ok(agent.stream(
        "q",
        StreamOptions::default().event_types([EventType::ToolResult]),
    ))
    .await;

    let progress = |step: &str| -> Vec<ContentBlock> {
        vec![ToolResultBlock::text("c1", "progress", step).into()]
    };
    assert_eq!(
        shape(&events),
        [
            (EventType::ToolResult, false, progress("step 1/3")),
            (EventType::ToolResult, false, progress("step 2/3")),
            (EventType::ToolResult, false, progress("step 3/3")),
            (EventType::ToolResult, true, progress("done")),
        ]
    );
    assert!(
        events
            .iter()
            .all(|e| e.message.role == Role::Tool && e.message.name == "progress")
    );
    let acting: Vec<(HookEventType, String)> = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            HookEvent::PreActing(_) => Some((e.event_type(), String::new())),
            HookEvent::ActingChunk(c) => Some((e.event_type(), c.chunk().text_output())),
            HookEvent::PostActing(p) => Some((e.event_type(), p.tool_result().text_output())),
            _ => None,
        })
        .collect();
    assert_eq!(
        acting,
        [
            (HookEventType::PreActing, String::new()),
            (HookEventType::ActingChunk, "step 1/3".to_owned()),
            (HookEventType::ActingChunk, "step 2/3".to_owned()),
            (HookEventType::ActingChunk, "step 3/3".to_owned()),
            (HookEventType::PostActing, "done".to_owned()),
        ]
    );
}

#[tokio::test]
async fn streamed_values_are_the_values_after_every_hook_ran() {
    let model = tool_then_answer();
    let mark_reasoning = |tag: &'static str, priority: i32| {
        hook_fn(move |event| {
            if let HookEvent::PostReasoning(e) = event {
                let mut msg = e.reasoning_message().clone();
                msg.content.insert(0, text(tag));
                e.set_reasoning_message(msg);
            }
            Ok(())
        })
        .with_priority(priority)
    };
    let redact = |tag: &'static str, priority: i32| {
        hook_fn(move |event| {
            if let HookEvent::PostActing(e) = event {
                let previous = e.tool_result().text_output();
                e.set_tool_result(ToolResultBlock::text("", "", format!("{previous}{tag}")));
            }
            Ok(())
        })
        .with_priority(priority)
    };
    let for_caller = hook_fn(|event| {
        if let HookEvent::PostCall(e) = event {
            e.set_final_message(Msg::assistant("for the caller"));
        }
        Ok(())
    });
    let agent = calc_agent(
        &model,
        hooks![
            mark_reasoning("[second]", 20),
            mark_reasoning("[first]", 10),
            redact("+a", 10),
            redact("+b", 20),
            for_caller
        ],
    );

    let events =
        collect_ok(agent.stream("q", StreamOptions::default().include_reasoning_chunk(false)))
            .await;

    let memory = agent.memory().messages();
    assert_eq!(events.len(), 4);
    assert_eq!(
        events[0].message.content,
        vec![
            text("[second]"),
            text("[first]"),
            text("Let me compute."),
            calc_use("c1", "6*7")
        ]
    );
    assert_eq!(events[0].message, memory[1]);
    assert_eq!(
        events[1].message.content,
        vec![ToolResultBlock::text("c1", "calculator", "42+a+b").into()]
    );
    assert_eq!(events[1].message, memory[2]);
    assert_eq!(events[2].message, memory[3]);
    assert_eq!(
        events[2].message.text(),
        "[second]\n[first]\nThe answer is 42."
    );
    // The caller's value (AgentResult) is PostCall's; memory keeps the loop's message.
    assert_eq!(events[3].event_type, EventType::AgentResult);
    assert_eq!(events[3].message.text(), "for the caller");
    // The model saw the modified values too.
    assert_eq!(rows(&model.requests()[1].messages), rows(&memory[..3]));
}

#[tokio::test]
async fn an_error_ends_the_stream_after_error_hooks_and_the_stream_stays_fused() {
    let model = ScriptedModel::new([cut_after("par", "cut")]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());

    let mut stream = agent.stream("q", StreamOptions::default());
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(
        (first.event_type, first.is_last, first.message.text()),
        (EventType::Reasoning, false, "par".to_owned())
    );
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(
        matches!(&err, AgentError::Model(ModelError::Stream { message }) if message == "cut"),
        "{err:?}"
    );
    assert_eq!(
        rec.types().last(),
        Some(&HookEventType::Error),
        "ErrorEvent hooks ran before the error was delivered"
    );
    assert!(!rec.types().contains(&HookEventType::PostCall));
    for _ in 0..3 {
        assert!(stream.next().await.is_none());
    }
    assert!(stream.is_terminated());
}

#[tokio::test]
async fn an_empty_response_ends_the_stream_with_an_error() {
    let model = ScriptedModel::new([ScriptedResponse::empty()]);
    let agent = ReActAgent::builder().model(model).build().unwrap();

    let items: Vec<Result<Event, AgentError>> = tokio::time::timeout(
        Duration::from_secs(10),
        agent.stream("q", StreamOptions::default()).collect(),
    )
    .await
    .expect("an empty response must not hang the stream");

    assert_eq!(items.len(), 1);
    assert!(
        matches!(&items[0], Err(AgentError::Model(ModelError::EmptyResponse { model })) if model == "scripted-model"),
        "{items:?}"
    );
}

/// Builds a fresh agent for `scenario` with a recording hook.
fn parity_agent(scenario: usize) -> (ReActAgent, RecordingHook, ScriptedModel) {
    let model = match scenario {
        0 => tool_then_answer(),
        1 => ScriptedModel::new([
            ScriptedResponse::chunks([
                ScriptedChunk::thinking("hmm"),
                ScriptedChunk::text("Working"),
                ScriptedChunk::tool_call("c1", "progress", json!({"steps": 2})),
                ScriptedChunk::tool_call("c2", "calculator", json!({"expression": "2^10"})),
            ]),
            ScriptedResponse::chunks([ScriptedChunk::text("Sum"), ScriptedChunk::text("mary")]),
        ]),
        _ => ScriptedModel::new([calc_call("c1", "1/0"), cut_after("x", "cut")]),
    };
    let rec = RecordingHook::new(100);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(
            Toolkit::new()
                .tool(Calculator::new())
                .tool(ProgressTool::new()),
        )
        .max_iters(if scenario == 1 { 1 } else { 3 })
        .hook(rec.clone())
        .build()
        .unwrap();
    (agent, rec, model)
}

#[tokio::test]
async fn call_and_stream_run_the_same_engine() {
    for scenario in 0..3 {
        let (by_call, call_rec, call_model) = parity_agent(scenario);
        let call_result = by_call.call("q").await;

        let (by_stream, stream_rec, stream_model) = parity_agent(scenario);
        let items: Vec<Result<Event, AgentError>> = by_stream
            .stream("q", StreamOptions::default())
            .collect()
            .await;

        assert_eq!(call_rec.types(), stream_rec.types(), "scenario {scenario}");
        assert_eq!(
            rows(&by_call.memory().messages()),
            rows(&by_stream.memory().messages()),
            "scenario {scenario}"
        );
        let call_requests: Vec<Vec<Row>> = call_model
            .requests()
            .iter()
            .map(|r| rows(&r.messages))
            .collect();
        let stream_requests: Vec<Vec<Row>> = stream_model
            .requests()
            .iter()
            .map(|r| rows(&r.messages))
            .collect();
        assert_eq!(call_requests, stream_requests, "scenario {scenario}");
        assert_eq!(call_result.is_err(), scenario == 2, "scenario {scenario}");
        match (call_result, items.last().unwrap()) {
            (Ok(reply), Ok(last)) => {
                assert_eq!(last.event_type, EventType::AgentResult);
                assert_eq!(rows(&[reply]), rows(std::slice::from_ref(&last.message)));
            }
            (Err(call_err), Err(stream_err)) => {
                assert_eq!(call_err.to_string(), stream_err.to_string());
            }
            (call, stream) => panic!("scenario {scenario}: {call:?} vs {stream:?}"),
        }
    }
}

/// Yields to the runtime on every event, so that concurrent streams interleave.
struct Yielder;

impl Hook for Yielder {
    async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
        tokio::task::yield_now().await;
        Ok(())
    }
}

fn named_agent(name: &str, shared: &RecordingHook) -> ReActAgent {
    let model = ScriptedModel::new([
        ScriptedResponse::chunks([
            ScriptedChunk::text(format!("{name} thinks")),
            ScriptedChunk::tool_call(
                format!("{name}-c1"),
                "echo",
                json!({ "text": format!("{name} echo") }),
            ),
        ]),
        ScriptedResponse::chunks([
            ScriptedChunk::text(format!("{name} ")),
            ScriptedChunk::text("answers"),
        ]),
    ]);
    ReActAgent::builder()
        .name(name)
        .model(model)
        .toolkit(Toolkit::new().tool(EchoTool::new()))
        .hook(shared.clone())
        .hook(Yielder)
        .build()
        .unwrap()
}

fn named_expected(name: &str) -> Vec<(EventType, bool, String)> {
    vec![
        key(EventType::Reasoning, false, &format!("{name} thinks")),
        key(EventType::Reasoning, false, &format!("use:{name}-c1")),
        key(
            EventType::Reasoning,
            true,
            &format!("{name} thinks|use:{name}-c1"),
        ),
        key(
            EventType::ToolResult,
            true,
            &format!("result:{name}-c1={name} echo"),
        ),
        key(EventType::Reasoning, false, &format!("{name} ")),
        key(EventType::Reasoning, false, "answers"),
        key(EventType::Reasoning, true, &format!("{name} answers")),
        key(EventType::AgentResult, true, &format!("{name} answers")),
    ]
}

#[tokio::test]
async fn concurrent_streams_sharing_a_hook_each_get_only_their_own_events() {
    let shared = RecordingHook::new(100);
    let alpha = named_agent("alpha", &shared);
    let beta = named_agent("beta", &shared);

    let (a, b) = futures::future::join(
        collect_ok(alpha.stream("q", StreamOptions::default())),
        collect_ok(beta.stream("q", StreamOptions::default())),
    )
    .await;

    assert_eq!(keys(&a), named_expected("alpha"));
    assert_eq!(keys(&b), named_expected("beta"));
    let owners: Vec<String> = shared
        .events()
        .iter()
        .map(|e| e.agent().name().to_owned())
        .collect();
    let switches = owners.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches > 1, "the streams did not interleave: {owners:?}");
    let kinds_of = |name: &str| -> Vec<HookEventType> {
        shared
            .events()
            .iter()
            .filter(|e| e.agent().name() == name)
            .map(HookEvent::event_type)
            .collect()
    };
    assert_eq!(kinds_of("alpha"), kinds_of("beta"));
    assert_eq!(kinds_of("alpha").len() * 2, owners.len());
}

#[tokio::test]
async fn dropping_the_stream_mid_way_frees_the_agent_and_closes_open_calls() {
    let entered = Arc::new(Notify::new());
    let gate_entered = Arc::clone(&entered);
    let gate = tool_fn(
        "gate",
        "Never finishes.",
        json!({"type": "object", "properties": {}}),
        move |_input, _ctx| {
            let entered = Arc::clone(&gate_entered);
            async move {
                entered.notify_one();
                futures::future::pending::<()>().await;
                Ok("unreachable")
            }
        },
    );
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "gate", json!({})),
        ScriptedResponse::text("fresh"),
    ]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new().tool(gate));

    let mut stream = agent.stream("q", StreamOptions::default());
    loop {
        let event = stream.next().await.unwrap().unwrap();
        if event.event_type == EventType::Reasoning && event.is_last {
            break;
        }
    }
    tokio::select! {
        item = stream.next() => panic!("the gated stream yielded {item:?}"),
        () = entered.notified() => {}
    }
    assert!(agent.is_running());
    drop(stream);

    assert!(!agent.is_running());
    let memory = agent.memory().messages();
    assert_eq!(
        rows(&memory[1..]),
        rows(&[
            Msg::builder()
                .role(Role::Assistant)
                .name("assistant")
                .block(ToolUseBlock::new("c1", "gate", json!({})))
                .build(),
            Msg::tool_result(ToolResultBlock::error("c1", "gate", CANCELLED)),
        ])
    );
    assert_no_orphan_tool_use(&memory);
    let types = rec.types_without_chunks();
    assert!(!types.contains(&HookEventType::PostCall), "{types:?}");
    assert!(!types.contains(&HookEventType::Error), "{types:?}");

    let reply = agent.call("again").await.unwrap();
    assert_eq!(reply.text(), "fresh");
}

#[tokio::test]
async fn a_slow_consumer_holds_the_engine_back() {
    const CHUNKS: usize = 10_000;
    let model = ScriptedModel::new([ScriptedResponse::chunks(
        (0..CHUNKS).map(|_| ScriptedChunk::text("x")),
    )]);
    let (counter, produced) = counting(HookEventType::ReasoningChunk);
    let agent = build_agent(&model, Toolkit::new(), hooks![counter]);

    let mut stream = agent.stream("q", StreamOptions::default());
    let mut consumed = 0;
    let mut max_ahead = 0;
    let mut last = None;
    while let Some(item) = stream.next().await {
        let event = item.unwrap();
        if event.event_type == EventType::Reasoning && !event.is_last {
            consumed += 1;
        }
        let ahead = produced.load(Ordering::SeqCst) - consumed;
        max_ahead = max_ahead.max(ahead);
        assert!(
            ahead <= 40,
            "the engine is {ahead} chunks ahead of the consumer after {consumed}"
        );
        if consumed % 100 == 0 {
            // A slow consumer: the engine must not run on while nobody reads.
            for _ in 0..5 {
                tokio::task::yield_now().await;
            }
            assert_eq!(produced.load(Ordering::SeqCst) - consumed, ahead);
        }
        last = Some(event);
    }
    assert_eq!(consumed, CHUNKS);
    assert_eq!(produced.load(Ordering::SeqCst), CHUNKS);
    let last = last.unwrap();
    assert_eq!(last.event_type, EventType::AgentResult);
    assert_eq!(last.message.text(), "x".repeat(CHUNKS));
    assert!(max_ahead > 0, "the engine never ran ahead at all");
}
