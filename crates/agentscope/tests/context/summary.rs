//! Summaries of the oldest turns: made when the input reaches the threshold, used without a
//! model call at later steps, rolled forward when the threshold is reached again, recorded
//! so that a reloaded session sends the very same input; a failing summary model; and the
//! forced compaction after the provider refused an input as too long (an agent whose model
//! refuses once, and events built by hand with `with_context_exceeded()`).

use std::sync::Arc;

use agentscope::context::{
    CompactionReport, ContextWindowHook, ContextWindows, EstimatedTokens, Summarizer,
};
use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, JsonFileSessionStore, SessionStore};
use agentscope::{AgentInfo, HookChain, InMemoryMemory, ModelError};
use agentscope_core::engine::{self, CallContext, EventParts, events};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::{ask, assistant, compacted, exchanges, say, sent, user};

fn summary_text(messages: usize, text: &str) -> String {
    format!("[Summary of the {messages} earlier messages of this conversation]\n{text}")
}

/// A window of 100 tokens, summaries at 85, the 2 most recent messages kept; messages cost
/// 6 tokens each.
fn summarising_hook(summarizer: &ScriptedModel) -> ContextWindowHook {
    ContextWindowHook::new()
        .with_windows(ContextWindows::empty().with("scripted-model", 100))
        .with_counter(EstimatedTokens::new())
        .with_summarizer(Summarizer::new(summarizer.clone()).with_keep_recent(2))
}

/// The agent's answers: `say 0006`, `say 0007`, ...
fn answers(from: usize, to: usize) -> Vec<ScriptedResponse> {
    (from..to).map(|i| ScriptedResponse::text(say(i))).collect()
}

#[tokio::test]
async fn summaries_are_made_at_the_threshold_and_reused() {
    let model = ScriptedModel::new(answers(6, 13));
    let summarizer =
        ScriptedModel::new([ScriptedResponse::text("S1"), ScriptedResponse::text("S2")]);
    let hook = summarising_hook(&summarizer);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .memory(InMemoryMemory::with_messages(exchanges(6)))
        .hook(hook.clone())
        .build()
        .unwrap();
    let mut summaries = Vec::new();
    for i in 6..13 {
        agent.call(ask(i).as_str()).await.unwrap();
        summaries.push(summarizer.request_count());
    }
    // 78 tokens, then 90: summarised; then at 19 (the summary) + 6 per message until 91.
    assert_eq!(summaries, [0, 1, 1, 1, 1, 1, 2]);
    assert_eq!(sent(&model, 0).len(), 13);
    assert_eq!(
        sent(&model, 1),
        [
            user(&summary_text(13, "S1")),
            assistant(&say(6)),
            user(&ask(7))
        ]
    );
    assert_eq!(
        sent(&model, 2),
        [
            user(&summary_text(13, "S1")),
            assistant(&say(6)),
            user(&ask(7)),
            assistant(&say(7)),
            user(&ask(8)),
        ]
    );
    assert_eq!(
        sent(&model, 6),
        [
            user(&summary_text(23, "S2")),
            assistant(&say(11)),
            user(&ask(12))
        ]
    );
    // What the summary model got: the transcript, then the earlier summary and what followed.
    let first: Vec<String> = (0..6)
        .flat_map(|i| {
            [
                format!("user: {}", ask(i)),
                format!("assistant: {}", say(i)),
            ]
        })
        .chain([format!("user: {}", ask(6))])
        .collect();
    let requests = summarizer.requests();
    assert_eq!(
        requests[0].messages[1].text(),
        format!("Conversation:\n{}", first.join("\n"))
    );
    let second: Vec<String> = (6..11)
        .flat_map(|i| {
            [
                format!("assistant: {}", say(i)),
                format!("user: {}", ask(i + 1)),
            ]
        })
        .collect();
    assert_eq!(
        requests[1].messages[1].text(),
        format!(
            "Summary of the conversation before:\nS1\n\nConversation:\n{}",
            second.join("\n")
        )
    );
    // Without a session the record stays with the hook, by agent.
    let record = hook.summary(agent.id()).unwrap();
    assert_eq!((record.messages, record.text.as_str()), (23, "S2"));
    assert_eq!(record.through, agent.memory().messages()[22].id.as_str());
    assert_eq!(agent.memory().len(), 26);
}

/// The summary is recorded in the session: another agent (another process) loading it sends
/// the same summary message, the same id and time included, without calling its summary
/// model.
#[tokio::test]
async fn a_reloaded_session_sends_the_same_input() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonFileSessionStore::new(dir.path());
    let state = AgentState::new(AgentIdentity::new("assistant", "seed"), exchanges(6));

    let model = ScriptedModel::new(answers(6, 9));
    let summarizer = ScriptedModel::new([ScriptedResponse::text("S1")]);
    let first = ReActAgent::builder()
        .model(model.clone())
        .state(state)
        .hook(summarising_hook(&summarizer))
        .session(store.clone(), "chat")
        .build()
        .unwrap();
    for i in 6..9 {
        first.call(ask(i).as_str()).await.unwrap();
    }
    assert_eq!(summarizer.request_count(), 1);
    let saved = store.load("chat").await.unwrap().unwrap();
    let through = saved.messages[12].id.to_string();
    assert_eq!(
        saved.hooks[ContextWindowHook::NAME]["summary"],
        json!({"through": through, "messages": 13, "text": "S1"})
    );

    let model_b = ScriptedModel::new(answers(9, 10));
    let summarizer_b = ScriptedModel::new([]);
    let second = ReActAgent::builder()
        .model(model_b.clone())
        .hook(summarising_hook(&summarizer_b))
        .session(store, "chat")
        .build()
        .unwrap();
    second.call(ask(9).as_str()).await.unwrap();
    assert_eq!(summarizer_b.request_count(), 0);
    // The same messages as the first agent's last request, ids and times included, then
    // what followed.
    let before = &model.requests()[2].messages;
    let after = &model_b.requests()[0].messages;
    assert_eq!(before.len(), 5);
    assert_eq!(after[..5], before[..]);
    assert_eq!(after[0].id, format!("summary:{through}").as_str());
    assert_eq!(sent(&model_b, 0)[5..], [assistant(&say(8)), user(&ask(9))]);
}

#[tokio::test]
async fn a_failing_summary_model_leaves_the_input_whole() {
    let model = ScriptedModel::new(answers(7, 8));
    let summarizer = ScriptedModel::new([ScriptedResponse::error("overloaded")]);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .memory(InMemoryMemory::with_messages(exchanges(7)))
        .hook(summarising_hook(&summarizer).with_reports(true))
        .hook(
            hook_fn(|event| {
                if let HookEvent::PreReasoning(e) = event {
                    let report = e.extensions().get::<CompactionReport>().unwrap();
                    assert_eq!(report.summary_error.as_deref(), Some("overloaded"));
                    assert_eq!((report.tokens_before, report.tokens_after), (90, 90));
                }
                Ok(())
            })
            .with_priority(900),
        )
        .build()
        .unwrap();
    agent.call(ask(7).as_str()).await.unwrap();
    assert_eq!(summarizer.request_count(), 1);
    assert_eq!(sent(&model, 0).len(), 15);
}

/// The model refuses the first request as too long: the engine runs PreReasoning again with
/// `context_exceeded()` set, and the hook summarises although the threshold is far.
#[tokio::test]
async fn a_refused_input_is_compacted_and_retried() {
    let model = ScriptedModel::new([
        ScriptedResponse::failure(ModelError::Status {
            status: 400,
            message: "This model's maximum context length is 8192 tokens (context_length_exceeded)"
                .into(),
            retry_after: None,
        }),
        ScriptedResponse::text("ok"),
    ]);
    let summarizer = ScriptedModel::new([ScriptedResponse::text("S")]);
    let hook = ContextWindowHook::new()
        .with_summarizer(Summarizer::new(summarizer.clone()).with_keep_recent(4));
    let agent = compacted(&model, exchanges(5), hook).build().unwrap();
    assert_eq!(agent.call(ask(5).as_str()).await.unwrap().text(), "ok");
    assert_eq!(sent(&model, 0).len(), 11);
    assert_eq!(
        sent(&model, 1),
        [user(&summary_text(10, "S")), user(&ask(5))]
    );
}

/// Feeds PreReasoning events of one call through a chain holding `hook`.
struct Calls {
    chain: HookChain,
    agent: Arc<AgentInfo>,
}

impl Calls {
    fn new(hook: &ContextWindowHook) -> Self {
        let mut chain = HookChain::new();
        chain.push(hook.clone());
        Self {
            chain,
            agent: Arc::new(AgentInfo::new("assistant", "agent-1")),
        }
    }

    fn call(&self) -> CallContext {
        CallContext::new(Arc::clone(&self.agent))
    }

    /// One PreReasoning of `call`: the messages sent and the report.
    async fn reason(
        &self,
        call: &mut CallContext,
        input: &[Msg],
        forced: bool,
    ) -> (Vec<String>, CompactionReport) {
        let mut event = events::pre_reasoning(
            call.info(),
            input.to_vec(),
            None,
            "m",
            GenerateOptions::default(),
            0,
        );
        if forced {
            events::mark_context_exceeded(&mut event);
        }
        let event = engine::chain(&self.chain, event, call).await.unwrap();
        let report = call.extensions().get::<CompactionReport>().unwrap().clone();
        let (messages, _, _) = event.into_parts();
        (
            messages
                .iter()
                .map(crate::support::describe::brief::describe)
                .collect(),
            report,
        )
    }
}

#[tokio::test]
async fn a_forced_compaction_summarises_and_learns_the_window() {
    let summarizer = ScriptedModel::new([ScriptedResponse::text("S")]);
    let hook = ContextWindowHook::new()
        .with_windows(ContextWindows::empty().with("m", 1_000))
        .with_counter(EstimatedTokens::new())
        .with_summarizer(Summarizer::new(summarizer.clone()).with_keep_recent(2))
        .with_reports(true);
    let calls = Calls::new(&hook);
    let mut input = exchanges(5);
    input.push(Msg::user(ask(5)));
    let mut call = calls.call();

    let (first, report) = calls.reason(&mut call, &input, false).await;
    assert_eq!(first.len(), 11);
    assert_eq!(
        (report.tokens_after, report.window, report.forced),
        (66, 1_000, false)
    );

    // The retry: summarised up to the latest user turn, keep_recent notwithstanding; the
    // window is now 90% of the refused 66 tokens.
    let (retry, report) = calls.reason(&mut call, &input, true).await;
    assert_eq!(retry, [user(&summary_text(10, "S")), user(&ask(5))]);
    assert!(report.forced);
    assert_eq!(report.window, 59);
    assert_eq!(report.tokens_before, 66);
    assert_eq!(report.tokens_after, 19 + 6);
    let ids: Vec<_> = input[..10].iter().map(|m| m.id.clone()).collect();
    assert_eq!(report.summarized, ids);
    assert!(report.summary.as_ref().unwrap().fresh);

    // The next call keeps the learned window and the summary, without a model call.
    input.extend([Msg::assistant(say(5)), Msg::user(ask(6))]);
    let (next, report) = calls.reason(&mut calls.call(), &input, false).await;
    assert_eq!(
        next,
        [
            user(&summary_text(10, "S")),
            user(&ask(5)),
            assistant(&say(5)),
            user(&ask(6)),
        ]
    );
    assert_eq!((report.window, report.forced), (59, false));
    assert!(!report.summary.as_ref().unwrap().fresh);
    assert_eq!(summarizer.request_count(), 1);
}

#[tokio::test]
async fn a_forced_compaction_without_summarizer_slides_to_half_the_window() {
    let hook = ContextWindowHook::new()
        .with_windows(ContextWindows::empty().with("m", 1_000))
        .with_counter(EstimatedTokens::new())
        .with_reports(true);
    let calls = Calls::new(&hook);
    let mut input = exchanges(5);
    input.push(Msg::user(ask(5)));
    let mut call = calls.call();
    calls.reason(&mut call, &input, false).await;
    let (retry, report) = calls.reason(&mut call, &input, true).await;
    // Half of the learned 59 tokens: 4 messages of 6.
    assert_eq!(
        retry,
        [
            assistant(&say(3)),
            user(&ask(4)),
            assistant(&say(4)),
            user(&ask(5))
        ]
    );
    assert_eq!((report.window, report.tokens_after), (59, 24));
    let dropped: Vec<_> = input[..7].iter().map(|m| m.id.clone()).collect();
    assert_eq!(report.dropped, dropped);
}
