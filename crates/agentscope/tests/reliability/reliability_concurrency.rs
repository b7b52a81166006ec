//! Concurrency at scale: 1,000 agents called (and streamed) concurrently on a multi-thread runtime lose and duplicate nothing; 1,000 back-to-back calls on one agent, each started the moment the previous result arrives (on another thread, or before the previous stream is drained), never trip the busy check; N truly overlapping calls on one agent yield exactly one success per window and `AgentError::Busy` for the rest, with no hook events for the rejected ones.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::describe::{describe, memory_of};
use crate::support::fixtures::{Gate, SwapModel, numbered_echo_script};
use crate::support::hooks::counting;
use crate::support::invariants::{Ending, Pending, assert_invariants, endings_for, parse_endings};
use agentscope::prelude::*;
use agentscope_test::tools::EchoTool;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::{Barrier, mpsc};

type K = HookEventType;

/// A guard against hangs only.
const HANG_GUARD: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_agents_called_concurrently_lose_and_duplicate_nothing() {
    const AGENTS: usize = 1000;
    let shared = RecordingHook::new(100).with_interests(K::PreCall | K::PostCall | K::Error);
    let mut models = Vec::with_capacity(AGENTS);
    let agents: Vec<ReActAgent> = (0..AGENTS)
        .map(|i| {
            let model = numbered_echo_script(i);
            models.push(model.clone());
            ReActAgent::builder()
                .name(format!("agent-{i}"))
                .sys_prompt(format!("You are agent {i}."))
                .model(model)
                .toolkit(Toolkit::new().tool(EchoTool::new()))
                .hook(shared.clone())
                .build()
                .unwrap()
        })
        .collect();

    // Even agents are called, odd ones streamed; all start together.
    let start = Arc::new(Barrier::new(AGENTS));
    let handles: Vec<_> = agents
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let agent = agent.clone();
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let input = format!("q{i}");
                if i % 2 == 0 {
                    (agent.call(input).await, Vec::new())
                } else {
                    let mut stream = agent.stream(input, StreamOptions::default());
                    let mut events = Vec::new();
                    let mut reply = None;
                    while let Some(item) = stream.next().await {
                        let event = item.unwrap();
                        if event.event_type == EventType::AgentResult {
                            reply = Some(event.message.clone());
                        }
                        events.push((event.event_type, event.is_last, describe(&event.message)));
                    }
                    (Ok(reply.expect("no AgentResult")), events)
                }
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(AGENTS);
    for handle in handles {
        outcomes.push(
            tokio::time::timeout(HANG_GUARD, handle)
                .await
                .expect("hung")
                .unwrap(),
        );
    }

    let mut ids = HashSet::new();
    for (i, (agent, (reply, events))) in agents.iter().zip(outcomes).enumerate() {
        let name = format!("agent-{i}");
        let reply = reply.unwrap();
        assert_eq!(reply.text(), format!("done {i}"));
        assert_eq!(reply.name, name);
        let expected_memory = vec![
            format!(r#"user/user: text "q{i}""#),
            format!(r#"assistant/{name}: tool_use c{i} echo {{"text":"agent {i}"}}"#),
            format!(r#"tool/echo: tool_result c{i} echo "agent {i}""#),
            format!(r#"assistant/{name}: text "done {i}" <ModelStop>"#),
        ];
        assert_eq!(memory_of(agent), expected_memory, "{name}");
        if i % 2 == 1 {
            assert_eq!(
                events,
                [
                    (EventType::Reasoning, false, expected_memory[1].clone()),
                    (EventType::Reasoning, true, expected_memory[1].clone()),
                    (EventType::ToolResult, true, expected_memory[2].clone()),
                    (
                        EventType::Reasoning,
                        false,
                        format!(r#"assistant/{name}: text "done {i}""#)
                    ),
                    (EventType::Reasoning, true, expected_memory[3].clone()),
                    (EventType::AgentResult, true, expected_memory[3].clone()),
                ],
                "{name}"
            );
        }
        for msg in agent.memory().messages() {
            assert!(
                ids.insert(msg.id.clone()),
                "message id {} stored twice",
                msg.id
            );
        }
        // Each model saw only its own agent's conversation.
        let requests = models[i].requests();
        assert_eq!(requests.len(), 2, "{name}");
        assert_eq!(
            requests[1].messages[0].text(),
            format!("You are agent {i}.")
        );
        assert_eq!(requests[1].messages[1].text(), format!("q{i}"));
        assert_invariants(agent, &[], Pending::None);
    }
    assert_eq!(ids.len(), 4 * AGENTS);

    // Each agent's events, in order, from the one shared hook: exactly one PreCall and one
    // PostCall, no Error.
    let mut by_agent: HashMap<String, Vec<K>> = HashMap::new();
    for event in shared.events() {
        by_agent
            .entry(event.agent().id().to_owned())
            .or_default()
            .push(event.event_type());
    }
    assert_eq!(by_agent.len(), AGENTS);
    for agent in &agents {
        let kinds = by_agent.remove(agent.id()).unwrap();
        assert_eq!(kinds, [K::PreCall, K::PostCall], "{}", agent.name());
        assert_eq!(parse_endings(agent.name(), kinds), [Ending::PostCall]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_back_to_back_calls_never_trip_the_busy_check() {
    const CALLS: usize = 1000;
    let model = SwapModel::from_model(
        ScriptedModel::new([ScriptedResponse::text("ok")])
            .cycling()
            .without_recording(),
    );
    let (counter, ended) = counting(K::PostCall);
    // The kinds only: a RecordingHook would copy the (growing) history at every PreCall.
    let kinds: Arc<Mutex<Vec<K>>> = Arc::default();
    let log = Arc::clone(&kinds);
    let agent = ReActAgent::builder()
        .model(model)
        .hook(
            hook_fn(move |event| {
                log.lock().unwrap().push(event.event_type());
                Ok(())
            })
            .with_interests(K::PreCall | K::PostCall | K::Error),
        )
        .hook(counter)
        .build()
        .unwrap();

    let mut previous_stream = None;
    for i in 0..CALLS {
        let input = format!("q{i}");
        match i % 3 {
            // Run on a worker thread; the next call starts as soon as this task learns the
            // result.
            0 => {
                let reply = tokio::spawn(agent.call(input)).await.unwrap();
                assert_eq!(
                    reply.unwrap_or_else(|e| panic!("call {i}: {e:?}")).text(),
                    "ok"
                );
            }
            // Started from another task that itself just got the previous result.
            1 => {
                let agent = agent.clone();
                let reply = tokio::spawn(async move { agent.call(input).await })
                    .await
                    .unwrap();
                assert_eq!(
                    reply.unwrap_or_else(|e| panic!("call {i}: {e:?}")).text(),
                    "ok"
                );
            }
            // A stream: the next call starts right after its AgentResult item, before the
            // stream is polled to its end or dropped.
            _ => {
                let mut stream = agent.stream(input, StreamOptions::default());
                loop {
                    let event = stream
                        .next()
                        .await
                        .unwrap()
                        .unwrap_or_else(|e| panic!("call {i}: {e:?}"));
                    if event.event_type == EventType::AgentResult {
                        assert_eq!(event.message.text(), "ok");
                        break;
                    }
                }
                previous_stream = Some(stream);
            }
        }
    }
    drop(previous_stream);

    assert_eq!(ended.load(Ordering::SeqCst), CALLS);
    let kinds = kinds.lock().unwrap().clone();
    assert_eq!(parse_endings("log", kinds), vec![Ending::PostCall; CALLS]);
    let memory = agent.memory().messages();
    assert_eq!(memory.len(), 2 * CALLS);
    for (i, pair) in memory.chunks(2).enumerate() {
        assert_eq!(pair[0].text(), format!("q{i}"));
        assert_eq!(pair[1].text(), "ok");
    }
    assert_invariants(&agent, &[], Pending::None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlapping_calls_on_one_agent_yield_one_success_per_window_and_busy_for_the_rest() {
    const WINDOWS: usize = 20;
    const N: usize = 16;
    let gate = Gate::new();
    let model = SwapModel::new([]);
    let early = RecordingHook::new(0).with_name("early");
    let late = RecordingHook::new(1000).with_name("late");
    let agent = ReActAgent::builder()
        .name("worker")
        .model(model.clone())
        .toolkit(Toolkit::new().tool(gate.tool()))
        .hook(early.clone())
        .hook(late.clone())
        .build()
        .unwrap();

    for window in 0..WINDOWS {
        model.set_script([
            ScriptedResponse::tool_call(format!("w{window}"), "gate", json!({})),
            ScriptedResponse::text(format!("done {window}")),
        ]);
        let events_before = early.types().len();
        let memory_before = agent.memory().len();
        let (results, mut received) = mpsc::unbounded_channel();
        let start = Arc::new(Barrier::new(N));
        for caller in 0..N {
            let agent = agent.clone();
            let start = Arc::clone(&start);
            let results = results.clone();
            tokio::spawn(async move {
                start.wait().await;
                let input = format!("window {window} caller {caller}");
                let outcome = if caller % 2 == 0 {
                    agent.call(input).await
                } else {
                    let mut stream = agent.stream(input, StreamOptions::default());
                    let mut last = None;
                    while let Some(item) = stream.next().await {
                        last = Some(item);
                    }
                    last.unwrap().map(|event| event.message)
                };
                results.send((caller, outcome)).unwrap();
            });
        }
        drop(results);

        // Every caller but one is rejected at once, while the winner waits at the gate.
        let mut busy = Vec::new();
        for _ in 0..N - 1 {
            let (caller, outcome) = tokio::time::timeout(HANG_GUARD, received.recv())
                .await
                .expect("a rejected call hung")
                .unwrap();
            match outcome {
                Err(AgentError::Busy) => busy.push(caller),
                other => panic!("window {window}: caller {caller} was not rejected: {other:?}"),
            }
        }
        tokio::time::timeout(HANG_GUARD, gate.entered.notified())
            .await
            .expect("the winner never reached the gate");
        assert!(agent.is_running());
        assert!(matches!(
            agent.observe(Msg::user("late")).await,
            Err(AgentError::Busy)
        ));
        // No hook saw any rejected call: exactly one PreCall in this window, the winner's.
        let window_events: Vec<HookEvent> = early.events()[events_before..].to_vec();
        let pre_calls: Vec<&HookEvent> = window_events
            .iter()
            .filter(|e| e.event_type() == K::PreCall)
            .collect();
        assert_eq!(pre_calls.len(), 1, "window {window}");
        let HookEvent::PreCall(pre_call) = pre_calls[0] else {
            unreachable!()
        };
        let winner_input = pre_call.input_messages()[0].text();

        gate.release.notify_one();
        let (winner, outcome) = tokio::time::timeout(HANG_GUARD, received.recv())
            .await
            .expect("the winner hung")
            .unwrap();
        assert!(received.recv().await.is_none());
        let reply = outcome.unwrap_or_else(|e| panic!("window {window}: winner failed: {e:?}"));
        assert_eq!(reply.text(), format!("done {window}"));
        assert_eq!(winner_input, format!("window {window} caller {winner}"));
        assert!(!busy.contains(&winner));
        busy.push(winner);
        busy.sort_unstable();
        assert_eq!(busy, (0..N).collect::<Vec<_>>());
        // Memory holds the winner's exchange only.
        let memory = memory_of(&agent);
        assert_eq!(
            memory[memory_before..],
            [
                format!(r#"user/user: text "window {window} caller {winner}""#),
                format!("assistant/worker: tool_use w{window} gate {{}}"),
                format!(r#"tool/gate: tool_result w{window} gate "released""#),
                format!(r#"assistant/worker: text "done {window}" <ModelStop>"#),
            ]
        );
    }

    assert_eq!(endings_for(&early, &agent), vec![Ending::PostCall; WINDOWS]);
    assert_eq!(endings_for(&late, &agent), vec![Ending::PostCall; WINDOWS]);
    assert_invariants(&agent, &[&early, &late], Pending::None);
}
