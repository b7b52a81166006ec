//! The sliding window (by messages, by tokens) and the hard limit: which messages reach the
//! model, with tool calls and their results kept or left out together, the latest user turn
//! and the most recent turn always kept, and memory never changed.

use agentscope::context::{ContextWindowHook, ContextWindows};
use agentscope::prelude::*;
use agentscope_test::tools::EchoTool;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::{
    ask, assistant, calls, compacted, exchanges, result, say, sent, tool_calls, tool_result, user,
};

/// q0, [c0 + result], a0, q1, [c1 c2 + two results], a1: ten messages with the new input.
fn history_with_tools() -> Vec<Msg> {
    vec![
        Msg::user("q0"),
        tool_calls(&[("c0", "echo", json!({"text": "a"}))]),
        tool_result("c0", "echo", "a"),
        Msg::assistant("a0"),
        Msg::user("q1"),
        tool_calls(&[
            ("c1", "echo", json!({"text": "b"})),
            ("c2", "echo", json!({"text": "c"})),
        ]),
        tool_result("c1", "echo", "b"),
        tool_result("c2", "echo", "c"),
        Msg::assistant("a1"),
    ]
}

fn agent_with(model: &ScriptedModel, history: Vec<Msg>, hook: ContextWindowHook) -> ReActAgent {
    compacted(model, history, hook)
        .sys_prompt("You are terse.")
        .toolkit(Toolkit::new().tool(EchoTool::new()))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_tool_batch_is_kept_or_left_out_whole() {
    let batch = calls(&[
        ("c1", "echo", json!({"text": "b"})),
        ("c2", "echo", json!({"text": "c"})),
    ]);
    for (max, expected) in [
        (
            5,
            vec![
                batch.clone(),
                result("c1", "echo", "b"),
                result("c2", "echo", "c"),
                assistant("a1"),
                user("q2"),
            ],
        ),
        // Four would split the batch: it goes whole.
        (4, vec![assistant("a1"), user("q2")]),
    ] {
        let model = ScriptedModel::new([ScriptedResponse::text("a2")]);
        let agent = agent_with(
            &model,
            history_with_tools(),
            ContextWindowHook::new().with_max_messages(max),
        );
        agent.call("q2").await.unwrap();
        let mut with_system = vec!["system: text \"You are terse.\"".to_owned()];
        with_system.extend(expected);
        assert_eq!(sent(&model, 0), with_system, "max_messages {max}");
        // Memory keeps everything.
        assert_eq!(agent.memory().len(), 11);
    }
}

/// A long tool loop after the user's question: the question stays, the most recent call and
/// its result stay, the calls in between are left out with their results.
#[tokio::test]
async fn the_latest_user_turn_and_the_last_turn_stay() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "echo", json!({"text": "1"})),
        ScriptedResponse::tool_call("c2", "echo", json!({"text": "2"})),
        ScriptedResponse::tool_call("c3", "echo", json!({"text": "3"})),
        ScriptedResponse::text("done"),
    ]);
    let history = vec![Msg::user("q0"), Msg::assistant("a0")];
    let agent = compacted(
        &model,
        history,
        ContextWindowHook::new().with_max_messages(3),
    )
    .toolkit(Toolkit::new().tool(EchoTool::new()))
    .build()
    .unwrap();
    assert_eq!(agent.call("q1").await.unwrap().text(), "done");
    let call = |id: &str, text: &str| calls(&[(id, "echo", json!({"text": text}))]);
    assert_eq!(sent(&model, 0), [user("q0"), assistant("a0"), user("q1")]);
    assert_eq!(
        sent(&model, 1),
        [user("q1"), call("c1", "1"), result("c1", "echo", "1")]
    );
    assert_eq!(
        sent(&model, 2),
        [user("q1"), call("c2", "2"), result("c2", "echo", "2")]
    );
    assert_eq!(
        sent(&model, 3),
        [user("q1"), call("c3", "3"), result("c3", "echo", "3")]
    );
    assert_eq!(agent.memory().len(), 10);
}

/// Eleven messages of 6 tokens (`EstimatedTokens`): a budget of 30 tokens sends the last
/// five, as does a window of 36 with `max_tokens` 6 reserved for the answer.
#[tokio::test]
async fn by_tokens_and_by_the_window() {
    let expected: Vec<String> = vec![
        user(&ask(3)),
        assistant(&say(3)),
        user(&ask(4)),
        assistant(&say(4)),
        user(&ask(5)),
    ];
    let budget = ContextWindowHook::new().with_max_input_tokens(30);
    let window =
        ContextWindowHook::new().with_windows(ContextWindows::empty().with("scripted-model", 36));
    for hook in [budget, window] {
        let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
        let agent = compacted(&model, exchanges(5), hook)
            .generate_options(GenerateOptions::default().max_tokens(6))
            .build()
            .unwrap();
        agent.call(ask(5).as_str()).await.unwrap();
        assert_eq!(sent(&model, 0), expected);
    }
    // Without the hard limit, the whole conversation goes to the provider.
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    let unlimited = ContextWindowHook::new()
        .with_windows(ContextWindows::empty().with("scripted-model", 36))
        .with_hard_limit(false);
    let agent = compacted(&model, exchanges(5), unlimited).build().unwrap();
    agent.call(ask(5).as_str()).await.unwrap();
    assert_eq!(sent(&model, 0).len(), 11);
}

/// Under every limit the hook sends memory unchanged: the very same messages.
#[tokio::test]
async fn under_the_limits_nothing_changes() {
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    let agent = agent_with(&model, history_with_tools(), ContextWindowHook::new());
    agent.call("q2").await.unwrap();
    let request = model.requests().remove(0);
    assert_eq!(request.messages[0].text(), "You are terse.");
    assert_eq!(request.messages[1..], agent.memory().messages()[..10]);
}

/// At the iteration limit the summary call's input (memory plus the hint) is compacted too;
/// the hint is the latest user turn.
#[tokio::test]
async fn the_summary_call_is_compacted_too() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "echo", json!({"text": "1"})),
        ScriptedResponse::text("summary"),
    ]);
    let agent = compacted(
        &model,
        exchanges(3),
        ContextWindowHook::new().with_max_messages(3),
    )
    .toolkit(Toolkit::new().tool(EchoTool::new()))
    .max_iters(1)
    .build()
    .unwrap();
    agent.call("q").await.unwrap();
    assert_eq!(
        sent(&model, 1),
        [
            calls(&[("c1", "echo", json!({"text": "1"}))]),
            result("c1", "echo", "1"),
            user(
                "You have failed to generate response within the maximum iterations. Now respond directly by summarizing the current situation."
            ),
        ]
    );
}
