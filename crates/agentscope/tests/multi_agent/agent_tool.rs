//! An agent used as a tool: its reply is the result, its streamed events are the tool's
//! progress nested under the outer acting step (exact outer stream order), failures are
//! error results, and interrupting or dropping the outer call ends the inner call.

use std::time::Duration;

use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT};
use agentscope::multi_agent::AgentTool;
use agentscope::prelude::*;
use agentscope_test::tools::ProgressTool;
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::memory;
use crate::support::fixtures::CANCELLED;
use crate::support::invariants::assert_no_orphan_tool_use;

/// One content block, nested blocks included.
fn block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => format!("text {:?}", t.text.as_str()),
        ContentBlock::Thinking(t) => format!("thinking {:?}", t.thinking.as_str()),
        ContentBlock::ToolUse(t) => format!("tool_use {} {} {}", t.id, t.name, t.input),
        ContentBlock::ToolResult(r) => format!(
            "tool_result {} {}{} [{}]",
            r.id,
            r.name,
            if r.is_error { " error" } else { "" },
            r.output
                .iter()
                .map(self::block)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => format!("{other:?}"),
    }
}

/// A stream event as `type last|chunk: blocks`.
fn event(event: &Event) -> String {
    let blocks: Vec<String> = event.message.content.iter().map(block).collect();
    format!(
        "{:?} {}: {}",
        event.event_type,
        if event.is_last { "last" } else { "chunk" },
        blocks.join(" | ")
    )
}

/// `wait`: reports "started", then waits until the call is interrupted.
struct Waits;

impl Tool for Waits {
    fn name(&self) -> &str {
        "wait"
    }
    fn description(&self) -> &str {
        "Waits until interrupted."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.emit("started").await;
        ctx.cancelled().await;
        Err(ToolError::Cancelled)
    }
}

fn inner_agent(model: ScriptedModel, tools: Toolkit) -> ReActAgent {
    ReActAgent::builder()
        .name("researcher")
        .model(model)
        .toolkit(tools)
        .build()
        .unwrap()
}

fn outer_agent(model: ScriptedModel, inner: &ReActAgent) -> ReActAgent {
    let tool = AgentTool::new(inner.clone())
        .with_name("ask_researcher")
        .with_description("Asks the researcher.");
    ReActAgent::builder()
        .name("lead")
        .model(model)
        .toolkit(Toolkit::new().tool(tool))
        .build()
        .unwrap()
}

fn ask(task: &str) -> ScriptedResponse {
    ScriptedResponse::tool_call("o1", "ask_researcher", json!({ "task": task }))
}

/// The lead (outer), whose model asks the researcher (inner) "Wait for me.", and the
/// researcher, whose model calls `wait` (`i1`): a call that runs until it is ended.
fn lead_waiting_on_researcher() -> (ReActAgent, ReActAgent) {
    let inner = inner_agent(
        ScriptedModel::new([ScriptedResponse::tool_call("i1", "wait", json!({}))]),
        Toolkit::new().tool(Waits),
    );
    let outer = outer_agent(ScriptedModel::new([ask("Wait for me.")]), &inner);
    (outer, inner)
}

#[test]
fn the_tool_is_named_described_and_takes_a_task() {
    let inner = inner_agent(ScriptedModel::new([]), Toolkit::new());
    let tool = AgentTool::new(inner.clone());
    assert_eq!(Tool::name(&tool), "researcher");
    assert_eq!(
        Tool::description(&tool),
        "Gives a task to the agent 'researcher' and returns its answer. Describe the task \
         completely: the agent sees only this message."
    );
    assert_eq!(tool.parameters()["required"], json!(["task"]));
    assert_eq!(tool.parameters()["properties"]["task"]["type"], "string");
    let tool = tool.with_name("ask").with_description("Ask.");
    assert_eq!(
        (Tool::name(&tool), Tool::description(&tool)),
        ("ask", "Ask.")
    );
    assert_eq!(tool.agent().name(), "researcher");
}

#[tokio::test]
async fn the_inner_events_nest_under_the_outer_acting_step_and_the_reply_is_the_result() {
    let inner_model = ScriptedModel::new([
        ScriptedResponse::tool_call("i1", "progress", json!({"steps": 2})),
        ScriptedResponse::chunks([
            ScriptedChunk::text("The answer"),
            ScriptedChunk::text(" is 42."),
        ]),
    ]);
    let inner = inner_agent(inner_model, Toolkit::new().tool(ProgressTool::default()));
    let outer_model =
        ScriptedModel::new([ask("What is 6*7?"), ScriptedResponse::text("It is 42.")]);
    let outer = outer_agent(outer_model.clone(), &inner);
    let recorder = RecordingHook::new(100).with_interests(HookEventType::ActingChunk);
    outer.add_hook(recorder.clone());

    let mut events = outer.stream("Find 6*7.", StreamOptions::default());
    let mut seen = Vec::new();
    while let Some(item) = events.next().await {
        seen.push(event(&item.unwrap()));
    }

    let nested = |inner: &str| format!("ToolResult chunk: tool_result o1 ask_researcher [{inner}]");
    assert_eq!(
        seen,
        [
            "Reasoning chunk: tool_use o1 ask_researcher {\"task\":\"What is 6*7?\"}".to_owned(),
            "Reasoning last: tool_use o1 ask_researcher {\"task\":\"What is 6*7?\"}".to_owned(),
            // The inner agent's own step, forwarded as the outer tool's progress.
            nested("tool_use i1 progress {\"steps\":2}"),
            nested("tool_result i1 progress [text \"step 1/2\"]"),
            nested("tool_result i1 progress [text \"step 2/2\"]"),
            nested("tool_result i1 progress [text \"done\"]"),
            nested("text \"The answer\""),
            nested("text \" is 42.\""),
            "ToolResult last: tool_result o1 ask_researcher [text \"The answer is 42.\"]"
                .to_owned(),
            "Reasoning chunk: text \"It is 42.\"".to_owned(),
            "Reasoning last: text \"It is 42.\"".to_owned(),
            "AgentResult last: text \"It is 42.\"".to_owned(),
        ]
    );
    // Hooks see the same progress as ActingChunk events.
    let chunks: Vec<String> = recorder
        .events()
        .iter()
        .map(|e| match e {
            HookEvent::ActingChunk(e) => block(&ContentBlock::ToolResult(e.chunk().clone())),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(chunks.len(), 6);
    assert_eq!(
        chunks[5],
        "tool_result o1 ask_researcher [text \" is 42.\"]"
    );
    // The inner conversation: the task as a user message, its steps, its reply.
    assert_eq!(
        memory(&inner),
        [
            "user/user: text \"What is 6*7?\"",
            "assistant/researcher: tool_use i1 progress {\"steps\":2}",
            "tool/progress: tool_result i1 progress \"done\"",
            "assistant/researcher: text \"The answer is 42.\"",
        ]
    );
    // The outer model saw the reply as the tool result.
    let second = &outer_model.requests()[1];
    assert_eq!(
        second.messages[2].tool_results()[0].text_output(),
        "The answer is 42."
    );
}

#[tokio::test]
async fn a_call_without_listeners_forwards_nothing_and_a_failure_is_an_error_result() {
    let inner = inner_agent(
        ScriptedModel::new([
            ScriptedResponse::text("fine"),
            ScriptedResponse::error("down"),
        ]),
        Toolkit::new(),
    );
    let outer_model = ScriptedModel::new([
        ask("one"),
        ScriptedResponse::text("ok"),
        ask("two"),
        ScriptedResponse::text("the researcher is down"),
    ]);
    let outer = outer_agent(outer_model.clone(), &inner);

    assert_eq!(outer.call("first").await.unwrap().text(), "ok");
    let reply = outer.call("second").await.unwrap();

    assert_eq!(reply.text(), "the researcher is down");
    let results: Vec<(bool, String)> = outer
        .memory()
        .messages()
        .iter()
        .flat_map(|m| {
            m.tool_results()
                .into_iter()
                .map(|r| (r.is_error, r.text_output()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        results,
        [
            (false, "fine".to_owned()),
            (
                true,
                "Error: Tool execution failed: agent 'researcher' failed: model error: down"
                    .to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn interrupting_the_outer_call_interrupts_the_inner_call() {
    let (outer, inner) = lead_waiting_on_researcher();
    // The outer call is interrupted while the inner agent's tool runs.
    let handle = outer.clone();
    inner.add_hook(
        hook_fn(move |event| {
            if let HookEvent::ActingChunk(_) = event {
                handle.interrupt();
            }
            Ok(())
        })
        .with_interests(HookEventType::ActingChunk),
    );

    let reply = outer.call("go").await.unwrap();

    assert_eq!(reply.text(), INTERRUPT_REPLY);
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert!(!inner.is_running());
    // The inner call ended as an interrupted call: its tool got the interrupted result and
    // its memory ends with the interrupt reply.
    assert_eq!(
        memory(&inner),
        [
            "user/user: text \"Wait for me.\"".to_owned(),
            "assistant/researcher: tool_use i1 wait {}".to_owned(),
            format!("tool/wait: tool_result i1 wait error {INTERRUPTED_RESULT:?}"),
            format!("assistant/researcher: text {INTERRUPT_REPLY:?}"),
        ]
    );
    assert_no_orphan_tool_use(&inner.memory().messages());
    assert_eq!(
        memory(&outer),
        [
            "user/user: text \"go\"".to_owned(),
            "assistant/lead: tool_use o1 ask_researcher {\"task\":\"Wait for me.\"}".to_owned(),
            "tool/ask_researcher: tool_result o1 ask_researcher error \"Error: Tool execution \
             was interrupted.\""
                .to_owned(),
            format!("assistant/lead: text {INTERRUPT_REPLY:?}"),
        ]
    );
}

#[tokio::test]
async fn an_interrupt_from_another_task_reaches_the_inner_call() {
    let (outer, inner) = lead_waiting_on_researcher();

    let running = tokio::spawn(outer.call("go"));
    // Wait until the inner tool runs (its call is stored).
    while inner.memory().len() < 2 {
        tokio::task::yield_now().await;
    }
    outer.interrupt();
    let reply = running.await.unwrap().unwrap();

    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert!(!inner.is_running());
    assert_eq!(
        memory(&inner).last().unwrap(),
        &format!("assistant/researcher: text {INTERRUPT_REPLY:?}")
    );
    assert_no_orphan_tool_use(&inner.memory().messages());
    assert_no_orphan_tool_use(&outer.memory().messages());
}

#[tokio::test]
async fn dropping_the_outer_stream_cancels_the_inner_call() {
    let (outer, inner) = lead_waiting_on_researcher();

    let mut events = outer.stream("go", StreamOptions::default());
    // Read until the inner tool reports that it started, then walk away.
    loop {
        let event = events.next().await.unwrap().unwrap();
        let started = event.message.tool_results().iter().any(|r| {
            r.output
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult(inner) if inner.text_output() == "started"))
        });
        if started {
            break;
        }
    }
    assert!(inner.is_running());
    drop(events);

    assert!(!inner.is_running());
    assert!(!outer.is_running());
    assert_eq!(
        memory(&inner),
        [
            "user/user: text \"Wait for me.\"".to_owned(),
            "assistant/researcher: tool_use i1 wait {}".to_owned(),
            format!("tool/wait: tool_result i1 wait error {CANCELLED:?}"),
        ]
    );
    assert_no_orphan_tool_use(&inner.memory().messages());
    assert_no_orphan_tool_use(&outer.memory().messages());
}

#[tokio::test]
async fn dropping_the_outer_call_cancels_the_inner_call() {
    let (outer, inner) = lead_waiting_on_researcher();

    let timed_out = tokio::time::timeout(Duration::from_millis(50), outer.call("go")).await;

    assert!(timed_out.is_err());
    assert!(!inner.is_running());
    assert_eq!(
        memory(&inner).last().unwrap(),
        &format!("tool/wait: tool_result i1 wait error {CANCELLED:?}")
    );
    assert_no_orphan_tool_use(&inner.memory().messages());
}

/// The hooks guide's redaction hook on the outer agent covers what the inner agent's work
/// forwards as progress (its text deltas, its tool's progress and result) and the reply.
#[tokio::test]
async fn the_guides_redaction_hook_on_the_outer_agent_redacts_the_forwarded_progress() {
    crate::support::redaction::assert_the_guide_shows_it();
    let lookup = tool_fn(
        "lookup",
        "Finds a customer's contact.",
        json!({"type": "object", "properties": {}}),
        |_input, ctx| async move {
            ctx.emit("found ada@example.com, checking").await;
            Ok("Ada: ada@example.com")
        },
    );
    let inner_model = ScriptedModel::new([
        ScriptedResponse::tool_call("i1", "lookup", json!({})),
        ScriptedResponse::chunks([
            ScriptedChunk::text("Write to "),
            ScriptedChunk::text("ada@example.com"),
            ScriptedChunk::text(" today."),
        ]),
    ]);
    let inner = inner_agent(inner_model, Toolkit::new().tool(lookup));
    let outer_model = ScriptedModel::new([
        ask("How do I reach Ada?"),
        ScriptedResponse::text("By e-mail."),
    ]);
    let outer = outer_agent(outer_model.clone(), &inner);
    outer.add_hook(crate::support::redaction::hook());

    let mut events = outer.stream("Reach Ada.", StreamOptions::default());
    let mut seen = Vec::new();
    while let Some(item) = events.next().await {
        seen.push(event(&item.unwrap()));
    }

    let nested = |inner: &str| format!("ToolResult chunk: tool_result o1 ask_researcher [{inner}]");
    assert_eq!(
        seen,
        [
            "Reasoning chunk: tool_use o1 ask_researcher {\"task\":\"How do I reach Ada?\"}"
                .to_owned(),
            "Reasoning last: tool_use o1 ask_researcher {\"task\":\"How do I reach Ada?\"}"
                .to_owned(),
            nested("tool_use i1 lookup {}"),
            nested("tool_result i1 lookup [text \"found [email], checking\"]"),
            nested("tool_result i1 lookup [text \"Ada: [email]\"]"),
            nested("text \"Write to \""),
            nested("text \"[email]\""),
            nested("text \" today.\""),
            "ToolResult last: tool_result o1 ask_researcher [text \"Write to [email] today.\"]"
                .to_owned(),
            "Reasoning chunk: text \"By e-mail.\"".to_owned(),
            "Reasoning last: text \"By e-mail.\"".to_owned(),
            "AgentResult last: text \"By e-mail.\"".to_owned(),
        ]
    );
    // The outer model read the redacted result; the inner agent keeps its own conversation.
    assert_eq!(
        outer_model.requests()[1].messages[2].tool_results()[0].text_output(),
        "Write to [email] today."
    );
    assert_eq!(
        memory(&inner)[3],
        "assistant/researcher: text \"Write to ada@example.com today.\""
    );
}
