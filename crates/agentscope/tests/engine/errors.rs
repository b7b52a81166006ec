//! Failure paths: hook errors and panics at every chained event, notification-hook failures, ErrorEvent delivery, model errors, empty responses, tool failures the model sees, and build errors.

use std::sync::Arc;
use std::time::Duration;

use crate::support::failures::{assert_hook_panicked, hook_error};
use crate::support::fixtures::{CANCELLED, build_agent, calc_call, cut_after, recorded_agent};
use crate::support::hooks::{Log, first_time, hooks};
use crate::support::invariants::assert_no_orphan_tool_use;
use crate::support::recorded::kinds;
use crate::support::rows::{Row, answer_row, calls_row, result_row, rows, user};
use agentscope::prelude::*;
use agentscope::{HookFn, ModelError, ToolkitError};
use agentscope_test::tools::{Calculator, EchoTool, FailingTool, PanickingTool, ProgressTool};
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

fn calc_call_row() -> Row {
    calls_row(&[("c1", "calculator", json!({"expression": "6*7"}))], None)
}

/// Memory once the calculator answered call c1 of "q": the question, the call, its result.
fn after_the_tool_ran() -> Vec<Row> {
    vec![
        user("q"),
        calc_call_row(),
        result_row(ToolResultBlock::text("c1", "calculator", "42")),
    ]
}

/// After a PostActing hook failed on the calculator's result: the result is withheld.
fn after_the_result_was_withheld() -> Vec<Row> {
    vec![
        user("q"),
        calc_call_row(),
        result_row(ToolResultBlock::error(
            "c1",
            "calculator",
            "Error: The tool ran, but its result was withheld because the agent call ended \
             before the result passed the PostActing hooks.",
        )),
    ]
}

/// Fails with "nope" at events of `kind`.
fn failing_at(kind: HookEventType) -> HookFn {
    hook_fn(|_| Err(HookError::msg("nope")))
        .with_interests(kind)
        .with_priority(50)
        .with_name("failing")
}

/// Logs `"{name}: {error}"` for every ErrorEvent.
fn error_observer(log: &Log, name: &'static str, priority: i32) -> HookFn {
    let log = Arc::clone(log);
    hook_fn(move |event| {
        if let HookEvent::Error(e) = event {
            log.lock().unwrap().push(format!("{name}: {}", e.error()));
        }
        Ok(())
    })
    .with_interests(HookEventType::Error)
    .with_priority(priority)
    .with_name(name)
}

/// A hook failing at `kind` fails the call with the exact error, every Error observer gets
/// it in priority order, no PostCall follows, and memory ends as `memory`.
async fn assert_hook_error_at(kind: HookEventType, max_iters: usize, memory: Vec<Row>) {
    let model = ScriptedModel::new([calc_call("c1", "6*7"), ScriptedResponse::text("done")]);
    let log: Log = Arc::default();
    let rec = RecordingHook::new(300);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .max_iters(max_iters)
        .hook(error_observer(&log, "late", 200))
        .hook(failing_at(kind))
        .hook(error_observer(&log, "early", 10))
        .hook(error_observer(&log, "middle", 100))
        .hook(rec.clone())
        .build()
        .unwrap();

    let err = agent.call("q").await.unwrap_err();

    let source = hook_error(&err, "failing", kind);
    assert!(
        matches!(source, HookError::Failed { message, source: None } if message == "nope"),
        "{source:?}"
    );
    let text = format!("hook 'failing' failed at {kind}: nope");
    assert_eq!(err.to_string(), text);
    assert_eq!(
        *log.lock().unwrap(),
        [
            format!("early: {text}"),
            format!("middle: {text}"),
            format!("late: {text}")
        ]
    );
    let types = rec.types_without_chunks();
    assert_eq!(types.last(), Some(&HookEventType::Error), "{types:?}");
    assert_eq!(
        types.iter().filter(|t| **t == HookEventType::Error).count(),
        1
    );
    if kind != HookEventType::PostCall {
        assert!(!types.contains(&HookEventType::PostCall), "{types:?}");
    }
    // The recorder runs after the failing hook: it never sees the failed event.
    assert!(!types.contains(&kind), "{types:?}");
    let stored = agent.memory().messages();
    assert_eq!(rows(&stored), memory, "memory after a failure at {kind}");
    assert_no_orphan_tool_use(&stored);
}

#[tokio::test]
async fn hook_error_at_pre_call() {
    assert_hook_error_at(HookEventType::PreCall, 10, vec![]).await;
}

#[tokio::test]
async fn hook_error_at_pre_reasoning() {
    // The model never answered: the input is taken back, memory is as before the call.
    assert_hook_error_at(HookEventType::PreReasoning, 10, vec![]).await;
}

#[tokio::test]
async fn hook_error_at_post_reasoning() {
    assert_hook_error_at(HookEventType::PostReasoning, 10, vec![]).await;
}

#[tokio::test]
async fn hook_error_at_pre_acting_closes_the_stored_tool_call() {
    assert_hook_error_at(
        HookEventType::PreActing,
        10,
        vec![
            user("q"),
            calc_call_row(),
            result_row(ToolResultBlock::error("c1", "calculator", CANCELLED)),
        ],
    )
    .await;
}

#[tokio::test]
async fn hook_error_at_post_acting_leaves_no_orphan_tool_use() {
    assert_hook_error_at(
        HookEventType::PostActing,
        10,
        after_the_result_was_withheld(),
    )
    .await;
}

#[tokio::test]
async fn hook_error_at_post_call() {
    let mut memory = after_the_tool_ran();
    memory.push(answer_row("done"));
    assert_hook_error_at(HookEventType::PostCall, 10, memory).await;
}

#[tokio::test]
async fn hook_error_at_pre_summary() {
    assert_hook_error_at(HookEventType::PreSummary, 1, after_the_tool_ran()).await;
}

#[tokio::test]
async fn hook_error_at_post_summary() {
    assert_hook_error_at(HookEventType::PostSummary, 1, after_the_tool_ran()).await;
}

struct AsyncPanicker;

impl Hook for AsyncPanicker {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        tokio::task::yield_now().await;
        if let HookEvent::PostActing(e) = event
            && e.tool_use().id == "c1"
        {
            panic!("async boom");
        }
        Ok(())
    }

    fn name(&self) -> &str {
        "async-panicker"
    }
}

#[tokio::test]
async fn a_panicking_hook_fails_the_call_and_the_agent_stays_usable() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("unused"),
        ScriptedResponse::text("fine"),
    ]);
    let first = first_time();
    let panicky = hook_fn(move |event| {
        if matches!(event, HookEvent::PreReasoning(_)) && first() {
            panic!("boom");
        }
        Ok(())
    })
    .with_name("panicky");
    let log: Log = Arc::default();
    let agent = ReActAgent::builder()
        .model(model.clone())
        .hook(panicky)
        .hook(error_observer(&log, "observer", 10))
        .build()
        .unwrap();

    let err = agent.call("first").await.unwrap_err();

    assert_hook_panicked(&err, "panicky", HookEventType::PreReasoning, "boom");
    assert_eq!(
        *log.lock().unwrap(),
        ["observer: hook 'panicky' failed at PreReasoning: hook panicked: boom"]
    );
    assert_eq!(model.request_count(), 0);

    let reply = agent.call("second").await.unwrap();
    assert_eq!(reply.text(), "unused");
    assert_eq!(
        rows(&agent.memory().messages()),
        // The failed call's input was taken back: no two user messages in a row.
        vec![user("second"), answer_row("unused")]
    );
}

#[tokio::test]
async fn a_panicking_async_hook_is_caught_and_leaves_no_orphan_tool_use() {
    let model = ScriptedModel::new([calc_call("c1", "6*7"), ScriptedResponse::text("after")]);
    let toolkit = Toolkit::new().tool(Calculator::new());
    let agent = build_agent(&model, toolkit, hooks![AsyncPanicker]);

    let err = agent.call("q").await.unwrap_err();

    assert_hook_panicked(
        &err,
        "async-panicker",
        HookEventType::PostActing,
        "async boom",
    );
    let memory = agent.memory().messages();
    assert_eq!(rows(&memory), after_the_result_was_withheld());
    assert_no_orphan_tool_use(&memory);
    assert_eq!(agent.call("again").await.unwrap().text(), "after");
}

#[tokio::test]
async fn notification_hook_errors_and_panics_are_ignored() {
    // One tool call with progress (ActingChunk), then the summary (SummaryChunk).
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "progress", json!({"steps": 2})),
        ScriptedResponse::text("summary"),
    ]);
    let chunks = HookEventTypes::CHUNKS;
    let rec = RecordingHook::new(300).with_interests(chunks);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(ProgressTool::new()))
        .max_iters(1)
        .hook(
            hook_fn(|_| Err(HookError::msg("ignored")))
                .with_interests(chunks)
                .with_priority(10),
        )
        .hook(
            hook_fn(|_| panic!("ignored panic"))
                .with_interests(chunks)
                .with_priority(20),
        )
        .hook(rec.clone())
        .build()
        .unwrap();

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "summary");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxIterations));
    assert_eq!(
        rec.types(),
        kinds("ReasoningChunk ActingChunk ActingChunk SummaryChunk")
    );
}

#[tokio::test]
async fn a_failing_error_hook_never_replaces_the_original_error() {
    let model = ScriptedModel::new([ScriptedResponse::error("model down")]);
    let log: Log = Arc::default();
    let agent = ReActAgent::builder()
        .model(model)
        .hook(
            hook_fn(|_| Err(HookError::msg("error hook failed")))
                .with_interests(HookEventType::Error)
                .with_priority(10),
        )
        .hook(
            hook_fn(|_| panic!("error hook panicked"))
                .with_interests(HookEventType::Error)
                .with_priority(20),
        )
        .hook(error_observer(&log, "observer", 30))
        .build()
        .unwrap();

    let err = agent.call("q").await.unwrap_err();

    assert!(
        matches!(&err, AgentError::Model(ModelError::Other { message, .. }) if message == "model down"),
        "{err:?}"
    );
    assert_eq!(*log.lock().unwrap(), ["observer: model error: model down"]);
}

#[tokio::test]
async fn model_error_before_any_output() {
    let model = ScriptedModel::new([ScriptedResponse::error("model down")]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());

    let err = agent.call("q").await.unwrap_err();

    assert!(
        matches!(&err, AgentError::Model(ModelError::Other { message, .. }) if message == "model down"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "model error: model down");
    assert_eq!(rec.types(), kinds("PreCall PreReasoning Error"));
    let HookEvent::Error(event) = rec.events().last().cloned().unwrap() else {
        panic!("last event is not Error");
    };
    assert_eq!(event.error().to_string(), err.to_string());
    // The model never answered: its input is taken back out of memory.
    assert!(agent.memory().is_empty());
}

#[tokio::test]
async fn model_error_mid_stream() {
    let model = ScriptedModel::new([cut_after("par", "connection reset")]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());

    let err = agent.call("q").await.unwrap_err();

    assert!(
        matches!(&err, AgentError::Model(ModelError::Stream { message }) if message == "connection reset"),
        "{err:?}"
    );
    assert_eq!(
        rec.types(),
        kinds("PreCall PreReasoning ReasoningChunk Error")
    );
    // The model never answered: its input is taken back out of memory.
    assert!(agent.memory().is_empty());
}

async fn assert_empty_response_errors(response: ScriptedResponse) {
    let model = ScriptedModel::new([response]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());

    let err = tokio::time::timeout(Duration::from_secs(10), agent.call("q"))
        .await
        .expect("an empty response must not hang")
        .unwrap_err();

    assert!(
        matches!(&err, AgentError::Model(ModelError::EmptyResponse { model }) if model == "scripted-model"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "model error: model 'scripted-model' returned an empty response"
    );
    assert_eq!(rec.types(), kinds("PreCall PreReasoning Error"));
    // The model never answered: its input is taken back out of memory.
    assert!(agent.memory().is_empty());
}

#[tokio::test]
async fn empty_model_response_is_an_error_not_a_hang() {
    assert_empty_response_errors(ScriptedResponse::empty()).await;
}

#[tokio::test]
async fn usage_only_model_response_is_an_empty_response() {
    assert_empty_response_errors(ScriptedResponse::empty().with_usage(3, 0)).await;
}

#[tokio::test]
async fn tool_failures_become_error_results_the_model_sees() {
    let broken_args = "{\"text\": ";
    let model = ScriptedModel::new([
        ScriptedResponse::chunks([
            ScriptedChunk::tool_call("c1", "nope", json!({})),
            ScriptedChunk::tool_call("c2", "calculator", json!({"expression": 5})),
            ScriptedChunk::tool_call("c3", "calculator", json!({})),
            ScriptedChunk::tool_call("c4", "fail", json!({"message": "boom"})),
            ScriptedChunk::tool_call("c5", "panic", json!({})),
            ScriptedChunk::tool_call_start("c6", "echo"),
            ScriptedChunk::tool_call_args(broken_args),
        ]),
        ScriptedResponse::text("I see the errors."),
    ]);
    let calc = Calculator::new();
    let echo = EchoTool::new();
    let failing = FailingTool::new();
    let panicking = PanickingTool::new();
    let rec = RecordingHook::new(100);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(
            Toolkit::new()
                .tool(calc.clone())
                .tool(echo.clone())
                .tool(failing.clone())
                .tool(panicking.clone()),
        )
        .hook(rec.clone())
        .build()
        .unwrap();

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "I see the errors.");
    let json_error = serde_json::from_str::<Value>(broken_args).unwrap_err();
    let expected = [
        ("c1", "nope", "Error: Tool not found: nope".to_owned()),
        (
            "c2",
            "calculator",
            "Error: Parameter validation failed for tool 'calculator': /expression: 5 is not of type \"string\"".to_owned(),
        ),
        (
            "c3",
            "calculator",
            "Error: Parameter validation failed for tool 'calculator': \"expression\" is a required property".to_owned(),
        ),
        ("c4", "fail", "Error: Tool execution failed: boom".to_owned()),
        (
            "c5",
            "panic",
            "Error: Tool execution failed: tool panicked: tool panicked on purpose".to_owned(),
        ),
        (
            "c6",
            "echo",
            format!(
                "Error: Parameter validation failed for tool 'echo': the arguments are not valid JSON ({json_error}): {broken_args}"
            ),
        ),
    ];
    let expected_rows: Vec<Row> = expected
        .iter()
        .map(|(id, name, text)| result_row(ToolResultBlock::error(*id, *name, text.as_str())))
        .collect();
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let seen = &requests[1].messages;
    assert_eq!(seen.len(), 2 + expected.len());
    assert_eq!(rows(&seen[2..]), expected_rows, "what the model saw");
    assert_eq!(rows(&agent.memory().messages()[2..8]), expected_rows);
    // The stored reasoning message keeps the raw argument text of the broken call.
    let stored_call = agent.memory().messages()[1].tool_uses()[5].clone();
    assert_eq!(stored_call.raw_input.as_deref(), Some(broken_args));
    assert_eq!(
        calc.log().count(),
        0,
        "invalid arguments never reach the tool"
    );
    assert_eq!(echo.log().count(), 0);
    assert_eq!(failing.log().count(), 1);
    assert_eq!(panicking.log().count(), 1);
    assert!(!rec.types().contains(&HookEventType::Error));
    assert_eq!(rec.types().last(), Some(&HookEventType::PostCall));
}

#[test]
fn build_requires_a_model() {
    let err = ReActAgent::builder().build().unwrap_err();
    assert_eq!(err, BuildError::MissingModel);
}

/// Why an agent with `toolkit` (and a model) cannot be built.
fn build_error_with(toolkit: Toolkit) -> BuildError {
    ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .toolkit(toolkit)
        .build()
        .unwrap_err()
}

#[test]
fn build_rejects_duplicate_tool_names() {
    let err = build_error_with(
        Toolkit::new()
            .tool(Calculator::new())
            .tool(Calculator::new()),
    );
    assert_eq!(
        err,
        BuildError::Toolkit(ToolkitError::DuplicateTool {
            name: "calculator".to_owned()
        })
    );
}

#[test]
fn build_rejects_invalid_tool_schemas() {
    let not_an_object = tool_fn("arr", "d", json!({"type": "array"}), |_, _| async {
        Ok("x")
    });
    let err = build_error_with(Toolkit::new().tool(not_an_object));
    assert_eq!(
        err,
        BuildError::Toolkit(ToolkitError::InvalidSchema {
            tool: "arr".to_owned(),
            message:
                "arguments must be an object schema (\"type\": \"object\"), got \"type\": \"array\""
                    .to_owned(),
        })
    );

    let broken = tool_fn(
        "bad",
        "d",
        json!({"type": "object", "properties": {"x": {"type": 12}}}),
        |_, _| async { Ok("x") },
    );
    let err = build_error_with(Toolkit::new().tool(broken));
    assert!(
        matches!(&err, BuildError::Toolkit(ToolkitError::InvalidSchema { tool, message }) if tool == "bad" && !message.is_empty()),
        "{err:?}"
    );
}

#[test]
fn build_rejects_zero_max_iters() {
    let err = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .max_iters(0)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::InvalidConfig {
            message: "max_iters must be at least 1".to_owned()
        }
    );
}

/// Invariant: a hook that saw PreCall sees exactly one of PostCall or Error. When a PostCall
/// hook fails, the hooks that already received PostCall (the failing one included) are not
/// also sent Error; the hooks after it get Error.
#[tokio::test]
async fn a_failing_post_call_hook_does_not_give_earlier_hooks_a_second_ending() {
    let model = ScriptedModel::new([ScriptedResponse::text("done")]);
    let interests = HookEventType::PreCall | HookEventType::PostCall | HookEventType::Error;
    let early = RecordingHook::new(10).with_interests(interests);
    let late = RecordingHook::new(30).with_interests(interests);
    let failing = hook_fn(|event| match event {
        HookEvent::PostCall(_) => Err(HookError::msg("nope")),
        _ => Ok(()),
    })
    .with_priority(20)
    .with_interests(interests)
    .with_name("failing");
    let agent = ReActAgent::builder()
        .model(model)
        .hook(early.clone())
        .hook(failing)
        .hook(late.clone())
        .build()
        .unwrap();

    let err = agent.call("q").await.unwrap_err();

    assert_eq!(err.to_string(), "hook 'failing' failed at PostCall: nope");
    assert_eq!(
        early.types(),
        [HookEventType::PreCall, HookEventType::PostCall]
    );
    assert_eq!(late.types(), [HookEventType::PreCall, HookEventType::Error]);
}
