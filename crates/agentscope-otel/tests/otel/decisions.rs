//! What hooks and model layers decided, as span events with their attributes, exported:
//! a goto, a skipped tool, a stop after acting, a context compaction, a model retry and a
//! fallback.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentscope::context::{CollectCompactionReports, ContextWindowHook, EstimatedTokens};
use agentscope::hooks::TracingHook;
use agentscope::model_layers::ModelExt;
use agentscope::prelude::*;
use agentscope::{InMemoryMemory, ModelError, RetryPolicy};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

use crate::golden::{export, tree};

/// The root span of a one-call tree.
fn root(spans: &[opentelemetry_sdk::trace::SpanData]) -> Value {
    let tree = tree(spans);
    assert_eq!(tree.as_array().unwrap().len(), 1, "{tree:#}");
    tree[0].clone()
}

#[tokio::test]
async fn a_goto_a_skipped_tool_and_a_stop_after_acting_are_events_naming_their_hook() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("Probably 40."),
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"})),
    ]);
    // Sends the model back once, after its first answer.
    let critic = hook_fn({
        let sent_back = Arc::new(Mutex::new(false));
        move |event| {
            if let HookEvent::PostReasoning(e) = event
                && !std::mem::replace(&mut *sent_back.lock().unwrap(), true)
            {
                e.goto_reasoning(vec![Msg::user("Use the calculator.")])?;
            }
            Ok(())
        }
    })
    .with_name("critic")
    .with_interests(HookEventType::PostReasoning);
    // Answers the calculator call from a cache instead of running it.
    let cache = hook_fn(|event| {
        if let HookEvent::PreActing(e) = event {
            e.skip_with(ToolResultBlock::text("", "", "42"));
        }
        Ok(())
    })
    .with_name("cache")
    .with_interests(HookEventType::PreActing);
    // Ends the call after the tool batch.
    let limiter = hook_fn(|event| {
        if let HookEvent::PostActing(e) = event {
            e.stop_agent();
        }
        Ok(())
    })
    .with_name("limiter")
    .with_interests(HookEventType::PostActing);
    let agent = ReActAgent::builder()
        .name("assistant")
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(TracingHook::new())
        .hook(critic)
        .hook(cache)
        .hook(limiter)
        .build()
        .unwrap();
    let spans = export(async {
        let reply = agent.call("What is 6*7?").await.unwrap();
        assert_eq!(
            reply.generate_reason(),
            Some(GenerateReason::ActingStopRequested)
        );
    })
    .await;
    let root = root(&spans);
    assert_eq!(
        root["events"],
        json!([
            {"name": "agentscope.goto_reasoning",
             "attributes": {"agentscope.hook.name": "critic", "level": "INFO"}},
            {"name": "agentscope.tool.skipped",
             "attributes": {"agentscope.hook.name": "cache", "gen_ai.tool.call.id": "c1",
                            "gen_ai.tool.name": "calculator", "level": "INFO"}},
            {"name": "agentscope.stop_agent",
             "attributes": {"agentscope.hook.name": "limiter", "agentscope.step": "acting",
                            "level": "INFO"}},
        ])
    );
    // The skipped call still has its span (of no length), under the call.
    let children: Vec<&str> = root["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|child| child["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        children,
        [
            "chat scripted-model",
            "chat scripted-model",
            "execute_tool calculator"
        ]
    );
}

#[tokio::test]
async fn a_compaction_is_an_event_with_the_tokens_before_and_after() {
    let history: Vec<Msg> = (0..4)
        .flat_map(|i| {
            [
                Msg::user(format!("Question {i}?")),
                Msg::assistant(format!("Answer {i}.")),
            ]
        })
        .collect();
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    let reports = Arc::new(Mutex::new(Vec::new()));
    let observer = hook_fn({
        let reports = Arc::clone(&reports);
        move |event| {
            match event {
                HookEvent::PreCall(e) => {
                    e.extensions_mut().insert(CollectCompactionReports);
                }
                HookEvent::PreReasoning(e) => reports.lock().unwrap().push(
                    e.extensions()
                        .get::<agentscope::context::CompactionReport>()
                        .cloned()
                        .unwrap(),
                ),
                _ => {}
            }
            Ok(())
        }
    })
    .with_priority(ContextWindowHook::PRIORITY + 1)
    .with_interests(HookEventType::PreCall | HookEventType::PreReasoning);
    let agent = ReActAgent::builder()
        .name("assistant")
        .model(model)
        .memory(InMemoryMemory::with_messages(history))
        .hook(TracingHook::new())
        .hook(
            ContextWindowHook::new()
                .with_max_messages(3)
                .with_counter(EstimatedTokens::new()),
        )
        .hook(observer)
        .build()
        .unwrap();
    let spans = export(async {
        agent.call("And now?").await.unwrap();
    })
    .await;
    let report = reports.lock().unwrap()[0].clone();
    assert!(report.tokens_after < report.tokens_before, "{report:?}");
    assert_eq!(
        root(&spans)["events"],
        json!([{
            "name": "agentscope.context.compacted",
            "attributes": {
                "agentscope.context.tokens_before": report.tokens_before,
                "agentscope.context.tokens_after": report.tokens_after,
                "level": "INFO",
            },
        }])
    );
}

#[tokio::test]
async fn a_retry_and_a_fallback_are_events_on_the_chat_span() {
    let overloaded = || ModelError::Status {
        status: 503,
        message: "overloaded".into(),
        retry_after: Some(Duration::from_millis(3)),
    };
    let primary = ScriptedModel::new([
        ScriptedResponse::failure(overloaded()),
        ScriptedResponse::failure(overloaded()),
    ]);
    let backup =
        ScriptedModel::new([ScriptedResponse::text("From the backup.")]).with_name("backup");
    let model = primary
        .clone()
        .with_retry(RetryPolicy::new(1))
        .with_fallback(backup);
    let agent = ReActAgent::builder()
        .name("assistant")
        .model(model)
        .hook(TracingHook::new())
        .build()
        .unwrap();
    let spans = export(async {
        assert_eq!(agent.call("hi").await.unwrap().text(), "From the backup.");
    })
    .await;
    let root = root(&spans);
    assert_eq!(root["events"], json!([]));
    let chat = &root["children"][0];
    assert_eq!(chat["name"], "chat scripted-model");
    assert_eq!(
        chat["events"],
        json!([
            {"name": "agentscope.model.retry", "attributes": {
                "model": "scripted-model", "retry": 1, "max_retries": 1, "delay_ms": 3,
                "error.type": "503", "error": "HTTP 503: overloaded", "level": "WARN"}},
            {"name": "agentscope.model.fallback", "attributes": {
                "model": "scripted-model", "fallback": "backup", "error.type": "503",
                "error": "gave up after 2 attempts: HTTP 503: overloaded", "level": "WARN"}},
        ])
    );
    // The layers' own spans are DEBUG: not exported at the default level.
    assert_eq!(root["children"].as_array().unwrap().len(), 1);
    assert_eq!(chat["children"], json!([]));
}
