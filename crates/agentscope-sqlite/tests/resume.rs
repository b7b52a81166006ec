//! Human in the loop across processes: instance 1 stops for tool approval and is gone;
//! instance 2 (a new agent, a new approval hook, the same SQLite file and session id)
//! approves or rejects and resumes; the tool runs exactly once (or never), with exact memory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::messages::{Row, rows};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

const SESSION: &str = "ticket-7";

fn expr() -> Value {
    json!({"expression": "6*7"})
}

fn ids(calls: &[ToolUseBlock]) -> Vec<String> {
    calls.iter().map(|c| c.id.to_string()).collect()
}

/// One "process": a store handle of its own, an agent, its approval hook and its tool.
struct Instance {
    store: SqliteSessionStore,
    agent: ReActAgent,
    approvals: ToolApprovalHook,
    calc: Calculator,
    model: ScriptedModel,
}

fn start(path: &Path, responses: Vec<ScriptedResponse>) -> Instance {
    let store = SqliteSessionStore::open(path).unwrap();
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["calculator"]));
    let calc = Calculator::new();
    let model = ScriptedModel::new(responses);
    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are careful.")
        .model(model.clone())
        .toolkit(Toolkit::new().tool(calc.clone()))
        .hook(approvals.clone())
        .session(store.clone(), SESSION)
        .build()
        .unwrap();
    Instance {
        store,
        agent,
        approvals,
        calc,
        model,
    }
}

/// Process 1: asks, stops for approval, and ends.
async fn ask(path: &Path) -> Vec<Msg> {
    let first = start(
        path,
        vec![ScriptedResponse::tool_call("c1", "calculator", expr())],
    );
    let stopped = first.agent.call("What is 6*7?").await.unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(ids(&first.approvals.pending()), ["c1"]);
    assert_eq!(first.calc.log().count(), 0);
    let memory = first.agent.memory().messages();
    assert_eq!(
        first.store.load(SESSION).await.unwrap().unwrap().messages,
        memory
    );
    memory
}

fn stopped_rows() -> Vec<Row> {
    vec![
        (
            Role::User,
            "user".into(),
            vec![ContentBlock::text("What is 6*7?")],
            None,
        ),
        (
            Role::Assistant,
            "assistant".into(),
            vec![ToolUseBlock::new("c1", "calculator", expr()).into()],
            Some(GenerateReason::ReasoningStopRequested),
        ),
    ]
}

#[tokio::test]
async fn approve_in_a_new_process_runs_the_tool_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let stopped = ask(&path).await;
    assert_eq!(rows(&stopped), stopped_rows());

    // Process 2.
    let second = start(&path, vec![ScriptedResponse::text("It is 42.")]);
    let state = second.store.load(SESSION).await.unwrap().unwrap();
    assert_eq!(state.messages, stopped);
    second.approvals.restore(&state.messages);
    assert_eq!(ids(&second.approvals.pending()), ["c1"]);
    second.approvals.approve("c1").unwrap();
    let reply = second.agent.call(()).await.unwrap();
    assert_eq!(reply.text(), "It is 42.");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(second.calc.log().calls(), [expr()]);

    let mut expected = stopped_rows();
    expected.push((
        Role::Tool,
        "calculator".into(),
        vec![ToolResultBlock::text("c1", "calculator", "42").into()],
        None,
    ));
    expected.push((
        Role::Assistant,
        "assistant".into(),
        vec![ContentBlock::text("It is 42.")],
        Some(GenerateReason::ModelStop),
    ));
    let memory = second.agent.memory().messages();
    assert_eq!(rows(&memory), expected);
    assert_eq!(
        &memory[..2],
        &stopped[..],
        "the stored messages are continued as they were"
    );
    assert_eq!(
        second.store.load(SESSION).await.unwrap().unwrap().messages,
        memory
    );
    let request = &second.model.requests()[0];
    assert_eq!(request.messages.len(), 4); // system + the three stored messages
    assert_eq!(&request.messages[1..], &memory[..3]);

    // Process 3 continues the finished conversation: nothing is pending, nothing runs again.
    let third = start(&path, vec![ScriptedResponse::text("You're welcome.")]);
    third.agent.call("Thanks!").await.unwrap();
    assert_eq!(third.calc.log().count(), 0);
    assert_eq!(second.calc.log().count(), 1);
    let stored = third.store.load(SESSION).await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 6);
    assert_eq!(&stored.messages[..4], &memory[..]);
}

#[tokio::test]
async fn reject_in_a_new_process_never_runs_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    ask(&path).await;

    let second = start(&path, vec![ScriptedResponse::text("Understood.")]);
    let state = second.store.load(SESSION).await.unwrap().unwrap();
    second.approvals.restore(&state.messages);
    second.approvals.reject("c1", "not today").unwrap();
    let reply = second.agent.call(()).await.unwrap();
    assert_eq!(reply.text(), "Understood.");
    assert_eq!(second.calc.log().count(), 0);
    let memory = second.store.load(SESSION).await.unwrap().unwrap().messages;
    assert_eq!(
        rows(&memory[2..3]),
        [(
            Role::Tool,
            "calculator".into(),
            vec![
                ToolResultBlock::error("c1", "calculator", "Rejected by the user: not today")
                    .into()
            ],
            None,
        )]
    );
    assert_eq!(memory.len(), 4);
}

/// Without `restore`, resuming fails at PreCall naming the awaiting calls (nothing is
/// stored or saved), and the hook then knows them: approve and resume again.
#[tokio::test]
async fn resuming_without_restore_names_the_awaiting_calls_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let stopped = ask(&path).await;

    let second = start(&path, vec![ScriptedResponse::text("It is 42.")]);
    assert!(second.approvals.pending().is_empty());
    let err = second.agent.call(()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "hook 'tool_approval' failed at PreCall: tool calls awaiting approval: [c1]; approve, edit or reject them before resuming"
    );
    assert_eq!(
        second.store.load(SESSION).await.unwrap().unwrap().messages,
        stopped
    );
    assert_eq!(ids(&second.approvals.pending()), ["c1"]);
    second.approvals.approve("c1").unwrap();
    second.agent.call(()).await.unwrap();
    assert_eq!(second.calc.log().count(), 1);
    assert_eq!(second.agent.memory().len(), 4);
}
