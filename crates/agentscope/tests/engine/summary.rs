//! The summary at the iteration limit: the exact summary request, its events, the stored reply, the model-failure reply, and the PreSummary accessors.

use std::sync::{Arc, Mutex};

use crate::support::fixtures::{cut_after, expr};
use crate::support::hooks::hooks;
use crate::support::recorded::{assert_chunks, events_of, kinds};
use crate::support::rows::{Row, row, rows};
use agentscope::prelude::*;
use agentscope::{BoxedHook, HookFn, PostSummaryEvent};
use agentscope_test::tools::Calculator;
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};

const HINT: &str = "You have failed to generate response within the maximum iterations. Now respond directly by summarizing the current situation.";

/// The memory after two tool-calling iterations (before the summary).
fn loop_rows() -> Vec<Row> {
    let call = |id: &str, e: &str| {
        row(
            Role::Assistant,
            "bot",
            vec![ToolUseBlock::new(id, "calculator", expr(e)).into()],
            None,
        )
    };
    let result = |id: &str, out: &str| {
        row(
            Role::Tool,
            "calculator",
            vec![ToolResultBlock::text(id, "calculator", out).into()],
            None,
        )
    };
    vec![
        row(Role::User, "user", vec![ContentBlock::text("q")], None),
        call("c1", "1+1"),
        result("c1", "2"),
        call("c2", "2+2"),
        result("c2", "4"),
    ]
}

/// Appends "extra" to the system message of every PreReasoning (must not leak into the
/// summary's system message).
fn per_iteration_append() -> HookFn {
    hook_fn(|event| {
        if let HookEvent::PreReasoning(e) = event {
            e.append_system_content("extra");
        }
        Ok(())
    })
}

fn build(model: &ScriptedModel, hooks: Vec<BoxedHook>) -> ReActAgent {
    ReActAgent::builder()
        .name("bot")
        .sys_prompt("sys")
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .max_iters(2)
        .generate_options(GenerateOptions::default().temperature(0.5))
        .hooks(hooks)
        .build()
        .unwrap()
}

fn two_iterations_then(summary: ScriptedResponse) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", expr("1+1")),
        ScriptedResponse::tool_call("c2", "calculator", expr("2+2")),
        summary,
    ])
}

#[tokio::test]
async fn max_iters_sends_memory_plus_hint_without_tools_and_a_fresh_system_message() {
    let model = two_iterations_then(ScriptedResponse::chunks([
        ScriptedChunk::text("Sum"),
        ScriptedChunk::text("mary"),
    ]));
    let agent = build(&model, hooks![per_iteration_append()]);

    agent.call("q").await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    // The reasoning requests offered the tool and carried the per-iteration append.
    assert_eq!(requests[0].tools.len(), 1);
    assert_eq!(requests[1].messages[0].text(), "sys\nextra");
    let summary = &requests[2];
    assert!(summary.tools.is_empty(), "no tool schemas in the summary");
    assert_eq!(summary.options, GenerateOptions::default().temperature(0.5));
    let system = &summary.messages[0];
    assert_eq!(
        (system.role, system.name.as_str(), system.content.to_vec()),
        (Role::System, "system", vec![ContentBlock::text("sys")]),
        "a fresh copy of the frozen base system message"
    );
    let mut expected = loop_rows();
    expected.push(row(
        Role::User,
        "user",
        vec![ContentBlock::text(HINT)],
        None,
    ));
    assert_eq!(rows(&summary.messages[1..]), expected);
}

#[tokio::test]
async fn summary_events_come_in_order_and_the_reply_is_stored_without_the_hint() {
    let model = two_iterations_then(ScriptedResponse::chunks([
        ScriptedChunk::text("Sum"),
        ScriptedChunk::text("mary"),
    ]));
    let rec = RecordingHook::new(100);
    let agent = build(&model, hooks![rec.clone()]);

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "Summary");
    assert_eq!(reply.name, "bot");
    assert_eq!(reply.role, Role::Assistant);
    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxIterations));
    let mut expected = loop_rows();
    expected.push(row(
        Role::Assistant,
        "bot",
        vec![ContentBlock::text("Summary")],
        Some(GenerateReason::MaxIterations),
    ));
    let memory = agent.memory().messages();
    assert_eq!(rows(&memory), expected, "the hint is not stored");
    assert_eq!(memory[5].id, reply.id);

    assert_eq!(
        rec.types(),
        kinds(
            "PreCall PreReasoning ReasoningChunk PostReasoning PreActing PostActing \
             PreReasoning ReasoningChunk PostReasoning PreActing PostActing PreSummary \
             SummaryChunk SummaryChunk PostSummary PostCall"
        )
    );
    assert_chunks(
        &rec,
        HookEventType::SummaryChunk,
        &[("Sum", "Sum"), ("mary", "Summary")],
    );
    let post_summary = &events_of::<PostSummaryEvent>(&rec)[0];
    assert_eq!(post_summary.summary_message().text(), "Summary");
}

#[tokio::test]
async fn summary_model_failure_becomes_the_stored_reply() {
    let model = two_iterations_then(ScriptedResponse::error("model overloaded"));
    let rec = RecordingHook::new(100);
    let agent = build(&model, hooks![rec.clone()]);

    let reply = agent.call("q").await.unwrap();

    let text = "Maximum iterations (2) reached. Error generating summary: model overloaded";
    assert_eq!(reply.text(), text);
    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxIterations));
    let mut expected = loop_rows();
    expected.push(row(
        Role::Assistant,
        "bot",
        vec![ContentBlock::text(text)],
        Some(GenerateReason::MaxIterations),
    ));
    assert_eq!(rows(&agent.memory().messages()), expected);
    let types = rec.types_without_chunks();
    assert_eq!(
        types[types.len() - 2..],
        [HookEventType::PreSummary, HookEventType::PostCall]
    );
    assert!(!types.contains(&HookEventType::Error));
    assert!(!types.contains(&HookEventType::PostSummary));
}

#[tokio::test]
async fn summary_mid_stream_failure_becomes_the_stored_reply() {
    let model = two_iterations_then(cut_after("Sum", "connection reset"));
    let agent = build(&model, vec![]);

    let reply = agent.call("q").await.unwrap();

    assert_eq!(
        reply.text(),
        "Maximum iterations (2) reached. Error generating summary: model stream error: connection reset"
    );
    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxIterations));
    assert_eq!(
        agent.memory().messages().last().unwrap().text(),
        reply.text()
    );
}

#[tokio::test]
async fn pre_summary_reports_the_limit_and_the_iterations_done() {
    let model = two_iterations_then(ScriptedResponse::text("Summary"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let probe = hook_fn(move |event| {
        if let HookEvent::PreSummary(e) = event {
            log.lock().unwrap().push((
                e.max_iterations(),
                e.current_iteration(),
                e.input_messages().last().map(Msg::text),
                e.system_message().map(Msg::text),
            ));
        }
        Ok(())
    });
    let agent = build(&model, hooks![probe]);

    agent.call("q").await.unwrap();

    assert_eq!(
        *seen.lock().unwrap(),
        [(2, 2, Some(HINT.to_owned()), Some("sys".to_owned()))]
    );
}

#[tokio::test]
async fn pre_summary_changes_apply_to_the_summary_request_only() {
    let model = two_iterations_then(ScriptedResponse::text("Summary"));
    let change = hook_fn(|event| {
        if let HookEvent::PreSummary(e) = event {
            e.append_system_content("summarise briefly");
            let mut input = e.input_messages().to_vec();
            input.push(Msg::user("in one line"));
            e.set_input_messages(input);
        }
        Ok(())
    });
    let agent = build(&model, hooks![change]);

    agent.call("q").await.unwrap();

    let summary = model.last_request().unwrap();
    assert_eq!(summary.messages[0].text(), "sys\nsummarise briefly");
    assert_eq!(summary.messages.last().unwrap().text(), "in one line");
    let memory = agent.memory().messages();
    assert_eq!(memory.len(), 6);
    assert!(memory.iter().all(|m| m.text() != "in one line"));
}
