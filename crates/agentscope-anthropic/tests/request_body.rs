//! What goes over the wire: the path, the headers and the body a local server receives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope_core::{GenerateOptions, ModelRequest, Msg, ToolResultBlock, ToolSchema};
use agentscope_test::http::{HttpReply, Recorded, TestServer};
use agentscope_test::model_conformance::{hello, run};
use serde_json::json;
use support::{API_KEY, builder, fixture};

async fn one_request(
    builder: impl FnOnce(&TestServer) -> agentscope_anthropic::AnthropicModelBuilder,
    request: ModelRequest,
) -> Recorded {
    let server = TestServer::start([HttpReply::sse(&fixture("text"))]).await;
    let model = builder(&server).build().unwrap();
    let outcome = run(&model, request).await;
    assert_eq!(
        outcome.result.unwrap().text(),
        "Hello! How can I help you today?"
    );
    let mut requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

#[tokio::test]
async fn posts_to_v1_messages_with_the_key_version_and_json_headers() {
    let request = one_request(builder, hello()).await;
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(API_KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("anthropic-beta"), None);
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.header("accept"),
        Some("text/event-stream, application/json")
    );
    assert_eq!(
        request.header("user-agent"),
        Some(concat!("agentscope-anthropic/", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(
        request.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
            "stream": true
        })
    );
}

#[tokio::test]
async fn betas_are_comma_joined_and_version_and_extra_headers_are_sent() {
    let request = one_request(
        |server| {
            builder(server)
                .version("2024-01-01")
                .beta("prompt-caching-2024-07-31")
                .beta("interleaved-thinking-2025-05-14")
                .header("x-gateway-team", "blue-team")
        },
        hello(),
    )
    .await;
    assert_eq!(
        request.header("anthropic-beta"),
        Some("prompt-caching-2024-07-31,interleaved-thinking-2025-05-14")
    );
    assert_eq!(request.header("anthropic-version"), Some("2024-01-01"));
    assert_eq!(request.header("x-gateway-team"), Some("blue-team"));
}

#[tokio::test]
async fn a_base_url_query_is_kept_and_no_key_means_no_key_header() {
    let request = one_request(
        |server| {
            agentscope_anthropic::AnthropicModel::builder()
                .base_url(format!("{}?team=blue", server.base_url()))
                .model("claude-test")
        },
        hello(),
    )
    .await;
    assert_eq!(request.target, "/v1/messages?team=blue");
    assert_eq!(request.header("x-api-key"), None);
}

#[tokio::test]
async fn thinking_caching_tools_and_options_shape_the_body() {
    let request = ModelRequest::new(
        vec![Msg::system("Be brief."), Msg::user("Weather in Paris?")],
        vec![ToolSchema::new(
            "get_weather",
            "The weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        )]
        .into(),
        GenerateOptions::default()
            .max_tokens(20000)
            .stop("END")
            .parallel_tool_calls(false)
            .extra("top_k", 5),
    );
    let recorded = one_request(
        |server| builder(server).thinking(10000).prompt_caching(true),
        request,
    )
    .await;
    assert_eq!(
        recorded.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 20000,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Weather in Paris?", "cache_control": {"type": "ephemeral"}}
            ]}],
            "tools": [{
                "name": "get_weather",
                "description": "The weather",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
                "cache_control": {"type": "ephemeral"}
            }],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "thinking": {"type": "enabled", "budget_tokens": 10000},
            "stop_sequences": ["END"],
            "top_k": 5,
            "stream": true
        })
    );
}

/// A tool loop end to end: the first answer's signed thinking and tool call, assembled by
/// the engine's accumulator, go back unchanged in the next request with the result.
#[tokio::test]
async fn signed_thinking_and_tool_calls_go_back_in_the_next_request() {
    let first = fixture("thinking_text").replace(
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01A\",\"name\":\"calculator\",\"input\":{}}}\n\n\
             event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"expression\\\": \\\"6*7\\\"}\"}}\n\n\
             event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n\
             event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"",
    );
    assert!(first.contains("toolu_01A"));
    let (finish_reason, messages) = after_the_tool(HttpReply::sse(&first)).await;
    assert_eq!(finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        messages,
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user asks for 6 times 7. That is 42.",
                 "signature": "EqQBCkgIARABGAIiQMp1kJmH"},
                {"type": "text", "text": "6 × 7 = **42**."},
                {"type": "tool_use", "id": "toolu_01A", "name": "calculator",
                 "input": {"expression": "6*7"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A",
                 "content": [{"type": "text", "text": "42"}]}
            ]}
        ])
    );
}

/// A thinking model's answer `first` (a call of `calculator`, id `toolu_01A`), then the
/// next request of the tool loop with the tool's result `42`: the answer's finish reason, and
/// the messages that request sent.
async fn after_the_tool(first: HttpReply) -> (Option<String>, serde_json::Value) {
    let server = TestServer::start([first, HttpReply::sse(&fixture("text"))]).await;
    let model = builder(&server).thinking(2048).build().unwrap();
    let answer = run(&model, hello()).await.result.unwrap();
    let finish_reason = answer.finish_reason().map(str::to_owned);
    let next = ModelRequest::new(
        vec![
            Msg::user("Hello"),
            answer,
            Msg::tool_result(ToolResultBlock::text("toolu_01A", "calculator", "42")),
        ],
        Default::default(),
        Default::default(),
    );
    run(&model, next).await.result.unwrap();
    (
        finish_reason,
        server.requests()[1].json()["messages"].clone(),
    )
}

/// An SSE body of these events (each payload's `type` is its event name).
fn events(payloads: &[serde_json::Value]) -> String {
    payloads
        .iter()
        .map(|payload| {
            format!(
                "event: {}\ndata: {payload}\n\n",
                payload["type"].as_str().unwrap()
            )
        })
        .collect()
}

const REDACTED: &str = "EmwKAhgBEgwDp0tXYm5h1cZ4bZ0aDJ8v+Qq2fsp+9Fz7tyIw==";

/// A streamed answer, thinking on: signed thinking, redacted thinking, then a tool call.
fn streamed_redacted_answer() -> String {
    events(&[
        json!({"type": "message_start", "message": {"id": "msg_01Redacted", "type": "message", "role": "assistant",
               "content": [], "model": "claude-test", "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Use the calculator."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBsig"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": REDACTED}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_01A", "name": "calculator", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"expression\": \"6*7\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ])
}

/// The assistant turn of the streamed answer, as the next request must send it back.
fn streamed_redacted_turn() -> serde_json::Value {
    json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Use the calculator.", "signature": "EqQBsig"},
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "tool_use", "id": "toolu_01A", "name": "calculator", "input": {"expression": "6*7"}}
    ]})
}

/// Redacted thinking (encrypted by Anthropic) is kept, and goes back unchanged, in its
/// place, with the tool loop's next request; the same for a streamed and a whole answer.
#[tokio::test]
async fn redacted_thinking_goes_back_unchanged_in_the_next_request() {
    let whole = json!({
        "id": "msg_01Whole", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "redacted_thinking", "data": REDACTED},
            {"type": "text", "text": "Let me compute."},
            {"type": "tool_use", "id": "toolu_01A", "name": "calculator", "input": {"expression": "6*7"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 40}
    });
    let whole_turn = json!({"role": "assistant", "content": [
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "text", "text": "Let me compute."},
        {"type": "tool_use", "id": "toolu_01A", "name": "calculator", "input": {"expression": "6*7"}}
    ]});
    for (reply, turn) in [
        (
            HttpReply::sse(&streamed_redacted_answer()),
            streamed_redacted_turn(),
        ),
        (HttpReply::json(200, &whole), whole_turn),
    ] {
        let (_, messages) = after_the_tool(reply).await;
        assert_eq!(
            messages,
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
                turn,
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01A",
                     "content": [{"type": "text", "text": "42"}]}
                ]}
            ])
        );
    }
}

/// A conversation stored in a session and loaded by another agent (a restart) still holds
/// the redacted thinking: the loaded agent's next request sends it back unchanged.
#[tokio::test]
async fn redacted_thinking_survives_a_stored_and_loaded_session() {
    use agentscope::prelude::*;
    use agentscope::session::JsonFileSessionStore;
    use agentscope_test::tools::Calculator;

    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start([
        HttpReply::sse(&streamed_redacted_answer()),
        HttpReply::sse(&fixture("text")),
        HttpReply::sse(&fixture("text")),
    ])
    .await;
    let agent = |model| {
        ReActAgent::builder()
            .model(model)
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .session(JsonFileSessionStore::new(dir.path()), "s1")
            .build()
            .unwrap()
    };
    let first = agent(builder(&server).thinking(2048).build().unwrap());
    first.call("What is 6*7?").await.unwrap();
    drop(first);
    let stored = std::fs::read_to_string(dir.path().join("s1.jsonl")).unwrap();
    assert!(
        stored.contains(&format!(
            r#"{{"type":"redacted_thinking","data":"{REDACTED}"}}"#
        )),
        "{stored}"
    );
    let second = agent(builder(&server).thinking(2048).build().unwrap());
    second.call("Thanks").await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let tool_turn = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01A", "content": [{"type": "text", "text": "42"}]}
    ]});
    assert_eq!(
        requests[1].json()["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]},
            streamed_redacted_turn(),
            tool_turn
        ])
    );
    assert_eq!(
        requests[2].json()["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]},
            streamed_redacted_turn(),
            tool_turn,
            {"role": "assistant", "content": [{"type": "text", "text": "Hello! How can I help you today?"}]},
            {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}
        ])
    );
}
