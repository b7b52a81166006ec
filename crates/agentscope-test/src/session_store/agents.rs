//! Scenarios with real agents ([`ReActAgent`]s bound to sessions) that every store shared by
//! several instances of a service runs: agents on separate store handles (as separate
//! processes would have) taking turns on one session, and many agents saving concurrently,
//! each on its own session. Each store crate calls them from its own tests, with handles it
//! opens its own way:
//!
//! ```no_run
//! # use agentscope::session::SessionStore;
//! # async fn example<S: SessionStore + Clone>(open: impl Fn() -> S) {
//! use agentscope_test::session_store::agents;
//!
//! // In a store crate: `#[tokio::test(flavor = "multi_thread", worker_threads = 4)]`.
//! agents::alternating_agents([open(), open()], open(), 10).await;
//! agents::concurrent_agents([open(), open()], open(), 50, 3).await;
//! agents::many_sessions_at_once(open(), 1_000).await;
//! # }
//! ```
//!
//! They must run inside a multi-threaded tokio runtime, on a new, empty store.
#![allow(clippy::expect_used, clippy::panic)] // scenarios: a step that fails fails the test

use agentscope::prelude::*;
use agentscope::session::{AgentState, SessionStore};
use serde_json::json;

use crate::messages::{speakers, texts};
use crate::tools::Calculator;
use crate::{ScriptedModel, ScriptedResponse};

/// Two agents `a` and `b`, each bound to session `shared` through its own handle of
/// `stores`, take `rounds` turns (an even number), `a` first: at every turn the model sees
/// every turn before it, the other agent's too. Then `reader` (a third handle) holds the
/// whole conversation once, in order, each answer named after its agent, the last saver
/// `b`, and lists `shared` alone; after one more call of each agent, `b`'s memory is what
/// is stored.
///
/// # Panics
///
/// When any of that does not hold (or `rounds` is odd).
pub async fn alternating_agents<S: SessionStore + Clone>(stores: [S; 2], reader: S, rounds: usize) {
    assert!(
        rounds.is_multiple_of(2),
        "an even number of rounds, so that b saves last"
    );
    let mut agents = Vec::new();
    for (name, store) in ["a", "b"].into_iter().zip(stores) {
        let model = ScriptedModel::new([]);
        let agent = ReActAgent::builder()
            .name(name)
            .model(model.clone())
            .session(store, "shared")
            .build()
            .expect("the agent builds");
        agents.push((agent, model));
    }
    let mut expected: Vec<String> = Vec::new();
    for round in 0..rounds {
        let (agent, model) = &agents[round % 2];
        model.push(ScriptedResponse::text(format!("answer {round}")));
        let reply = agent
            .call(format!("question {round}"))
            .await
            .expect("the call succeeds");
        assert_eq!(reply.text(), format!("answer {round}"));
        expected.push(format!("question {round}"));
        assert_eq!(
            texts(&model.last_request().expect("a request").messages),
            expected,
            "round {round}: the model saw every turn of the other agent"
        );
        expected.push(format!("answer {round}"));
    }
    let stored = load(&reader, "shared").await;
    assert_eq!(texts(&stored.messages), expected);
    assert_eq!(stored.messages.len(), 2 * rounds);
    let alternating: Vec<&str> = (0..rounds).map(|i| ["a", "b"][i % 2]).collect();
    assert_eq!(speakers(&stored.messages), alternating);
    assert_eq!(stored.agent.name, "b");
    assert_eq!(reader.list().await.expect("list"), ["shared"]);
    // Both agents' memories are the stored conversation after a final load.
    for (agent, model) in &agents {
        model.push(ScriptedResponse::text("bye"));
        agent.call("last").await.expect("the call succeeds");
    }
    let stored = load(&reader, "shared").await;
    assert_eq!(stored.messages.len(), 2 * rounds + 4);
    assert_eq!(agents[1].0.memory().messages(), stored.messages);
}

/// `agents` agents (at most 100) run at once, agent `i` named `agent-<i>` on session
/// `session-<i>` (two digits) through `stores[i % 2]`, each making `calls` calls: the first
/// uses the calculator (`i*2`), the others are plain exchanges. No update is lost: `reader`
/// lists every session, and each holds exactly its agent's memory (user, tool call, tool
/// result, answer; then user and answer per call), with the tool's result, no tool left
/// running, and the agent's name.
///
/// # Panics
///
/// When any of that does not hold.
pub async fn concurrent_agents<S: SessionStore + Clone>(
    stores: [S; 2],
    reader: S,
    agents: usize,
    calls: usize,
) {
    assert!(agents <= 100, "session ids have two digits");
    let mut tasks = Vec::new();
    for i in 0..agents {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            let mut responses = vec![ScriptedResponse::tool_call(
                format!("call-{i}"),
                "calculator",
                json!({"expression": format!("{i}*2")}),
            )];
            responses.extend(
                (0..calls).map(|k| ScriptedResponse::text(format!("agent {i} answer {k}"))),
            );
            let calc = Calculator::new();
            let agent = ReActAgent::builder()
                .name(format!("agent-{i}"))
                .model(ScriptedModel::new(responses))
                .toolkit(Toolkit::new().tool(calc.clone()))
                .session(store, format!("session-{i:02}"))
                .build()
                .expect("the agent builds");
            for k in 0..calls {
                let reply = agent
                    .call(format!("agent {i} question {k}"))
                    .await
                    .expect("the call succeeds");
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
        memories.push(task.await.expect("the agent's task"));
    }
    let expected_ids: Vec<String> = (0..agents).map(|i| format!("session-{i:02}")).collect();
    assert_eq!(reader.list().await.expect("list"), expected_ids);
    for (i, memory) in memories.iter().enumerate() {
        let state = load(&reader, &format!("session-{i:02}")).await;
        assert_eq!(state.messages.len(), 4 + 2 * (calls - 1), "session {i}");
        assert_eq!(
            roles_and_texts(&state.messages),
            expected_said(i, calls),
            "session {i}"
        );
        assert_eq!(
            &state.messages, memory,
            "session {i} holds exactly the agent's memory"
        );
        assert_eq!(state.agent.name, format!("agent-{i}"));
        assert_eq!(
            state.messages[2].tool_results()[0].text_output(),
            (i * 2).to_string()
        );
        assert!(state.running_tools.is_empty());
    }
}

/// `agents` agents (`agent-0`, `agent-1`, ...) call at once on a multi-thread runtime, each
/// on its own session (`s0000`, `s0001`, ...) of one `store`; each call makes a calculator
/// call and then answers, so it saves at every step. Every call succeeds (a panicked task
/// counts as a failure), every session loads back with exactly its agent's messages (the
/// question, the tool call with its id, the result, the answer), no tool left running, the
/// agent's name and at least three revisions; and `store` lists exactly those sessions.
/// Returns how long the calls took, for the caller to print.
///
/// # Panics
///
/// When any of that does not hold (or `agents` exceeds 10,000).
pub async fn many_sessions_at_once<S: SessionStore + Clone + 'static>(
    store: S,
    agents: usize,
) -> std::time::Duration {
    assert!(agents <= 10_000, "session ids have four digits");
    let session = |i: usize| format!("s{i:04}");
    let mut built = Vec::with_capacity(agents);
    for i in 0..agents {
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
            .session(store.clone(), session(i))
            .build()
            .expect("the agent builds");
        built.push(agent);
    }
    let started = std::time::Instant::now();
    let tasks: Vec<_> = built
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
    let mut finished = Vec::with_capacity(agents);
    for (i, task) in tasks.into_iter().enumerate() {
        match task.await {
            Ok((agent, Ok(reply))) => finished.push((i, agent, reply)),
            Ok((_, Err(error))) => failures.push(format!("agent {i}: {error}")),
            Err(panic) => failures.push(format!("agent {i} panicked: {panic}")),
        }
    }
    let elapsed = started.elapsed();
    assert!(
        failures.is_empty(),
        "{} of {agents} calls failed, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    for (i, agent, reply) in finished {
        assert_eq!(reply.text(), format!("The answer is {}.", i + 1));
        let state = load(&store, &session(i)).await;
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
            "session {}",
            session(i)
        );
        assert_eq!(
            state.messages,
            agent.memory().messages(),
            "session {}",
            session(i)
        );
        assert!(state.running_tools.is_empty(), "session {}", session(i));
        assert_eq!(state.agent.name, format!("agent-{i}"));
        // One revision per save: the engine saved at every step.
        assert!(
            state.revision >= 3,
            "session {}: {} saves",
            session(i),
            state.revision
        );
    }
    let ids: Vec<String> = (0..agents).map(session).collect();
    assert_eq!(store.list().await.expect("the store lists"), ids);
    elapsed
}

async fn load<S: SessionStore>(store: &S, session: &str) -> AgentState {
    store
        .load(session)
        .await
        .expect("load")
        .unwrap_or_else(|| panic!("session {session} is stored"))
}

/// Role and text of every message.
fn roles_and_texts(messages: &[Msg]) -> Vec<(Role, String)> {
    messages.iter().map(|m| (m.role, m.text())).collect()
}

/// What agent `i`'s session must hold after its `calls` calls: the first call uses the
/// calculator, the others are plain exchanges.
fn expected_said(i: usize, calls: usize) -> Vec<(Role, String)> {
    let mut said = Vec::new();
    for k in 0..calls {
        said.push((Role::User, format!("agent {i} question {k}")));
        if k == 0 {
            said.push((Role::Assistant, String::new()));
            said.push((Role::Tool, String::new()));
        }
        said.push((Role::Assistant, format!("agent {i} answer {k}")));
    }
    said
}
