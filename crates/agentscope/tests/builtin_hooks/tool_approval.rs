//! Tool approval (human in the loop): approve, edit and reject paths, a mixed batch, resuming without a decision, no retry loop after a rejection, recovery and a restored conversation, with exact memory, model requests and tool call counts.

use crate::support::failures::hook_error;
use crate::support::fixtures::expr;
use crate::support::rows::{Row, answer_row, calls_row, result_row, rows, user};
use agentscope::hooks::{
    ApprovalDecision, ApprovalError, ApprovalPolicy, PendingToolRecoveryHook, ToolApprovalHook,
};
use agentscope::prelude::*;
use agentscope::{BoxedHook, InMemoryMemory};
use agentscope_test::tools::{Calculator, EchoTool};
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use serde_json::json;

const AWAITING_C1: &str =
    "tool calls awaiting approval: [c1]; approve, edit or reject them before resuming";

fn stopped_calc_row() -> Row {
    calls_row(
        &[("c1", "calculator", expr("6*7"))],
        Some(GenerateReason::ReasoningStopRequested),
    )
}

fn ids(calls: &[ToolUseBlock]) -> Vec<String> {
    calls.iter().map(|c| c.id.to_string()).collect()
}

struct Setup {
    agent: ReActAgent,
    model: ScriptedModel,
    approvals: ToolApprovalHook,
    calc: Calculator,
    echo: EchoTool,
}

fn setup(responses: Vec<ScriptedResponse>, extra: Vec<BoxedHook>) -> Setup {
    let model = ScriptedModel::new(responses);
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["calculator"]));
    let calc = Calculator::new();
    let echo = EchoTool::new();
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(calc.clone()).tool(echo.clone()))
        .hook(approvals.clone())
        .hooks(extra)
        .build()
        .unwrap();
    Setup {
        agent,
        model,
        approvals,
        calc,
        echo,
    }
}

/// An agent playing `model` over `memory` (another "process" when the memory outlives an
/// agent), with a new calculator behind a new hook asking approval of every call.
fn approving_agent(
    model: ScriptedModel,
    memory: InMemoryMemory,
) -> (ReActAgent, ToolApprovalHook, Calculator) {
    let approvals = ToolApprovalHook::new(ApprovalPolicy::all());
    let calc = Calculator::new();
    let agent = ReActAgent::builder()
        .model(model)
        .memory(memory)
        .toolkit(Toolkit::new().tool(calc.clone()))
        .hook(approvals.clone())
        .build()
        .unwrap();
    (agent, approvals, calc)
}

/// Approves c1 (6*7) and resumes: the calculator runs once and the answer is "It is 42.".
async fn approve_c1_and_resume(
    agent: &ReActAgent,
    approvals: &ToolApprovalHook,
    calc: &Calculator,
) {
    approvals.approve("c1").unwrap();
    assert_eq!(agent.call(()).await.unwrap().text(), "It is 42.");
    assert_eq!(calc.log().count(), 1);
}

/// An agent stopped for the approval of calculator call c1 (6*7); `then` is scripted after.
async fn stopped(then: Vec<ScriptedResponse>) -> Setup {
    let mut responses = vec![ScriptedResponse::tool_call("c1", "calculator", expr("6*7"))];
    responses.extend(then);
    let s = setup(responses, Vec::new());
    let reply = s.agent.call("What is 6*7?").await.unwrap();
    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(ids(&s.approvals.pending()), ["c1"]);
    assert_eq!(s.calc.log().count(), 0);
    assert_eq!(
        rows(&s.agent.memory().messages()),
        vec![user("What is 6*7?"), stopped_calc_row()]
    );
    s
}

#[tokio::test]
async fn approve_runs_the_call_exactly_once() {
    let s = stopped(vec![ScriptedResponse::text("It is 42.")]).await;

    s.approvals.approve("c1").unwrap();
    assert!(s.approvals.pending().is_empty());
    let reply = s.agent.call(()).await.unwrap();

    assert_eq!(reply.text(), "It is 42.");
    assert_eq!(s.calc.log().calls(), [expr("6*7")]);
    let expected = vec![
        user("What is 6*7?"),
        stopped_calc_row(),
        result_row(ToolResultBlock::text("c1", "calculator", "42")),
    ];
    assert_eq!(rows(&s.model.requests()[1].messages), expected);
    let mut stored = expected;
    stored.push(answer_row("It is 42."));
    assert_eq!(rows(&s.agent.memory().messages()), stored);
    assert!(s.approvals.pending().is_empty());
    // Nothing is left to decide: a decision now is an error.
    assert!(matches!(
        s.approvals.approve("c1"),
        Err(ApprovalError::NotAwaiting { .. })
    ));
}

/// Edited arguments are checked against the tool's schema when `edit` is called: a bad
/// edit is refused at once, naming the problem, and nothing is decided.
#[tokio::test]
async fn edit_validates_the_new_arguments_at_once() {
    let s = stopped(vec![ScriptedResponse::text("It is 9.")]).await;
    let error = s
        .approvals
        .edit("c1", json!({"expression": 42}))
        .unwrap_err();
    let ApprovalError::InvalidArguments { id, tool, problems } = &error else {
        panic!("{error:?}");
    };
    assert_eq!((id.as_str(), tool.as_str()), ("c1", "calculator"));
    assert_eq!(problems, "/expression: 42 is not of type \"string\"");
    assert_eq!(
        error.to_string(),
        "the new arguments for tool call 'c1' (calculator) are invalid: /expression: 42 is not of type \"string\""
    );
    // Still undecided: resuming fails as before, and a valid edit is accepted.
    assert_eq!(ids(&s.approvals.pending()), ["c1"]);
    s.approvals.edit("c1", expr("4+5")).unwrap();
    assert_eq!(s.agent.call(()).await.unwrap().text(), "It is 9.");
    assert_eq!(s.calc.log().calls(), [expr("4+5")]);
}

#[tokio::test]
async fn edit_runs_the_new_arguments_and_notes_the_edit_in_the_result() {
    let s = stopped(vec![ScriptedResponse::text("It is 9.")]).await;
    let rec = RecordingHook::new(300).with_interests(HookEventType::PreActing);
    s.agent.add_hook(rec.clone());

    s.approvals.edit("c1", expr("4+5")).unwrap();
    let reply = s.agent.call(()).await.unwrap();

    assert_eq!(reply.text(), "It is 9.");
    assert_eq!(s.calc.log().calls(), [expr("4+5")]);
    // Later PreActing hooks see the edited call.
    let HookEvent::PreActing(pre_acting) = &rec.events()[0] else {
        panic!("expected PreActing")
    };
    assert_eq!(pre_acting.tool_use().input, expr("4+5"));
    assert_eq!(pre_acting.tool_use().id, "c1");
    // Memory keeps the model's original call; the result says what ran.
    let edited_result = ToolResultBlock {
        id: "c1".into(),
        name: "calculator".into(),
        output: vec![
            ContentBlock::text("9"),
            ContentBlock::text(
                "Note: the user changed the arguments of this call to {\"expression\":\"4+5\"} before it ran.",
            ),
        ],
        is_error: false,
    };
    let expected = vec![
        user("What is 6*7?"),
        stopped_calc_row(),
        result_row(edited_result),
    ];
    assert_eq!(rows(&s.model.requests()[1].messages), expected);
    let mut stored = expected;
    stored.push(answer_row("It is 9."));
    assert_eq!(rows(&s.agent.memory().messages()), stored);
}

#[tokio::test]
async fn reject_gives_the_model_the_reason_and_the_same_call_is_rejected_at_once() {
    let s = stopped(vec![
        // The model tries the very same call again ...
        ScriptedResponse::tool_call("c2", "calculator", expr("6*7")),
        // ... and then gives up.
        ScriptedResponse::text("I can't compute that, sorry."),
    ])
    .await;

    s.approvals.reject("c1", "too expensive").unwrap();
    let reply = s.agent.call(()).await.unwrap();

    assert_eq!(reply.text(), "I can't compute that, sorry.");
    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ModelStop),
        "the repeated call did not stop the agent"
    );
    assert_eq!(s.calc.log().count(), 0);
    assert!(s.approvals.pending().is_empty());
    let rejected = result_row(ToolResultBlock::error(
        "c1",
        "calculator",
        "Rejected by the user: too expensive",
    ));
    let repeated = result_row(ToolResultBlock::error(
        "c2",
        "calculator",
        "Rejected by the user: too expensive (this exact call was rejected before, so it was not run again; do not repeat it)",
    ));
    let requests = s.model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        rows(&requests[1].messages),
        vec![user("What is 6*7?"), stopped_calc_row(), rejected.clone()]
    );
    assert_eq!(
        rows(&s.agent.memory().messages()),
        vec![
            user("What is 6*7?"),
            stopped_calc_row(),
            rejected,
            calls_row(&[("c2", "calculator", expr("6*7"))], None),
            repeated,
            answer_row("I can't compute that, sorry."),
        ]
    );
}

#[tokio::test]
async fn a_rejected_tool_with_other_arguments_asks_again() {
    let s = stopped(vec![ScriptedResponse::tool_call(
        "c2",
        "calculator",
        expr("6*7+0"),
    )])
    .await;

    s.approvals.reject("c1", "").unwrap();
    let reply = s.agent.call(()).await.unwrap();

    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(ids(&s.approvals.pending()), ["c2"]);
    let memory = s.agent.memory().messages();
    assert_eq!(
        rows(&memory[2..3]),
        vec![result_row(ToolResultBlock::error(
            "c1",
            "calculator",
            "Rejected by the user."
        ))]
    );
}

#[tokio::test]
async fn forgotten_rejections_ask_again() {
    let s = stopped(vec![
        ScriptedResponse::text("OK, I won't."),
        ScriptedResponse::tool_call("c2", "calculator", expr("6*7")),
    ])
    .await;
    s.approvals.reject("c1", "not now").unwrap();
    s.agent.call(()).await.unwrap();

    s.approvals.clear_rejections();
    let reply = s.agent.call("Now please.").await.unwrap();

    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(ids(&s.approvals.pending()), ["c2"]);
}

#[tokio::test]
async fn in_a_mixed_batch_only_the_guarded_call_needs_a_decision() {
    let s = setup(
        vec![
            ScriptedResponse::tool_calls([
                ("c1", "calculator", expr("6*7")),
                ("e1", "echo", json!({"text": "hi"})),
            ]),
            ScriptedResponse::text("done"),
        ],
        Vec::new(),
    );

    let reply = s.agent.call("go").await.unwrap();

    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(ids(&s.approvals.pending()), ["c1"]);
    assert_eq!(s.echo.log().count(), 0, "the whole batch waits");

    s.approvals.approve("c1").unwrap();
    let reply = s.agent.call(()).await.unwrap();

    assert_eq!(reply.text(), "done");
    assert_eq!(s.calc.log().count(), 1);
    assert_eq!(s.echo.log().count(), 1);
    assert_eq!(
        rows(&s.agent.memory().messages()),
        vec![
            user("go"),
            calls_row(
                &[
                    ("c1", "calculator", expr("6*7")),
                    ("e1", "echo", json!({"text": "hi"})),
                ],
                Some(GenerateReason::ReasoningStopRequested),
            ),
            result_row(ToolResultBlock::text("c1", "calculator", "42")),
            result_row(ToolResultBlock::text("e1", "echo", "hi")),
            answer_row("done"),
        ]
    );
}

#[tokio::test]
async fn calls_that_need_no_approval_never_stop_the_agent() {
    let s = setup(
        vec![
            ScriptedResponse::tool_call("e1", "echo", json!({"text": "hi"})),
            ScriptedResponse::text("done"),
        ],
        Vec::new(),
    );

    let reply = s.agent.call("go").await.unwrap();

    assert_eq!(reply.text(), "done");
    assert_eq!(s.echo.log().count(), 1);
    assert!(s.approvals.pending().is_empty());
}

#[tokio::test]
async fn resuming_without_a_decision_fails_before_anything_is_stored() {
    let s = stopped(vec![ScriptedResponse::text("It is 42.")]).await;
    let before = s.agent.memory().messages();

    let err = s.agent.call(()).await.unwrap_err();

    let source = hook_error(&err, "tool_approval", HookEventType::PreCall);
    assert_eq!(source.to_string(), AWAITING_C1);
    assert_eq!(s.agent.memory().messages(), before);
    assert_eq!(s.model.request_count(), 1);
    assert_eq!(s.calc.log().count(), 0);
    assert_eq!(ids(&s.approvals.pending()), ["c1"]);

    // Decide, then resume.
    approve_c1_and_resume(&s.agent, &s.approvals, &s.calc).await;
}

#[tokio::test]
async fn every_awaiting_call_needs_its_own_decision() {
    let s = setup(
        vec![
            ScriptedResponse::tool_calls([
                ("c1", "calculator", expr("1+1")),
                ("c2", "calculator", expr("2+2")),
            ]),
            ScriptedResponse::text("4 and... no."),
        ],
        Vec::new(),
    );
    s.agent.call("go").await.unwrap();
    assert_eq!(ids(&s.approvals.pending()), ["c1", "c2"]);

    s.approvals.approve("c1").unwrap();
    assert_eq!(ids(&s.approvals.pending()), ["c2"]);
    let err = s.agent.call(()).await.unwrap_err();
    assert_eq!(
        err.hook_error().unwrap().to_string(),
        "tool calls awaiting approval: [c2]; approve, edit or reject them before resuming"
    );
    assert_eq!(s.calc.log().count(), 0);

    s.approvals
        .decide("c2", ApprovalDecision::Reject("only one".into()))
        .unwrap();
    s.agent.call(()).await.unwrap();
    assert_eq!(s.calc.log().calls(), [expr("1+1")]);
}

#[tokio::test]
async fn decisions_for_unknown_calls_are_errors() {
    let s = stopped(Vec::new()).await;

    let err = s.approvals.edit("nope", json!({})).unwrap_err();

    assert_eq!(
        err,
        ApprovalError::NotAwaiting {
            id: "nope".into(),
            awaiting: vec!["c1".into()],
        }
    );
    assert_eq!(
        err.to_string(),
        "tool call 'nope' is not awaiting approval (awaiting: [c1])"
    );
}

#[tokio::test]
async fn moving_on_with_the_recovery_hook_drops_the_awaiting_calls() {
    let s = setup(
        vec![
            ScriptedResponse::tool_call("c1", "calculator", expr("6*7")),
            ScriptedResponse::text("Sure."),
        ],
        vec![BoxedHook::new(PendingToolRecoveryHook::new())],
    );
    s.agent.call("What is 6*7?").await.unwrap();
    assert_eq!(ids(&s.approvals.pending()), ["c1"]);

    let reply = s.agent.call("Forget it.").await.unwrap();

    assert_eq!(reply.text(), "Sure.");
    assert!(s.approvals.pending().is_empty());
    assert_eq!(s.calc.log().count(), 0);
    assert_eq!(
        rows(&s.agent.memory().messages()),
        vec![
            user("What is 6*7?"),
            stopped_calc_row(),
            result_row(ToolResultBlock::error(
                "c1",
                "calculator",
                PendingToolRecoveryHook::DEFAULT_RESULT
            )),
            user("Forget it."),
            answer_row("Sure."),
        ]
    );
}

#[tokio::test]
async fn a_fresh_hook_over_a_restored_conversation_finds_the_awaiting_calls() {
    // First "process": the agent stops for approval; its memory outlives it.
    let memory = InMemoryMemory::new();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", expr("6*7")),
        ScriptedResponse::text("It is 42."),
    ]);
    let (first, _, _) = approving_agent(model.clone(), memory.clone());
    first.call("What is 6*7?").await.unwrap();
    drop(first);

    // Second "process": a new agent and hook over the same conversation.
    let (second, approvals, calc) = approving_agent(model.clone(), memory.clone());
    assert!(approvals.pending().is_empty());
    approvals.restore(&second.memory().messages());
    assert_eq!(ids(&approvals.pending()), ["c1"]);

    approve_c1_and_resume(&second, &approvals, &calc).await;
}

#[tokio::test]
async fn a_resume_without_restore_still_refuses_and_lists_the_calls() {
    let memory = InMemoryMemory::with_messages(vec![
        Msg::user("What is 6*7?"),
        Msg::builder()
            .role(Role::Assistant)
            .block(ToolUseBlock::new("c1", "calculator", expr("6*7")))
            .build(),
    ]);
    let model = ScriptedModel::new([ScriptedResponse::text("It is 42.")]);
    let (agent, approvals, calc) = approving_agent(model, memory);

    let err = agent.call(()).await.unwrap_err();

    assert_eq!(err.hook_error().unwrap().to_string(), AWAITING_C1);
    assert_eq!(ids(&approvals.pending()), ["c1"]);
    approve_c1_and_resume(&agent, &approvals, &calc).await;
}

#[tokio::test]
async fn the_hook_appears_in_the_chain_with_its_priority_and_events() {
    let s = setup(Vec::new(), Vec::new());
    let order = s.agent.hook_order();
    assert_eq!(order.len(), 1);
    assert_eq!(order[0].name, "tool_approval");
    assert_eq!(order[0].priority, 200);
    assert_eq!(
        order[0].interests,
        HookEventType::PreCall
            | HookEventType::PostReasoning
            | HookEventType::PreActing
            | HookEventType::PostActing
    );
}

#[cfg(feature = "schema")]
#[tokio::test]
async fn structured_output_is_never_held_for_approval() {
    #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    struct Answer {
        value: i64,
    }
    let model = ScriptedModel::new([ScriptedResponse::tool_call(
        "g1",
        "generate_response",
        json!({"value": 42}),
    )]);
    let approvals = ToolApprovalHook::new(ApprovalPolicy::all());
    let agent = ReActAgent::builder()
        .model(model)
        .hook(approvals.clone())
        .build()
        .unwrap();

    let answer: Answer = agent.call_structured("6*7?").await.unwrap();

    assert_eq!(answer, Answer { value: 42 });
    assert!(approvals.pending().is_empty());
}
