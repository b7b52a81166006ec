//! Custom agents: your own reply logic with the whole machinery (hooks in priority order,
//! streaming, interrupts, sessions, state).
//!
//! ```sh
//! cargo run --example custom_agent                                  # offline, scripted
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example custom_agent   # a real model
//! ```
//!
//! Two agents: the tutorial's echo agent (no model at all) and a routing agent that answers
//! small talk itself and sends arithmetic through the ReAct steps (the model, then the
//! calculator). A hook prints every event it sees, so you can read the order: PreCall,
//! the steps the reply used, PostCall.
//!
//! The router's model is the one the environment names (see `examples/support/mod.rs`);
//! without one, a scripted stand-in that calls the calculator, then answers. The first line
//! says which.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::ExitCode;

use agentscope::prelude::*;
use agentscope::{HookFn, Reasoning, Reply, ReplyContext};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

/// Replies with what it heard.
struct Echo;

impl Reply for Echo {
    async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        let heard: Vec<String> = cx.input().iter().map(Msg::text).collect();
        Ok(cx.message(format!("You said: {}", heard.join(" "))))
    }
}

/// Answers small talk without the model; arithmetic goes through reasoning and acting, for
/// at most [`Router::MAX_STEPS`] model calls.
struct Router;

impl Router {
    /// A real model may keep calling tools: a reply of your own sets its own limit.
    const MAX_STEPS: usize = 5;
}

impl Reply for Router {
    async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        let arithmetic = cx
            .input()
            .iter()
            .any(|m| m.text().chars().any(|c| c.is_ascii_digit()));
        if !arithmetic {
            return Ok(cx.message("Hello! Ask me something with numbers."));
        }
        cx.say(cx.message("(routing to the calculator)")).await;
        for _ in 0..Self::MAX_STEPS {
            match cx.reason().await? {
                Reasoning::Answer(answer) => return Ok(answer),
                Reasoning::Act(calls) => {
                    if let Some(stopped) = cx.act(calls).await? {
                        return Ok(stopped);
                    }
                }
                _ => {}
            }
        }
        Ok(cx.message(format!("(no answer after {} model calls)", Self::MAX_STEPS)))
    }
}

/// A message as one line: its text, tool calls or tool results.
fn show(message: &Msg) -> String {
    let calls: Vec<String> = message
        .tool_uses()
        .iter()
        .map(|call| format!("calls {}({})", call.name, *call.input))
        .collect();
    let results: Vec<String> = message
        .tool_results()
        .iter()
        .map(|result| format!("returns {}", result.text_output()))
        .collect();
    [vec![message.text()], calls, results]
        .concat()
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Prints each event's kind with the hook's priority.
fn printer(priority: i32) -> HookFn {
    hook_fn(move |event| {
        println!("    [{priority:>3}] {}", event.event_type().as_str());
        Ok(())
    })
    .with_name(format!("printer@{priority}"))
    .with_priority(priority)
    .with_interests(HookEventTypes::ALL.without(HookEventType::ReasoningChunk))
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    // The router's model, chosen (and named on the first line) before anything else runs.
    let model = support::model_or(ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "17*3"})),
        ScriptedResponse::text("17 times 3 is 51."),
    ]))?;

    let echo = ReActAgent::builder()
        .name("echo")
        .reply(Echo)
        .hook(printer(200))
        .hook(printer(10))
        .build()?;
    println!("echo agent, hooks at priorities 10 and 200:");
    let reply = echo.call("hello there").await?;
    println!("{}: {}\n", reply.name, reply.text());

    let router = ReActAgent::builder()
        .name("router")
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .reply(Router)
        .hook(printer(100))
        .build()?;

    println!("router, small talk (no model call):");
    let reply = router.call("hi!").await?;
    println!("{}: {}\n", reply.name, reply.text());

    println!("router, arithmetic, streamed:");
    let mut events = router.stream("what is 17*3?", StreamOptions::default());
    while let Some(event) = events.next().await {
        let event = event?;
        if event.is_last {
            println!("  stream: {:?}: {}", event.event_type, show(&event.message));
        }
    }
    println!("\nrouter's memory:");
    for message in router.memory().messages() {
        println!("  {:>10}: {}", message.name, show(&message));
    }
    Ok(())
}
