//! A web chat with an agent: `agentscope-server` serves the agent over AG-UI and the chat page
//! at `/`; open the printed URL in a browser.
//!
//! ```sh
//! cargo run -p agentscope-example-web-chat --example web_chat                       # http://127.0.0.1:3000/, offline demo model
//! PORT=8080 cargo run -p agentscope-example-web-chat --example web_chat             # another port
//! OPENAI_API_KEY=sk-... cargo run -p agentscope-example-web-chat --example web_chat # a real OpenAI-compatible endpoint
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run -p agentscope-example-web-chat --example web_chat   # a local server
//! ANTHROPIC_API_KEY=sk-ant-... AGENTSCOPE_MODEL=claude-sonnet-4-5 cargo run -p agentscope-example-web-chat --example web_chat
//! CHAT_TOKEN=secret cargo run -p agentscope-example-web-chat --example web_chat     # the API asks for a bearer token
//! ```
//!
//! The agent has two tools: `calculator`, and `delete_files`, a pretend destructive tool that
//! only says what it would delete and needs a person's approval: the run stops, the page
//! shows Approve / Edit / Reject, and the next run resumes the stopped call.
//!
//! Threads are sessions in JSON files, by default in `agentscope-web-chat-sessions` under the
//! system temp directory (`SESSIONS_DIR` chooses another folder): the page keeps the thread id
//! in the URL (`#thread=...`), so a reload, or a restart of this server, continues the same
//! conversation. "New thread" starts another.
//!
//! The model comes from `support::model`: a real client when the environment names an
//! endpoint. Offline, the chat runs on a scripted demo model (clearly not a language model,
//! defined in `support/web_chat_demo.rs`): it asks the calculator for the arithmetic in a question ("What is 6*7?"),
//! asks to delete files when a message mentions deleting ("Please delete the old log files"),
//! and streams its answers word by word. Everything else (server, loop, approvals, sessions)
//! is the real thing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/web_chat_demo.rs"]
mod demo;
mod support;

use std::path::PathBuf;
use std::process::ExitCode;

use agentscope::prelude::*;
use agentscope_server::AgUi;

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    // A real model when the environment names one; otherwise the offline demo above.
    let model = support::model_or(demo::OfflineChat::new())?;

    let spec = demo::spec(model);

    let sessions = std::env::var_os("SESSIONS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("agentscope-web-chat-sessions"));
    let mut builder = AgUi::builder()
        .agent("assistant", spec)
        .store(JsonFileSessionStore::new(&sessions));
    let token = std::env::var("CHAT_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    if let Some(token) = &token {
        builder = builder.bearer_token(token.clone());
    }
    let agui = builder.build()?;

    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port.parse().map_err(|e| format!("PORT={port:?}: {e}"))?,
        Err(_) => 3000,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let address = listener.local_addr()?;
    println!("sessions: {}", sessions.display());
    if token.is_some() {
        println!("the API needs the bearer token from CHAT_TOKEN (the page asks for it)");
    }
    println!("web chat: http://{address}/  (Ctrl+C to stop)");

    axum::serve(listener, agui.router())
        .with_graceful_shutdown(agui.shutdown_signal(async {
            let _ = tokio::signal::ctrl_c().await;
        }))
        .await?;
    println!("stopped");
    Ok(())
}
