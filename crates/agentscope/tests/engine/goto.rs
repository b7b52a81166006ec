//! `goto_reasoning`: immediate validation, what a valid goto stores and sends to the model, its independence from `max_iters`, the `max_goto_reasoning` cap, and stop winning over goto.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::failures::{hook_error, invalid_goto};
use crate::support::fixtures::expr;
use crate::support::hooks::hooks;
use crate::support::recorded::kinds;
use crate::support::rows::{Row, calls_row, result_row, row, rows, user};
use agentscope::prelude::*;
use agentscope::{BoxedHook, HookFn};
use agentscope_test::tools::{Calculator, EchoTool};
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

fn assistant(t: &str, reason: Option<GenerateReason>) -> Row {
    row(
        Role::Assistant,
        "assistant",
        vec![ContentBlock::text(t)],
        reason,
    )
}

/// An agent (system prompt "sys") with a calculator, an echo tool and `hooks`.
fn build(model: &ScriptedModel, hooks: Vec<BoxedHook>) -> ReActAgent {
    let toolkit = Toolkit::new().tool(Calculator::new()).tool(EchoTool::new());
    build_with(model, toolkit, hooks)
}

/// An agent (system prompt "sys") with `toolkit` and `hooks`.
fn build_with(model: &ScriptedModel, toolkit: Toolkit, hooks: Vec<BoxedHook>) -> ReActAgent {
    ReActAgent::builder()
        .sys_prompt("sys")
        .model(model.clone())
        .toolkit(toolkit)
        .hooks(hooks)
        .build()
        .unwrap()
}

/// A PostReasoning hook that calls `goto_reasoning(make())` the first `times` times.
fn goto_times(times: usize, make: impl Fn() -> Vec<Msg> + Send + Sync + 'static) -> HookFn {
    let count = AtomicUsize::new(0);
    hook_fn(move |event| {
        if let HookEvent::PostReasoning(e) = event
            && count.fetch_add(1, Ordering::SeqCst) < times
        {
            e.goto_reasoning(make())?;
        }
        Ok(())
    })
    .with_name("goto")
}

#[tokio::test]
async fn goto_reasoning_is_validated_at_once() {
    let outcomes: Arc<Mutex<Vec<(HookError, bool)>>> = Arc::default();
    let seen = Arc::clone(&outcomes);
    let probe = hook_fn(move |event| {
        if let HookEvent::PostReasoning(e) = event
            && e.reasoning_message().has_tool_uses()
        {
            let attempts = [
                vec![],
                vec![Msg::tool_result(ToolResultBlock::text(
                    "c1",
                    "calculator",
                    "42",
                ))],
                vec![
                    Msg::system("be brief"),
                    Msg::tool_result(ToolResultBlock::text("c1", "calculator", "42")),
                    Msg::tool_result(ToolResultBlock::text("c2", "echo", "hi")),
                ],
            ];
            for attempt in attempts {
                let err = e.goto_reasoning(attempt).unwrap_err();
                seen.lock().unwrap().push((err, e.is_goto_requested()));
            }
        }
        Ok(())
    });
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ("c1", "calculator", expr("6*7")),
            ("c2", "echo", json!({"text": "hi"})),
        ]),
        ScriptedResponse::text("done"),
    ]);
    let agent = build(&model, hooks![probe]);

    let reply = agent.call("q").await.unwrap();

    let outcomes = outcomes.lock().unwrap().clone();
    let texts: Vec<(String, bool)> = outcomes
        .iter()
        .map(|(err, requested)| (err.to_string(), *requested))
        .collect();
    assert_eq!(
        texts,
        [
            (
                "Cannot proceed without ToolResult when there are pending ToolUse. Pending tools: [calculator, echo]"
                    .to_owned(),
                false
            ),
            (
                "Missing ToolResult for pending ToolUse. Missing IDs: [c2]".to_owned(),
                false
            ),
            (
                "Hooks must not inject SYSTEM messages into goto_reasoning messages. Use set_system_message() or append_system_content() instead."
                    .to_owned(),
                false
            ),
        ]
    );
    assert!(
        outcomes
            .iter()
            .all(|(err, _)| matches!(err, HookError::InvalidGoto(_)))
    );
    // The failed gotos changed nothing: the tools ran and the model answered.
    assert_eq!(reply.text(), "done");
    assert_eq!(agent.memory().len(), 5);
}

#[tokio::test]
async fn a_goto_hook_returning_the_validation_error_fails_the_call() {
    let model = ScriptedModel::new([ScriptedResponse::tool_call("c1", "calculator", expr("6*7"))]);
    let agent = build(&model, hooks![goto_times(1, Vec::new)]);

    let err = agent.call("q").await.unwrap_err();

    let source = hook_error(&err, "goto", HookEventType::PostReasoning);
    assert_eq!(
        invalid_goto(source).to_string(),
        "Cannot proceed without ToolResult when there are pending ToolUse. Pending tools: [calculator]"
    );
    // The reasoning message was never stored (no orphan tool-use), and the model's answer
    // was refused, so the input is taken back too.
    assert!(agent.memory().is_empty());
}

#[tokio::test]
async fn valid_goto_with_tool_results_stores_them_and_reasons_again() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", expr("6*7")),
        ScriptedResponse::text("It is 42."),
    ]);
    let calc = Calculator::new();
    let rec = RecordingHook::new(200);
    let goto = goto_times(1, || {
        vec![Msg::tool_result(ToolResultBlock::text(
            "c1",
            "calculator",
            "cached 42",
        ))]
    });
    let toolkit = Toolkit::new().tool(calc.clone());
    let agent = build_with(&model, toolkit, hooks![goto, rec.clone()]);

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "It is 42.");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(
        calc.log().count(),
        0,
        "the goto results replace running the tool"
    );
    let expected = vec![
        user("q"),
        calls_row(&[("c1", "calculator", expr("6*7"))], None),
        result_row(ToolResultBlock::text("c1", "calculator", "cached 42")),
        assistant("It is 42.", Some(GenerateReason::ModelStop)),
    ];
    assert_eq!(rows(&agent.memory().messages()), expected);

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1].messages;
    assert_eq!(second[0].role, Role::System);
    assert_eq!(second[0].text(), "sys");
    assert_eq!(rows(&second[1..]), expected[..3].to_vec());
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreReasoning PostReasoning PreReasoning PostReasoning PostCall")
    );
}

#[tokio::test]
async fn goto_without_tool_uses_appends_the_messages_and_reasons_again() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("draft"),
        ScriptedResponse::text("final"),
    ]);
    let agent = build(
        &model,
        hooks![goto_times(1, || {
            vec![Msg::user("Check your answer once more.")]
        })],
    );

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "final");
    let expected = vec![
        user("q"),
        assistant("draft", None),
        user("Check your answer once more."),
        assistant("final", Some(GenerateReason::ModelStop)),
    ];
    assert_eq!(rows(&agent.memory().messages()), expected);
    assert_eq!(
        rows(&model.requests()[1].messages[1..]),
        expected[..3].to_vec()
    );
}

#[tokio::test]
async fn goto_messages_are_streamed_as_hints() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("draft"),
        ScriptedResponse::text("final"),
    ]);
    let agent = build(&model, hooks![goto_times(1, || vec![Msg::user("again")])]);

    let events: Vec<Event> = agent
        .stream("q", StreamOptions::default().include_reasoning_chunk(false))
        .map(Result::unwrap)
        .collect()
        .await;

    let seen: Vec<(EventType, bool, String)> = events
        .iter()
        .map(|e| (e.event_type, e.is_last, e.message.text()))
        .collect();
    assert_eq!(
        seen,
        [
            (EventType::Reasoning, true, "draft".to_owned()),
            (EventType::Hint, true, "again".to_owned()),
            (EventType::Reasoning, true, "final".to_owned()),
            (EventType::AgentResult, true, "final".to_owned()),
        ]
    );
    assert_eq!(events[1].message.role, Role::User);
}

#[tokio::test]
async fn goto_does_not_count_against_max_iters() {
    let model = ScriptedModel::new(["one", "two", "three", "four"].map(ScriptedResponse::text));
    let iterations = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&iterations);
    let recorder = hook_fn(move |event| {
        if let HookEvent::PreReasoning(e) = event {
            log.lock().unwrap().push(e.iteration());
        }
        Ok(())
    });
    let agent = ReActAgent::builder()
        .model(model.clone())
        .max_iters(1)
        .hook(recorder)
        .hook(goto_times(3, || vec![Msg::user("more")]))
        .build()
        .unwrap();

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "four");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(*iterations.lock().unwrap(), [0, 0, 0, 0]);
    assert_eq!(model.request_count(), 4);
}

async fn assert_goto_cap(max: Option<usize>, expected_max: usize) {
    let model = ScriptedModel::new([ScriptedResponse::text("again?")]).cycling();
    let rec = RecordingHook::new(200);
    let mut builder = ReActAgent::builder()
        .model(model.clone())
        .hook(goto_times(usize::MAX, || vec![Msg::user("retry")]))
        .hook(rec.clone());
    if let Some(max) = max {
        builder = builder.max_goto_reasoning(max);
    }
    let agent = builder.build().unwrap();

    let err = agent.call("q").await.unwrap_err();

    assert!(
        matches!(&err, AgentError::GotoLimitExceeded { max, hook } if *max == expected_max && hook == "goto"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "goto_reasoning was requested more than {expected_max} times in one call (the last request by hook 'goto')"
        )
    );
    // expected_max gotos were honoured and the next one failed; memory keeps nothing of
    // the loop (its replies and goto messages) nor, since nothing answered it, the input.
    assert_eq!(model.request_count(), expected_max + 1);
    assert!(agent.memory().is_empty());
    // The last request before the cap saw the whole loop.
    let last = model.requests().last().unwrap().messages.len();
    assert_eq!(last, 1 + 2 * expected_max);
    let types = rec.types_without_chunks();
    assert_eq!(types.last(), Some(&HookEventType::Error));
    assert!(!types.contains(&HookEventType::PostCall));
    let HookEvent::Error(error_event) = rec.events().last().cloned().unwrap() else {
        panic!("last event is not Error");
    };
    assert!(matches!(
        error_event.error(),
        AgentError::GotoLimitExceeded { .. }
    ));
}

#[tokio::test]
async fn goto_is_capped_by_the_default_max_goto_reasoning_of_ten() {
    assert_goto_cap(None, 10).await;
}

#[tokio::test]
async fn goto_is_capped_by_a_custom_max_goto_reasoning() {
    assert_goto_cap(Some(2), 2).await;
}

#[tokio::test]
async fn stop_wins_over_goto() {
    let model = ScriptedModel::new([ScriptedResponse::text("draft")]);
    let both = hook_fn(|event| {
        if let HookEvent::PostReasoning(e) = event {
            e.goto_reasoning(vec![Msg::user("again")])?;
            e.stop_agent();
        }
        Ok(())
    });
    let agent = build(&model, hooks![both]);

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "draft");
    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(
        rows(&agent.memory().messages()),
        vec![
            user("q"),
            assistant("draft", Some(GenerateReason::ReasoningStopRequested))
        ]
    );
    assert_eq!(model.request_count(), 1);
}
