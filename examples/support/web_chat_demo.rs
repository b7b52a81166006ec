//! The web chat's agent and its offline demo model, in one file: `examples/web_chat.rs` serves
//! them, and `agentscope-server`'s test of the serving guide's curl walkthrough includes this
//! file (`#[path]`), so the guide's answers are this demo's, not a copy's.

use std::time::Duration;

use agentscope::prelude::*;
use agentscope::{BoxedModel, ChatStream, ModelError, ModelRequest};
use agentscope_server::AgentSpec;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::{Value, json};

/// The served agent: a calculator, and `delete_files`, which needs approval.
pub(crate) fn spec(model: BoxedModel) -> AgentSpec {
    AgentSpec::new(move || {
        ReActAgent::builder()
            .name("assistant")
            .sys_prompt(
                "You are a helpful assistant. Use the calculator for arithmetic. \
                 delete_files needs the user's approval; call it when asked to delete files.",
            )
            .model(model.clone())
            .toolkit(Toolkit::new().tool(Calculator::new()).tool(delete_files()))
    })
    .approval(ApprovalPolicy::tools(["delete_files"]))
}

/// The offline demo model: decides its next step from the last message of the thread.
pub(crate) struct OfflineChat {
    script: ScriptedModel,
}

impl OfflineChat {
    pub(crate) fn new() -> Self {
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
pub(crate) fn arithmetic(question: &str) -> Option<String> {
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
pub(crate) fn delete_files() -> impl Tool {
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
