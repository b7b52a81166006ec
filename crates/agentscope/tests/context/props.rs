//! The property every compaction keeps, for random conversations (user turns, answers, tool
//! batches with results of any size, an earlier summary) and random settings (sliding
//! windows by messages and tokens, tool-result previews, summaries, windows, forced
//! compaction): no tool call is sent without its result nor a result without its call,
//! messages keep memory's order, the system message and the latest user turn are always
//! sent, and every message sent is memory's message (tool results possibly as previews) or
//! the one summary, first.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use agentscope::context::{
    ContextWindowHook, ContextWindows, EstimatedTokens, SUMMARY_MESSAGE_NAME, Summarizer,
    ToolResultLimit,
};
use agentscope::prelude::*;
use agentscope::session::HookState;
use agentscope::{AgentInfo, HookChain};
use agentscope_core::engine::{self, CallContext, EventParts, events};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::executor::block_on;
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Turn {
    User(usize),
    Assistant(usize),
    /// A batch of tool calls with the lengths of their results; `true`: the results come in
    /// one message.
    Tools(Vec<usize>, bool),
}

fn turn() -> impl Strategy<Value = Turn> {
    let len = prop_oneof![4 => 0usize..80, 1 => 200usize..3_000];
    prop_oneof![
        3 => (0usize..80).prop_map(Turn::User),
        2 => (0usize..80).prop_map(Turn::Assistant),
        3 => (prop::collection::vec(len, 1..4), any::<bool>())
            .prop_map(|(results, joined)| Turn::Tools(results, joined)),
    ]
}

#[derive(Debug, Clone)]
struct Settings {
    max_messages: Option<usize>,
    max_tokens: Option<usize>,
    window: usize,
    hard_limit: bool,
    tool_limit: Option<(usize, usize)>,
    summarizer: Option<(f32, usize)>,
    forced: bool,
    /// An earlier summary through this message (an index into the conversation).
    earlier_summary: Option<usize>,
}

prop_compose! {
    fn settings()(
        max_messages in prop::option::of(0usize..12),
        max_tokens in prop::option::of(0usize..400),
        window in 20usize..1_500,
        hard_limit in any::<bool>(),
        tool_limit in prop::option::of((20usize..300, 0usize..40)),
        summarizer in prop::option::of((0.05f32..1.0, 0usize..8)),
        forced in any::<bool>(),
        earlier_summary in prop::option::of(0usize..40),
    ) -> Settings {
        Settings {
            max_messages, max_tokens, window, hard_limit, tool_limit, summarizer, forced,
            earlier_summary,
        }
    }
}

fn conversation(turns: &[Turn]) -> Vec<Msg> {
    let mut messages = Vec::new();
    let mut next_call = 0;
    for turn in turns {
        match turn {
            Turn::User(len) => messages.push(Msg::user("u".repeat(*len))),
            Turn::Assistant(len) => messages.push(Msg::assistant("a".repeat(*len))),
            Turn::Tools(results, joined) => {
                let ids: Vec<String> = results
                    .iter()
                    .map(|_| {
                        next_call += 1;
                        format!("c{next_call}")
                    })
                    .collect();
                let mut call = Msg::builder().role(Role::Assistant).name("assistant");
                for id in &ids {
                    call = call.block(ToolUseBlock::new(id.as_str(), "t", json!({"n": 1})));
                }
                messages.push(call.build());
                let blocks: Vec<ToolResultBlock> = ids
                    .iter()
                    .zip(results)
                    .map(|(id, len)| ToolResultBlock::text(id.as_str(), "t", "r".repeat(*len)))
                    .collect();
                if *joined {
                    let blocks = blocks.into_iter().map(ContentBlock::ToolResult);
                    messages.push(Msg::new(Role::Tool, "t", blocks.collect()));
                } else {
                    messages.extend(blocks.into_iter().map(Msg::tool_result));
                }
            }
        }
    }
    messages
}

fn is_user_turn(message: &Msg) -> bool {
    message.role == Role::User
        && message
            .content
            .iter()
            .any(|block| !matches!(block, ContentBlock::ToolResult(_)))
}

/// What the hook sends for `input` with `settings`.
fn compact(input: &[Msg], settings: &Settings) -> (Vec<Msg>, Option<Msg>) {
    let mut hook = ContextWindowHook::new()
        .with_windows(ContextWindows::empty().with("m", settings.window))
        .with_counter(EstimatedTokens::new())
        .with_hard_limit(settings.hard_limit);
    if let Some(max) = settings.max_messages {
        hook = hook.with_max_messages(max);
    }
    if let Some(max) = settings.max_tokens {
        hook = hook.with_max_input_tokens(max);
    }
    if let Some((max, preview)) = settings.tool_limit {
        hook = hook.with_tool_result_limit(ToolResultLimit::new(max, preview));
    }
    if let Some((threshold, keep)) = settings.summarizer {
        let model = ScriptedModel::new([ScriptedResponse::text("S")]).cycling();
        hook = hook.with_summarizer(
            Summarizer::new(model)
                .with_threshold(threshold)
                .with_keep_recent(keep),
        );
    }
    let mut chain = HookChain::new();
    chain.push(hook);
    let mut call = CallContext::new(Arc::new(AgentInfo::new("assistant", "a1")));
    let mut stored = serde_json::Map::new();
    if let Some(at) = settings.earlier_summary.filter(|at| *at < input.len()) {
        stored.insert(
            ContextWindowHook::NAME.into(),
            json!({"summary": {"through": input[at].id.as_str(), "messages": at + 1, "text": "old"}}),
        );
    }
    call.extensions_mut().insert(HookState::new(stored));
    let system = Msg::system("sys");
    let info = Arc::clone(call.info());
    let make = |forced: bool| {
        let mut event = events::pre_reasoning(
            &info,
            input.to_vec(),
            Some(system.clone()),
            "m",
            GenerateOptions::default(),
            0,
        );
        if forced {
            events::mark_context_exceeded(&mut event);
        }
        event
    };
    let first = make(false);
    let mut event = block_on(engine::chain(&chain, first, &mut call)).unwrap();
    if settings.forced {
        let retry = make(true);
        event = block_on(engine::chain(&chain, retry, &mut call)).unwrap();
    }
    let (messages, system, _) = event.into_parts();
    (messages, system)
}

fn check(input: &[Msg], output: &[Msg], system: Option<&Msg>) -> Result<(), TestCaseError> {
    prop_assert_eq!(system.map(Msg::text), Some("sys".to_owned()));
    let position: HashMap<&str, usize> = input
        .iter()
        .enumerate()
        .map(|(at, message)| (message.id.as_str(), at))
        .collect();
    // Memory's messages in memory's order, the summary only first.
    let mut last = None;
    for (at, message) in output.iter().enumerate() {
        if message.id.starts_with("summary:") {
            prop_assert_eq!(at, 0);
            prop_assert_eq!(message.name.as_str(), SUMMARY_MESSAGE_NAME);
            continue;
        }
        let Some(&index) = position.get(message.id.as_str()) else {
            return Err(TestCaseError::fail(format!(
                "unknown message {}",
                message.id
            )));
        };
        prop_assert!(last.is_none_or(|last| index > last), "reordered");
        last = Some(index);
        let original = &input[index];
        prop_assert_eq!(message.role, original.role);
        prop_assert_eq!(message.content.len(), original.content.len());
        for (sent, block) in message.content.iter().zip(original.content.iter()) {
            match (sent, block) {
                (ContentBlock::ToolResult(sent), ContentBlock::ToolResult(block))
                    if sent != block =>
                {
                    prop_assert_eq!(&sent.id, &block.id);
                    let note = format!("stashed as \"{}\"", block.id);
                    prop_assert!(sent.text_output().contains(&note));
                }
                _ => prop_assert_eq!(sent, block),
            }
        }
    }
    // Calls and results travel together.
    let calls_in = |messages: &[Msg]| -> HashSet<String> {
        messages
            .iter()
            .flat_map(|m| m.tool_uses().into_iter().map(|c| c.id.to_string()))
            .collect()
    };
    let results_in = |messages: &[Msg]| -> HashSet<String> {
        messages
            .iter()
            .flat_map(|m| m.tool_results().into_iter().map(|r| r.id.to_string()))
            .collect()
    };
    let (calls, results) = (calls_in(output), results_in(output));
    prop_assert_eq!(&calls, &results, "a call without its result or the reverse");
    // The latest user turn is sent.
    if let Some(user) = input.iter().rposition(is_user_turn) {
        prop_assert!(
            output.iter().any(|m| m.id == input[user].id),
            "latest user turn dropped"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn compaction_keeps_pairs_order_and_the_latest_user_turn(
        turns in prop::collection::vec(turn(), 1..30),
        settings in settings(),
    ) {
        let input = conversation(&turns);
        let (output, system) = compact(&input, &settings);
        check(&input, &output, system.as_ref())?;
    }
}
