//! Agents on Redis sessions: two agents (two instances, two separately connected stores, as
//! two processes would have) alternating turns of one conversation; and 50 concurrent
//! agents with tool calls, each on its own session, losing no update.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;
use support::RedisServer;

fn texts(messages: &[Msg]) -> Vec<String> {
    messages.iter().map(Msg::text).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn two_agents_on_two_connections_alternate_on_one_session() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut agents = Vec::new();
    for name in ["a", "b"] {
        let model = ScriptedModel::new([]);
        // Each agent has its own connection: another process, as far as Redis can tell.
        let store = server.store().await;
        let agent = ReActAgent::builder()
            .name(name)
            .model(model.clone())
            .session(store, "shared")
            .build()
            .unwrap();
        agents.push((agent, model));
    }
    let mut expected: Vec<String> = Vec::new();
    for round in 0..20 {
        let (agent, model) = &agents[round % 2];
        model.push(ScriptedResponse::text(format!("answer {round}")));
        let reply = agent.call(format!("question {round}")).await.unwrap();
        assert_eq!(reply.text(), format!("answer {round}"));
        expected.push(format!("question {round}"));
        assert_eq!(
            texts(&model.last_request().unwrap().messages),
            expected,
            "round {round}: the model saw every turn of the other agent"
        );
        expected.push(format!("answer {round}"));
    }
    let reader = server.store().await;
    let stored = reader.load("shared").await.unwrap().unwrap();
    assert_eq!(texts(&stored.messages), expected);
    assert_eq!(stored.messages.len(), 40);
    let speakers: Vec<&str> = stored
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.name.as_str())
        .collect();
    let alternating: Vec<&str> = (0..20).map(|i| ["a", "b"][i % 2]).collect();
    assert_eq!(speakers, alternating);
    assert_eq!(stored.agent.name, "b");
    assert_eq!(reader.list().await.unwrap(), ["shared"]);
    // Both agents' memories are the stored conversation after a final load.
    for (agent, model) in &agents {
        model.push(ScriptedResponse::text("bye"));
        agent.call("last").await.unwrap();
    }
    let stored = reader.load("shared").await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 44);
    assert_eq!(agents[1].0.memory().messages(), stored.messages);
}

const AGENTS: usize = 50;
const CALLS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn fifty_concurrent_agents_lose_no_update() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let stores = [server.store().await, server.store().await];
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
    let reader = server.store().await;
    let expected_ids: Vec<String> = (0..AGENTS).map(|i| format!("session-{i:02}")).collect();
    assert_eq!(reader.list().await.unwrap(), expected_ids);
    for (i, memory) in memories.iter().enumerate() {
        let state = reader
            .load(&format!("session-{i:02}"))
            .await
            .unwrap()
            .unwrap();
        // user, tool call, tool result, answer; then user, answer twice.
        assert_eq!(state.messages.len(), 4 + 2 * (CALLS - 1), "session {i}");
        assert_eq!(&state.messages, memory, "session {i}");
        assert_eq!(
            state.messages[2].tool_results()[0].text_output(),
            (i * 2).to_string()
        );
        assert!(state.running_tools.is_empty());
    }
}
