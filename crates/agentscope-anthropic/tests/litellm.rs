//! Transcripts recorded from a real third-party server speaking the Messages API: LiteLLM's
//! proxy (1.108.7, `POST /v1/messages`), which translated for llama.cpp's `llama-server`
//! (SmolLM2-135M-Instruct) and for its own mock model, replayed by a local server
//! (`tests/fixtures/litellm/`; each SSE file's first line says how it was recorded).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope_core::{ContentBlock, GenerateReason, ToolUseBlock};
use agentscope_test::http::{HttpReply, TestServer};
use agentscope_test::model_conformance::{hello, run};
use serde_json::json;

fn recorded(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/litellm/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

async fn replay(reply: HttpReply) -> agentscope_core::Msg {
    let server = TestServer::start([reply]).await;
    let model = support::builder(&server).max_retries(0).build().unwrap();
    run(&model, hello()).await.result.unwrap()
}

/// A text block left open while a tool_use block starts (LiteLLM closes both at the end),
/// a tool call whose arguments arrive in pieces with whitespace, and usage only in
/// `message_delta` (`message_start` says 0).
#[tokio::test]
async fn a_forced_tool_call_with_text_before_it() {
    let msg = replay(HttpReply::sse(&recorded("tool_call.sse"))).await;
    assert_eq!(
        msg.content,
        vec![
            ContentBlock::text("The answer should be a JSON with the following structure:\n\n"),
            ToolUseBlock::new(
                "call_dSkABKRfjG6yMkDt6CRMUmgObAjLOuXD",
                "calculator",
                json!({"expression": "6*7"})
            )
            .into(),
        ]
    );
    assert_eq!(msg.finish_reason(), Some("tool_use"));
    // input_tokens 206 plus 54 read from the cache, as the last counts say; the cache read
    // is also reported on its own.
    assert_eq!(
        msg.metadata["usage"],
        json!({"input_tokens": 260, "output_tokens": 44, "cache_read_input_tokens": 54})
    );
}

#[tokio::test]
async fn a_streamed_answer() {
    let msg = replay(HttpReply::sse(&recorded("text.sse"))).await;
    assert_eq!(
        msg.content,
        vec![ContentBlock::text("\nCutting Knowledge Date: 2023-12-2")]
    );
    // LiteLLM reported end_turn for this 12-token answer.
    assert_eq!(msg.finish_reason(), Some("end_turn"));
    assert_eq!(
        GenerateReason::of_answer(msg.finish_reason()),
        GenerateReason::ModelStop
    );
    assert_eq!(
        msg.metadata["usage"],
        json!({"input_tokens": 115, "output_tokens": 16, "cache_read_input_tokens": 22})
    );
}

/// LiteLLM's mock model answers `stream: true` with one JSON message
/// (`Content-Type: application/json`).
#[tokio::test]
async fn a_whole_json_message_in_place_of_a_stream() {
    let body: serde_json::Value = serde_json::from_str(&recorded("mock_text.json")).unwrap();
    let msg = replay(HttpReply::json(200, &body)).await;
    assert_eq!(
        msg.content,
        vec![ContentBlock::text(
            "Mock reply from the LiteLLM proxy: six times seven is forty-two."
        )]
    );
    assert_eq!(msg.finish_reason(), Some("end_turn"));
    assert_eq!(
        msg.metadata["usage"],
        json!({"input_tokens": 2095, "output_tokens": 503})
    );
}
