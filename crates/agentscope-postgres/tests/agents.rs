//! Agents on PostgreSQL sessions: two agents (two instances, two separately connected
//! stores, as two processes would have) alternating turns of one conversation; 50
//! concurrent agents with tool calls losing no update; and 1,000 agents calling at once,
//! each on its own session, through one store's pool of 16 connections: 0 failures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Instant;

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_test::session_store::agents;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;
use support::{PostgresServer, store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn two_agents_on_two_stores_alternate_on_one_session() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let stores = [store(&server).await, store(&server).await];
    agents::alternating_agents(stores, store(&server).await, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn fifty_concurrent_agents_lose_no_update() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let stores = [store(&server).await, store(&server).await];
    agents::concurrent_agents(stores, store(&server).await, 50, 3).await;
}

const AGENTS: usize = 1_000;

/// 1,000 agents call at once, each on its own session (lease, load, a tool call, three
/// saves, release), through one store whose pool holds 16 connections: every call succeeds
/// and every session loads back with exactly its agent's messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_postgres),
    ignore = "PostgreSQL not installed: .ci/run installs it"
)]
async fn a_thousand_concurrent_sessions_all_succeed_through_one_pool() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let store = store(&server).await;
    assert_eq!(store.max_connections(), 16);
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
            .session(store.clone(), format!("s{i:04}"))
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
        match task.await.unwrap() {
            (agent, Ok(reply)) => finished.push((i, agent, reply)),
            (_, Err(error)) => failures.push(format!("agent {i}: {error}")),
        }
    }
    println!(
        "{AGENTS} concurrent sessions: {} ok, {} failed in {:?}",
        finished.len(),
        failures.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    let ids: Vec<String> = (0..AGENTS).map(|i| format!("s{i:04}")).collect();
    assert_eq!(store.list().await.unwrap(), ids);
    for (i, agent, reply) in finished {
        assert_eq!(reply.text(), format!("The answer is {}.", i + 1));
        let stored = store.load(&format!("s{i:04}")).await.unwrap().unwrap();
        assert_eq!(stored.messages, agent.memory().messages(), "session {i}");
        assert_eq!(stored.messages.len(), 4);
        assert_eq!(
            stored.messages[2].tool_results()[0].text_output(),
            (i + 1).to_string()
        );
        assert!(stored.running_tools.is_empty());
    }
    // Every lease was given back.
    let held = server.psql("SELECT count(*) FROM agentscope_session_leases");
    assert_eq!(held, "0");
}
