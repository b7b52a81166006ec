//! Long-term memory: recalled at PreCall into this call's system message (never stored in the
//! agent's memory), recorded at PostCall (the call's input and final reply), and its
//! failures never fail the call.

use std::sync::{Arc, Mutex};

use crate::support::describe::brief::{describe, memory_of};
use crate::support::describe::system_texts;
use crate::support::warnings::Warnings;
use agentscope::hooks::{
    InMemoryLongTermMemory, LongTermMemory, LongTermMemoryError, StaticLongTermMemoryHook,
};
use agentscope::prelude::*;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;
use tracing_subscriber::Registry;
use tracing_subscriber::layer::SubscriberExt;

const HEADER: &str = "## Long-term memory\n\
What you remember from earlier conversations that may be relevant to the user's latest \
message:";

const PROMPT: &str = "You are a friendly assistant.";

fn agent(model: &ScriptedModel, hook: StaticLongTermMemoryHook) -> ReActAgent {
    ReActAgent::builder()
        .sys_prompt(PROMPT)
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(hook)
        .build()
        .unwrap()
}

fn sys(extra: Option<&str>) -> Vec<String> {
    std::iter::once(PROMPT)
        .chain(extra)
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn what_one_agent_recorded_another_recalls() {
    let ltm = InMemoryLongTermMemory::new();

    let model_a = ScriptedModel::new([ScriptedResponse::text("Noted.")]);
    let first = agent(&model_a, StaticLongTermMemoryHook::new(ltm.clone()));
    first.call("My favourite colour is teal.").await.unwrap();
    assert_eq!(system_texts(&model_a), [sys(None)]);
    assert_eq!(
        ltm.entries(),
        ["user: My favourite colour is teal.", "assistant: Noted."]
    );

    // A new conversation (empty agent memory) over the same long-term memory.
    let model_b = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "1 + 1"})),
        ScriptedResponse::text("Teal."),
    ]);
    let second = agent(&model_b, StaticLongTermMemoryHook::new(ltm.clone()));
    second.call("What is my favourite colour?").await.unwrap();
    let recalled = format!("{HEADER}\n- user: My favourite colour is teal.");
    // Both reasoning steps of the call see it, once.
    assert_eq!(
        system_texts(&model_b),
        [sys(Some(&recalled)), sys(Some(&recalled))]
    );
    // The agent's memory has no trace of it.
    assert_eq!(
        memory_of(&second),
        [
            "user: text \"What is my favourite colour?\"",
            "assistant: tool_use c1 calculator {\"expression\":\"1 + 1\"}",
            "tool: tool_result c1 calculator \"2\"",
            "assistant: text \"Teal.\"",
        ]
    );
    // Only the input and the final reply are recorded, not the tool engine.
    assert_eq!(
        ltm.entries(),
        [
            "user: My favourite colour is teal.",
            "assistant: Noted.",
            "user: What is my favourite colour?",
            "assistant: Teal.",
        ]
    );
}

#[tokio::test]
async fn top_k_and_header_shape_the_recall() {
    let ltm = InMemoryLongTermMemory::new();
    ltm.record(vec![
        Msg::user("cats sleep a lot"),
        Msg::user("dogs bark"),
        Msg::user("cats"),
        Msg::user("cats purr"),
    ])
    .await
    .unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    let hook = StaticLongTermMemoryHook::new(ltm.clone())
        .with_top_k(2)
        .with_header("Memories:");
    agent(&model, hook).call("cats?").await.unwrap();
    // Shorter entries score higher for the same term (BM25 length normalisation).
    assert_eq!(
        system_texts(&model),
        [sys(Some("Memories:\n- user: cats\n- user: cats purr"))]
    );
}

/// Records what it is given and answers with a fixed result.
#[derive(Clone, Default)]
struct Probe {
    fail: bool,
    queries: Arc<Mutex<Vec<(String, usize)>>>,
    recorded: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Probe {
    fn failing() -> Self {
        Self {
            fail: true,
            ..Self::default()
        }
    }

    fn recorded(&self) -> Vec<Vec<String>> {
        self.recorded.lock().unwrap().clone()
    }

    fn queries(&self) -> Vec<(String, usize)> {
        self.queries.lock().unwrap().clone()
    }
}

impl LongTermMemory for Probe {
    async fn record(&self, messages: Vec<Msg>) -> Result<(), LongTermMemoryError> {
        self.recorded
            .lock()
            .unwrap()
            .push(messages.iter().map(describe).collect());
        if self.fail {
            Err(LongTermMemoryError::msg("disk full"))
        } else {
            Ok(())
        }
    }

    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<String>, LongTermMemoryError> {
        self.queries.lock().unwrap().push((query.to_owned(), k));
        if self.fail {
            Err(LongTermMemoryError::msg("connection refused"))
        } else {
            Ok(vec!["the user is called Ada".to_owned()])
        }
    }
}

#[tokio::test]
async fn failures_never_fail_the_call() {
    let probe = Probe::failing();
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let agent = agent(&model, StaticLongTermMemoryHook::new(probe.clone()));

    // `#[tokio::test]` runs on one thread, so the thread-local default sees the hook's logs.
    let warnings = Warnings::default();
    let _default = tracing::subscriber::set_default(Registry::default().with(warnings.clone()));
    let reply = agent.call("hello").await.unwrap();

    assert_eq!(
        warnings.lines(),
        [
            "message=long-term memory retrieval failed; the call goes on without it agent=assistant error=connection refused",
            "message=recording to long-term memory failed; the call is not affected agent=assistant error=disk full",
        ]
    );
    assert_eq!(reply.text(), "Hello!");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(probe.queries(), [("hello".to_owned(), 5)]);
    assert_eq!(
        probe.recorded(),
        [["user: text \"hello\"", "assistant: text \"Hello!\""]]
    );
    assert_eq!(system_texts(&model), [sys(None)]);
    assert_eq!(
        memory_of(&agent),
        ["user: text \"hello\"", "assistant: text \"Hello!\""]
    );
}

#[tokio::test]
async fn the_query_is_the_last_user_text_of_the_input_and_what_is_recorded_is_the_call() {
    let probe = Probe::default();
    let model = ScriptedModel::new([
        ScriptedResponse::text("first"),
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "1+1"})),
        ScriptedResponse::error("model down"),
        ScriptedResponse::text("third"),
    ]);
    let agent = agent(
        &model,
        StaticLongTermMemoryHook::new(probe.clone()).with_top_k(3),
    );

    agent
        .call(vec![Msg::user("one"), Msg::user("two")])
        .await
        .unwrap();
    // A failed call (no PostCall) records nothing; its tool round stays in memory.
    agent.call("broken").await.unwrap_err();
    // A call without new input (it continues from the tool result) retrieves nothing and
    // records only the reply.
    agent.call(()).await.unwrap();

    assert_eq!(
        probe.queries(),
        [("two".to_owned(), 3), ("broken".to_owned(), 3)]
    );
    assert_eq!(
        probe.recorded(),
        [
            vec![
                "user: text \"one\"",
                "user: text \"two\"",
                "assistant: text \"first\""
            ],
            vec!["assistant: text \"third\""],
        ]
    );
    let recalled = format!("{HEADER}\n- the user is called Ada");
    assert_eq!(
        system_texts(&model),
        [
            sys(Some(&recalled)),
            sys(Some(&recalled)),
            sys(Some(&recalled)),
            sys(None)
        ]
    );
}

#[tokio::test]
async fn the_hook_is_visible_in_hook_order() {
    let model = ScriptedModel::new([]);
    let hook = StaticLongTermMemoryHook::new(InMemoryLongTermMemory::new());
    let order = agent(&model, hook).hook_order();
    assert_eq!(order.len(), 1);
    assert_eq!(
        (order[0].name.as_str(), order[0].priority),
        ("long_term_memory", 50)
    );
    assert_eq!(
        order[0].interests,
        HookEventType::PreCall | HookEventType::PostCall
    );
}
