//! HTTP errors as Anthropic sends them: which are retried, and how they are classified.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use agentscope_core::ModelError;
use agentscope_test::http::{HttpReply, TestServer};
use agentscope_test::model_conformance::{given_up_after, hello, run};
use serde_json::{Value, json};
use support::{builder, fixture};

fn anthropic_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message},
           "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
}

const TEXT: &str = "Hello! How can I help you today?";

#[tokio::test]
async fn overloaded_529_is_retried_then_succeeds() {
    let server = TestServer::start([
        HttpReply::json(529, &anthropic_error("overloaded_error", "Overloaded")),
        HttpReply::json(529, &anthropic_error("overloaded_error", "Overloaded")),
        HttpReply::sse(&fixture("text")),
    ])
    .await;
    let model = builder(&server).max_retries(2).build().unwrap();
    let msg = run(&model, hello()).await.result.unwrap();
    assert_eq!(msg.text(), TEXT);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body, requests[2].body);
}

/// The last attempt's error is a retryable status error; the client gave up on it, so the
/// error it returns is not retryable (a retry around the client does not retry it again).
#[tokio::test]
async fn overloaded_until_retries_run_out_is_a_retryable_status_error_given_up_on() {
    let overloaded = || HttpReply::json(529, &anthropic_error("overloaded_error", "Overloaded"));
    let server = TestServer::start([overloaded(), overloaded(), overloaded()]).await;
    let model = builder(&server).max_retries(1).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    let last = given_up_after(&err, 2);
    assert!(
        matches!(last, ModelError::Status { status: 529, message, retry_after: None } if message == "Overloaded"),
        "{err:?}"
    );
    assert!(last.is_retryable() && !err.is_retryable() && !err.is_rate_limited());
    assert_eq!(err.status(), Some(529));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn rate_limited_with_retry_after_waits_then_succeeds() {
    let server = TestServer::start([
        HttpReply::json(
            429,
            &anthropic_error(
                "rate_limit_error",
                "This request would exceed the rate limit for your organization of 50 requests per minute.",
            ),
        )
        .header("retry-after", "1"),
        HttpReply::sse(&fixture("text")),
    ])
    .await;
    let model = builder(&server).build().unwrap();
    let started = Instant::now();
    let msg = run(&model, hello()).await.result.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(msg.text(), TEXT);
    // Retry-After (1 s) was honoured instead of the 1-5 ms backoff.
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_prompt_that_is_too_long_is_a_context_length_error_and_is_not_retried() {
    let message = "prompt is too long: 208310 tokens > 200000 maximum";
    let server = TestServer::start([
        HttpReply::json(400, &anthropic_error("invalid_request_error", message)),
        HttpReply::sse(&fixture("text")),
    ])
    .await;
    let model = builder(&server).max_retries(3).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert!(err.is_context_length(), "{err:?}");
    assert!(!err.is_retryable() && !err.is_auth());
    assert_eq!(err.to_string(), format!("HTTP 400: {message}"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_invalid_key_is_an_auth_error_and_is_not_retried() {
    let server = TestServer::start([
        HttpReply::json(
            401,
            &anthropic_error("authentication_error", "invalid x-api-key"),
        ),
        HttpReply::sse(&fixture("text")),
    ])
    .await;
    let model = builder(&server).max_retries(3).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    assert!(!err.is_rate_limited() && !err.is_context_length() && !err.is_retryable());
    assert!(
        matches!(&err, ModelError::Status { status: 401, message, .. } if message == "invalid x-api-key"),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_overloaded_error_event_mid_stream_ends_the_stream_without_a_retry() {
    let body = fixture("text").replace(
        "event: content_block_stop",
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\nevent: content_block_stop",
    );
    let server = TestServer::start([HttpReply::sse(&body), HttpReply::sse(&fixture("text"))]).await;
    let model = builder(&server).build().unwrap();
    let outcome = run(&model, hello()).await;
    assert!(
        matches!(&outcome.result, Err(ModelError::Stream { message }) if message == "Overloaded"),
        "{:?}",
        outcome.result
    );
    let streamed: String = outcome
        .chunks
        .iter()
        .flat_map(|chunk| &chunk.content)
        .filter_map(|block| block.as_text())
        .collect();
    assert_eq!(streamed, TEXT);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_non_streamed_json_answer_is_decoded() {
    let body = json!({
        "id": "msg_01Json", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "Plain JSON."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 4, "output_tokens": 3}
    });
    let server = TestServer::start([HttpReply::json(200, &body)]).await;
    let model = builder(&server).build().unwrap();
    let msg = run(&model, hello()).await.result.unwrap();
    assert_eq!(msg.text(), "Plain JSON.");
    assert_eq!(msg.finish_reason(), Some("end_turn"));
    assert_eq!(
        msg.metadata["usage"],
        json!({"input_tokens": 4, "output_tokens": 3})
    );
}
