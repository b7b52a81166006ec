//! An agent served to other agents over A2A 1.0: `agentscope-a2a` serves its card, the
//! JSON-RPC and HTTP+JSON methods, and stores contexts and tasks in JSON files.
//!
//! ```sh
//! cargo run --example a2a -- serve                    # http://127.0.0.1:4000/a2a, offline demo model
//! PORT=8080 cargo run --example a2a -- serve          # another port
//! A2A_TOKEN=secret cargo run --example a2a -- serve   # the methods ask for a bearer token
//! OPENAI_API_KEY=sk-... cargo run --example a2a -- serve   # a real OpenAI-compatible endpoint
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
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::process::ExitCode;

use agentscope::prelude::*;
use agentscope_a2a::A2a;
use agentscope_test::tools::Calculator;

#[tokio::main]
async fn main() -> ExitCode {
    let mode = std::env::args().nth(1);
    if mode.as_deref() != Some("serve") {
        eprintln!("usage: cargo run --example a2a -- serve");
        return ExitCode::from(2);
    }
    support::run(serve()).await
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
