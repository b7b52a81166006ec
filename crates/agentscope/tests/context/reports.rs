//! What the hook tells: a `CompactionReport` per model call (for every call, or for the
//! calls that ask), the `tracing` event with the tokens before and after, and its place in
//! the hook order.

use std::sync::{Arc, Mutex};

use agentscope::context::{CollectCompactionReports, CompactionReport, ContextWindowHook};
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};

use crate::support::warnings::TargetLog;
use crate::{ask, compacted, exchanges, say};

/// Records what the context hook reported at each model call (`None`: no report).
fn observer(seen: &Arc<Mutex<Vec<Option<CompactionReport>>>>) -> impl Hook + use<> {
    let seen = Arc::clone(seen);
    hook_fn(move |event| {
        if let HookEvent::PreReasoning(e) = event {
            seen.lock()
                .unwrap()
                .push(e.extensions().get::<CompactionReport>().cloned());
        }
        Ok(())
    })
    .with_priority(ContextWindowHook::PRIORITY + 1)
    .with_interests(HookEventType::PreReasoning)
}

/// Calls whose input says "report" ask for reports; the others get none.
#[tokio::test]
async fn reports_for_the_calls_that_ask() {
    let model = ScriptedModel::new([ScriptedResponse::text("ok"), ScriptedResponse::text("ok")]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let ask_for_reports = hook_fn(|event| {
        if let HookEvent::PreCall(e) = event
            && e.input_messages().iter().any(|m| m.text() == "report")
        {
            e.extensions_mut().insert(CollectCompactionReports);
        }
        Ok(())
    })
    .with_interests(HookEventType::PreCall);
    let agent = compacted(
        &model,
        exchanges(4),
        ContextWindowHook::new().with_max_messages(3),
    )
    .hook(ask_for_reports)
    .hook(observer(&seen))
    .build()
    .unwrap();
    agent.call("plain").await.unwrap();
    let memory = agent.memory().messages();
    agent.call("report").await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], None);
    let report = seen[1].clone().unwrap();
    // 11 messages: the oldest 8 are left out, 3 go out ("plain", "ok", "report": 6 + 5 + 6
    // tokens; the exchanges cost 6 each).
    let dropped: Vec<_> = memory[..8].iter().map(|m| m.id.clone()).collect();
    assert_eq!(report.model, "scripted-model");
    assert_eq!(report.window, 128_000);
    assert_eq!(
        (report.tokens_before, report.tokens_after),
        (8 * 6 + 17, 17)
    );
    assert_eq!((report.messages_before, report.messages_after), (11, 3));
    assert!(!report.used_reported_usage && !report.forced);
    assert_eq!(report.dropped, dropped);
    assert!(report.summarized.is_empty() && report.truncated.is_empty());
    assert_eq!(
        (report.summary.as_ref(), report.summary_error.as_ref()),
        (None, None)
    );
    assert!(report.changed());
}

/// Every model call emits an event with the tokens before and after (INFO when the input
/// changed, DEBUG otherwise).
#[tokio::test]
async fn tracing_events_carry_the_tokens() {
    let log = TargetLog::global("agentscope::context");
    let model = ScriptedModel::new([ScriptedResponse::text("ok"), ScriptedResponse::text("ok")]);
    let hook = ContextWindowHook::new().with_max_input_tokens(30);
    let agent = compacted(&model, exchanges(5), hook).build().unwrap();
    agent.call(ask(5).as_str()).await.unwrap();
    agent.memory().clear();
    agent.call(say(0).as_str()).await.unwrap();
    assert_eq!(
        log.lines(),
        [
            "INFO message=context compacted hook=context_window model=scripted-model window=128000 \
             tokens_before=66 tokens_after=30 messages_before=11 messages_after=5 dropped=6 \
             summarized=0 truncated=0 forced=false",
            "DEBUG message=context within limits hook=context_window model=scripted-model \
             window=128000 tokens_before=6 tokens_after=6 messages_before=1 messages_after=1 \
             dropped=0 summarized=0 truncated=0 forced=false",
        ]
    );
}

#[test]
fn the_hook_shows_in_the_hook_order() {
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .hook(ContextWindowHook::new())
        .build()
        .unwrap();
    let order = agent.hook_order();
    let info = order
        .iter()
        .find(|hook| hook.name == ContextWindowHook::NAME)
        .unwrap();
    assert_eq!(info.priority, 800);
    assert_eq!(
        info.interests,
        HookEventType::PreCall | HookEventType::PreReasoning | HookEventType::PreSummary
    );
}
