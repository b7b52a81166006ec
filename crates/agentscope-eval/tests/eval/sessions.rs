//! Yesterday's conversation as today's case: recorded by a real agent on a store (the
//! JSON-file store and SQLite), loaded back with `Case::from_session`, and run again.

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore};
use agentscope::{ImageBlock, ToolResultBlock, ToolUseBlock};
use agentscope_eval::{
    AnswerCriterion, Case, EvalError, Evaluator, ExpectedCall, Progress, RunContext, TrajectoryMode,
};
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

/// Two turns: a greeting, then 6*7 with the calculator.
fn script(expression: &str, answer: &str) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::text("Hello Ada!"),
        ScriptedResponse::tool_call("call_1", "calculator", json!({"expression": expression})),
        ScriptedResponse::text(answer),
    ])
}

/// Records the two-turn conversation as session `good-day` of `store`.
async fn record(store: impl SessionStore) {
    let agent = ReActAgent::builder()
        .model(script("6*7", "The answer is 42."))
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .session(store, "good-day")
        .build()
        .unwrap();
    agent.call("Hi, I'm Ada.").await.unwrap();
    agent.call("What is 6*7?").await.unwrap();
}

fn expected_case() -> Case {
    Case::new(
        "good-day",
        agentscope_eval::Input::turns(["Hi, I'm Ada.", "What is 6*7?"]),
    )
    .expect_calls(
        TrajectoryMode::Strict,
        [ExpectedCall::new("calculator").arg("expression", json!("6*7"))],
    )
    .expect_answer(AnswerCriterion::rouge1("The answer is 42."))
}

/// Runs `case` on agents playing `model`'s script.
async fn replay(case: &Case, model: ScriptedModel) -> agentscope_eval::RunReport {
    let evaluator = Evaluator::builder(move |_run: &RunContext<'_>| {
        ReActAgent::builder()
            .model(model.fork())
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .build()
    })
    .progress(Progress::Off)
    .build()
    .unwrap();
    evaluator.run(std::slice::from_ref(case)).await.cases[0].runs[0].clone()
}

async fn from_any_store(store: impl SessionStore + Clone) {
    record(store.clone()).await;
    let case = Case::from_session(&store, "good-day").await.unwrap();
    assert_eq!(case, expected_case());

    // Today the same agent still does it.
    let run = replay(&case, script("6*7", "The answer is 42.")).await;
    assert!(run.passed, "{run:#?}");
    // A changed agent does not.
    let run = replay(&case, script("7*6", "It is 42.")).await;
    assert!(!run.passed);
    assert_eq!(
        run.criteria[0].reason,
        "0 of 1 call in place; call 1: expected calculator(expression=\"6*7\"), made calculator({\"expression\":\"7*6\"}): argument \"expression\" is \"7*6\", not \"6*7\""
    );
    // ROUGE-1 of "It is 42." against "The answer is 42.": precision 2/3, recall 1/2.
    assert!((run.criteria[1].score - 4.0 / 7.0).abs() < 1e-12);

    let missing = Case::from_session(&store, "other-day").await.unwrap_err();
    assert!(missing.is_session());
    assert_eq!(missing.to_string(), "no session 'other-day' in the store");
}

#[tokio::test]
async fn a_session_from_the_json_file_store_becomes_a_case() {
    let dir = tempfile::tempdir().unwrap();
    from_any_store(JsonFileSessionStore::new(dir.path())).await;
}

#[tokio::test]
async fn a_session_from_sqlite_becomes_a_case() {
    let dir = tempfile::tempdir().unwrap();
    from_any_store(SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap()).await;
}

#[test]
fn consecutive_user_messages_are_one_turn() {
    let state = AgentState::new(
        AgentIdentity::new("assistant", "a1"),
        vec![
            Msg::user("Hi."),
            Msg::user("I'm Ada."),
            Msg::assistant("Hello Ada!"),
            Msg::user("Bye."),
            Msg::assistant("Bye!"),
        ],
    );
    let case = Case::from_state("two", &state).unwrap();
    assert_eq!(case.input.turns, [vec!["Hi.", "I'm Ada."], vec!["Bye."]]);
    assert_eq!(case.tool_calls, Some(vec![]));
    assert_eq!(case.answer, [AnswerCriterion::rouge1("Bye!")]);
}

fn not_a_case(messages: Vec<Msg>) -> String {
    let state = AgentState::new(AgentIdentity::new("assistant", "a1"), messages);
    let error: EvalError = Case::from_state("s1", &state).unwrap_err();
    assert!(error.is_session());
    error.to_string()
}

#[test]
fn a_conversation_that_is_not_a_case_says_why() {
    let call = Msg::builder()
        .role(Role::Assistant)
        .name("assistant")
        .block(ToolUseBlock::new(
            "c1",
            "delete_files",
            json!({"pattern": "*.log"}),
        ))
        .build();
    assert_eq!(
        not_a_case(vec![Msg::user("Clean up."), call.clone()]),
        "session 's1' cannot be a case: it ends with tool calls that have no answer"
    );
    assert_eq!(
        not_a_case(vec![
            Msg::user("Clean up."),
            call,
            Msg::tool_result(ToolResultBlock::text("c1", "delete_files", "done")),
        ]),
        "session 's1' cannot be a case: it does not end with the agent's answer"
    );
    assert_eq!(
        not_a_case(vec![Msg::assistant("Hello.")]),
        "session 's1' cannot be a case: the conversation has no user message"
    );
    let image = Msg::builder()
        .role(Role::User)
        .name("user")
        .block(ContentBlock::Image(ImageBlock {
            url: "https://example.com/a.png".into(),
        }))
        .build();
    assert_eq!(
        not_a_case(vec![image, Msg::assistant("A cat.")]),
        "session 's1' cannot be a case: message 1 (the user's) holds content other than text"
    );
}
