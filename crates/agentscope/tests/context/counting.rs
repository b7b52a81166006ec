//! Token counting: the tokenizer's exact counts, what a message costs, model windows, and
//! the provider's reported usage preferred over counting inside an agent.

use agentscope::context::{
    CompactionReport, ContextWindowHook, ContextWindows, EstimatedTokens, InputTokens, Summarizer,
    TokenCounter,
};
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;
use std::sync::{Arc, Mutex};

use crate::{assistant, compacted, sent, user};

#[cfg(feature = "tiktoken")]
#[test]
fn the_tokenizer_counts_like_openai() {
    use agentscope::context::{Encoding, TOOL_BLOCK_OVERHEAD, TiktokenCounter, default_counter};

    let o200k = TiktokenCounter::for_model("gpt-4o");
    let cl100k = TiktokenCounter::for_model("gpt-4");
    assert_eq!(
        (o200k.encoding(), cl100k.encoding()),
        (Encoding::O200kBase, Encoding::Cl100kBase)
    );
    // The examples of OpenAI's tiktoken cookbook.
    assert_eq!(cl100k.count_text("tiktoken is great!"), 6);
    assert_eq!(o200k.count_text("tiktoken is great!"), 6);
    assert_eq!(cl100k.count_text("hello world"), 2);
    // A message: the overhead, the text, and for a tool call its name and JSON arguments.
    let call = Msg::builder()
        .role(Role::Assistant)
        .block(ToolUseBlock::new(
            "c1",
            "search",
            json!({"q": "hello world"}),
        ))
        .build();
    let arguments = o200k.count_text(r#"{"q":"hello world"}"#);
    assert_eq!(
        o200k.count_message(&call),
        4 + TOOL_BLOCK_OVERHEAD + o200k.count_text("search") + arguments
    );
    let result = Msg::tool_result(ToolResultBlock::text("c1", "search", "hello world"));
    assert_eq!(
        o200k.count_message(&result),
        4 + TOOL_BLOCK_OVERHEAD + o200k.count_text("search") + 2
    );
    // Counters by model name: the default one is the model's tokenizer.
    assert_eq!(
        default_counter("gpt-4.1-mini").count_text("tiktoken is great!"),
        6
    );
    // Loaded once: a second counter shares the vocabulary (and counts the same).
    assert_eq!(
        TiktokenCounter::new(Encoding::O200kBase).count_text("hello world"),
        2
    );
}

#[test]
fn estimates_and_windows() {
    let counter = EstimatedTokens::new();
    assert_eq!(counter.count_messages(&crate::exchanges(3)), 6 * 6);
    let windows = ContextWindows::new().with("scripted-model", 1_000);
    assert_eq!(windows.window_for("scripted-model"), 1_000);
    assert_eq!(windows.window_for("gpt-4o-mini"), 128_000);
    assert_eq!(windows.window_for("gpt-5-mini"), 400_000);
    assert_eq!(windows.window_for("o3-mini"), 200_000);
    assert_eq!(windows.window_for("gpt-3.5-turbo-0125"), 16_385);
}

#[test]
fn reported_usage_covers_everything_up_to_its_message() {
    let counter = EstimatedTokens::new();
    let mut first = Msg::assistant("say 0000");
    first.metadata.insert(
        "usage".into(),
        json!({"input_tokens": 50, "output_tokens": 5}),
    );
    let mut second = Msg::assistant("say 0001");
    second.metadata.insert(
        "usage".into(),
        json!({"input_tokens": 70, "output_tokens": 6}),
    );
    let messages = [
        Msg::user("ask 0000"),
        first,
        Msg::user("ask 0001"),
        second,
        Msg::user("ask 0002"),
    ];
    // The last message with usage counts; the system message is part of its input tokens.
    let measured = InputTokens::count_with_usage(&counter, Some(&Msg::system("sys")), &messages);
    assert_eq!(
        (measured.total, measured.reported, measured.anchor),
        (76 + 6, 76, Some(3))
    );
    assert_eq!(InputTokens::count(&counter, None, &messages).total, 5 * 6);
}

/// Makes one call per input of an agent over `history` compacted by `hook` (reports on), and
/// returns the reports of the context hook at every model call.
async fn reported(
    model: &ScriptedModel,
    history: Vec<Msg>,
    hook: ContextWindowHook,
    inputs: [&str; 2],
) -> Vec<CompactionReport> {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let collect = {
        let reports = Arc::clone(&reports);
        hook_fn(move |event| {
            if let HookEvent::PreReasoning(e) = event
                && let Some(report) = e.extensions().get::<CompactionReport>()
            {
                reports.lock().unwrap().push(report.clone());
            }
            Ok(())
        })
        .with_priority(900)
        .with_interests(HookEventType::PreReasoning)
    };
    let agent = compacted(model, history, hook.with_reports(true))
        .hook(collect)
        .build()
        .unwrap();
    for input in inputs {
        agent.call(input).await.unwrap();
    }
    reports.lock().unwrap().clone()
}

/// The provider said the last request took 900 input tokens: with a window of 1,000 and a
/// threshold of 85%, the next input is summarised although counting gives 30 tokens.
#[tokio::test]
async fn the_providers_usage_is_preferred_to_counting() {
    for with_usage in [true, false] {
        let model = ScriptedModel::new([
            if with_usage {
                ScriptedResponse::text("say 0000").with_usage(900, 10)
            } else {
                ScriptedResponse::text("say 0000")
            },
            ScriptedResponse::text("say 0001"),
        ]);
        let summarizer = ScriptedModel::new([ScriptedResponse::text("The user asked once.")]);
        let hook = ContextWindowHook::new()
            .with_windows(ContextWindows::empty().with("scripted-model", 1_000))
            .with_summarizer(Summarizer::new(summarizer.clone()).with_keep_recent(1));
        let reports = reported(&model, Vec::new(), hook, ["ask 0000", "ask 0001"]).await;
        assert_eq!(reports.len(), 2);
        assert!(!reports[0].used_reported_usage);
        assert_eq!(reports[0].tokens_before, 6);
        if with_usage {
            assert!(reports[1].used_reported_usage);
            assert_eq!(reports[1].tokens_before, 910 + 6);
            assert_eq!(summarizer.request_count(), 1);
            let summary =
                "[Summary of the 2 earlier messages of this conversation]\nThe user asked once.";
            assert_eq!(sent(&model, 1), [user(summary), user("ask 0001")]);
        } else {
            assert!(!reports[1].used_reported_usage);
            assert_eq!(reports[1].tokens_before, 18);
            assert_eq!(summarizer.request_count(), 0);
            assert_eq!(
                sent(&model, 1),
                [user("ask 0000"), assistant("say 0000"), user("ask 0001")]
            );
        }
    }
}

/// Usage measures the input that was sent: when the input before the reply is no longer the
/// same (here the sliding window left out a different part), the hook counts instead.
#[tokio::test]
async fn usage_of_another_input_is_not_used() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("say 0002").with_usage(5_000, 10),
        ScriptedResponse::text("say 0003"),
    ]);
    let hook = ContextWindowHook::new().with_max_messages(3);
    let reports = reported(&model, crate::exchanges(2), hook, ["ask 0002", "ask 0003"]).await;
    // First input: 5 messages, 2 left out; second: 7 messages, the reply's usage measured
    // [ask 0001, say 0001, ask 0002], but the input now starts at ask 0002.
    assert_eq!(
        sent(&model, 0),
        [user("ask 0001"), assistant("say 0001"), user("ask 0002")]
    );
    assert_eq!(
        sent(&model, 1),
        [user("ask 0002"), assistant("say 0002"), user("ask 0003")]
    );
    assert!(!reports[1].used_reported_usage);
    assert_eq!(reports[1].tokens_before, 7 * 6);
    assert_eq!(reports[1].tokens_after, 3 * 6);
}
