//! Pending tool recovery: new input while tool calls are pending fails without the hook and goes on with it (error results for the unanswered calls), with the exact memory and model input afterwards.

use crate::support::fixtures::expr;
use crate::support::hooks::stop_after_first_reasoning;
use crate::support::rows::{Row, answer_row, calls_row, result_row, rows, user};
use agentscope::BoxedHook;
use agentscope::ConversationError;
use agentscope::hooks::PendingToolRecoveryHook;
use agentscope::prelude::*;
use agentscope_test::tools::Calculator;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};

const NOT_COMPLETED: &str =
    "Error: Tool call was not completed: the conversation moved on before it ran.";

fn two_calls_row() -> Row {
    calls_row(
        &[
            ("c1", "calculator", expr("6*7")),
            ("c2", "calculator", expr("1+1")),
        ],
        Some(GenerateReason::ReasoningStopRequested),
    )
}

fn error_row(id: &str, text: &str) -> Row {
    result_row(ToolResultBlock::error(id, "calculator", text))
}

/// An agent whose first call left calculator calls c1 and c2 pending.
async fn stopped_agent(
    recovery: Option<PendingToolRecoveryHook>,
    rec: &RecordingHook,
) -> (ReActAgent, ScriptedModel, Calculator) {
    let model = ScriptedModel::new([ScriptedResponse::tool_calls([
        ("c1", "calculator", expr("6*7")),
        ("c2", "calculator", expr("1+1")),
    ])]);
    let calc = Calculator::new();
    let mut hooks = vec![
        BoxedHook::new(stop_after_first_reasoning()),
        BoxedHook::new(rec.clone()),
    ];
    hooks.extend(recovery.map(BoxedHook::new));
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(calc.clone()))
        .hooks(hooks)
        .build()
        .unwrap();
    agent.call("What is 6*7 and 1+1?").await.unwrap();
    rec.clear();
    (agent, model, calc)
}

#[tokio::test]
async fn without_the_hook_new_input_fails_and_memory_is_unchanged() {
    let rec = RecordingHook::new(100);
    let (agent, model, calc) = stopped_agent(None, &rec).await;
    let before = agent.memory().messages();

    let err = agent.call("Never mind.").await.unwrap_err();

    match &err {
        AgentError::Conversation(ConversationError::PendingToolCalls { ids }) => {
            assert_eq!(ids, &["c1", "c2"])
        }
        other => panic!("unexpected error: {other}"),
    }
    assert_eq!(agent.memory().messages(), before);
    assert_eq!(model.request_count(), 1);
    assert_eq!(calc.log().count(), 0);
}

#[tokio::test]
async fn with_the_hook_unanswered_calls_get_error_results_and_the_call_goes_on() {
    let rec = RecordingHook::new(100);
    let (agent, model, calc) = stopped_agent(Some(PendingToolRecoveryHook::new()), &rec).await;
    model.push(ScriptedResponse::text("Sure, what else?"));

    let reply = agent.call("Never mind.").await.unwrap();

    assert_eq!(reply.text(), "Sure, what else?");
    assert_eq!(calc.log().count(), 0, "the pending calls never ran");
    let expected = vec![
        user("What is 6*7 and 1+1?"),
        two_calls_row(),
        error_row("c1", NOT_COMPLETED),
        error_row("c2", NOT_COMPLETED),
        user("Never mind."),
    ];
    // The model got exactly the repaired conversation.
    assert_eq!(rows(&model.requests()[1].messages), expected);
    let mut stored = expected;
    stored.push(answer_row("Sure, what else?"));
    assert_eq!(rows(&agent.memory().messages()), stored);
    // Later PreCall hooks see the repaired input.
    let HookEvent::PreCall(pre_call) = &rec.events()[0] else {
        panic!("first event is not PreCall")
    };
    assert_eq!(
        rows(pre_call.input_messages()),
        vec![
            error_row("c1", NOT_COMPLETED),
            error_row("c2", NOT_COMPLETED),
            user("Never mind."),
        ]
    );
    assert_eq!(
        rows(pre_call.history()),
        rows(&agent.memory().messages()[..2])
    );
}

#[tokio::test]
async fn results_in_the_input_are_kept_and_only_the_rest_are_answered() {
    let rec = RecordingHook::new(100);
    let hook = PendingToolRecoveryHook::new().with_result_text("Error: skipped.");
    let (agent, model, _calc) = stopped_agent(Some(hook), &rec).await;
    model.push(ScriptedResponse::text("ok"));

    agent
        .call(vec![
            Msg::tool_result(ToolResultBlock::text("c2", "calculator", "2")),
            Msg::user("And now?"),
        ])
        .await
        .unwrap();

    assert_eq!(
        rows(&agent.memory().messages()),
        vec![
            user("What is 6*7 and 1+1?"),
            two_calls_row(),
            error_row("c1", "Error: skipped."),
            result_row(ToolResultBlock::text("c2", "calculator", "2")),
            user("And now?"),
            answer_row("ok"),
        ]
    );
}

#[tokio::test]
async fn resuming_is_left_to_the_engine() {
    let rec = RecordingHook::new(100);
    let (agent, model, calc) = stopped_agent(Some(PendingToolRecoveryHook::new()), &rec).await;
    model.push(ScriptedResponse::text("42 and 2"));

    let reply = agent.call(()).await.unwrap();

    assert_eq!(reply.text(), "42 and 2");
    assert_eq!(calc.log().calls(), [expr("6*7"), expr("1+1")]);
}

#[tokio::test]
async fn without_pending_calls_the_input_is_untouched() {
    let model = ScriptedModel::new([ScriptedResponse::text("hi")]);
    let rec = RecordingHook::new(100);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .hook(PendingToolRecoveryHook::new())
        .hook(rec.clone())
        .build()
        .unwrap();

    agent.call("hello").await.unwrap();

    let HookEvent::PreCall(pre_call) = &rec.events()[0] else {
        panic!("first event is not PreCall")
    };
    assert_eq!(rows(pre_call.input_messages()), vec![user("hello")]);
    let order = agent.hook_order();
    assert_eq!(order[0].name, "pending_tool_recovery");
    assert_eq!(order[0].priority, 10);
    assert_eq!(order[0].interests, HookEventType::PreCall.into());
}
