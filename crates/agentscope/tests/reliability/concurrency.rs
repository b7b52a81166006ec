//! Concurrency: the busy check, back-to-back calls, `check_running(false)`, many agents on a multi-thread runtime, and dropping a call future mid-tool.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::fixtures::{
    CANCELLED, Gate, build_agent, numbered_echo_script, recorded, recorded_agent,
};
use crate::support::hooks::{counting, hooks};
use crate::support::invariants::assert_no_orphan_tool_use;
use crate::support::recorded::kinds;
use crate::support::rows::{Row, calls_row, result_row, row, rows, user};
use agentscope::prelude::*;
use agentscope_test::tools::SlowTool;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::Barrier;

fn gate_call() -> ScriptedResponse {
    ScriptedResponse::tool_call("c1", "gate", json!({}))
}

fn gate_call_row() -> Row {
    calls_row(&[("c1", "gate", json!({}))], None)
}

#[tokio::test]
async fn a_second_concurrent_call_is_busy_at_once_and_no_hook_sees_it() {
    let gate = Gate::new();
    let model = ScriptedModel::new([
        gate_call(),
        ScriptedResponse::text("first done"),
        ScriptedResponse::text("third done"),
    ]);
    let (agent, rec) = recorded(
        ReActAgent::builder()
            .name("worker")
            .model(model.clone())
            .toolkit(Toolkit::new().tool(gate.tool())),
    );

    let first = tokio::spawn(agent.call("first"));
    gate.entered.notified().await;
    assert!(agent.is_running());
    let events_before = rec.types().len();
    let memory_before = agent.memory().messages();

    let err = agent.call("second").await.unwrap_err();
    assert!(matches!(&err, AgentError::Busy), "{err:?}");
    assert_eq!(err.to_string(), "the agent is busy with another call");
    assert!(err.is_busy());
    // The stream form is rejected the same way, as its only item.
    let mut stream = agent.stream("second", StreamOptions::default());
    assert!(matches!(stream.next().await, Some(Err(AgentError::Busy))));
    assert!(stream.next().await.is_none());
    assert_eq!(
        rec.types().len(),
        events_before,
        "no hook saw the busy calls"
    );
    assert_eq!(agent.memory().messages(), memory_before);
    assert_eq!(model.request_count(), 1);

    gate.release.notify_one();
    assert_eq!(first.await.unwrap().unwrap().text(), "first done");
    assert_eq!(agent.call("third").await.unwrap().text(), "third done");
    let memory = agent.memory().messages();
    assert_eq!(memory.len(), 6);
    assert!(memory.iter().all(|m| m.text() != "second"));
}

#[tokio::test]
async fn back_to_back_calls_never_trip_the_busy_check() {
    let model = ScriptedModel::new([ScriptedResponse::text("ok")])
        .cycling()
        .without_recording();
    let (counter, calls) = counting(HookEventType::PostCall);
    let agent = build_agent(&model, Toolkit::new(), hooks![counter]);

    for i in 0..1000 {
        let reply = agent.call(format!("q{i}")).await.unwrap();
        assert_eq!(reply.text(), "ok", "call {i}");
    }

    assert_eq!(calls.load(Ordering::SeqCst), 1000);
    let memory = agent.memory().messages();
    assert_eq!(memory.len(), 2000);
    assert_eq!(memory[1998].text(), "q999");
    assert!(!agent.is_running());
}

/// Waits at PreReasoning until two calls are inside the agent at the same time.
struct Rendezvous(Arc<Barrier>);

impl Hook for Rendezvous {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        if let HookEvent::PreReasoning(_) = event {
            self.0.wait().await;
        }
        Ok(())
    }

    fn interests(&self) -> HookEventTypes {
        HookEventType::PreReasoning.into()
    }
}

#[tokio::test]
async fn check_running_false_allows_overlapping_calls() {
    let model = ScriptedModel::new([ScriptedResponse::text("x"), ScriptedResponse::text("y")]);
    let agent = ReActAgent::builder()
        .model(model)
        .check_running(false)
        .hook(Rendezvous(Arc::new(Barrier::new(2))))
        .build()
        .unwrap();

    // Each call waits at PreReasoning for the other: they only finish if they overlap.
    let (a, b) = tokio::time::timeout(
        Duration::from_secs(10),
        futures::future::join(agent.call("a"), agent.call("b")),
    )
    .await
    .expect("the calls did not overlap");

    let mut replies = vec![a.unwrap().text(), b.unwrap().text()];
    replies.sort();
    assert_eq!(replies, ["x", "y"]);
    let mut texts: Vec<String> = agent.memory().messages().iter().map(Msg::text).collect();
    texts.sort();
    assert_eq!(texts, ["a", "b", "x", "y"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_agents_called_concurrently_lose_and_duplicate_nothing() {
    let shared =
        RecordingHook::new(100).with_interests(HookEventType::PreCall | HookEventType::PostCall);
    let agents: Vec<ReActAgent> = (0..200)
        .map(|i| {
            let model = numbered_echo_script(i);
            ReActAgent::builder()
                .name(format!("agent-{i}"))
                .model(model)
                .toolkit(Toolkit::new().tool(agentscope_test::tools::EchoTool::new()))
                .hook(shared.clone())
                .build()
                .unwrap()
        })
        .collect();

    let handles: Vec<_> = agents
        .iter()
        .enumerate()
        .map(|(i, agent)| tokio::spawn(agent.call(format!("q{i}"))))
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        let reply = handle.await.unwrap().unwrap();
        assert_eq!(reply.text(), format!("done {i}"));
        assert_eq!(reply.name, format!("agent-{i}"));
    }

    for (i, agent) in agents.iter().enumerate() {
        let name = format!("agent-{i}");
        assert_eq!(
            rows(&agent.memory().messages()),
            vec![
                user(&format!("q{i}")),
                row(
                    Role::Assistant,
                    &name,
                    vec![
                        ToolUseBlock::new(
                            format!("c{i}"),
                            "echo",
                            json!({ "text": format!("agent {i}") })
                        )
                        .into()
                    ],
                    None
                ),
                result_row(ToolResultBlock::text(
                    format!("c{i}"),
                    "echo",
                    format!("agent {i}")
                )),
                row(
                    Role::Assistant,
                    &name,
                    vec![ContentBlock::text(format!("done {i}"))],
                    Some(GenerateReason::ModelStop)
                ),
            ]
        );
    }
    let events = shared.events();
    assert_eq!(events.len(), 400);
    for i in 0..200 {
        let name = format!("agent-{i}");
        let kinds: Vec<HookEventType> = events
            .iter()
            .filter(|e| e.agent().name() == name)
            .map(HookEvent::event_type)
            .collect();
        assert_eq!(
            kinds,
            [HookEventType::PreCall, HookEventType::PostCall],
            "{name}"
        );
    }
}

#[tokio::test]
async fn dropping_the_call_future_mid_tool_frees_the_agent_and_closes_the_call() {
    // Nobody releases the gate.
    let gate = Gate::new();
    let model = ScriptedModel::new([gate_call(), ScriptedResponse::text("fresh")]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new().tool(gate.tool()));

    tokio::select! {
        result = agent.call("q") => panic!("the gated call finished: {result:?}"),
        () = gate.entered.notified() => {}
    }
    // The call future is dropped here, with the tool still running.

    assert!(!agent.is_running());
    let memory = agent.memory().messages();
    assert_eq!(
        rows(&memory),
        vec![
            user("q"),
            gate_call_row(),
            result_row(ToolResultBlock::error("c1", "gate", CANCELLED)),
        ]
    );
    assert_no_orphan_tool_use(&memory);
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreReasoning PostReasoning PreActing"),
        "a dropped call sees neither PostCall nor Error"
    );

    let reply = agent.call("again").await.unwrap();
    assert_eq!(reply.text(), "fresh");
    assert_eq!(rows(&agent.memory().messages()[3..4]), vec![user("again")]);
}

#[tokio::test]
async fn dropping_the_call_future_during_a_slow_tool_frees_the_agent_at_once() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "slow", json!({"ms": 60_000})),
        ScriptedResponse::text("fresh"),
    ]);
    let slow = SlowTool::new();
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(slow.clone()))
        .build()
        .unwrap();

    let slow_started = async {
        while slow.log().count() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    let outcome = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::select! {
            result = agent.call("q") => Some(result),
            () = slow_started => None,
        }
    })
    .await
    .expect("the slow tool never started");
    assert!(outcome.is_none(), "{outcome:?}");

    assert!(!agent.is_running());
    let reply = agent.call("again").await.unwrap();
    assert_eq!(reply.text(), "fresh");
    let memory = agent.memory().messages();
    assert_eq!(
        rows(&memory[2..3]),
        vec![result_row(ToolResultBlock::error("c1", "slow", CANCELLED))]
    );
    assert_no_orphan_tool_use(&memory);
}
