//! The shared conformance scenarios (`agentscope_test::model_conformance`), each with the
//! chat-completions transcript a server sends for it.

use agentscope_core::ContentBlock;
use agentscope_test::model_conformance::{self, Stop};
use serde_json::Value;

/// A shared scenario with its OpenAI transcript.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub sse: &'static str,
    pub finish_reason: &'static str,
    pub usage: agentscope_core::ChatUsage,
    /// The content of the assembled message.
    pub expected: Vec<ContentBlock>,
}

impl Scenario {
    /// The assembled message's metadata.
    /// The response id and answering model are the transcript's (its first `id` and
    /// `model`).
    pub fn expected_metadata(&self) -> serde_json::Map<String, Value> {
        let mut metadata = serde_json::Map::new();
        metadata.insert("usage".into(), serde_json::to_value(self.usage).unwrap());
        metadata.insert("finish_reason".into(), self.finish_reason.into());
        // The provider's response id and model, as the transcript's chunks name them.
        let chunk = self
            .sse
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|chunk| chunk["id"].is_string() && chunk["model"].is_string());
        if let Some(chunk) = chunk {
            metadata.insert(
                "response".into(),
                serde_json::json!({"id": chunk["id"], "model": chunk["model"]}),
            );
        }
        metadata
    }
}

/// The transcript of the scenario named `name`.
pub fn transcript(name: &str) -> &'static str {
    match name {
        "text" => include_str!("../fixtures/text.sse"),
        "thinking_text" => include_str!("../fixtures/thinking_text.sse"),
        "tool_call" => include_str!("../fixtures/tool_call.sse"),
        "parallel_tool_calls" => include_str!("../fixtures/parallel_tool_calls.sse"),
        // OpenAI interleaves the two calls' fragments by index.
        "text_then_tool_calls" => include_str!("../fixtures/interleaved_tool_calls.sse"),
        "invalid_arguments" => include_str!("../fixtures/invalid_arguments.sse"),
        "keepalive_multiline" => include_str!("../fixtures/keepalive_multiline.sse"),
        other => panic!("no OpenAI transcript for the scenario {other:?}"),
    }
}

/// The chat-completions finish reason for `stop`.
pub fn finish_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::Answer => "stop",
        Stop::ToolUse => "tool_calls",
        Stop::MaxTokens => "length",
    }
}

/// Every shared scenario, as OpenAI sends it (no thinking signatures).
pub fn all() -> Vec<Scenario> {
    model_conformance::scenarios()
        .into_iter()
        .map(|shared| {
            let shared = shared.for_protocol(false);
            Scenario {
                name: shared.name,
                sse: transcript(shared.name),
                finish_reason: finish_reason(shared.stop),
                usage: shared.usage,
                expected: shared.expected,
            }
        })
        .collect()
}

fn named(name: &str) -> Scenario {
    all().into_iter().find(|s| s.name == name).unwrap()
}

pub fn text() -> Scenario {
    named("text")
}

pub fn tool_call() -> Scenario {
    named("tool_call")
}
