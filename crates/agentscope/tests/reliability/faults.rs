//! Fault injection: a hook that errs or panics at each of the twelve events; tools that panic, fail, hang past a time limit or return 10 MB; models that fail before output, mid-stream, answer nothing or send arguments that are not JSON. Each case checks the exact caller error (or the exact error result the model sees), the invariants of docs/reliability.md, and that the agent serves a follow-up call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::describe::{describe, memory_of};
use crate::support::fixtures::{
    CANCELLED, ELEVEN_KINDS_EVENTS, SwapModel, WITHHELD, eleven_kinds_builder, eleven_kinds_memory,
    eleven_kinds_model, hang_tool, recorded, recorded_agent,
};
use crate::support::invariants::{
    Ending, Pending, assert_follow_up_call, assert_invariants, endings,
};
use crate::support::recorded::kinds;
use agentscope::prelude::*;
use agentscope::{HookFn, ModelError};
use agentscope_test::tools::{EchoTool, FailingTool, PanickingTool};
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedResponse};
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};

type K = HookEventType;

/// A guard against hangs only; every case finishes in milliseconds.
const HANG_GUARD: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Err,
    Panic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Call,
    Stream,
}

/// Runs one call with `call()` or `stream()`. For a stream, returns the reply of the
/// AgentResult item or the error item, checks that it is the last item, and returns the
/// events before it.
async fn run(agent: &ReActAgent, via: Via, input: &str) -> (Result<Msg, AgentError>, Vec<Event>) {
    match via {
        Via::Call => (
            tokio::time::timeout(HANG_GUARD, agent.call(input))
                .await
                .expect("the call hung"),
            Vec::new(),
        ),
        Via::Stream => {
            let mut stream = agent.stream(input, StreamOptions::default());
            let mut events = Vec::new();
            let outcome = loop {
                let item = tokio::time::timeout(HANG_GUARD, stream.next())
                    .await
                    .expect("the stream hung")
                    .expect("the stream ended without a final item");
                match item {
                    Ok(event) if event.event_type == EventType::AgentResult => {
                        break Ok(event.message);
                    }
                    Ok(event) => events.push(event),
                    Err(err) => break Err(err),
                }
            };
            assert!(stream.next().await.is_none(), "items after the last one");
            (outcome, events)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Hooks: Err and panic at each of the twelve events
// ---------------------------------------------------------------------------------------

/// A hook interested only in `kind` that errs ("nope") or panics ("boom") while armed.
fn faulty(
    kind: HookEventType,
    fault: Fault,
    armed: &Arc<AtomicBool>,
    hits: &Arc<AtomicUsize>,
) -> HookFn {
    let armed = Arc::clone(armed);
    let hits = Arc::clone(hits);
    hook_fn(move |_| {
        if !armed.load(Ordering::SeqCst) {
            return Ok(());
        }
        hits.fetch_add(1, Ordering::SeqCst);
        match fault {
            Fault::Err => Err(HookError::msg("nope")),
            Fault::Panic => panic!("boom"),
        }
    })
    .with_interests(kind)
    .with_priority(100)
    .with_name("faulty")
}

/// What memory holds after a chained hook failed at `kind` in the eleven-kinds scenario.
fn memory_after_failure_at(kind: HookEventType) -> Vec<String> {
    let full = eleven_kinds_memory();
    let cancelled = format!("tool/progress: tool_result c1 progress error {CANCELLED:?}");
    match kind {
        K::PreCall => vec![],
        // The model's first answer never stored: the input is taken back.
        K::PreReasoning | K::PostReasoning => vec![],
        K::PreActing => vec![full[0].clone(), full[1].clone(), cancelled],
        // The result the failing hook was handed is withheld, not stored raw.
        K::PostActing => vec![
            full[0].clone(),
            full[1].clone(),
            format!("tool/progress: tool_result c1 progress error {WITHHELD:?}"),
        ],
        K::PreSummary | K::PostSummary => full[..3].to_vec(),
        K::PostCall => full,
        other => panic!("{other} is not chained"),
    }
}

async fn assert_hook_fault(kind: HookEventType) {
    for fault in [Fault::Err, Fault::Panic] {
        for via in [Via::Call, Via::Stream] {
            let case = format!("{fault:?} at {kind} via {via:?}");
            let armed = Arc::new(AtomicBool::new(true));
            let hits = Arc::new(AtomicUsize::new(0));
            let early = RecordingHook::new(0).with_name("early");
            let late = RecordingHook::new(1000).with_name("late");
            let model = eleven_kinds_model(kind);
            let agent = eleven_kinds_builder(&model)
                .sys_prompt("You are careful.")
                .hook(late.clone())
                .hook(faulty(kind, fault, &armed, &hits))
                .hook(early.clone())
                .build()
                .unwrap();

            let (outcome, _events) = run(&agent, via, "q").await;

            if kind == K::Error {
                // An ErrorEvent hook's failure never replaces the original error.
                let err = outcome.expect_err(&case);
                assert!(
                    matches!(&err, AgentError::Model(ModelError::Other { message, .. }) if message == "model down"),
                    "{case}: {err:?}"
                );
                assert_eq!(err.to_string(), "model error: model down", "{case}");
                assert_eq!(hits.load(Ordering::SeqCst), 1, "{case}");
                for rec in [&early, &late] {
                    assert_eq!(
                        rec.types(),
                        [K::PreCall, K::PreReasoning, K::Error],
                        "{case}"
                    );
                }
                // Nothing answered the input: it is taken back.
                assert!(memory_of(&agent).is_empty(), "{case}");
            } else if kind.is_notification() {
                // Chunk hooks' failures are ignored: the call succeeds and every other hook
                // still sees every chunk.
                let reply = outcome.unwrap_or_else(|err| panic!("{case}: {err:?}"));
                assert_eq!(reply.text(), "summary", "{case}");
                assert_eq!(
                    reply.generate_reason(),
                    Some(GenerateReason::MaxIterations),
                    "{case}"
                );
                let expected_hits = ELEVEN_KINDS_EVENTS.iter().filter(|k| **k == kind).count();
                assert_eq!(hits.load(Ordering::SeqCst), expected_hits, "{case}");
                assert_eq!(early.types(), ELEVEN_KINDS_EVENTS, "{case}");
                assert_eq!(late.types(), ELEVEN_KINDS_EVENTS, "{case}");
                assert_eq!(memory_of(&agent), eleven_kinds_memory(), "{case}");
            } else {
                let err = outcome.expect_err(&case);
                let expected_source = match fault {
                    Fault::Err => "nope",
                    Fault::Panic => "hook panicked: boom",
                };
                match (&err, fault) {
                    (
                        AgentError::Hook {
                            hook,
                            event,
                            source:
                                HookError::Failed {
                                    message,
                                    source: None,
                                },
                        },
                        Fault::Err,
                    ) => {
                        assert_eq!(
                            (hook.as_str(), *event, message.as_str()),
                            ("faulty", kind, "nope")
                        );
                    }
                    (
                        AgentError::Hook {
                            hook,
                            event,
                            source: HookError::Panicked { message },
                        },
                        Fault::Panic,
                    ) => {
                        assert_eq!(
                            (hook.as_str(), *event, message.as_str()),
                            ("faulty", kind, "boom")
                        );
                    }
                    _ => panic!("{case}: unexpected error {err:?}"),
                }
                assert_eq!(
                    err.to_string(),
                    format!("hook 'faulty' failed at {kind}: {expected_source}"),
                    "{case}"
                );
                assert_eq!(hits.load(Ordering::SeqCst), 1, "{case}");
                // (d): the early hook saw PreCall and exactly one ending; so did the late one,
                // except that it never saw the PreCall a hook before it failed, and it gets
                // Error where the early one already saw PostCall.
                let (early_ending, late_ending) = match kind {
                    K::PreCall => (Ending::Error, Ending::ErrorOnly),
                    K::PostCall => (Ending::PostCall, Ending::Error),
                    _ => (Ending::Error, Ending::Error),
                };
                assert_eq!(endings(&early), [early_ending], "{case}");
                assert_eq!(endings(&late), [late_ending], "{case}");
                // The late hook never sees the event that failed, and its ErrorEvent carries
                // the caller's error.
                assert!(!late.types().contains(&kind), "{case}: {:?}", late.types());
                let Some(HookEvent::Error(error_event)) = late.events().last().cloned() else {
                    panic!("{case}: the late hook's last event is not Error");
                };
                assert_eq!(error_event.error().to_string(), err.to_string(), "{case}");
                assert_eq!(memory_of(&agent), memory_after_failure_at(kind), "{case}");
            }

            assert_invariants(&agent, &[&early, &late], Pending::None);
            armed.store(false, Ordering::SeqCst);
            assert_follow_up_call(&agent, &model, &[&early, &late]).await;
        }
    }
}

#[tokio::test]
async fn hook_fault_at_pre_call() {
    assert_hook_fault(K::PreCall).await;
}

#[tokio::test]
async fn hook_fault_at_post_call() {
    assert_hook_fault(K::PostCall).await;
}

#[tokio::test]
async fn hook_fault_at_pre_reasoning() {
    assert_hook_fault(K::PreReasoning).await;
}

#[tokio::test]
async fn hook_fault_at_post_reasoning() {
    assert_hook_fault(K::PostReasoning).await;
}

#[tokio::test]
async fn hook_fault_at_reasoning_chunk() {
    assert_hook_fault(K::ReasoningChunk).await;
}

#[tokio::test]
async fn hook_fault_at_pre_acting() {
    assert_hook_fault(K::PreActing).await;
}

#[tokio::test]
async fn hook_fault_at_post_acting() {
    assert_hook_fault(K::PostActing).await;
}

#[tokio::test]
async fn hook_fault_at_acting_chunk() {
    assert_hook_fault(K::ActingChunk).await;
}

#[tokio::test]
async fn hook_fault_at_pre_summary() {
    assert_hook_fault(K::PreSummary).await;
}

#[tokio::test]
async fn hook_fault_at_post_summary() {
    assert_hook_fault(K::PostSummary).await;
}

#[tokio::test]
async fn hook_fault_at_summary_chunk() {
    assert_hook_fault(K::SummaryChunk).await;
}

#[tokio::test]
async fn hook_fault_at_error() {
    assert_hook_fault(K::Error).await;
}

// ---------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------

/// The model calls `calls` in one batch of `toolkit`'s tools, then answers "seen". The call
/// succeeds with "seen", the model's second request ends with exactly `results` (what memory
/// holds too), no Error fired, and the invariants hold.
async fn assert_batch_results(calls: Vec<(&str, &str, Value)>, toolkit: Toolkit, results: &[&str]) {
    let model = SwapModel::new([
        ScriptedResponse::tool_calls(calls),
        ScriptedResponse::text("seen"),
    ]);
    let (agent, rec) = recorded(
        ReActAgent::builder()
            .sys_prompt("You use tools.")
            .model(model.clone())
            .toolkit(toolkit),
    );
    let reply = tokio::time::timeout(HANG_GUARD, agent.call("q"))
        .await
        .expect("the call hung")
        .unwrap();
    assert_eq!(reply.text(), "seen");
    let requests = model.script().requests();
    assert_eq!(requests.len(), 2);
    let seen: Vec<String> = requests[1].messages.iter().map(describe).collect();
    // [system, user, assistant with calls, results...]
    assert_eq!(&seen[3..], results, "what the model saw");
    assert_eq!(
        &memory_of(&agent)[2..2 + results.len()],
        results,
        "what memory holds"
    );
    assert_eq!(
        rec.types_without_chunks().last(),
        Some(&K::PostCall),
        "{:?}",
        rec.types()
    );
    assert!(!rec.types().contains(&K::Error));
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    assert_batch_results(
        vec![("c1", "panic", json!({}))],
        Toolkit::new().tool(PanickingTool::new()),
        &[
            r#"tool/panic: tool_result c1 panic error "Error: Tool execution failed: tool panicked: tool panicked on purpose""#,
        ],
    )
    .await;
}

#[tokio::test]
async fn failing_tools_become_error_results() {
    let invalid = tool_fn(
        "picky",
        "Rejects its arguments.",
        json!({"type": "object"}),
        |_, _| async { Err::<String, _>(ToolError::invalid_arguments("'n' must be even")) },
    );
    let cancelled = tool_fn(
        "quitter",
        "Says it was cancelled.",
        json!({"type": "object"}),
        |_, _| async { Err::<String, _>(ToolError::Cancelled) },
    );
    assert_batch_results(
        vec![
            ("c1", "fail", json!({"message": "disk full"})),
            ("c2", "picky", json!({})),
            ("c3", "quitter", json!({})),
        ],
        Toolkit::new()
            .tool(FailingTool::new())
            .tool(invalid)
            .tool(cancelled),
        &[
            r#"tool/fail: tool_result c1 fail error "Error: Tool execution failed: disk full""#,
            r#"tool/picky: tool_result c2 picky error "Error: Parameter validation failed for tool 'picky': 'n' must be even""#,
            // Cancelled without an interrupt is an ordinary failure.
            r#"tool/quitter: tool_result c3 quitter error "Error: Tool execution failed: tool call was cancelled""#,
        ],
    )
    .await;
}

/// A tool that sleeps `ms` on the tokio timer, then answers "woke".
fn sleepy_tool(name: &'static str, ms: u64) -> impl Tool {
    tool_fn(name, "Sleeps.", json!({"type": "object"}), move |_, _| {
        tokio::time::sleep(Duration::from_millis(ms)).map(|()| Ok("woke"))
    })
}

async fn assert_toolkit_timeout() {
    assert_batch_results(
        vec![
            ("c1", "hang", json!({})),
            ("c2", "echo", json!({"text": "hi"})),
        ],
        Toolkit::new()
            .timeout(Duration::from_millis(50))
            .tool(hang_tool("hang"))
            .tool(EchoTool::new()),
        &[
            r#"tool/hang: tool_result c1 hang error "Error: Tool execution failed: tool timed out after 50ms""#,
            r#"tool/echo: tool_result c2 echo "hi""#,
        ],
    )
    .await;
}

#[tokio::test]
async fn a_hanging_tool_times_out_on_a_current_thread_runtime() {
    assert_toolkit_timeout().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_tool_times_out_on_a_multi_thread_runtime() {
    assert_toolkit_timeout().await;
}

#[tokio::test]
async fn per_tool_time_limits_override_the_toolkit_limit_both_ways() {
    assert_batch_results(
        vec![
            ("c1", "hang", json!({})),
            ("c2", "patient", json!({})),
            ("c3", "sleepy", json!({})),
        ],
        Toolkit::new()
            .timeout(Duration::from_millis(20))
            // Shorter than a toolkit limit it overrides...
            .tool_with_timeout(hang_tool("hang"), Duration::from_millis(30))
            // ...and longer: this one finishes although it outlives the toolkit limit.
            .tool_with_timeout(sleepy_tool("patient", 60), Duration::from_secs(5))
            .tool(sleepy_tool("sleepy", 5_000)),
        &[
            r#"tool/hang: tool_result c1 hang error "Error: Tool execution failed: tool timed out after 30ms""#,
            r#"tool/patient: tool_result c2 patient "woke""#,
            r#"tool/sleepy: tool_result c3 sleepy error "Error: Tool execution failed: tool timed out after 20ms""#,
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_tools_in_a_parallel_batch_time_out_and_results_keep_call_order() {
    assert_batch_results(
        vec![
            ("c1", "hang", json!({})),
            ("c2", "echo", json!({"text": "fast"})),
            ("c3", "hang2", json!({})),
        ],
        Toolkit::new()
            .parallel(true)
            .timeout(Duration::from_millis(40))
            .tool(hang_tool("hang"))
            .tool(EchoTool::new())
            .tool_with_timeout(hang_tool("hang2"), Duration::from_millis(10)),
        &[
            r#"tool/hang: tool_result c1 hang error "Error: Tool execution failed: tool timed out after 40ms""#,
            r#"tool/echo: tool_result c2 echo "fast""#,
            r#"tool/hang2: tool_result c3 hang2 error "Error: Tool execution failed: tool timed out after 10ms""#,
        ],
    )
    .await;
}

const TEN_MB: usize = 10 * 1024 * 1024;

/// 10 MiB of text that a truncation, reordering or corruption would change: a repeated
/// pattern with an end marker.
fn ten_megabytes() -> String {
    let mut text = String::with_capacity(TEN_MB);
    let mut i: u64 = 0;
    while text.len() + 32 < TEN_MB {
        text.push_str(&format!("{i:015}|"));
        i += 1;
    }
    while text.len() < TEN_MB - 4 {
        text.push('.');
    }
    text.push_str("<END");
    text
}

#[tokio::test]
async fn a_ten_megabyte_tool_result_reaches_the_model_intact_and_is_held_once() {
    let big = Arc::new(ten_megabytes());
    assert_eq!(big.len(), TEN_MB);
    // The address of the text the tool returns, to see whether anyone copied it.
    let produced_at = Arc::new(AtomicUsize::new(0));
    let tool = {
        let big = Arc::clone(&big);
        let produced_at = Arc::clone(&produced_at);
        tool_fn(
            "dump",
            "Returns 10 MB.",
            json!({"type": "object"}),
            move |_, _| {
                let text = (*big).clone();
                produced_at.store(text.as_ptr() as usize, Ordering::SeqCst);
                async move { Ok(text) }
            },
        )
    };
    let model = SwapModel::new([
        ScriptedResponse::tool_call("c1", "dump", json!({})),
        ScriptedResponse::text("got it"),
    ]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new().tool(tool));

    let mut stream = agent.stream("q", StreamOptions::default());
    let mut streamed = Vec::new();
    while let Some(item) = tokio::time::timeout(HANG_GUARD, stream.next())
        .await
        .expect("the stream hung")
    {
        streamed.push(item.unwrap());
    }

    assert_eq!(streamed.last().unwrap().message.text(), "got it");
    let text_of = |msg: &Msg| -> SharedStr {
        let result = msg.tool_results()[0].clone();
        let ContentBlock::Text(block) = result.output[0].clone() else {
            panic!("not a text result");
        };
        SharedStr(
            block.text.as_ptr() as usize,
            block.text.len(),
            block.text.as_str() == big.as_str(),
        )
    };
    // The stream's tool result.
    let tool_events: Vec<&Event> = streamed
        .iter()
        .filter(|e| e.event_type == EventType::ToolResult && e.is_last)
        .collect();
    assert_eq!(tool_events.len(), 1);
    let in_stream = text_of(&tool_events[0].message);
    // What the model received.
    let requests = model.script().requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages.len(), 3);
    let in_request = text_of(&requests[1].messages[2]);
    // What memory holds: exactly one message carries it.
    let memory = agent.memory().messages();
    let carriers: Vec<&Msg> = memory
        .iter()
        .filter(|m| !m.tool_results().is_empty())
        .collect();
    assert_eq!(carriers.len(), 1);
    let in_memory = text_of(carriers[0]);
    for (place, seen) in [
        ("stream", &in_stream),
        ("request", &in_request),
        ("memory", &in_memory),
    ] {
        assert!(
            seen.2,
            "the 10 MB text was altered on its way to the {place}"
        );
        assert_eq!(seen.1, TEN_MB, "{place}");
    }
    // Held once: memory, the model request and the stream share the one buffer the tool
    // produced; nothing copied 10 MB.
    let produced = produced_at.load(Ordering::SeqCst);
    assert_eq!(in_memory.0, produced, "memory holds a copy");
    assert_eq!(in_request.0, produced, "the model request holds a copy");
    assert_eq!(in_stream.0, produced, "the stream holds a copy");
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

/// (address, length, equal to the original) of a tool result's text.
struct SharedStr(usize, usize, bool);

// ---------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------

/// Runs `script` with call and stream; the caller gets `error`, memory ends as `memory`,
/// the recorder saw `events` then Error, and the invariants hold.
async fn assert_model_fault(
    script: Vec<ScriptedResponse>,
    check: impl Fn(&AgentError) -> bool,
    error: &str,
    memory: &[&str],
    events: &[HookEventType],
) {
    for via in [Via::Call, Via::Stream] {
        let model = SwapModel::new(script.clone());
        let (agent, rec) = recorded(
            ReActAgent::builder()
                .sys_prompt("You are careful.")
                .model(model.clone())
                .toolkit(Toolkit::new().tool(EchoTool::new())),
        );

        let (outcome, _) = run(&agent, via, "q").await;

        let err = outcome.expect_err("the model fault must fail the call");
        assert!(check(&err), "{via:?}: {err:?}");
        assert_eq!(err.to_string(), error, "{via:?}");
        assert_eq!(memory_of(&agent), memory, "{via:?}");
        let mut expected = events.to_vec();
        expected.push(K::Error);
        assert_eq!(rec.types_without_chunks(), expected, "{via:?}");
        let Some(HookEvent::Error(event)) = rec.events().last().cloned() else {
            panic!("no ErrorEvent");
        };
        assert_eq!(event.error().to_string(), error);
        assert_invariants(&agent, &[&rec], Pending::None);
        assert_follow_up_call(&agent, &model, &[&rec]).await;
    }
}

/// [`assert_model_fault`] for a fault before the model answered: nothing answered the input,
/// so it is taken back (memory ends empty), and the recorder saw PreCall and PreReasoning.
async fn assert_model_fault_before_an_answer(
    script: Vec<ScriptedResponse>,
    check: impl Fn(&AgentError) -> bool,
    error: &str,
) {
    assert_model_fault(script, check, error, &[], &[K::PreCall, K::PreReasoning]).await;
}

#[tokio::test]
async fn a_model_error_before_any_output_fails_the_call() {
    assert_model_fault_before_an_answer(
        vec![ScriptedResponse::failure(ModelError::Status {
            status: 503,
            message: "overloaded".into(),
            retry_after: None,
        })],
        |err| {
            matches!(
                err.model_error(),
                Some(ModelError::Status { status: 503, .. })
            )
        },
        "model error: HTTP 503: overloaded",
    )
    .await;
}

#[tokio::test]
async fn a_model_error_mid_stream_stores_nothing_partial() {
    assert_model_fault_before_an_answer(
        vec![ScriptedResponse::chunks([
            ScriptedChunk::thinking("Hmm"),
            ScriptedChunk::text("Half an ans"),
            ScriptedChunk::error("connection reset"),
        ])],
        |err| matches!(err.model_error(), Some(ModelError::Stream { message }) if message == "connection reset"),
        "model error: model stream error: connection reset",
    )
    .await;
}

#[tokio::test]
async fn a_model_error_after_tools_ran_keeps_their_results() {
    assert_model_fault(
        vec![
            ScriptedResponse::tool_call("c1", "echo", json!({"text": "hi"})),
            ScriptedResponse::error("model down"),
        ],
        |err| matches!(err.model_error(), Some(ModelError::Other { message, .. }) if message == "model down"),
        "model error: model down",
        &[
            r#"user/user: text "q""#,
            r#"assistant/assistant: tool_use c1 echo {"text":"hi"}"#,
            r#"tool/echo: tool_result c1 echo "hi""#,
        ],
        &kinds("PreCall PreReasoning PostReasoning PreActing PostActing PreReasoning"),
    )
    .await;
}

#[tokio::test]
async fn a_model_error_after_a_streamed_tool_call_leaves_no_orphan_tool_use() {
    assert_model_fault_before_an_answer(
        vec![ScriptedResponse::chunks([
            ScriptedChunk::tool_call("c1", "echo", json!({"text": "hi"})),
            ScriptedChunk::error("connection reset"),
        ])],
        |err| matches!(err.model_error(), Some(ModelError::Stream { .. })),
        "model error: model stream error: connection reset",
    )
    .await;
}

#[tokio::test]
async fn empty_model_responses_are_errors_not_hangs() {
    for script in [
        ScriptedResponse::empty(),
        ScriptedResponse::empty().with_usage(12, 0),
        ScriptedResponse::chunks([ScriptedChunk::text(""), ScriptedChunk::thinking("")]),
    ] {
        assert_model_fault_before_an_answer(
            vec![script],
            |err| matches!(err.model_error(), Some(ModelError::EmptyResponse { model }) if model == "scripted-model"),
            "model error: model 'scripted-model' returned an empty response",
        )
        .await;
    }
}

/// An echo agent that may reason once, and its recorder: its model calls echo (call "c1"), so
/// the call ends with the summary, for which the model gives `summary`.
fn summarising(summary: ScriptedResponse) -> (ReActAgent, SwapModel, RecordingHook) {
    let model = SwapModel::new([
        ScriptedResponse::tool_call("c1", "echo", json!({"text": "hi"})),
        summary,
    ]);
    let (agent, rec) = recorded(
        ReActAgent::builder()
            .model(model.clone())
            .toolkit(Toolkit::new().tool(EchoTool::new()))
            .max_iters(1),
    );
    (agent, model, rec)
}

#[tokio::test]
async fn a_model_failure_in_the_summary_becomes_the_reply() {
    let (agent, model, rec) = summarising(ScriptedResponse::error("model down"));

    let reply = agent.call("q").await.unwrap();

    let text = "Maximum iterations (1) reached. Error generating summary: model down";
    assert_eq!(reply.text(), text);
    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxIterations));
    assert_eq!(
        memory_of(&agent).last().unwrap(),
        &format!("assistant/assistant: text {text:?} <MaxIterations>")
    );
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreReasoning PostReasoning PreActing PostActing PreSummary PostCall")
    );
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

#[tokio::test]
async fn tool_arguments_that_are_not_json_become_an_error_result_the_model_sees() {
    let raw = "{\"text\": \"hi\", oops}";
    let json_error = serde_json::from_str::<Value>(raw).unwrap_err();
    let model = SwapModel::new([
        ScriptedResponse::chunks([
            ScriptedChunk::tool_call_start("c1", "echo"),
            ScriptedChunk::tool_call_args("{\"text\": \"hi\""),
            ScriptedChunk::tool_call_args(", oops}"),
            ScriptedChunk::tool_call_start("c2", "echo"),
            ScriptedChunk::tool_call_args("[1, 2]"),
            ScriptedChunk::tool_call_start("c3", "echo"),
        ]),
        ScriptedResponse::text("seen"),
    ]);
    let echo = EchoTool::new();
    let (agent, rec) = recorded(
        ReActAgent::builder()
            .sys_prompt("You use tools.")
            .model(model.clone())
            .toolkit(Toolkit::new().tool(echo.clone())),
    );

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "seen");
    assert_eq!(echo.log().count(), 0, "the tool never ran");
    let results = [
        format!(
            "tool/echo: tool_result c1 echo error {:?}",
            format!(
                "Error: Parameter validation failed for tool 'echo': the arguments are not valid JSON ({json_error}): {raw}"
            )
        ),
        r#"tool/echo: tool_result c2 echo error "Error: Parameter validation failed for tool 'echo': [1,2] is not of type \"object\"""#.to_owned(),
        // No argument text at all is an empty object.
        r#"tool/echo: tool_result c3 echo error "Error: Parameter validation failed for tool 'echo': \"text\" is a required property""#.to_owned(),
    ];
    let seen: Vec<String> = model.script().requests()[1]
        .messages
        .iter()
        .map(describe)
        .collect();
    assert_eq!(&seen[3..], results, "what the model saw");
    let memory = memory_of(&agent);
    assert_eq!(
        memory[1],
        format!(
            "assistant/assistant: tool_use c1 echo raw {raw:?} | tool_use c2 echo [1,2] | tool_use c3 echo {{}}"
        )
    );
    assert_eq!(&memory[2..5], results);
    assert!(!rec.types().contains(&K::Error));
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

/// The summary request offers no tools, but a model may still answer with a tool call
/// (garbage from its side). No tool runs for it, so memory must not keep a tool-use without
/// a result: the next call would be refused (pending tool calls) or rejected by providers.
#[tokio::test]
async fn a_tool_call_in_the_summary_leaves_no_orphan_tool_use() {
    let (agent, model, rec) = summarising(ScriptedResponse::text_and_tool_call(
        "Summary so far.",
        "c2",
        "echo",
        json!({"text": "again"}),
    ));

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxIterations));
    assert!(model.script().requests()[1].tools.is_empty());
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}
