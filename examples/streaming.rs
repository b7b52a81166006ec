//! Streaming: an agent's output on the terminal as it arrives, with the model's thinking
//! dimmed, its tool calls, the tool's progress and its result.
//!
//! ```sh
//! cargo run --example streaming                  # offline, on the built-in demo model
//! OPENAI_API_KEY=sk-... cargo run --example streaming    # a real OpenAI-compatible endpoint
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example streaming
//! ANTHROPIC_API_KEY=sk-ant-... AGENTSCOPE_MODEL=claude-sonnet-4-5 cargo run --example streaming
//! AGENTSCOPE_MAX_TOKENS=128 OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example streaming
//! ```
//!
//! `agent.stream(..)` runs the same engine as `agent.call(..)`; the stream yields `Event`s:
//! model chunks and the finished message (`Reasoning`), tool progress and results
//! (`ToolResult`), hints, summaries, and the reply last (`AgentResult`). Dropping the stream
//! cancels the call.
//!
//! The first line says which model runs (the endpoint is shown without its password or query
//! values). A request the client retries shows as a `warning:` line; a failure ends the run
//! with its error, one line per cause (`error: ...`, `caused by: ...`), and exit code 1.
//! `examples/support/mod.rs` lists the environment variables the examples read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use agentscope::prelude::*;
use agentscope_test::tools::Calculator;
use futures::StreamExt;
use support::model;

const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// The calculator, slowed down so its progress shows: it reports two steps, then answers.
fn calculator_with_progress() -> impl Tool {
    let calculator = Calculator::new();
    tool_fn(
        calculator.name().to_owned(),
        calculator.description().to_owned(),
        calculator.parameters(),
        move |input, ctx| {
            let calculator = calculator.clone();
            async move {
                ctx.emit(ContentBlock::text("parsing the expression")).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                ctx.emit(ContentBlock::text("evaluating")).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                calculator.call(input, ctx).await
            }
        },
    )
}

/// Prints one event: chunks as they come, finished steps as a line each.
fn show(event: &Event) {
    let mut out = std::io::stdout().lock();
    match (event.event_type, event.is_last) {
        (EventType::Reasoning, false) => {
            for block in &event.message.content {
                match block {
                    ContentBlock::Thinking(thinking) => {
                        write!(out, "{DIM}{}{RESET}", thinking.thinking).unwrap();
                    }
                    ContentBlock::Text(text) => write!(out, "{}", text.text).unwrap(),
                    _ => {}
                }
            }
        }
        (EventType::Reasoning, true) => {
            for call in event.message.tool_uses() {
                write!(out, "\n-> {}({})", call.name, call.input).unwrap();
            }
            writeln!(out).unwrap();
        }
        (EventType::ToolResult, false) => {
            for progress in event.message.tool_results() {
                writeln!(out, "   {DIM}... {}{RESET}", progress.text_output()).unwrap();
            }
        }
        (EventType::ToolResult, true) => {
            for result in event.message.tool_results() {
                writeln!(out, "<- {}: {}", result.name, result.text_output()).unwrap();
            }
        }
        (EventType::Hint, _) => {
            writeln!(out, "{DIM}hint: {}{RESET}", event.message.text()).unwrap()
        }
        (EventType::Summary, false) => write!(out, "{}", event.message.text()).unwrap(),
        (EventType::Summary, true) => writeln!(out).unwrap(),
        (EventType::AgentResult, _) => writeln!(
            out,
            "\nreply: {} ({:?})",
            event.message.text(),
            event.message.generate_reason()
        )
        .unwrap(),
    }
    out.flush().unwrap();
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are a helpful assistant. Use the calculator for arithmetic.")
        .model(model("1234*5678")?)
        .toolkit(Toolkit::new().tool(calculator_with_progress()))
        .build()?;

    let question = "What is 1234*5678?";
    println!("> {question}\n");
    let mut events = agent.stream(question, StreamOptions::default());
    while let Some(event) = events.next().await {
        show(&event?);
    }
    Ok(())
}
