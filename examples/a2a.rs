//! An agent served to other agents over A2A 1.0, and a local agent that calls it:
//! `agentscope-a2a` serves its card, the JSON-RPC and HTTP+JSON methods, and stores
//! contexts and tasks in JSON files (`serve`); `RemoteAgent` calls a remote agent as a tool
//! of a local agent, streaming its progress (`call`).
//!
//! ```sh
//! cargo run -p agentscope-example-a2a --example a2a -- serve                    # http://127.0.0.1:4000/a2a, offline demo model
//! PORT=8080 cargo run -p agentscope-example-a2a --example a2a -- serve          # another port
//! A2A_TOKEN=secret cargo run -p agentscope-example-a2a --example a2a -- serve   # the methods ask for a bearer token
//! OPENAI_API_KEY=sk-... cargo run -p agentscope-example-a2a --example a2a -- serve   # a real OpenAI-compatible endpoint
//!
//! cargo run -p agentscope-example-a2a --example a2a -- call http://127.0.0.1:4000/a2a                   # asks "What is 6*7?"
//! cargo run -p agentscope-example-a2a --example a2a -- call http://127.0.0.1:4000/a2a "What is 12*12?"  # another question
//! ```
//!
//! It prints the base URL; any A2A 1.0 client finds the agent from it (the card is at
//! `<base>/.well-known/agent-card.json`). With `curl`:
//!
//! ```sh
//! curl -s http://127.0.0.1:4000/a2a -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
//!        {"role":"ROLE_USER","messageId":"m1","contextId":"demo","parts":[{"text":"What is 6*7?"}]}}}'
//! ```
//!
//! The agent has a calculator. The model comes from `support::model`: a real client when the
//! environment names an endpoint, otherwise an offline demo model (clearly not a language
//! model) that asks the calculator for 6*7 and quotes the result. Everything else (server,
//! loop, tasks, sessions) is the real thing. Contexts are sessions in JSON files under the
//! system temp directory (`SESSIONS_DIR` chooses another folder), so a restart continues
//! a context.
//!
//! `call URL [QUESTION]` connects to the agent at `URL` (its base URL or its card's URL;
//! with `A2A_TOKEN` as its bearer token when set), gives it to a local agent as a tool named
//! after it, and asks the local agent the question. It prints the remote agent's progress as
//! it streams (its tool calls, their results, its text) and the local agent's answer. The
//! local model comes from `support::model_or` too: offline, a demo model (not a language
//! model) that gives the question to the remote agent and quotes its answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::process::ExitCode;

use std::io::Write as _;

use agentscope::prelude::*;
use agentscope::{ContentBlock, Event, EventType};
use agentscope_a2a::{A2a, RemoteAgent};
use agentscope_test::tools::Calculator;
use futures::StreamExt;
use serde_json::json;

const USAGE: &str = "usage: cargo run -p agentscope-example-a2a --example a2a -- serve\n       \
                     cargo run -p agentscope-example-a2a --example a2a -- call URL [QUESTION]";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["serve"] => support::run(serve()).await,
        ["call", url] => support::run(call(url.to_owned(), "What is 6*7?".to_owned())).await,
        ["call", url, question] => support::run(call(url.to_owned(), question.to_owned())).await,
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let model = support::model("6*7")?;
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port.parse().map_err(|e| format!("PORT={port:?}: {e}"))?,
        Err(_) => 4000,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let base = format!("http://{}/a2a", listener.local_addr()?);
    let sessions = std::env::var_os("SESSIONS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("agentscope-a2a-sessions"));

    let mut builder = A2a::builder()
        .agent(move || {
            ReActAgent::builder()
                .name("calculator")
                .sys_prompt("You are a helpful assistant. Use the calculator for arithmetic.")
                .model(model.clone())
                .toolkit(Toolkit::new().tool(Calculator::new()))
        })
        .url(&base)
        .description("Answers arithmetic questions with a calculator.")
        .store(JsonFileSessionStore::new(&sessions));
    let token = std::env::var("A2A_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    if let Some(token) = &token {
        builder = builder.bearer_token(token.clone());
    }
    let a2a = builder.build()?;

    println!("sessions: {}", sessions.display());
    if token.is_some() {
        println!("the methods need the bearer token from A2A_TOKEN (the card is public)");
    }
    println!("A2A agent: {base}  (card: {base}/.well-known/agent-card.json; Ctrl+C to stop)");
    let app = axum::Router::new().nest("/a2a", a2a.router());
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    println!("stopped");
    Ok(())
}

/// Asks a local agent `question`, with the remote agent at `url` as its tool, and prints the
/// remote agent's progress and the local answer as they stream.
async fn call(url: String, question: String) -> Result<(), Box<dyn std::error::Error>> {
    let mut remote = RemoteAgent::builder(&url);
    if let Some(token) = std::env::var("A2A_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        remote = remote.bearer_token(token);
    }
    let remote = remote.connect().await?;
    let tool = remote.clone().into_tool();
    let tool_name = agentscope::Tool::name(&tool).to_owned();
    let model = support::model_or(support::DemoModel::calling(
        None,
        &tool_name,
        json!({"task": question}),
        |said| format!("The remote agent says: {said}"),
    ))?;
    println!(
        "remote agent: {} at {} ({})",
        remote.name(),
        remote.url(),
        remote.description()
    );
    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt(format!(
            "You are a helpful assistant. Give questions you cannot answer yourself to the \
             remote agent `{tool_name}` and answer with what it says."
        ))
        .model(model)
        .toolkit(Toolkit::new().tool(tool))
        .build()?;

    println!("you: {question}");
    let mut events = agent.stream(question.as_str(), StreamOptions::default());
    let mut answering = false;
    while let Some(event) = events.next().await {
        let event = event?;
        print_event(&event, &mut answering);
    }
    println!();
    Ok(())
}

/// One event of the local call: the remote agent's progress (a tool chunk) on lines of its
/// own, the local answer's text as it streams.
fn print_event(event: &Event, answering: &mut bool) {
    match (event.event_type, event.is_last) {
        (EventType::ToolResult, false) => {
            for result in event.message.tool_results() {
                for block in &result.output {
                    match block {
                        ContentBlock::Text(text) => println!("  {} | {}", result.name, text.text),
                        ContentBlock::ToolUse(call) => {
                            println!("  {} | calls {}({})", result.name, call.name, call.input)
                        }
                        ContentBlock::ToolResult(inner) => println!(
                            "  {} | {} returned {}",
                            result.name,
                            inner.name,
                            inner.text_output()
                        ),
                        _ => {}
                    }
                }
            }
        }
        (EventType::ToolResult, true) => {
            for result in event.message.tool_results() {
                println!("  {} answered: {}", result.name, result.text_output());
            }
        }
        (EventType::Reasoning, false) => {
            let text = event.message.text();
            if !text.is_empty() {
                if !*answering {
                    print!("assistant: ");
                    *answering = true;
                }
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
        }
        _ => {}
    }
}
