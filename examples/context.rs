//! Context management: a long conversation, offline, with the tokens sent at every step.
//!
//! ```sh
//! cargo run --example context
//! ```
//!
//! A user asks 40 questions; every fifth one makes the model read a 30,000-character log
//! with a tool. The agent's model has a window of 3,000 tokens (set below), so the
//! `ContextWindowHook` has work: the logs go out as previews (the model could read them with
//! `retrieve_stashed`), and at 85% of the window the oldest turns are summarised, keeping
//! the 6 most recent messages. Memory keeps everything; each line shows what one model call
//! got. The models are offline stand-ins (not language models): the agent's answers and the
//! summaries are made up from their input, and they report usage like a provider, so the
//! hook measures with the provider's figures when it can ("usage" on the line).
//!
//! It runs scripted whatever the environment says, and says so on its first line: what it
//! shows is what the hook does at each of some 50 model calls, which needs answers of a
//! known size (a real model's would make every run different, and take minutes). To see
//! the hook with a real model, give `ContextWindowHook` the model's window
//! (`ContextWindows::new().with("<model name>", tokens)`) in your own agent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::ExitCode;

use agentscope::context::{
    CompactionReport, ContextWindowHook, ContextWindows, Summarizer, TokenCounter, ToolResultLimit,
    default_counter,
};
use agentscope::prelude::*;
use agentscope::{ChatResponse, ChatStream, ChatUsage, ModelError, ModelRequest};
use futures::StreamExt;
use serde_json::json;

/// An offline model: the agent's, or the summariser.
struct OfflineModel {
    name: &'static str,
}

impl OfflineModel {
    /// What the agent's model says to `request`.
    fn reply(request: &ModelRequest) -> Vec<ContentBlock> {
        let Some(last) = request.messages.last() else {
            return vec![ContentBlock::text("Hello.")];
        };
        if let Some(result) = last.tool_results().first() {
            let lines = result.text_output().lines().count();
            return vec![ContentBlock::text(format!(
                "The log shows {lines} lines (a preview); everything was served in time. \
                 Nothing unusual happened in that period, and no request failed."
            ))];
        }
        let question = last.text();
        if question.contains("log") {
            let id = format!("call_{}", request.messages.len());
            return vec![ToolUseBlock::new(id, "read_log", json!({"service": "api"})).into()];
        }
        vec![ContentBlock::text(format!(
            "About \"{question}\": here is a considered answer of a few sentences, long \
             enough to fill a conversation quickly. It mentions the relevant details, weighs \
             the options, and suggests what to do next."
        ))]
    }

    /// What the summariser says: how much it read.
    fn summary(request: &ModelRequest) -> Vec<ContentBlock> {
        let transcript = request.messages.last().map(Msg::text).unwrap_or_default();
        let questions = transcript.matches("\nuser: ").count();
        vec![ContentBlock::text(format!(
            "The user asked {questions} more questions about the service (answered), and the \
             assistant read its logs several times; nothing unusual was found."
        ))]
    }
}

impl Model for OfflineModel {
    fn model_name(&self) -> &str {
        self.name
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let content = if self.name == "offline-summarizer" {
            Self::summary(&request)
        } else {
            Self::reply(&request)
        };
        // Usage as a provider reports it: the whole request, and the reply.
        let counter = default_counter(self.name);
        let reply = Msg::new(Role::Assistant, "assistant", content.clone());
        let usage = ChatUsage::new(
            counter.count_messages(&request.messages) as u64,
            counter.count_message(&reply) as u64,
        );
        let chunks = [
            Ok(ChatResponse::new(content)),
            Ok(ChatResponse::new(Vec::new())
                .with_usage(usage)
                .with_finish_reason("stop")),
        ];
        Ok(futures::stream::iter(chunks).boxed())
    }
}

/// The log tool: 30,000 characters.
fn read_log() -> impl Tool {
    tool_fn(
        "read_log",
        "Reads the service's recent log.",
        json!({"type": "object", "properties": {"service": {"type": "string"}}}),
        |_input, _ctx| async {
            let log: String = (0..500)
                .map(|i| {
                    format!(
                        "2026-01-01T00:{:02}:{:02}Z INFO served in 12ms\n",
                        i / 60,
                        i % 60
                    )
                })
                .collect();
            Ok(log)
        },
    )
}

/// Prints one line per model call from the hook's report.
fn print_steps() -> impl Hook {
    let step = std::sync::Mutex::new(0);
    hook_fn(move |event| {
        if let HookEvent::PreReasoning(e) = event
            && let Some(report) = e.extensions().get::<CompactionReport>()
        {
            let mut n = step.lock().unwrap();
            *n += 1;
            let mut notes = Vec::new();
            if report.used_reported_usage {
                notes.push("usage".to_owned());
            }
            if let Some(summary) = &report.summary {
                let made = if summary.fresh { "new" } else { "reused" };
                notes.push(format!("summary of {} ({made})", summary.messages));
            }
            if !report.truncated.is_empty() {
                notes.push(format!("{} preview(s)", report.truncated.len()));
            }
            if !report.dropped.is_empty() {
                notes.push(format!("{} left out", report.dropped.len()));
            }
            println!(
                "step {:>3}  memory {:>3} msgs  sent {:>3} msgs  {:>6} -> {:>5} tokens ({:>3}% of {})  {}",
                *n,
                report.messages_before,
                report.messages_after,
                report.tokens_before,
                report.tokens_after,
                report.tokens_after * 100 / report.window.max(1),
                report.window,
                notes.join(", ")
            );
        }
        Ok(())
    })
    .with_priority(ContextWindowHook::PRIORITY + 1)
    .with_interests(HookEventType::PreReasoning)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    support::scripted(
        "offline stand-in models (not language models) answer, so that each step's tokens \
         are the same on every run and the compaction can be followed line by line",
    );
    let context = ContextWindowHook::new()
        .with_windows(ContextWindows::new().with("offline-model", 3_000))
        .with_tool_result_limit(ToolResultLimit::new(4_000, 400))
        .with_summarizer(
            Summarizer::new(OfflineModel {
                name: "offline-summarizer",
            })
            .with_threshold(0.85)
            .with_keep_recent(6),
        )
        .with_reports(true);
    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are the on-call assistant of a web service.")
        .model(OfflineModel {
            name: "offline-model",
        })
        .toolkit(
            Toolkit::new()
                .tool(read_log())
                .tool(context.retrieve_tool()),
        )
        .hook(context.clone())
        .hook(print_steps())
        .build()?;

    println!("window: 3,000 tokens; summaries at 85%, keeping the 6 most recent messages\n");
    for i in 1..=40 {
        let question = if i % 5 == 0 {
            format!("Question {i}: please check the log of the api service.")
        } else {
            format!("Question {i}: how should we tune the cache for the evening peak?")
        };
        agent.call(question.as_str()).await?;
    }
    let memory = agent.memory().messages();
    let counter = default_counter("offline-model");
    println!(
        "\nmemory: {} messages, {} tokens; stashed tool results: {}",
        memory.len(),
        counter.count_messages(&memory),
        context.stash().len()
    );
    if let Some(summary) = context.summary(agent.id()) {
        println!(
            "summary in use: the first {} messages: {:?}",
            summary.messages, summary.text
        );
    }
    Ok(())
}
