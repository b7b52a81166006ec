//! Human in the loop: a `ToolApprovalHook` stops the agent before guarded tool calls run, and
//! a reviewer approves, edits or rejects each call before the agent resumes.
//!
//! ```sh
//! cargo run --example hitl                                          # offline, scripted
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example hitl   # on a real model
//! ```
//!
//! With `--session ID`, the approval spans two runs of the program, as it spans a restart of a
//! real service: the conversation lives in a JSON session file (`JsonFileSessionStore`).
//!
//! ```sh
//! # Run 1: asks; the agent stops before deleting files; the process ends.
//! cargo run --example hitl -- --session demo
//! # Run 2 (a new process, minutes or days later): decide and resume.
//! cargo run --example hitl -- --session demo --approve
//! cargo run --example hitl -- --session demo --reject "the logs are needed for the audit"
//! cargo run --example hitl -- --session demo --edit '{"pattern": "/var/log/app/*.log.1"}'
//! ```
//!
//! Options: `--store DIR` (default: `agentscope-hitl-sessions` in the temp directory),
//! `--ask TEXT` (the question of run 1; default "Please delete the old log files."). Run 2
//! rebuilds the approval hook's awaiting list from the stored session
//! (`ToolApprovalHook::restore_state`: decisions already stored and calls already started
//! are not asked for again), records the decision and resumes with `agent.call(())`;
//! the tool runs exactly once. A run with nothing awaiting approval asks again, continuing
//! the same conversation. When it stops for approval, run 1 prints the commands that
//! continue it, with every flag they need (`--session` and `--store`).
//!
//! The model is the one the environment names (see `examples/support/mod.rs`; a real model
//! decides for itself whether to call a tool). Without one it runs offline on a demo model
//! (clearly not a language model): a `ScriptedModel` from `agentscope-test` that calls a
//! tool for each question, answers with the tool's result, and, when a call is rejected,
//! stubbornly tries the very same call once more (which the hook rejects at once, without
//! asking again) before giving up. Everything else (the loop, the hook, the tools, memory)
//! is the real engine. The first line says which model runs.
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

mod support;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentscope::hooks::ApprovalDecision;
use agentscope::prelude::*;
use agentscope::session::{JsonFileSessionStore, SessionStore};
use agentscope::{BoxedModel, ChatStream, ModelError, ModelRequest};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

/// The offline demo model: decides its next step from the last message of the conversation.
struct DemoModel {
    script: ScriptedModel,
}

impl DemoModel {
    fn new() -> Self {
        Self {
            script: ScriptedModel::new([]).with_name("demo-model (offline, scripted)"),
        }
    }

    /// A tool call whose id is unique in the conversation (which may span processes).
    fn call(messages: &[Msg], name: &str, input: Value) -> ScriptedResponse {
        let calls: usize = messages.iter().map(|m| m.tool_uses().len()).sum();
        ScriptedResponse::tool_call(format!("call_{}", calls + 1), name, input)
    }

    /// The demo's "reasoning": a tool call for a question, an answer for a result.
    fn respond(&self, messages: &[Msg]) -> ScriptedResponse {
        let Some(last) = messages.last() else {
            return ScriptedResponse::text("Hello!");
        };
        if last.role == Role::User {
            let question = last.text().to_lowercase();
            return if question.contains("delete") {
                Self::call(
                    messages,
                    "delete_files",
                    json!({"pattern": "/var/log/app/*.log"}),
                )
            } else {
                Self::call(messages, "calculator", json!({"expression": "6*7"}))
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
            Some(call) => Self::call(messages, &call.name, call.input.into()),
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

/// The agent on `model`, with the approval hook guarding both tools.
fn agent_builder(model: &BoxedModel, approvals: &ToolApprovalHook) -> ReActAgentBuilder {
    ReActAgent::builder()
        .name("assistant")
        .sys_prompt(
            "You are a careful operations assistant. Use the calculator for arithmetic and \
             delete_files to delete files.",
        )
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()).tool(delete_files()))
        .hook(approvals.clone())
}

fn build_agent(model: &BoxedModel, approvals: &ToolApprovalHook) -> Result<ReActAgent, BuildError> {
    agent_builder(model, approvals).build()
}

fn policy() -> ApprovalPolicy {
    ApprovalPolicy::tools(["calculator", "delete_files"])
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
    model: &BoxedModel,
    title: &str,
    question: &str,
    reviewer: &dyn Fn(&ToolUseBlock) -> ApprovalDecision,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("=== {title} ===");
    let approvals = ToolApprovalHook::new(policy());
    let agent = build_agent(model, &approvals)?;

    let mut reply = ask(&agent, question).await?;
    while reply.generate_reason() == Some(GenerateReason::ReasoningStopRequested)
        && review(&approvals, reviewer)?
    {
        reply = resume(&agent).await?;
    }
    println!("assistant: {}", reply.text());
    print_conversation(&agent);
    Ok(())
}

fn print_conversation(agent: &ReActAgent) {
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
}

/// The command-line options of the two-run session mode.
struct SessionArgs {
    session: String,
    store: PathBuf,
    question: String,
    decision: Option<ApprovalDecision>,
}

/// Parses `--session ID [--store DIR] [--ask TEXT] [--approve | --reject REASON | --edit JSON]`;
/// `None` without `--session`.
fn parse_args() -> Result<Option<SessionArgs>, String> {
    let mut args = std::env::args().skip(1);
    let mut session = None;
    let mut store = std::env::temp_dir().join("agentscope-hitl-sessions");
    let mut question = "Please delete the old log files.".to_owned();
    let mut decision = None;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--session" => session = Some(value()?),
            "--store" => store = PathBuf::from(value()?),
            "--ask" => question = value()?,
            "--approve" => decision = Some(ApprovalDecision::Approve),
            "--reject" => decision = Some(ApprovalDecision::Reject(value()?)),
            "--edit" => {
                let input = serde_json::from_str(&value()?)
                    .map_err(|error| format!("--edit needs JSON arguments: {error}"))?;
                decision = Some(ApprovalDecision::Edit(input));
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    match session {
        Some(session) => Ok(Some(SessionArgs {
            session,
            store,
            question,
            decision,
        })),
        None if decision.is_some() => Err("--approve/--reject/--edit need --session ID".into()),
        None => Ok(None),
    }
}

/// One run of the session mode: ask (run 1) or decide and resume (run 2).
async fn run_session(
    model: &BoxedModel,
    args: SessionArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    let store = JsonFileSessionStore::new(&args.store);
    let file = store.path_of(&args.session)?;
    let approvals = ToolApprovalHook::new(policy());
    let agent = agent_builder(model, &approvals)
        .session(store.clone(), args.session.clone())
        .build()?;

    // A new process knows nothing: rebuild the awaiting list from the stored session (its
    // stored decisions and started calls await nothing).
    if let Some(stored) = store.load(&args.session).await? {
        approvals.restore_state(&stored)?;
    }
    let pending = approvals.pending();

    let reply = if pending.is_empty() {
        if args.decision.is_some() {
            println!("session '{}': no tool call awaits approval.", args.session);
            return Ok(());
        }
        ask(&agent, &args.question).await?
    } else {
        let Some(decision) = args.decision.clone() else {
            print_pending(&args, &pending);
            return Ok(());
        };
        for call in &pending {
            println!("  {}({}) -> {}", call.name, call.input, describe(&decision));
            approvals.decide(call.id.clone(), decision.clone())?;
        }
        resume(&agent).await?
    };

    if reply.generate_reason() == Some(GenerateReason::ReasoningStopRequested) {
        println!(
            "assistant stopped for approval; saved to {}",
            file.display()
        );
        print_pending(&args, &approvals.pending());
    } else {
        println!("assistant: {}", reply.text());
        print_conversation(&agent);
        println!("saved to {}", file.display());
    }
    Ok(())
}

fn print_pending(args: &SessionArgs, pending: &[ToolUseBlock]) {
    for call in pending {
        println!(
            "  awaiting approval: {} {}({})",
            call.id, call.name, call.input
        );
    }
    let command = continue_command(&args.session, &args.store);
    println!("decide in this or any later run:");
    println!("  {command} --approve");
    println!("  {command} --reject \"REASON\"");
    println!("  {command} --edit '{{...new arguments...}}'");
}

/// The command that continues session `session` kept in `store`: every flag it needs,
/// quoted for a POSIX shell, so that it can be pasted as printed.
fn continue_command(session: &str, store: &Path) -> String {
    format!(
        "cargo run --example hitl -- --session {} --store {}",
        shell_quoted(session),
        shell_quoted(&store.to_string_lossy())
    )
}

/// `text` as one word of a POSIX shell command line.
fn shell_quoted(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let model = support::model_or(DemoModel::new())?;
    if let Some(args) = args {
        println!("session '{}'\n", args.session);
        return run_session(&model, args).await;
    }
    println!("the reviewer is scripted\n");

    run_flow(&model, "approve", "What is 6*7?", &|_| {
        ApprovalDecision::Approve
    })
    .await?;

    run_flow(&model, "edit", "What is 6*7?", &|call| {
        // The reviewer knows better: 6*8 is what the user meant.
        if call.name != "calculator" {
            return ApprovalDecision::Approve;
        }
        let mut input = call.input.clone();
        input["expression"] = json!("6*8");
        ApprovalDecision::Edit(input.into())
    })
    .await?;

    run_flow(
        &model,
        "reject",
        "Please delete the old log files.",
        &|_| ApprovalDecision::Reject("the logs are needed for the audit".into()),
    )
    .await?;
    Ok(())
}
