//! HTTP errors, retries, timeouts and connection failures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use agentscope::RetryPolicy;

use agentscope::model_layers::ModelExt;
use agentscope_core::ModelError;
use agentscope_test::model_conformance::given_up_after;
use serde_json::json;
use support::scenarios;
use support::{API_KEY, HttpReply, TestServer, builder, hello, run};

fn openai_error(message: &str, kind: &str, code: &str) -> serde_json::Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_with_the_providers_message_and_is_not_retried() {
    let message = "Incorrect API key provided: sk-test-***7b. You can find your API key at https://platform.openai.com/account/api-keys.";
    let server = TestServer::start([
        HttpReply::json(
            401,
            &openai_error(message, "invalid_request_error", "invalid_api_key"),
        ),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).max_retries(3).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert!(err.is_auth());
    assert!(!err.is_rate_limited() && !err.is_timeout());
    assert_eq!(err.status(), Some(401));
    match &err {
        ModelError::Status {
            status,
            message: got,
            retry_after,
        } => {
            assert_eq!(*status, 401);
            assert_eq!(got, message);
            assert_eq!(*retry_after, None);
        }
        other => panic!("expected a status error, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors() {
    let echoed = format!("Incorrect API key provided: {API_KEY}.");
    let server = TestServer::start([HttpReply::json(
        401,
        &openai_error(&echoed, "invalid_request_error", "invalid_api_key"),
    )])
    .await;
    let model = builder(&server).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert_eq!(
        err.to_string(),
        "HTTP 401: Incorrect API key provided: <redacted>."
    );
    assert!(!format!("{err:?}").contains(API_KEY));
}

#[tokio::test]
async fn the_api_key_never_appears_in_debug_output() {
    let server = TestServer::start([]).await;
    let builder = builder(&server).header("api-key", "azure-secret-value");
    let builder_debug = format!("{builder:?}");
    let model = builder.build().unwrap();
    let model_debug = format!("{model:?}");
    for debug in [&builder_debug, &model_debug] {
        assert!(!debug.contains(API_KEY), "{debug}");
        assert!(!debug.contains("azure-secret-value"), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
    }
    assert!(model_debug.contains("gpt-4o-mini"), "{model_debug}");
    assert!(builder_debug.contains("api-key"), "{builder_debug}");
}

#[tokio::test]
async fn rate_limited_with_retry_after_then_success() {
    let server = TestServer::start([
        HttpReply::json(
            429,
            &openai_error(
                "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.",
                "requests",
                "rate_limit_exceeded",
            ),
        )
        .header("Retry-After", "1"),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).build().unwrap();
    let started = Instant::now();
    let msg = run(&model, hello()).await.result.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(msg.content, scenarios::text().expected);
    // Retry-After (1 s) was honoured instead of the 1-5 ms backoff.
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn retry_after_ms_is_honoured() {
    let server = TestServer::start([
        HttpReply::json(
            429,
            &openai_error("slow down", "requests", "rate_limit_exceeded"),
        )
        .header("retry-after-ms", "150")
        .header("Retry-After", "30"),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).build().unwrap();
    let started = Instant::now();
    run(&model, hello()).await.result.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(150), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[tokio::test]
async fn rate_limited_until_retries_run_out() {
    let limited = || {
        HttpReply::json(
            429,
            &openai_error("slow down", "tokens", "rate_limit_exceeded"),
        )
        .header("retry-after-ms", "10")
    };
    let server = TestServer::start([limited(), limited(), limited()]).await;
    let model = builder(&server).max_retries(1).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert!(err.is_rate_limited());
    assert!(matches!(
        given_up_after(&err, 2),
        ModelError::Status { status: 429, message, retry_after: Some(wait) }
            if message == "slow down" && *wait == Duration::from_millis(10)
    ));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_after_too_long_to_wait_for_is_returned_at_once() {
    let server = TestServer::start([HttpReply::json(
        429,
        &openai_error("quota", "tokens", "rate_limit_exceeded"),
    )
    .header("Retry-After", "3600")])
    .await;
    let model = builder(&server).max_retries(5).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_error_then_success() {
    let server = TestServer::start([
        HttpReply::json(
            500,
            &openai_error(
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
                "internal_error",
            ),
        ),
        HttpReply::status(
            503,
            "upstream connect error or disconnect/reset before headers",
        ),
        HttpReply::sse(scenarios::tool_call().sse),
    ])
    .await;
    let model = builder(&server).build().unwrap();
    let msg = run(&model, hello()).await.result.unwrap();
    assert_eq!(msg.content, scenarios::tool_call().expected);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.body == requests[0].body));
}

#[tokio::test]
async fn server_errors_are_not_retried_when_retries_are_off() {
    let server = TestServer::start([
        HttpReply::status(
            503,
            "upstream connect error or disconnect/reset before headers",
        ),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).max_retries(0).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert!(matches!(
        err,
        ModelError::Status { status: 503, ref message, retry_after: None }
            if message == "upstream connect error or disconnect/reset before headers"
    ));
    assert_eq!(server.requests().len(), 1);
}

/// An error body is read only so far (64 KiB): a proxy that sends a huge body with an error
/// status, and then stalls, still gives the error with its message at once.
#[tokio::test]
async fn a_huge_error_body_is_read_only_so_far() {
    let body = format!("upstream exploded {}", "x".repeat(300_000));
    let server = TestServer::start([HttpReply::status(502, &body).then_hang()]).await;
    let model = builder(&server)
        .max_retries(0)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let err = tokio::time::timeout(Duration::from_secs(20), run(&model, hello()))
        .await
        .expect("the error must not wait for the rest of the body")
        .result
        .unwrap_err();
    let ModelError::Status {
        status, message, ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(*status, 502);
    assert!(message.starts_with("upstream exploded xxx"), "{message}");
    assert!(message.ends_with("..."), "cut for the message: {message}");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = TestServer::start([HttpReply::json(
        400,
        &openai_error(
            "Invalid schema for function 'get_weather': 'strng' is not valid under any of the given schemas.",
            "invalid_request_error",
            "invalid_function_parameters",
        ),
    )])
    .await;
    let model = builder(&server).max_retries(3).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(
        err.to_string()
            .starts_with("HTTP 400: Invalid schema for function")
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_server_that_does_not_answer_times_out_without_retry() {
    let server =
        TestServer::start([HttpReply::sse(scenarios::text().sse).delayed(Duration::from_secs(30))])
            .await;
    let model = builder(&server)
        .timeout(Duration::from_millis(200))
        .max_retries(2)
        .build()
        .unwrap();
    let started = Instant::now();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(matches!(err, ModelError::Timeout));
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(200), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    // A port that was just free: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = agentscope_openai::OpenAIChatModel::builder()
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .model("m")
        .max_retries(2)
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(5))
        .build()
        .unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert!(
        matches!(given_up_after(&err, 3), ModelError::Connection { .. }),
        "{err:?}"
    );
    assert!(!err.is_timeout() && err.status().is_none());
    // The connection error's own source is in the chain.
    let connection = std::error::Error::source(&err).unwrap();
    assert!(connection.source().is_some());
}

/// A server that resets its connections (a restart) before answering: the connection error
/// is retryable, and the client retries it by itself; the call succeeds on the third
/// connection, the only request the server read.
#[tokio::test]
async fn a_connection_reset_before_the_response_is_retried() {
    let server = TestServer::start([
        HttpReply::reset(),
        HttpReply::reset(),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).max_retries(2).build().unwrap();
    let msg = run(&model, hello()).await.result.unwrap();
    assert_eq!(msg.content, scenarios::text().expected);
    assert_eq!(server.connections(), 3);
    assert_eq!(server.requests().len(), 1);

    // A pooled connection reset after the server read the request: sent again on a new one.
    let server = TestServer::start([
        HttpReply::sse(scenarios::text().sse).keep_alive(),
        HttpReply::reset(),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).max_retries(1).build().unwrap();
    run(&model, hello()).await.result.unwrap();
    let msg = run(&model, hello()).await.result.unwrap();
    assert_eq!(msg.content, scenarios::text().expected);
    assert_eq!(server.connections(), 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].body, requests[2].body);

    // Retries run out: the reset is reported after the attempts the policy allows.
    let server = TestServer::start((0..4).map(|_| HttpReply::reset())).await;
    let model = builder(&server).max_retries(1).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    assert!(
        matches!(given_up_after(&err, 2), ModelError::Connection { .. }),
        "{err:?}"
    );
    assert_eq!(server.connections(), 2);
}

/// A model-layer retry around a client that retries by itself does not multiply the
/// attempts: the client gives up after its 3 attempts (`RetriesExhausted`, not retryable),
/// and the layer does not send the request again (3 requests, not 12). With the client's
/// retries off, the layer does the retrying: 1 + 3 requests.
#[tokio::test]
async fn a_retry_layer_around_a_client_does_not_multiply_attempts() {
    for (client_retries, requests) in [(2, 3), (0, 4)] {
        let server = TestServer::start((0..12).map(|_| HttpReply::status(503, "overloaded"))).await;
        let model = builder(&server)
            .max_retries(client_retries)
            .build()
            .unwrap()
            .with_retry(
                RetryPolicy::new(3).backoff(Duration::from_millis(1), Duration::from_millis(2)),
            );
        let err = run(&model, hello()).await.result.unwrap_err();
        assert_eq!(
            server.requests().len(),
            requests,
            "client retries {client_retries}"
        );
        assert_eq!(
            err.to_string(),
            format!("gave up after {requests} attempts: HTTP 503: overloaded")
        );
        assert_eq!(given_up_after(&err, requests as u32).status(), Some(503));
        assert!(!err.is_retryable() && err.status() == Some(503));
    }
}
