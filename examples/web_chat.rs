//! A web chat with an agent: `agentscope-server` serves the agent over AG-UI and the chat page
//! at `/`; open the printed URL in a browser.
//!
//! ```sh
//! cargo run --example web_chat                       # http://127.0.0.1:3000/, offline demo model
//! PORT=8080 cargo run --example web_chat             # another port
//! OPENAI_API_KEY=sk-... cargo run --example web_chat # a real OpenAI-compatible endpoint
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example web_chat   # a local server
//! ANTHROPIC_API_KEY=sk-ant-... AGENTSCOPE_MODEL=claude-sonnet-4-5 cargo run --example web_chat
//! CHAT_TOKEN=secret cargo run --example web_chat     # the API asks for a bearer token
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
//! defined below): it asks the calculator for the arithmetic in a question ("What is 6*7?"),
//! asks to delete files when a message mentions deleting ("Please delete the old log files"),
//! and streams its answers word by word. Everything else (server, loop, approvals, sessions)
//! is the real thing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agentscope::prelude::*;
use agentscope::{ChatStream, ModelError, ModelRequest};
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::{Value, json};

/// The offline demo model: decides its next step from the last message of the thread.
struct OfflineChat {
    script: ScriptedModel,
}

impl OfflineChat {
    fn new() -> Self {
        Self {
            script: ScriptedModel::new([]).with_name("web-chat demo model (offline, scripted)"),
        }
    }

    /// Thinking, then tool calls whose ids are unique in the thread (which spans runs and
    /// restarts).
    fn calls<'a>(
        messages: &[Msg],
        thinking: &str,
        calls: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> ScriptedResponse {
        let made: usize = messages.iter().map(|m| m.tool_uses().len()).sum();
        let calls = calls.into_iter().enumerate().map(|(i, (name, input))| {
            ScriptedChunk::tool_call(format!("call_{}", made + i + 1), name, input)
        });
        ScriptedResponse::chunks(std::iter::once(ScriptedChunk::thinking(thinking)).chain(calls))
    }

    /// An answer streamed word by word.
    fn say(text: &str) -> ScriptedResponse {
        ScriptedResponse::chunks(text.split_inclusive(' ').map(ScriptedChunk::text))
    }

    fn respond(messages: &[Msg]) -> ScriptedResponse {
        let Some(last) = messages.last() else {
            return Self::say("Hello!");
        };
        if last.role == Role::User {
            let question = last.text();
            let lower = question.to_lowercase();
            if lower.contains("delete") || lower.contains("remove") {
                // One call per kind of file named (two calls: two approvals, sent together).
                let mut patterns = Vec::new();
                if lower.contains("log") {
                    patterns.push("/var/log/app/*.log");
                }
                if lower.contains("tmp") || lower.contains("temp") {
                    patterns.push("/tmp/demo/*");
                }
                if patterns.is_empty() {
                    patterns.push("/var/log/app/*.log");
                }
                let calls = patterns
                    .into_iter()
                    .map(|pattern| ("delete_files", json!({"pattern": pattern})));
                return Self::calls(
                    messages,
                    "Deleting files cannot be undone, so the user has to approve it first.",
                    calls,
                );
            }
            if let Some(expression) = arithmetic(&question) {
                return Self::calls(
                    messages,
                    "This is arithmetic: I'll ask the calculator rather than guess.",
                    [("calculator", json!({"expression": expression}))],
                );
            }
            return Self::say(
                "I am an offline demo, not a language model: ask me some arithmetic (\"What is \
                 6*7?\") or to delete the old log files. Set OPENAI_API_KEY, OPENAI_BASE_URL \
                 or ANTHROPIC_API_KEY to talk to a real model.",
            );
        }
        // The results of the last step (one tool message per call).
        let mut results: Vec<&ToolResultBlock> = messages
            .iter()
            .rev()
            .take_while(|m| m.role == Role::Tool)
            .flat_map(|m| m.tool_results())
            .collect();
        results.reverse();
        if results.is_empty() {
            return Self::say("I am not sure what to do next.");
        }
        let sentences: Vec<String> = results
            .iter()
            .map(|result| {
                let output = result.text_output();
                let first_line = output.lines().next().unwrap_or_default();
                if result.is_error && output.contains("Rejected") {
                    "Understood: I left those files alone.".to_owned()
                } else if result.is_error {
                    format!("The {} failed: {first_line}", result.name)
                } else if result.name == "calculator" {
                    format!("The answer is {first_line}.")
                } else {
                    format!("Done: {first_line}.")
                }
            })
            .collect();
        Self::say(&sentences.join(" "))
    }
}

impl Model for OfflineChat {
    fn model_name(&self) -> &str {
        self.script.model_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        self.script.push(Self::respond(&request.messages));
        let stream = self.script.stream(request).await?;
        // A little pace, so the page shows the answer arriving token by token.
        Ok(stream
            .then(|chunk| async move {
                tokio::time::sleep(Duration::from_millis(40)).await;
                chunk
            })
            .boxed())
    }
}

/// The arithmetic in a question ("What is 6*7?" -> "6*7"), if there is any.
fn arithmetic(question: &str) -> Option<String> {
    let question = question.replace(['×', 'x'], "*").replace('÷', "/");
    let allowed = |c: char| c.is_ascii_digit() || " .+-*/()^%".contains(c);
    question
        .split(|c: char| !allowed(c))
        .map(str::trim)
        .filter(|part| part.chars().any(|c| c.is_ascii_digit()))
        .max_by_key(|part| part.len())
        .map(str::to_owned)
}

/// A pretend destructive tool: it only says what it would delete.
fn delete_files() -> impl Tool {
    tool_fn(
        "delete_files",
        "Deletes the files matching a glob pattern. Cannot be undone.",
        json!({
            "type": "object",
            "properties": {"pattern": {"type": "string", "description": "a glob pattern"}},
            "required": ["pattern"]
        }),
        |input, ctx| async move {
            let pattern = input["pattern"].as_str().unwrap_or("?").to_owned();
            ctx.emit(format!("looking for files matching {pattern}…"))
                .await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(format!("deleted 3 files matching {pattern} (pretend)"))
        },
    )
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    // A real model when the environment names one; otherwise the offline demo above.
    let model = support::model_or(OfflineChat::new())?;

    let spec = AgentSpec::new(move || {
        ReActAgent::builder()
            .name("assistant")
            .sys_prompt(
                "You are a helpful assistant. Use the calculator for arithmetic. \
                 delete_files needs the user's approval; call it when asked to delete files.",
            )
            .model(model.clone())
            .toolkit(Toolkit::new().tool(Calculator::new()).tool(delete_files()))
    })
    .approval(ApprovalPolicy::tools(["delete_files"]));

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
