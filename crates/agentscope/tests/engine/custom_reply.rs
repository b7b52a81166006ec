//! Agents with a custom reply: the hooks around it, the steps it uses, interrupts, streaming,
//! the busy check and sessions, exactly as for a ReAct call.

use std::sync::Arc;
use std::time::Duration;

use crate::support::fixtures::{calc_call, recorded};
use crate::support::recorded::kinds;
use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use agentscope::{Agent, Reasoning, Reply, ReplyContext};
use agentscope_test::tools::Calculator;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

use HookEventType as K;

/// The tutorial's echo agent: replies with what it heard.
struct Echo;

impl Reply for Echo {
    async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        let heard: Vec<String> = cx.input().iter().map(Msg::text).collect();
        Ok(cx.message(format!("echo: {}", heard.join(" | "))))
    }
}

/// Routes: questions about numbers go through the ReAct steps (model + tools), anything
/// else gets a fixed answer without the model.
struct Router;

impl Reply for Router {
    async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        let wants_math = cx.input().iter().any(|m| m.text().contains("compute"));
        if !wants_math {
            return Ok(cx.message("I only do math."));
        }
        cx.say(cx.message("routing to the calculator")).await;
        loop {
            match cx.reason().await? {
                Reasoning::Answer(answer) => return Ok(answer),
                Reasoning::Act(calls) => {
                    if let Some(reply) = cx.act(calls).await? {
                        return Ok(reply);
                    }
                }
                Reasoning::Again => {}
                _ => return Err(AgentError::invalid_input("unexpected reasoning outcome")),
            }
        }
    }
}

/// Waits until the call is interrupted (a reply blocked on something external).
struct WaitsForever;

impl Reply for WaitsForever {
    async fn reply(&self, _cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        futures::future::pending::<()>().await;
        unreachable!()
    }
}

/// Fails with a reply error.
struct Fails;

impl Reply for Fails {
    async fn reply(&self, _cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        Err(AgentError::invalid_input("cannot reply to that"))
    }
}

/// Each message's text, or its tool results' text.
fn texts(messages: &[Msg]) -> Vec<String> {
    messages.iter().map(shown).collect()
}

fn shown(message: &Msg) -> String {
    let results: Vec<String> = message
        .tool_results()
        .into_iter()
        .map(ToolResultBlock::text_output)
        .collect();
    if results.is_empty() {
        message.text()
    } else {
        results.join(" ")
    }
}

#[tokio::test]
async fn an_echo_agent_needs_no_model_and_runs_pre_and_post_call_in_priority_order() {
    let late = RecordingHook::new(200);
    let early = RecordingHook::new(10);
    let agent = ReActAgent::builder()
        .name("echo")
        .reply(Echo)
        .hook(late.clone())
        .hook(early.clone())
        .build()
        .unwrap();

    let reply = agent.call([Msg::user("a"), Msg::user("b")]).await.unwrap();

    assert_eq!(reply.text(), "echo: a | b");
    assert_eq!((reply.role, reply.name.as_str()), (Role::Assistant, "echo"));
    assert_eq!(early.types(), [K::PreCall, K::PostCall]);
    assert_eq!(late.types(), [K::PreCall, K::PostCall]);
    assert_eq!(
        agent
            .hook_order()
            .iter()
            .map(|h| h.priority)
            .collect::<Vec<_>>(),
        [10, 200]
    );
    assert_eq!(texts(&agent.memory().messages()), ["a", "b", "echo: a | b"]);
}

#[tokio::test]
async fn pre_call_changes_reach_the_reply_and_post_call_changes_reach_the_caller() {
    let hook = hook_fn(|event| {
        match event {
            HookEvent::PreCall(e) => e.set_input_messages(vec![Msg::user("rewritten")]),
            HookEvent::PostCall(e) => {
                let text = format!("{}!", e.final_message().text());
                e.set_final_message(Msg::assistant(text));
            }
            _ => {}
        }
        Ok(())
    });
    let agent = ReActAgent::builder()
        .reply(Echo)
        .hook(hook)
        .build()
        .unwrap();

    let reply = agent.call("original").await.unwrap();

    assert_eq!(reply.text(), "echo: rewritten!");
    // Memory keeps the reply as the logic made it.
    assert_eq!(
        texts(&agent.memory().messages()),
        ["rewritten", "echo: rewritten"]
    );
}

#[tokio::test]
async fn a_routing_agent_fires_the_reasoning_and_acting_events_of_the_steps_it_uses() {
    let model = ScriptedModel::new([calc_call("c1", "6*7"), ScriptedResponse::text("It is 42.")]);
    let (agent, rec) = recorded(
        ReActAgent::builder()
            .name("router")
            .model(model.clone())
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .reply(Router),
    );

    let math = agent.call("compute 6*7").await.unwrap();
    let chat = agent.call("hello").await.unwrap();

    assert_eq!(math.text(), "It is 42.");
    assert_eq!(chat.text(), "I only do math.");
    assert_eq!(
        rec.types_without_chunks(),
        kinds(
            "PreCall PreReasoning PostReasoning PreActing PostActing PreReasoning \
             PostReasoning PostCall PreCall PostCall"
        )
    );
    assert_eq!(model.request_count(), 2);
    assert_eq!(
        texts(&agent.memory().messages()),
        [
            "compute 6*7",
            "routing to the calculator",
            "",
            "42",
            "It is 42.",
            "hello",
            "I only do math.",
        ]
    );
}

#[tokio::test]
async fn react_from_a_custom_reply_is_the_whole_loop() {
    struct Prefixed;
    impl Reply for Prefixed {
        async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
            cx.react().await
        }
    }
    let model = ScriptedModel::new([calc_call("c1", "1+1"), ScriptedResponse::text("2")]);
    let (agent, rec) = recorded(
        ReActAgent::builder()
            .model(model.clone())
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .reply(Prefixed),
    );

    let reply = agent.call("1+1?").await.unwrap();

    assert_eq!(reply.text(), "2");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(rec.types_without_chunks().len(), 8);
    assert_eq!(agent.memory().len(), 4);
}

#[tokio::test]
async fn a_failing_reply_fires_error_and_takes_its_input_back() {
    let (agent, rec) = recorded(ReActAgent::builder().reply(Fails));

    let err = agent.call("hi").await.unwrap_err();

    assert_eq!(err.to_string(), "cannot reply to that");
    assert_eq!(rec.types(), [K::PreCall, K::Error]);
    assert!(agent.memory().is_empty());
}

#[tokio::test]
async fn an_interrupt_ends_a_waiting_reply_with_the_interrupt_reply() {
    let (agent, rec) = recorded(ReActAgent::builder().reply(WaitsForever));
    let call = tokio::spawn(agent.call("wait"));
    while !agent.is_running() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    Agent::interrupt(&agent);
    let reply = call.await.unwrap().unwrap();

    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert_eq!(rec.types(), [K::PreCall, K::PostCall]);
    assert_eq!(agent.memory().len(), 2);
}

#[tokio::test]
async fn a_second_call_while_the_reply_runs_is_busy() {
    let agent = ReActAgent::builder().reply(WaitsForever).build().unwrap();
    let first = tokio::spawn(agent.call("wait"));
    while !agent.is_running() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    let second = agent.call("me too").await;

    assert!(matches!(second, Err(AgentError::Busy)), "{second:?}");
    agent.interrupt();
    first.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_custom_reply_streams_its_said_messages_then_the_result() {
    let model = ScriptedModel::new([calc_call("c1", "2*3"), ScriptedResponse::text("6")]);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .reply(Router)
        .build()
        .unwrap();

    let events: Vec<Event> = agent
        .stream("compute 2*3", StreamOptions::default())
        .map(Result::unwrap)
        .collect()
        .await;

    let finals: Vec<(EventType, String)> = events
        .iter()
        .filter(|e| e.is_last)
        .map(|e| (e.event_type, shown(&e.message)))
        .collect();
    assert_eq!(
        finals,
        [
            (EventType::Reasoning, "routing to the calculator".to_owned()),
            (EventType::Reasoning, String::new()),
            (EventType::ToolResult, "6".to_owned()),
            (EventType::Reasoning, "6".to_owned()),
            (EventType::AgentResult, "6".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_custom_agent_keeps_its_conversation_in_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let build = || {
        ReActAgent::builder()
            .name("echo")
            .reply(Echo)
            .session(JsonFileSessionStore::new(dir.path()), "chat")
            .build()
            .unwrap()
    };
    build().call("first").await.unwrap();

    let again = build();
    let reply = again.call("second").await.unwrap();

    assert_eq!(reply.text(), "echo: second");
    assert_eq!(
        texts(&again.memory().messages()),
        ["first", "echo: first", "second", "echo: second"]
    );
    let dyn_agent: Arc<dyn Agent> = Arc::new(again);
    assert_eq!(dyn_agent.save_state().unwrap().messages.len(), 4);
}

#[tokio::test]
async fn reason_without_a_model_fails_the_call_with_a_clear_error() {
    struct NeedsModel;
    impl Reply for NeedsModel {
        async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
            cx.react().await
        }
    }
    let agent = ReActAgent::builder().reply(NeedsModel).build().unwrap();

    let err = agent.call("hi").await.unwrap_err();

    assert_eq!(
        err.to_string(),
        "model error: model configuration error: the agent was built without a model \
         (give one to the builder's `model`)"
    );
}

#[tokio::test]
async fn a_reply_that_would_break_memory_fails_the_call_and_stores_nothing() {
    struct SaysSystem;
    impl Reply for SaysSystem {
        async fn reply(&self, _cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
            Ok(Msg::system("I am the system now."))
        }
    }
    struct CallsUnrun;
    impl Reply for CallsUnrun {
        async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
            let mut reply = cx.message("let me check");
            reply
                .content
                .push(ToolUseBlock::new("c9", "calculator", json!({"expression": "1"})).into());
            Ok(reply)
        }
    }
    let system = ReActAgent::builder().reply(SaysSystem).build().unwrap();
    let calls = ReActAgent::builder().reply(CallsUnrun).build().unwrap();

    let system_err = system.call("hi").await.unwrap_err();
    let calls_err = calls.call("hi").await.unwrap_err();

    assert_eq!(
        system_err.to_string(),
        "the custom reply must not be a SYSTEM message (the system message is set with \
         `sys_prompt` or by hooks)"
    );
    assert_eq!(
        calls_err.to_string(),
        "the custom reply holds tool calls that no step ran: let `reason` store the model's \
         tool calls and `act` run them"
    );
    // The failed calls took their input back: nothing is stored.
    assert!(system.memory().is_empty());
    assert!(calls.memory().is_empty());
}

#[tokio::test]
async fn summarize_from_a_custom_reply_fires_the_summary_events() {
    struct SummarizeAtOnce;
    impl Reply for SummarizeAtOnce {
        async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
            cx.summarize().await
        }
    }
    let model = ScriptedModel::new([ScriptedResponse::text("In short: nothing happened.")]);
    let (agent, rec) = recorded(
        ReActAgent::builder()
            .model(model.clone())
            .reply(SummarizeAtOnce),
    );

    let reply = agent.call("what happened?").await.unwrap();

    assert_eq!(reply.text(), "In short: nothing happened.");
    assert_eq!(
        rec.types_without_chunks(),
        [K::PreCall, K::PreSummary, K::PostSummary, K::PostCall]
    );
    // The summary request: the conversation and the summary hint, no tools.
    let request = model.last_request().unwrap();
    assert_eq!(request.messages[0].text(), "what happened?");
    assert_eq!(request.messages.len(), 2);
    assert!(request.tools.is_empty());
    assert_eq!(
        texts(&agent.memory().messages()),
        ["what happened?", "In short: nothing happened."]
    );
}
