//! 1,000 agents, each with its own session, on one `SqliteSessionStore` (one file), all
//! calling at once on a multi-thread runtime. Each call makes a tool call and then answers,
//! so it saves several times (the engine saves at every step). No call may fail ("database
//! is locked" was the failure before writes were serialised), and every session must load
//! back with exactly the agent's messages, in order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

const AGENTS: usize = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_agents_on_one_file_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap();

    let mut agents = Vec::with_capacity(AGENTS);
    for i in 0..AGENTS {
        let model = ScriptedModel::new([
            ScriptedResponse::tool_call(
                format!("call-{i}"),
                "calculator",
                json!({"expression": format!("{i}+1")}),
            ),
            ScriptedResponse::text(format!("The answer is {}.", i + 1)),
        ]);
        let agent = ReActAgent::builder()
            .name(format!("agent-{i}"))
            .model(model)
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .session(store.clone(), format!("s{i}"))
            .build()
            .unwrap();
        agents.push(agent);
    }

    let started = Instant::now();
    let tasks: Vec<_> = agents
        .into_iter()
        .enumerate()
        .map(|(i, agent)| {
            tokio::spawn(async move {
                let result = agent.call(format!("What is {i}+1?")).await;
                (agent, result)
            })
        })
        .collect();
    let mut failures = Vec::new();
    let mut finished = Vec::with_capacity(AGENTS);
    for (i, task) in tasks.into_iter().enumerate() {
        match task.await {
            Ok((agent, Ok(reply))) => finished.push((i, agent, reply)),
            Ok((_, Err(error))) => failures.push(format!("agent {i}: {error}")),
            Err(panic) => failures.push(format!("agent {i} panicked: {panic}")),
        }
    }
    let elapsed = started.elapsed();
    println!(
        "{AGENTS} concurrent agent calls on one SQLite file: {elapsed:?}, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {AGENTS} calls failed, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );

    let mut saves = 0;
    for (i, agent, reply) in finished {
        assert_eq!(reply.text(), format!("The answer is {}.", i + 1));
        let state = store.load(&format!("s{i}")).await.unwrap().unwrap();
        let rows: Vec<(Role, String, Vec<String>, Vec<String>)> = state
            .messages
            .iter()
            .map(|m| {
                (
                    m.role,
                    m.text(),
                    m.tool_uses().iter().map(|c| c.id.to_string()).collect(),
                    m.tool_results().iter().map(|r| r.text_output()).collect(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (Role::User, format!("What is {i}+1?"), vec![], vec![]),
                (
                    Role::Assistant,
                    String::new(),
                    vec![format!("call-{i}")],
                    vec![]
                ),
                (Role::Tool, String::new(), vec![], vec![(i + 1).to_string()]),
                (
                    Role::Assistant,
                    format!("The answer is {}.", i + 1),
                    vec![],
                    vec![]
                ),
            ],
            "session s{i}"
        );
        assert_eq!(state.messages, agent.memory().messages(), "session s{i}");
        assert!(state.running_tools.is_empty(), "session s{i}");
        assert_eq!(state.agent.name, format!("agent-{i}"));
        // One revision per save: the engine saved at every step.
        assert!(
            state.revision >= 3,
            "session s{i}: {} saves",
            state.revision
        );
        saves += state.revision;
    }
    println!("{saves} saves in all");
    let ids = store.list().await.unwrap();
    assert_eq!(ids.len(), AGENTS);
}
