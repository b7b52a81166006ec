//! The model conformance suite: every scenario, written in Anthropic's streaming format
//! (`tests/fixtures/<scenario>.sse`) and played by a local server, assembles into the same
//! message as `ScriptedModel` plays it, and the failures look the same from both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use agentscope_anthropic::AnthropicModel;
use agentscope_test::model_conformance::{self, Scenario, Stop, Wire};
use serde_json::{Value, json};

/// Anthropic's wire format for the suite.
struct Anthropic;

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start() -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": "msg_01Conformance", "type": "message", "role": "assistant", "content": [],
            "model": "claude-test", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 8, "output_tokens": 1}}}),
    )
}

/// `message_start`, then a text block holding `partial`, left open.
fn partial_text(partial: &str) -> String {
    [
        message_start(),
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", &json!({"type": "ping"})),
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": partial}}),
        ),
    ]
    .concat()
}

impl Wire for Anthropic {
    type Model = AnthropicModel;

    fn model(&self, base_url: &str) -> AnthropicModel {
        AnthropicModel::builder()
            .api_key("sk-ant-conformance")
            .base_url(base_url)
            .model("claude-test")
            .max_retries(0)
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap()
    }

    fn transcript(&self, scenario: &Scenario) -> String {
        let path = format!(
            "{}{}.sse",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/"),
            scenario.name
        );
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
    }

    fn finish_reason(&self, stop: Stop) -> &'static str {
        match stop {
            Stop::Answer => "end_turn",
            Stop::ToolUse => "tool_use",
            Stop::MaxTokens => "max_tokens",
        }
    }

    fn empty_response(&self) -> String {
        [
            message_start(),
            event(
                "message_delta",
                &json!({"type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                        "usage": {"output_tokens": 1}}),
            ),
            event("message_stop", &json!({"type": "message_stop"})),
        ]
        .concat()
    }

    fn mid_stream_error(&self, partial: &str, message: &str) -> String {
        partial_text(partial)
            + &event(
                "error",
                &json!({"type": "error",
                        "error": {"type": "overloaded_error", "message": message}}),
            )
    }

    fn cut_off(&self, partial: &str) -> String {
        partial_text(partial)
    }

    fn error_body(&self, message: &str) -> Value {
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": message}})
    }

    fn signs_thinking(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn the_anthropic_client_passes_the_model_conformance_suite() {
    model_conformance::check(&Anthropic).await;
}

#[test]
fn there_is_one_fixture_per_scenario_and_each_says_it_was_written_not_recorded() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    // Files only: `litellm/` holds recorded transcripts (tests/litellm.rs).
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_file())
        .map(|entry| entry.file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut expected: Vec<String> = model_conformance::scenarios()
        .iter()
        .map(|scenario| format!("{}.sse", scenario.name))
        .collect();
    expected.sort();
    assert_eq!(files, expected);
    for scenario in model_conformance::scenarios() {
        let body = Anthropic.transcript(&scenario);
        assert!(
            body.starts_with(
                ": written from Anthropic's Messages API streaming reference (not recorded)"
            ),
            "{}",
            scenario.name
        );
        assert!(body.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    }
}
