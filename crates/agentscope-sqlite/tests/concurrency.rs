//! Many agents on one SQLite file: 50 concurrent agents (each its own session, several calls
//! each, through two separately opened stores as two processes would) lose no update; two
//! agents alternating on one session each load what the other saved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

const AGENTS: usize = 50;
const CALLS: usize = 4;

fn texts(messages: &[Msg]) -> Vec<String> {
    messages.iter().map(Msg::text).collect()
}

/// What agent `i`'s session must hold after its calls: the first call uses the calculator,
/// the others are plain exchanges.
fn expected_rows(i: usize) -> Vec<(Role, String)> {
    let mut rows = Vec::new();
    for k in 0..CALLS {
        rows.push((Role::User, format!("agent {i} question {k}")));
        if k == 0 {
            rows.push((Role::Assistant, String::new()));
            rows.push((Role::Tool, String::new()));
        }
        rows.push((Role::Assistant, format!("agent {i} answer {k}")));
    }
    rows
}

fn rows(messages: &[Msg]) -> Vec<(Role, String)> {
    messages.iter().map(|m| (m.role, m.text())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_agents_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    // Two handles opened separately: two connection pools, as in two processes.
    let stores = [
        SqliteSessionStore::open(&path).unwrap(),
        SqliteSessionStore::open(&path).unwrap(),
    ];

    let mut tasks = Vec::new();
    for i in 0..AGENTS {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            let mut responses = vec![ScriptedResponse::tool_call(
                format!("call-{i}"),
                "calculator",
                json!({"expression": format!("{i}*2")}),
            )];
            responses.extend(
                (0..CALLS).map(|k| ScriptedResponse::text(format!("agent {i} answer {k}"))),
            );
            let calc = Calculator::new();
            let agent = ReActAgent::builder()
                .name(format!("agent-{i}"))
                .model(ScriptedModel::new(responses))
                .toolkit(Toolkit::new().tool(calc.clone()))
                .session(store, format!("session-{i:02}"))
                .build()
                .unwrap();
            for k in 0..CALLS {
                let reply = agent.call(format!("agent {i} question {k}")).await.unwrap();
                assert_eq!(reply.text(), format!("agent {i} answer {k}"));
                // Let the other agents interleave their saves with ours.
                tokio::task::yield_now().await;
            }
            assert_eq!(calc.log().count(), 1);
            agent.memory().messages()
        }));
    }
    let mut memories = Vec::new();
    for task in tasks {
        memories.push(task.await.unwrap());
    }

    let reader = SqliteSessionStore::open(&path).unwrap();
    let ids = reader.list().await.unwrap();
    let expected_ids: Vec<String> = (0..AGENTS).map(|i| format!("session-{i:02}")).collect();
    assert_eq!(ids, expected_ids);
    for (i, memory) in memories.iter().enumerate() {
        let state = reader
            .load(&format!("session-{i:02}"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rows(&state.messages), expected_rows(i), "session {i}");
        assert_eq!(
            &state.messages, memory,
            "session {i} holds exactly the agent's memory"
        );
        assert_eq!(state.agent.name, format!("agent-{i}"));
        let result = &state.messages[2].tool_results()[0];
        assert_eq!(result.text_output(), (i * 2).to_string());
    }
}

/// Two agents (two instances, two store handles) alternating on one session: every call
/// loads what the other saved, and no message is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_alternating_on_one_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let build = |name: &str| {
        let model = ScriptedModel::new([]);
        let agent = ReActAgent::builder()
            .name(name)
            .model(model.clone())
            .session(SqliteSessionStore::open(&path).unwrap(), "shared")
            .build()
            .unwrap();
        (agent, model)
    };
    let (a, model_a) = build("a");
    let (b, model_b) = build("b");
    let mut expected: Vec<String> = Vec::new();
    for round in 0..10 {
        let (agent, model) = if round % 2 == 0 {
            (&a, &model_a)
        } else {
            (&b, &model_b)
        };
        model.push(ScriptedResponse::text(format!("answer {round}")));
        agent.call(format!("question {round}")).await.unwrap();
        expected.push(format!("question {round}"));
        assert_eq!(
            texts(&model.last_request().unwrap().messages),
            expected,
            "round {round}: the model saw the other agent's turns"
        );
        expected.push(format!("answer {round}"));
    }
    let store = SqliteSessionStore::open(&path).unwrap();
    let stored = store.load("shared").await.unwrap().unwrap();
    assert_eq!(texts(&stored.messages), expected);
    let speakers: Vec<&str> = stored
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(speakers, ["a", "b", "a", "b", "a", "b", "a", "b", "a", "b"]);
    assert_eq!(stored.agent.name, "b");
}
