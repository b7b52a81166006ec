//! `interrupt()`: from hooks at PreReasoning, ReasoningChunk and PostReasoning, during a running tool from another task; the exact memory (no orphan tool-use), the reply, PostCall; interrupting an idle agent; the agent working normally afterwards.

use std::time::Duration;

use crate::support::fixtures::recorded_agent;
use crate::support::hooks::first_time;
use crate::support::invariants::assert_no_orphan_tool_use;
use crate::support::recorded::kinds;
use crate::support::rows::{Row, answer_row, calls_row, result_row, row, rows, user};
use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT};
use agentscope::prelude::*;
use agentscope_test::tools::{Calculator, SlowTool};
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::json;

fn interrupt_reply() -> Row {
    row(
        Role::Assistant,
        "assistant",
        vec![ContentBlock::text(INTERRUPT_REPLY)],
        Some(GenerateReason::Interrupted),
    )
}

fn interrupted_result(id: &str, name: &str) -> Row {
    result_row(ToolResultBlock::error(id, name, INTERRUPTED_RESULT))
}

/// Registers a hook that interrupts `agent` the first time it sees an event of `kind`.
fn interrupt_at(agent: &ReActAgent, kind: HookEventType) {
    let handle = agent.clone();
    let first = first_time();
    agent.add_hook(
        hook_fn(move |_event| {
            if first() {
                handle.interrupt();
            }
            Ok(())
        })
        .with_interests(kind)
        .with_priority(50)
        .with_name("interrupter"),
    );
}

/// Asserts that `reply` ended the call "q" as interrupted and that memory is exactly that
/// input, `stored`, then the interrupt reply; returns the memory.
fn assert_interrupted(agent: &ReActAgent, reply: &Msg, stored: Vec<Row>) -> Vec<Msg> {
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    let mut expected = vec![user("q")];
    expected.extend(stored);
    expected.push(interrupt_reply());
    let memory = agent.memory().messages();
    assert_eq!(rows(&memory), expected);
    memory
}

/// Calls `agent` with "q", waits (without a deadline) until `started` holds, interrupts the
/// agent, and returns the reply (which must come promptly).
async fn interrupt_when(agent: &ReActAgent, started: impl Fn() -> bool) -> Msg {
    let running = tokio::spawn(agent.call("q"));
    while !started() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    agent.interrupt();
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the interrupted call did not finish promptly")
        .unwrap()
        .unwrap()
}

async fn assert_works_normally_afterwards(agent: &ReActAgent, model: &ScriptedModel) {
    model.push(ScriptedResponse::text("back to normal"));
    let before = agent.memory().len();
    let reply = agent.call("next").await.unwrap();
    assert_eq!(reply.text(), "back to normal");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(
        rows(&agent.memory().messages()[before..]),
        vec![user("next"), answer_row("back to normal")]
    );
}

#[tokio::test]
async fn interrupt_at_pre_reasoning_returns_the_interrupt_reply() {
    // No scripted response: the model must not be called at all.
    let model = ScriptedModel::new([]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());
    interrupt_at(&agent, HookEventType::PreReasoning);

    let reply = agent.call("q").await;
    assert_eq!(
        model.request_count(),
        0,
        "the model was called after an interrupt at PreReasoning"
    );
    let reply = reply.unwrap();

    assert_eq!(reply.text(), INTERRUPT_REPLY);
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert_eq!(
        rows(&agent.memory().messages()),
        vec![user("q"), interrupt_reply()],
        "nothing from the model is stored: the interrupt came before it was called"
    );
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreReasoning PostCall")
    );
    let HookEvent::PostCall(post_call) = rec.events().last().cloned().unwrap() else {
        panic!("last event is not PostCall");
    };
    assert_eq!(post_call.final_message().text(), INTERRUPT_REPLY);
    assert_works_normally_afterwards(&agent, &model).await;
}

#[tokio::test]
async fn interrupt_during_model_chunks_stores_the_partial_message() {
    let model = ScriptedModel::new([ScriptedResponse::chunks([
        ScriptedChunk::text("Hel"),
        ScriptedChunk::text("lo"),
        ScriptedChunk::text(" world"),
    ])]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());
    interrupt_at(&agent, HookEventType::ReasoningChunk);

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), INTERRUPT_REPLY);
    let partial = row(
        Role::Assistant,
        "assistant",
        vec![ContentBlock::text("Hel")],
        None,
    );
    assert_interrupted(&agent, &reply, vec![partial]);
    assert_eq!(
        rec.types(),
        kinds("PreCall PreReasoning ReasoningChunk PostCall")
    );
    assert_works_normally_afterwards(&agent, &model).await;
}

#[tokio::test]
async fn interrupt_during_a_streamed_tool_call_leaves_no_orphan_tool_use() {
    let calc = Calculator::new();
    let model = ScriptedModel::new([ScriptedResponse::chunks([
        ScriptedChunk::text("Let me compute."),
        ScriptedChunk::tool_call("c1", "calculator", json!({"expression": "6*7"})),
        ScriptedChunk::text(" More."),
    ])]);
    let (agent, _rec) = recorded_agent(&model, Toolkit::new().tool(calc.clone()));
    // The second chunk (the tool call) triggers the interrupt.
    let handle = agent.clone();
    agent.add_hook(
        hook_fn(move |event| {
            if let HookEvent::ReasoningChunk(e) = event
                && e.accumulated().has_tool_uses()
            {
                handle.interrupt();
            }
            Ok(())
        })
        .with_interests(HookEventType::ReasoningChunk),
    );

    let reply = agent.call("q").await.unwrap();

    let partial = row(
        Role::Assistant,
        "assistant",
        vec![
            ContentBlock::text("Let me compute."),
            ToolUseBlock::new("c1", "calculator", json!({"expression": "6*7"})).into(),
        ],
        None,
    );
    let memory = assert_interrupted(
        &agent,
        &reply,
        vec![partial, interrupted_result("c1", "calculator")],
    );
    assert_no_orphan_tool_use(&memory);
    assert_eq!(calc.log().count(), 0);
}

#[tokio::test]
async fn interrupt_after_reasoning_gives_pending_calls_interrupted_results() {
    let calls = [
        ("c1", "calculator", json!({"expression": "6*7"})),
        ("c2", "calculator", json!({"expression": "1+1"})),
    ];
    let model = ScriptedModel::new([ScriptedResponse::tool_calls(calls.clone())]);
    let calc = Calculator::new();
    let (agent, rec) = recorded_agent(&model, Toolkit::new().tool(calc.clone()));
    interrupt_at(&agent, HookEventType::PostReasoning);

    let reply = agent.call("q").await.unwrap();

    // The texts users see, spelled out here once (every other test uses
    // `agentscope::interrupt`), so that a change to them is a deliberate one.
    assert_eq!(
        reply.text(),
        "I noticed that you have interrupted me. What can I do for you?"
    );
    assert_eq!(reply.name, "assistant");
    let memory = assert_interrupted(
        &agent,
        &reply,
        vec![
            calls_row(&calls, None),
            interrupted_result("c1", "calculator"),
            interrupted_result("c2", "calculator"),
        ],
    );
    assert_no_orphan_tool_use(&memory);
    let results: Vec<String> = memory
        .iter()
        .flat_map(Msg::tool_results)
        .map(ToolResultBlock::text_output)
        .collect();
    assert_eq!(
        results,
        [
            "Error: Tool execution was interrupted.",
            "Error: Tool execution was interrupted."
        ]
    );
    assert_eq!(calc.log().count(), 0, "no tool ran");
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreReasoning PostReasoning PostCall")
    );
    assert_works_normally_afterwards(&agent, &model).await;
}

#[tokio::test]
async fn interrupt_from_another_task_cancels_a_running_tool() {
    let calls = [
        ("c1", "calculator", json!({"expression": "6*7"})),
        ("c2", "slow", json!({"ms": 60_000})),
        ("c3", "calculator", json!({"expression": "1+1"})),
    ];
    let model = ScriptedModel::new([ScriptedResponse::tool_calls(calls.clone())]);
    let calc = Calculator::new();
    let slow = SlowTool::new();
    let (agent, rec) = recorded_agent(&model, Toolkit::new().tool(calc.clone()).tool(slow.clone()));

    // Interrupted once the slow tool is running.
    let reply = interrupt_when(&agent, || slow.log().count() > 0).await;

    assert_eq!(reply.text(), INTERRUPT_REPLY);
    let memory = assert_interrupted(
        &agent,
        &reply,
        vec![
            calls_row(&calls, None),
            // c1 finished before the interrupt and keeps its real result.
            result_row(ToolResultBlock::text("c1", "calculator", "42")),
            interrupted_result("c2", "slow"),
            interrupted_result("c3", "calculator"),
        ],
    );
    assert_no_orphan_tool_use(&memory);
    assert_eq!(calc.log().count(), 1, "c3 never started");
    assert_eq!(
        rec.types_without_chunks(),
        kinds(
            "PreCall PreReasoning PostReasoning PreActing PreActing PreActing PostActing PostCall"
        ),
        "c1 settled (PostActing, stored) before c2 started; no PostActing for the interrupted \
         and the unstarted call"
    );
    assert_works_normally_afterwards(&agent, &model).await;
}

#[tokio::test]
async fn interrupting_an_idle_agent_does_nothing() {
    let model = ScriptedModel::new([ScriptedResponse::text("hello")]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());

    agent.interrupt();
    agent.interrupt();
    let reply = agent.call("hi").await.unwrap();

    assert_eq!(reply.text(), "hello");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(
        rows(&agent.memory().messages()),
        vec![user("hi"), answer_row("hello")]
    );
    assert!(rec.types().contains(&HookEventType::PostCall));
}

#[tokio::test]
async fn interrupt_between_calls_does_not_affect_the_next_call() {
    let model = ScriptedModel::new([ScriptedResponse::text("one")]);
    let (agent, _rec) = recorded_agent(&model, Toolkit::new());
    assert_eq!(agent.call("a").await.unwrap().text(), "one");
    agent.interrupt();
    assert_works_normally_afterwards(&agent, &model).await;
}

#[tokio::test]
async fn interrupt_while_waiting_for_the_model_returns_promptly() {
    let model =
        ScriptedModel::new(
            [ScriptedResponse::text("too late").with_delay(Duration::from_secs(60))],
        );
    let (agent, rec) = recorded_agent(&model, Toolkit::new());

    // Interrupted once the model was asked.
    let reply = interrupt_when(&agent, || model.request_count() > 0).await;

    assert_interrupted(&agent, &reply, vec![]);
    assert_eq!(rec.types(), kinds("PreCall PreReasoning PostCall"));
    assert_works_normally_afterwards(&agent, &model).await;
}
