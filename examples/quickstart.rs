//! Quickstart: a ReAct agent with a calculator tool and a hook that prints its lifecycle.
//!
//! ```sh
//! cargo run --example quickstart                 # offline, on the built-in demo model
//! OPENAI_API_KEY=sk-... cargo run --example quickstart   # a real OpenAI-compatible endpoint
//! # a keyless local server (llama.cpp, Ollama, vLLM): the base URL alone is enough
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example quickstart
//! ANTHROPIC_API_KEY=sk-ant-... AGENTSCOPE_MODEL=claude-sonnet-4-5 cargo run --example quickstart
//! # at most 128 tokens per answer of the real model
//! AGENTSCOPE_MAX_TOKENS=128 OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example quickstart
//! ```
//!
//! The offline demo model is a `ScriptedModel` (from `agentscope-test`): it asks for the
//! calculator, then answers with whatever the calculator returned. Everything else (the loop,
//! the hooks, the tool, JSON-schema validation, memory) is the real engine.
//!
//! The first line says which model runs (the endpoint is shown without its password or query
//! values). A request the client retries shows as a `warning:` line; a failure ends the run
//! with its error, one line per cause (`error: ...`, `caused by: ...`), and exit code 1.
//! `examples/support/mod.rs` lists the environment variables the examples read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::ExitCode;

use agentscope::prelude::*;
use agentscope_test::tools::Calculator;
use support::model;

/// Prints every step of the agent's lifecycle. The `match` is exhaustive: if a new event
/// kind existed, this would not compile until it was handled.
struct PrintLifecycle;

impl Hook for PrintLifecycle {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        match event {
            HookEvent::PreCall(e) => println!(
                "[PreCall]        {} new message(s), system prompt: {:?}",
                e.input_messages().len(),
                e.system_message().map(|m| m.text())
            ),
            HookEvent::PreReasoning(e) => println!(
                "[PreReasoning]   iteration {} with {} message(s) for model '{}'",
                e.iteration(),
                e.input_messages().len(),
                e.model_name()
            ),
            HookEvent::ReasoningChunk(e) => {
                let chunk = e.incremental_chunk();
                let (thinking, text) = (chunk.thinking(), chunk.text());
                if !thinking.is_empty() {
                    println!("[ReasoningChunk] (thinking) {thinking:?}");
                }
                if !text.is_empty() {
                    println!("[ReasoningChunk] {text:?}");
                }
            }
            HookEvent::PostReasoning(e) => {
                let msg = e.reasoning_message();
                for call in msg.tool_uses() {
                    println!("[PostReasoning]  model calls {}({})", call.name, call.input);
                }
                if !msg.has_tool_uses() {
                    println!("[PostReasoning]  model answers: {}", msg.text());
                }
            }
            HookEvent::PreActing(e) => println!("[PreActing]      running {}", e.tool_use().name),
            HookEvent::ActingChunk(e) => {
                println!(
                    "[ActingChunk]    {}: {}",
                    e.tool_use().name,
                    e.chunk().text_output()
                )
            }
            HookEvent::PostActing(e) => println!(
                "[PostActing]     {} returned {:?}",
                e.tool_use().name,
                e.tool_result().text_output()
            ),
            HookEvent::PreSummary(e) => {
                println!(
                    "[PreSummary]     iteration limit {} reached",
                    e.max_iterations()
                )
            }
            HookEvent::SummaryChunk(e) => {
                println!("[SummaryChunk]   {:?}", e.incremental_chunk().text())
            }
            HookEvent::PostSummary(e) => {
                println!("[PostSummary]    {}", e.summary_message().text())
            }
            HookEvent::PostCall(e) => {
                println!("[PostCall]       reply: {}", e.final_message().text())
            }
            HookEvent::Error(e) => println!("[Error]          {}", e.error()),
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are a helpful assistant. Use the calculator for arithmetic.")
        .model(model("6*7")?)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .max_iters(10)
        .hook(PrintLifecycle)
        .build()?;

    println!("hook chain (priority, name, events):");
    for hook in agent.hook_order() {
        println!("  {hook}");
    }
    println!();
    let reply = agent.call(Msg::user("What is 6*7?")).await?;

    println!("\nFinal answer: {}", reply.text());
    println!("Why it ended: {:?}", reply.generate_reason());
    println!("Memory now holds {} messages.", agent.memory().len());
    Ok(())
}
