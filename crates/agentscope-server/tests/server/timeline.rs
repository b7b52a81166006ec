//! The `CUSTOM "timeline"` event that ends each run with steps: its bars (model steps with
//! their tokens, tool calls) and marks (what hooks decided), in order. Times vary, so they
//! are checked for order and then left out of the exact comparison.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentscope::hooks::ApprovalPolicy;
use agentscope::prelude::*;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

use crate::support::http::post;
use crate::support::serve::{input, serve, user};

/// The timeline of a run's events, its times checked (each bar ends after it starts, within
/// the run) and removed.
fn timeline(events: &[Value]) -> Value {
    let custom: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "CUSTOM" && event["name"] == "timeline")
        .collect();
    assert_eq!(custom.len(), 1, "one timeline per run: {events:#?}");
    let mut value = custom[0]["value"].clone();
    let total = value["durationMs"].as_f64().unwrap();
    for bar in value["bars"].as_array_mut().unwrap() {
        let (start, end) = (
            bar["startMs"].as_f64().unwrap(),
            bar["endMs"].as_f64().unwrap(),
        );
        assert!(0.0 <= start && start <= end && end <= total, "{bar}");
        let bar = bar.as_object_mut().unwrap();
        bar.remove("startMs");
        bar.remove("endMs");
    }
    for mark in value["marks"].as_array_mut().unwrap() {
        let at = mark["atMs"].as_f64().unwrap();
        assert!((0.0..=total).contains(&at), "{mark}");
        mark.as_object_mut().unwrap().remove("atMs");
    }
    value.as_object_mut().unwrap().remove("durationMs");
    value
}

/// A server whose agent has a `delete_files` tool that needs approval; with `nudge`, a hook
/// of that name sends the model back once (`goto_reasoning`).
fn deleting_agui(model: ScriptedModel, dir: &std::path::Path, nudge: bool) -> AgUi {
    let sent_back = Arc::new(AtomicBool::new(!nudge));
    let spec = AgentSpec::new(move || {
        let sent_back = Arc::clone(&sent_back);
        ReActAgent::builder()
            .model(model.clone())
            .toolkit(Toolkit::new().tool(tool_fn(
                "delete_files",
                "Deletes files matching a glob.",
                json!({"type": "object", "properties": {"glob": {"type": "string"}}}),
                |input, _ctx| async move {
                    Ok::<_, ToolError>(format!("deleted {}", input["glob"].as_str().unwrap_or("?")))
                },
            )))
            .hook(
                hook_fn(move |event: &mut HookEvent| {
                    if let HookEvent::PostReasoning(e) = event
                        && !sent_back.swap(true, Ordering::SeqCst)
                    {
                        e.goto_reasoning(vec![Msg::user("Use the tool.")])?;
                    }
                    Ok(())
                })
                .with_name("nudge"),
            )
    })
    .approval(ApprovalPolicy::tools(["delete_files"]));
    AgUi::builder()
        .agent("assistant", spec)
        .store(agentscope::session::JsonFileSessionStore::new(dir))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_run_stopped_for_approval_and_its_resume_have_their_steps_tokens_and_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_files", json!({"glob": "*.log"}))
            .with_usage(120, 14),
        ScriptedResponse::text("Deleted the logs.").with_usage(150, 6),
    ]);
    let server = serve(deleting_agui(model, dir.path(), false)).await;
    let (_, events) = post(
        &server.base,
        &input("t1", "r1", json!([user("u1", "Delete the logs.")])),
    )
    .await;
    assert_eq!(
        timeline(&events),
        json!({
            "bars": [{"kind": "reasoning", "label": "reasoning 1",
                      "inputTokens": 120, "outputTokens": 14}],
            "marks": [
                {"kind": "approval.asked", "tool": "delete_files", "toolCallId": "c1"},
                {"kind": "stop_agent", "hook": "tool_approval", "step": "reasoning"},
            ],
        })
    );

    let mut resume = input("t1", "r2", json!([]));
    resume["resume"] =
        json!([{"interruptId": "c1", "status": "resolved", "payload": {"approved": true}}]);
    let (_, events) = post(&server.base, &resume).await;
    assert_eq!(
        timeline(&events),
        json!({
            "bars": [
                {"kind": "tool", "label": "delete_files", "toolCallId": "c1"},
                {"kind": "reasoning", "label": "reasoning 1",
                 "inputTokens": 150, "outputTokens": 6},
            ],
            "marks": [{"kind": "approval.approved", "tool": "delete_files", "toolCallId": "c1"}],
        })
    );
}

#[tokio::test]
async fn edited_and_rejected_calls_a_goto_and_a_skip_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::text("I think I am done."),
        ScriptedResponse::chunks([
            agentscope_test::ScriptedChunk::tool_call("c1", "delete_files", json!({"glob": "*"})),
            agentscope_test::ScriptedChunk::tool_call("c2", "delete_files", json!({"glob": "/"})),
        ]),
        ScriptedResponse::text("Done."),
    ]);
    let server = serve(deleting_agui(model, dir.path(), true)).await;
    let (_, events) = post(
        &server.base,
        &input("t1", "r1", json!([user("u1", "Clean up.")])),
    )
    .await;
    assert_eq!(
        timeline(&events),
        json!({
            "bars": [
                {"kind": "reasoning", "label": "reasoning 1"},
                {"kind": "reasoning", "label": "reasoning 2"},
            ],
            "marks": [
                {"kind": "goto_reasoning", "hook": "nudge"},
                {"kind": "approval.asked", "tool": "delete_files", "toolCallId": "c1"},
                {"kind": "approval.asked", "tool": "delete_files", "toolCallId": "c2"},
                {"kind": "stop_agent", "hook": "tool_approval", "step": "reasoning"},
            ],
        })
    );
    let mut resume = input("t1", "r2", json!([]));
    resume["resume"] = json!([
        {"interruptId": "c1", "status": "resolved",
         "payload": {"approved": true, "arguments": {"glob": "*.tmp"}}},
        {"interruptId": "c2", "status": "resolved",
         "payload": {"approved": false, "reason": "never"}},
    ]);
    let (_, events) = post(&server.base, &resume).await;
    assert_eq!(
        timeline(&events),
        json!({
            "bars": [
                {"kind": "tool", "label": "delete_files", "toolCallId": "c1"},
                {"kind": "reasoning", "label": "reasoning 1"},
            ],
            "marks": [
                {"kind": "approval.edited", "tool": "delete_files", "toolCallId": "c1"},
                {"kind": "approval.rejected", "tool": "delete_files", "toolCallId": "c2"},
                {"kind": "tool.skipped", "hook": "tool_approval", "tool": "delete_files",
                 "toolCallId": "c2"},
            ],
        })
    );
}

#[tokio::test]
async fn a_context_compaction_is_marked_with_its_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Noted.").with_usage(20, 2)]);
    let seen = model.clone();
    let spec = AgentSpec::new(move || {
        ReActAgent::builder().model(model.clone()).hook(
            agentscope::context::ContextWindowHook::new()
                .with_max_messages(2)
                // The estimate, whichever counter the build's features would pick (a
                // workspace build has `tiktoken`): the tokens below are exact.
                .with_counter(agentscope::context::EstimatedTokens::new()),
        )
    });
    let agui = AgUi::builder()
        .agent("assistant", spec)
        .store(agentscope::session::JsonFileSessionStore::new(dir.path()))
        .build()
        .unwrap();
    let server = serve(agui).await;
    let (_, events) = post(
        &server.base,
        &input(
            "t1",
            "r1",
            json!([
                user("u1", "The first thing to remember."),
                user("u2", "The second thing to remember."),
                user("u3", "The third thing to remember."),
                user("u4", "What now?"),
            ]),
        ),
    )
    .await;
    // The window kept the last two messages; the mark says so in (estimated) tokens.
    let sent: Vec<String> = seen.requests()[0]
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(sent, ["The third thing to remember.", "What now?"]);
    assert_eq!(
        timeline(&events),
        json!({
            "bars": [{"kind": "reasoning", "label": "reasoning 1",
                      "inputTokens": 20, "outputTokens": 2}],
            "marks": [{"kind": "context.compacted", "hook": "context_window",
                       "tokensBefore": 41, "tokensAfter": 18}],
        })
    );
}
