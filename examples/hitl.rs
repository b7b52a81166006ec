//! Human in the loop: a `ToolApprovalHook` stops the agent before guarded tool calls run, and
//! a reviewer approves, edits or rejects each call before the agent resumes.
//!
//! ```sh
//! cargo run --example hitl
//! ```
//!
//! Runs offline on a demo model (clearly not a language model): a `ScriptedModel` from
//! `agentscope-test` that calls a tool for each question, answers with the tool's result, and,
//! when a call is rejected, stubbornly tries the very same call once more (which the hook
//! rejects at once, without asking again) before giving up. Everything else (the loop, the
//! hook, the tools, memory) is the real engine.
//!
//! Three flows run one after another:
//!
//! 1. approve: the calculator call runs as the model made it;
//! 2. edit: the reviewer changes the calculator's arguments before it runs;
//! 3. reject: the reviewer refuses a file deletion; the model reads the reason.
//!
//! Each flow is split into the steps a real application spreads over time (and processes):
//! [`ask`] until the agent stops for approval, [`review`] the awaiting calls, [`resume`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use agentscope::hooks::{ApprovalDecision, ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::{ChatStream, ModelError, ModelRequest};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

/// The offline demo model: decides its next step from the last message of the conversation.
struct DemoModel {
    script: ScriptedModel,
    next_id: AtomicUsize,
}

impl DemoModel {
    fn new() -> Self {
        Self {
            script: ScriptedModel::new([]).with_name("demo-model (offline, scripted)"),
            next_id: AtomicUsize::new(1),
        }
    }

    fn call(&self, name: &str, input: Value) -> ScriptedResponse {
        let id = format!("call_{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        ScriptedResponse::tool_call(id, name, input)
    }

    /// The demo's "reasoning": a tool call for a question, an answer for a result.
    fn respond(&self, messages: &[Msg]) -> ScriptedResponse {
        let Some(last) = messages.last() else {
            return ScriptedResponse::text("Hello!");
        };
        if last.role == Role::User {
            let question = last.text().to_lowercase();
            return if question.contains("delete") {
                self.call("delete_files", json!({"pattern": "/var/log/app/*.log"}))
            } else {
                self.call("calculator", json!({"expression": "6*7"}))
            };
        }
        let Some(result) = last.tool_results().first().cloned().cloned() else {
            return ScriptedResponse::text("I am not sure what to do next.");
        };
        let output = result.text_output();
        if !result.is_error {
            let value = output.lines().next().unwrap_or_default();
            return ScriptedResponse::text(format!("Done: the {} said {value}.", result.name));
        }
        if output.contains("rejected before") {
            return ScriptedResponse::text(
                "Understood: you rejected that, so I will leave it alone.",
            );
        }
        // A stubborn model: it repeats the rejected call once, with the same arguments.
        let retry = messages
            .iter()
            .rev()
            .flat_map(|m| m.tool_uses())
            .find(|call| call.id == result.id)
            .cloned();
        match retry {
            Some(call) => self.call(&call.name, call.input),
            None => ScriptedResponse::text("I could not do that."),
        }
    }
}

impl Model for DemoModel {
    fn model_name(&self) -> &str {
        self.script.model_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        self.script.push(self.respond(&request.messages));
        self.script.stream(request).await
    }
}

/// A pretend destructive tool: it only says what it would delete.
fn delete_files() -> impl Tool {
    tool_fn(
        "delete_files",
        "Deletes the files matching a glob pattern.",
        json!({
            "type": "object",
            "properties": {"pattern": {"type": "string"}},
            "required": ["pattern"]
        }),
        |input, _ctx| async move {
            Ok(format!(
                "deleted 3 files matching {}",
                input["pattern"].as_str().unwrap_or("?")
            ))
        },
    )
}

/// The agent, with the approval hook guarding both tools.
fn build_agent(approvals: &ToolApprovalHook) -> Result<ReActAgent, BuildError> {
    ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are a careful operations assistant.")
        .model(DemoModel::new())
        .toolkit(Toolkit::new().tool(Calculator::new()).tool(delete_files()))
        .hook(approvals.clone())
        .build()
}

/// Step 1: ask; the agent runs until it answers or stops for approval.
async fn ask(agent: &ReActAgent, question: &str) -> Result<Msg, AgentError> {
    println!("user: {question}");
    agent.call(question).await
}

/// Step 2: the reviewer decides every awaiting call. Returns whether there was any.
fn review(
    approvals: &ToolApprovalHook,
    reviewer: &dyn Fn(&ToolUseBlock) -> ApprovalDecision,
) -> Result<bool, Box<dyn std::error::Error>> {
    let pending = approvals.pending();
    for call in &pending {
        let decision = reviewer(call);
        println!(
            "  awaiting approval: {}({}) -> {}",
            call.name,
            call.input,
            describe(&decision)
        );
        approvals.decide(call.id.clone(), decision)?;
    }
    Ok(!pending.is_empty())
}

fn describe(decision: &ApprovalDecision) -> String {
    match decision {
        ApprovalDecision::Approve => "approved".to_owned(),
        ApprovalDecision::Edit(input) => format!("edited to {input}"),
        ApprovalDecision::Reject(reason) => format!("rejected: {reason}"),
        _ => format!("{decision:?}"),
    }
}

/// Step 3: resume the stopped call with the decisions.
async fn resume(agent: &ReActAgent) -> Result<Msg, AgentError> {
    agent.call(()).await
}

async fn run_flow(
    title: &str,
    question: &str,
    reviewer: &dyn Fn(&ToolUseBlock) -> ApprovalDecision,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("=== {title} ===");
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["calculator", "delete_files"]));
    let agent = build_agent(&approvals)?;

    let mut reply = ask(&agent, question).await?;
    while reply.generate_reason() == Some(GenerateReason::ReasoningStopRequested)
        && review(&approvals, reviewer)?
    {
        reply = resume(&agent).await?;
    }
    println!("assistant: {}", reply.text());

    println!("--- conversation ({} messages) ---", agent.memory().len());
    for msg in agent.memory().messages() {
        for call in msg.tool_uses() {
            println!("  [{}] calls {}({})", msg.role, call.name, call.input);
        }
        for result in msg.tool_results() {
            let kind = if result.is_error { "error" } else { "result" };
            let output = result.text_output().replace('\n', " / ");
            println!("  [{}] {kind}: {output}", msg.role);
        }
        let text = msg.text();
        if !text.is_empty() {
            println!("  [{}] {text}", msg.role);
        }
    }
    println!();
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("model: offline demo model; the reviewer is scripted too\n");

    run_flow("approve", "What is 6*7?", &|_| ApprovalDecision::Approve).await?;

    run_flow("edit", "What is 6*7?", &|call| {
        // The reviewer knows better: 6*8 is what the user meant.
        let mut input = call.input.clone();
        input["expression"] = json!("6*8");
        ApprovalDecision::Edit(input)
    })
    .await?;

    run_flow("reject", "Please delete the old log files.", &|_| {
        ApprovalDecision::Reject("the logs are needed for the audit".into())
    })
    .await?;
    Ok(())
}
