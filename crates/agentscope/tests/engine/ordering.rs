//! Hook dispatch order: exact event sequences of a call (plain answer, tool call, parallel
//! batch), priority and registration order, interest masks, and chained vs notification
//! dispatch (plus a property test of the ordering rule).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::describe::parsed::memory_of;
use crate::support::describe::{hook_priorities, line};
use crate::support::failures::{assert_hook_failed, assert_hook_panicked};
use crate::support::fixtures::{build_agent, calc_call, recorded_agent, text_and_progress_call};
use crate::support::hooks::{Log, entries, first_time, hooks, new_log, push};
use crate::support::recorded::{assert_chunks, kinds};
use agentscope::prelude::*;
use agentscope::{AgentError, HookFn, ModelError};
use agentscope_test::tools::{Calculator, ProgressTool};
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};
use proptest::prelude::*;
use serde_json::json;

use agentscope::HookEventType as K;

/// A hook that logs `"<kind> <name>"` for every event it receives.
fn logger(log: &Log, name: &'static str) -> HookFn {
    let log = Arc::clone(log);
    hook_fn(move |event: &mut HookEvent| {
        push(&log, format!("{} {name}", event.event_type()));
        Ok(())
    })
    .with_name(name)
}

/// A tool named `name` that logs `"start <id>"`, optionally waits at `barrier`, then logs
/// `"end <id>"` and returns `"<id> done"`.
fn logging_tool(name: &str, log: &Log, barrier: Option<Arc<tokio::sync::Barrier>>) -> impl Tool {
    let log = Arc::clone(log);
    tool_fn(
        name,
        "Logs when it runs.",
        json!({"type": "object", "properties": {}}),
        move |_input, ctx: ToolContext| {
            let log = Arc::clone(&log);
            let barrier = barrier.clone();
            async move {
                let id = ctx.tool_use().id.clone();
                push(&log, format!("start {id}"));
                if let Some(barrier) = barrier {
                    barrier.wait().await;
                }
                push(&log, format!("end {id}"));
                Ok::<_, ToolError>(format!("{id} done"))
            }
        },
    )
}

/// A hook logging `"pre <id>"` at PreActing and `"post <id>"` at PostActing.
fn acting_logger(log: &Log) -> HookFn {
    let log = Arc::clone(log);
    hook_fn(move |event: &mut HookEvent| {
        match event {
            HookEvent::PreActing(e) => push(&log, format!("pre {}", e.tool_use().id)),
            HookEvent::PostActing(e) => push(&log, format!("post {}", e.tool_use().id)),
            _ => {}
        }
        Ok(())
    })
    .with_interests(K::PreActing | K::PostActing)
    .with_name("acting-logger")
}

fn three_calls() -> ScriptedResponse {
    ScriptedResponse::tool_calls([
        ("c1", "t1", json!({})),
        ("c2", "t2", json!({})),
        ("c3", "t3", json!({})),
    ])
}

// ---------------------------------------------------------------------------------------
// Exact event sequences
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn plain_answer_fires_call_reasoning_and_one_chunk_event_per_model_chunk() {
    let model = ScriptedModel::new([ScriptedResponse::chunks([
        ScriptedChunk::text("Hel"),
        ScriptedChunk::text("lo"),
    ])]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());

    let reply = agent.call(Msg::user("hi")).await.unwrap();

    assert_eq!(
        rec.types(),
        kinds("PreCall PreReasoning ReasoningChunk ReasoningChunk PostReasoning PostCall")
    );
    assert_chunks(&rec, K::ReasoningChunk, &[("Hel", "Hel"), ("lo", "Hello")]);
    assert_eq!(reply.text(), "Hello");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(memory_of(&agent), [line::user("hi"), line::answer("Hello")]);
}

#[tokio::test]
async fn tool_call_then_answer_fires_acting_events_with_progress_chunks_in_between() {
    let model = ScriptedModel::new([
        text_and_progress_call("Working.", 2),
        ScriptedResponse::chunks([ScriptedChunk::text("All "), ScriptedChunk::text("done.")]),
    ]);
    let tool = ProgressTool::new();
    let (agent, rec) = recorded_agent(&model, Toolkit::new().tool(tool.clone()));

    let reply = agent.call(Msg::user("go")).await.unwrap();

    assert_eq!(
        rec.types(),
        kinds(
            "PreCall PreReasoning ReasoningChunk ReasoningChunk PostReasoning PreActing \
             ActingChunk ActingChunk PostActing PreReasoning ReasoningChunk ReasoningChunk \
             PostReasoning PostCall"
        )
    );
    let details: Vec<String> = rec
        .events()
        .iter()
        .filter_map(|event| match event {
            HookEvent::PreReasoning(e) => Some(format!("reason #{}", e.iteration())),
            HookEvent::PostReasoning(e) => Some(format!("reasoned #{}", e.iteration())),
            HookEvent::PreActing(e) => {
                Some(format!("pre {} {}", e.tool_use().id, e.tool_use().name))
            }
            HookEvent::ActingChunk(e) => Some(format!(
                "chunk {} {}",
                e.tool_use().id,
                e.chunk().text_output()
            )),
            HookEvent::PostActing(e) => Some(format!(
                "post {} {}",
                e.tool_result().id,
                e.tool_result().text_output()
            )),
            HookEvent::PostCall(e) => Some(format!("reply {}", e.final_message().text())),
            _ => None,
        })
        .collect();
    assert_eq!(
        details,
        [
            "reason #0",
            "reasoned #0",
            "pre c1 progress",
            "chunk c1 step 1/2",
            "chunk c1 step 2/2",
            "post c1 done",
            "reason #1",
            "reasoned #1",
            "reply All done.",
        ]
    );
    assert_eq!(tool.log().calls(), [json!({"steps": 2})]);
    assert_eq!(reply.text(), "All done.");
    assert_eq!(
        memory_of(&agent),
        [
            r#"user/user: text "go""#,
            r#"assistant/assistant: text "Working." | tool_use c1 progress {"steps":2}"#,
            r#"tool/progress: tool_result c1 progress "done""#,
            r#"assistant/assistant: text "All done." <ModelStop>"#,
        ]
    );
}

#[tokio::test]
async fn calculator_round_trip_event_sequence_without_progress_chunks() {
    let model = ScriptedModel::new([calc_call("c1", "6*7"), ScriptedResponse::text("42")]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new().tool(Calculator::new()));

    agent.call(Msg::user("6*7?")).await.unwrap();

    assert_eq!(
        rec.types(),
        kinds(
            "PreCall PreReasoning ReasoningChunk PostReasoning PreActing PostActing \
             PreReasoning ReasoningChunk PostReasoning PostCall"
        )
    );
    assert_eq!(
        memory_of(&agent),
        line::calc_round_trip("6*7?", ("c1", "6*7", "42"), "42")
    );
}

#[tokio::test]
async fn stream_and_call_fire_the_same_hook_events() {
    let script = || {
        ScriptedModel::new([
            text_and_progress_call("Working.", 2),
            ScriptedResponse::text("done"),
        ])
    };
    let via_call = RecordingHook::new(100);
    let via_stream = RecordingHook::new(100);
    let calling = build_agent(
        &script(),
        Toolkit::new().tool(ProgressTool::new()),
        hooks![via_call.clone()],
    );
    let streaming = build_agent(
        &script(),
        Toolkit::new().tool(ProgressTool::new()),
        hooks![via_stream.clone()],
    );

    calling.call(Msg::user("go")).await.unwrap();
    let items: Vec<_> = futures::StreamExt::collect::<Vec<_>>(
        streaming.stream(Msg::user("go"), StreamOptions::default()),
    )
    .await;

    assert!(items.iter().all(Result::is_ok));
    assert_eq!(via_stream.types(), via_call.types());
    assert_eq!(via_call.types().len(), 13);
}

// ---------------------------------------------------------------------------------------
// Batches: PreActing for every call before any tool runs
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn parallel_batch_fires_every_pre_acting_before_any_tool_runs() {
    let log = new_log();
    // All three tools must be running at once to pass the barrier: proves concurrency.
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let toolkit = Toolkit::new()
        .tool(logging_tool("t1", &log, Some(Arc::clone(&barrier))))
        .tool(logging_tool("t2", &log, Some(Arc::clone(&barrier))))
        .tool(logging_tool("t3", &log, Some(Arc::clone(&barrier))))
        .parallel(true);
    let model = ScriptedModel::new([three_calls(), ScriptedResponse::text("ok")]);
    let rec = RecordingHook::new(200);
    let agent = build_agent(&model, toolkit, hooks![acting_logger(&log), rec.clone()]);

    // The timeout only guards against a hang if tools were run one after another.
    let reply = tokio::time::timeout(Duration::from_secs(30), agent.call(Msg::user("go")))
        .await
        .expect("parallel tools deadlocked at the barrier: they did not run concurrently")
        .unwrap();

    let log = entries(&log);
    assert_eq!(log[..3], ["pre c1", "pre c2", "pre c3"]);
    let mut starts = log[3..6].to_vec();
    starts.sort();
    assert_eq!(starts, ["start c1", "start c2", "start c3"]);
    let mut ends = log[6..9].to_vec();
    ends.sort();
    assert_eq!(ends, ["end c1", "end c2", "end c3"]);
    assert_eq!(log[9..], ["post c1", "post c2", "post c3"]);

    assert_eq!(
        rec.types_without_chunks(),
        kinds(
            "PreCall PreReasoning PostReasoning PreActing PreActing PreActing PostActing \
             PostActing PostActing PreReasoning PostReasoning PostCall"
        )
    );
    assert_eq!(reply.text(), "ok");
    assert_eq!(
        memory_of(&agent),
        [
            r#"user/user: text "go""#,
            "assistant/assistant: tool_use c1 t1 {} | tool_use c2 t2 {} | tool_use c3 t3 {}",
            r#"tool/t1: tool_result c1 t1 "c1 done""#,
            r#"tool/t2: tool_result c2 t2 "c2 done""#,
            r#"tool/t3: tool_result c3 t3 "c3 done""#,
            r#"assistant/assistant: text "ok" <ModelStop>"#,
        ]
    );
}

#[tokio::test]
async fn sequential_batch_fires_every_pre_acting_before_any_tool_runs() {
    let log = new_log();
    let toolkit = Toolkit::new()
        .tool(logging_tool("t1", &log, None))
        .tool(logging_tool("t2", &log, None))
        .tool(logging_tool("t3", &log, None));
    let model = ScriptedModel::new([three_calls(), ScriptedResponse::text("ok")]);
    let agent = build_agent(&model, toolkit, hooks![acting_logger(&log)]);

    agent.call(Msg::user("go")).await.unwrap();

    assert_eq!(
        entries(&log),
        [
            "pre c1", "pre c2", "pre c3", "start c1", "end c1", "post c1", "start c2", "end c2",
            "post c2", "start c3", "end c3", "post c3",
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Priorities
// ---------------------------------------------------------------------------------------

/// A hook type that keeps the trait's default priority.
struct DefaultPriority {
    log: Log,
}

impl Hook for DefaultPriority {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        push(&self.log, format!("{} custom", event.event_type()));
        Ok(())
    }

    fn name(&self) -> &str {
        "custom"
    }
}

#[tokio::test]
async fn hooks_run_by_priority_then_registration_across_builder_hooks_and_add_hook() {
    let log = new_log();
    let model = ScriptedModel::new([calc_call("c1", "1+1"), ScriptedResponse::text("2")]);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(logger(&log, "late").with_priority(200))
        .hook(logger(&log, "a")) // default 100
        .hooks([
            logger(&log, "b").with_priority(10),
            logger(&log, "c"),
            logger(&log, "d").with_priority(10),
        ])
        .hook(DefaultPriority {
            log: Arc::clone(&log),
        })
        .build()
        .unwrap();
    agent.add_hook(logger(&log, "f"));
    agent.add_hook(logger(&log, "g").with_priority(10));
    agent.add_hook(logger(&log, "neg").with_priority(-5));

    let expected = ["neg", "b", "d", "g", "a", "c", "custom", "f", "late"];
    assert_eq!(
        hook_priorities(&agent),
        [
            ("neg".to_owned(), -5),
            ("b".to_owned(), 10),
            ("d".to_owned(), 10),
            ("g".to_owned(), 10),
            ("a".to_owned(), 100),
            ("c".to_owned(), 100),
            ("custom".to_owned(), 100),
            ("f".to_owned(), 100),
            ("late".to_owned(), 200),
        ]
    );

    agent.call(Msg::user("1+1?")).await.unwrap();

    let log = entries(&log);
    let kinds =
        kinds("PreCall PreReasoning ReasoningChunk PostReasoning PreActing PostActing PostCall");
    for kind in kinds {
        let names: Vec<&str> = log
            .iter()
            .filter_map(|entry| entry.strip_prefix(&format!("{kind} ")))
            .collect();
        let per_event = expected.len();
        assert_eq!(names.len() % per_event, 0, "{kind}: {names:?}");
        for chunk in names.chunks(per_event) {
            assert_eq!(chunk, expected, "order for {kind}");
        }
    }
    // Each event completes its chain before the next event starts.
    let first_event: Vec<&String> = log.iter().take(expected.len()).collect();
    assert!(
        first_event
            .iter()
            .all(|entry| entry.starts_with("PreCall "))
    );
}

#[tokio::test]
async fn default_priority_is_100_for_hook_fn_recording_hook_and_trait_default() {
    let log = new_log();
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .hook(hook_fn(|_| Ok(())).with_name("closure"))
        .hook(DefaultPriority { log })
        .build()
        .unwrap();
    assert_eq!(
        hook_priorities(&agent),
        [("closure".to_owned(), 100), ("custom".to_owned(), 100)]
    );
    assert_eq!(agentscope::DEFAULT_PRIORITY, 100);
    assert_eq!(Hook::priority(&RecordingHook::new(100)), 100);
}

// ---------------------------------------------------------------------------------------
// Interests
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn interested_hooks_see_all_and_only_their_kinds() {
    let model = ScriptedModel::new([
        text_and_progress_call("Let me see.", 2),
        ScriptedResponse::text("done"),
    ]);
    let everything = RecordingHook::new(100);
    let acting =
        RecordingHook::new(100).with_interests(K::PreActing | K::PostActing | K::ActingChunk);
    let chunks = RecordingHook::new(100).with_interests(HookEventTypes::CHUNKS);
    let calls = RecordingHook::new(100).with_interests(K::PreCall | K::PostCall | K::Error);
    let agent = build_agent(
        &model,
        Toolkit::new().tool(ProgressTool::new()),
        hooks![
            everything.clone(),
            acting.clone(),
            chunks.clone(),
            calls.clone()
        ],
    );

    agent.call(Msg::user("go")).await.unwrap();

    let all = everything.types();
    let only = |mask: HookEventTypes| -> Vec<HookEventType> {
        all.iter()
            .copied()
            .filter(|kind| mask.contains(*kind))
            .collect()
    };
    assert_eq!(
        acting.types(),
        [K::PreActing, K::ActingChunk, K::ActingChunk, K::PostActing]
    );
    assert_eq!(
        acting.types(),
        only(K::PreActing | K::PostActing | K::ActingChunk)
    );
    assert_eq!(
        chunks.types(),
        kinds("ReasoningChunk ReasoningChunk ActingChunk ActingChunk ReasoningChunk")
    );
    assert_eq!(chunks.types(), only(HookEventTypes::CHUNKS));
    assert_eq!(calls.types(), [K::PreCall, K::PostCall]);
}

#[tokio::test]
async fn uninterested_hooks_are_never_invoked() {
    let invoked = Arc::new(AtomicUsize::new(0));
    let counting = |mask: HookEventTypes, name: &'static str| {
        let invoked = Arc::clone(&invoked);
        hook_fn(move |_| {
            invoked.fetch_add(1, Ordering::SeqCst);
            // Failing on purpose: any invocation on a chained event would fail the call.
            Err(HookError::msg(format!("{name} must not be invoked")))
        })
        .with_interests(mask)
        .with_name(name)
    };
    let model = ScriptedModel::new([calc_call("c1", "2*3"), ScriptedResponse::text("6")]);
    let rec = RecordingHook::new(100);
    let agent = build_agent(
        &model,
        Toolkit::new().tool(Calculator::new()),
        hooks![
            counting(HookEventTypes::NONE, "none"),
            counting(
                K::PreSummary | K::PostSummary | K::SummaryChunk,
                "summary-only",
            ),
            counting(K::Error.into(), "error-only"),
            rec.clone()
        ],
    );

    let reply = agent.call(Msg::user("2*3?")).await.unwrap();

    assert_eq!(reply.text(), "6");
    assert_eq!(invoked.load(Ordering::SeqCst), 0);
    assert_eq!(
        rec.types_without_chunks(),
        kinds(
            "PreCall PreReasoning PostReasoning PreActing PostActing PreReasoning \
             PostReasoning PostCall"
        )
    );
}

// ---------------------------------------------------------------------------------------
// Notifications vs chained events
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn chunk_notifications_reach_every_hook_even_when_one_errs_or_panics() {
    let log = new_log();
    let failing = {
        let log = Arc::clone(&log);
        hook_fn(move |event: &mut HookEvent| {
            push(&log, format!("{} failing", event.event_type()));
            Err(HookError::msg("chunk hook failed"))
        })
        .with_priority(1)
        .with_interests(HookEventTypes::CHUNKS)
        .with_name("failing")
    };
    let panicking = {
        let log = Arc::clone(&log);
        hook_fn(move |event: &mut HookEvent| {
            push(&log, format!("{} panicking", event.event_type()));
            panic!("chunk hook panicked")
        })
        .with_priority(2)
        .with_interests(HookEventTypes::CHUNKS)
        .with_name("panicking")
    };
    let last = logger(&log, "last")
        .with_priority(3)
        .with_interests(HookEventTypes::CHUNKS);
    let model = ScriptedModel::new([text_and_progress_call("a", 1), ScriptedResponse::text("b")]);
    let rec = RecordingHook::new(10);
    let agent = build_agent(
        &model,
        Toolkit::new().tool(ProgressTool::new()),
        hooks![failing, panicking, last, rec.clone()],
    );

    let reply = agent.call(Msg::user("go")).await.unwrap();

    assert_eq!(reply.text(), "b");
    let per_chunk = |kind: &str| {
        vec![
            format!("{kind} failing"),
            format!("{kind} panicking"),
            format!("{kind} last"),
        ]
    };
    let expected: Vec<String> = [
        "ReasoningChunk",
        "ReasoningChunk",
        "ActingChunk",
        "ReasoningChunk",
    ]
    .into_iter()
    .flat_map(per_chunk)
    .collect();
    assert_eq!(entries(&log), expected);
    assert_eq!(
        rec.types(),
        kinds(
            "PreCall PreReasoning ReasoningChunk ReasoningChunk PostReasoning PreActing \
             ActingChunk PostActing PreReasoning ReasoningChunk PostReasoning PostCall"
        )
    );
}

#[tokio::test]
async fn error_notification_reaches_every_hook_even_when_one_errs_or_panics() {
    let log = new_log();
    let failing = {
        let log = Arc::clone(&log);
        hook_fn(move |_| {
            push(&log, "Error failing");
            Err(HookError::msg("error hook failed"))
        })
        .with_priority(1)
        .with_interests(K::Error)
    };
    let panicking = {
        let log = Arc::clone(&log);
        hook_fn(move |_| {
            push(&log, "Error panicking");
            panic!("error hook panicked")
        })
        .with_priority(2)
        .with_interests(K::Error)
    };
    let last = RecordingHook::new(3).with_interests(K::Error);
    let model = ScriptedModel::new([ScriptedResponse::error("model down")]);
    let agent = build_agent(
        &model,
        Toolkit::new(),
        hooks![failing, panicking, last.clone()],
    );

    let err = agent.call(Msg::user("q")).await.unwrap_err();

    assert_eq!(entries(&log), ["Error failing", "Error panicking"]);
    match &last.events()[..] {
        [HookEvent::Error(e)] => assert_eq!(e.error().to_string(), "model error: model down"),
        other => panic!("unexpected {other:?}"),
    }
    // The original error reaches the caller, untouched by the failing error hooks.
    assert!(
        matches!(&err, AgentError::Model(ModelError::Other { message, .. }) if message == "model down"),
        "{err:?}"
    );
}

#[tokio::test]
async fn chained_event_error_stops_the_chain_and_fails_the_call() {
    let gate = hook_fn(|event: &mut HookEvent| match event {
        HookEvent::PreReasoning(_) => Err(HookError::msg("denied")),
        _ => Ok(()),
    })
    .with_priority(10)
    .with_name("gate");
    let later = RecordingHook::new(20);
    let model = ScriptedModel::new([ScriptedResponse::text("never")]);
    let agent = build_agent(&model, Toolkit::new(), hooks![gate, later.clone()]);

    let err = agent.call(Msg::user("q")).await.unwrap_err();

    assert_hook_failed(&err, "gate", K::PreReasoning, "denied");
    assert_eq!(
        err.to_string(),
        "hook 'gate' failed at PreReasoning: denied"
    );
    // The later hook never saw PreReasoning, but the ErrorEvent reached it.
    assert_eq!(later.types(), [K::PreCall, K::Error]);
    assert_eq!(model.request_count(), 0);
    // Nothing answered the input: it is taken back.
    assert!(memory_of(&agent).is_empty());
}

#[tokio::test]
async fn panic_in_a_chained_hook_is_caught_and_the_agent_stays_usable() {
    let first = first_time();
    let bomb = hook_fn(move |event: &mut HookEvent| {
        if matches!(event, HookEvent::PostReasoning(_)) && first() {
            panic!("boom");
        }
        Ok(())
    })
    .with_name("bomb");
    let model = ScriptedModel::new([
        ScriptedResponse::text("first"),
        ScriptedResponse::text("second"),
    ]);
    let rec = RecordingHook::new(200);
    let agent = build_agent(&model, Toolkit::new(), hooks![bomb, rec.clone()]);

    let err = agent.call(Msg::user("one")).await.unwrap_err();
    assert_hook_panicked(&err, "bomb", K::PostReasoning, "boom");
    assert_eq!(
        rec.types(),
        [K::PreCall, K::PreReasoning, K::ReasoningChunk, K::Error]
    );

    rec.clear();
    let reply = agent.call(Msg::user("two")).await.unwrap();
    assert_eq!(reply.text(), "second");
    assert_eq!(
        rec.types_without_chunks(),
        [K::PreCall, K::PreReasoning, K::PostReasoning, K::PostCall]
    );
    assert_eq!(
        memory_of(&agent),
        // "one" failed before an answer and was taken back.
        [
            r#"user/user: text "two""#,
            r#"assistant/assistant: text "second" <ModelStop>"#,
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Property: execution order == (priority, registration) sorted
// ---------------------------------------------------------------------------------------

fn index_logger(log: &Log, index: usize, priority: i32) -> HookFn {
    let log = Arc::clone(log);
    hook_fn(move |_| {
        push(&log, index.to_string());
        Ok(())
    })
    .with_priority(priority)
    .with_interests(K::PreCall)
    .with_name(format!("h{index}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn execution_order_is_priority_then_registration(
        hooks in prop::collection::vec(
            (prop_oneof![8 => -3i32..4, 1 => Just(i32::MIN), 1 => Just(i32::MAX)], any::<bool>()),
            1..12,
        ),
        builder_part in 0usize..12,
    ) {
        // Hooks before `split` are registered on the builder: one `.hook(h)` call each, or
        // (flag set) in runs of consecutive hooks given to one `.hooks(iter)` call. The rest
        // are registered with `add_hook` after build. Registration order is the list order.
        let log = new_log();
        let split = builder_part.min(hooks.len());
        let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
        let mut builder = ReActAgent::builder().model(model);
        let mut batch: Vec<HookFn> = Vec::new();
        for (index, &(priority, in_batch)) in hooks.iter().enumerate().take(split) {
            if in_batch {
                batch.push(index_logger(&log, index, priority));
            } else {
                if !batch.is_empty() {
                    builder = builder.hooks(std::mem::take(&mut batch));
                }
                builder = builder.hook(index_logger(&log, index, priority));
            }
        }
        if !batch.is_empty() {
            builder = builder.hooks(batch);
        }
        let agent = builder.build().unwrap();
        for (index, &(priority, _)) in hooks.iter().enumerate().skip(split) {
            agent.add_hook(index_logger(&log, index, priority));
        }

        let mut expected: Vec<usize> = (0..hooks.len()).collect();
        expected.sort_by_key(|&index| (hooks[index].0, index)); // stable: ties keep registration order
        let expected_names: Vec<String> = expected.iter().map(|i| format!("h{i}")).collect();
        let names: Vec<String> = agent.hook_order().into_iter().map(|info| info.name).collect();
        prop_assert_eq!(names, expected_names);

        futures::executor::block_on(agent.call(Msg::user("q"))).unwrap();
        let ran: Vec<usize> = entries(&log).iter().map(|s| s.parse().unwrap()).collect();
        prop_assert_eq!(ran, expected);
    }
}
