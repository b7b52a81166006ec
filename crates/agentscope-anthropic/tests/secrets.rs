//! Secrets never appear in `Debug` output: the API key (however it is given: `api_key`, the
//! environment), a header value, a key in the base URL's query or a password in its user
//! info, for the builder and for the model; nor in any error text, `Debug` or source chain,
//! whether the server echoes them or the transport quotes the URL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use agentscope_anthropic::{AnthropicModel, AnthropicModelBuilder};
use agentscope_core::Model;
use agentscope_test::http::{HttpReply, TestServer};
use agentscope_test::model_conformance::error_texts;
use agentscope_test::model_conformance::hello;
use agentscope_test::model_conformance::secrets::{self, SECRETS, assert_no_secret};

#[test]
fn the_builder_and_the_model_never_print_the_key_or_a_header_value() {
    let builder = AnthropicModel::builder()
        .api_key(SECRETS[0])
        .header("x-gateway-key", SECRETS[1])
        .base_url("http://127.0.0.1:9")
        .model("claude-test")
        .beta("prompt-caching-2024-07-31");
    let builder_debug = format!("{builder:?}");
    let builder_pretty = format!("{builder:#?}");
    let model = builder.build().unwrap();
    let model_debug = format!("{model:?}");
    assert_no_secret("builder", &builder_debug);
    assert_no_secret("builder (pretty)", &builder_pretty);
    assert_no_secret("model", &model_debug);
    assert_no_secret("model (pretty)", &format!("{model:#?}"));
    assert!(builder_debug.contains("<redacted>"), "{builder_debug}");
    assert!(builder_debug.contains("x-gateway-key"), "{builder_debug}");
    assert!(model_debug.contains("<redacted>"), "{model_debug}");
    assert!(model_debug.contains("claude-test"), "{model_debug}");
}

#[test]
fn a_key_read_from_the_environment_is_never_printed() {
    let builder = AnthropicModelBuilder::from_lookup(|name| match name {
        "ANTHROPIC_API_KEY" => Some(SECRETS[4].to_owned()),
        "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:9".to_owned()),
        "AGENTSCOPE_MODEL" => Some("claude-test".to_owned()),
        _ => None,
    });
    assert_no_secret("builder", &format!("{builder:?}"));
    let model = builder.build().unwrap();
    assert_no_secret("model", &format!("{model:?}"));
}

/// A key in the base URL's query or a password in its user info: the builder's and the
/// model's `Debug` hide both.
#[test]
fn a_key_or_a_password_in_the_base_url_is_never_printed() {
    secrets::check_base_url_secrets_hidden(|base_url| {
        let builder = AnthropicModel::builder()
            .base_url(base_url)
            .model("claude-test");
        let builder_debug = format!("{builder:?}");
        (builder_debug, format!("{:?}", builder.build().unwrap()))
    });
}

fn with_every_secret(base_url: &str) -> AnthropicModelBuilder {
    AnthropicModel::builder()
        .api_key(SECRETS[0])
        .header("x-gateway-key", SECRETS[1])
        .base_url(base_url)
        .model("claude-test")
        .max_retries(1)
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(2))
        .timeout(Duration::from_secs(5))
}

/// A connection that fails quotes no URL: not the query's key, not the password.
#[tokio::test]
async fn connection_errors_never_show_a_secret_of_the_url() {
    secrets::check_connection_error_hides_url_secrets(
        |url| with_every_secret(url).build().unwrap(),
        "messages",
    )
    .await;
}

/// A server that echoes what it received (the key, a header, the query) in its 401 body.
#[tokio::test]
async fn a_server_echoing_the_secrets_in_its_error_gets_them_redacted() {
    let echo = serde_json::json!({
        "type": "error",
        "error": {
            "type": "authentication_error",
            "message": format!(
                "invalid x-api-key {}; x-gateway-key={}; key={}",
                SECRETS[0], SECRETS[1], SECRETS[2]
            )
        }
    });
    let server = TestServer::start([HttpReply::json(401, &echo)]).await;
    let url = format!("{}?key={}", server.base_url(), SECRETS[2]);
    let model = with_every_secret(&url).build().unwrap();
    let Err(error) = model.stream(hello()).await else {
        panic!("the server answers 401");
    };
    assert!(error.is_auth());
    assert_no_secret("401 error", &error_texts(&error));
    assert_eq!(
        error.to_string(),
        "HTTP 401: invalid x-api-key <redacted>; x-gateway-key=<redacted>; key=<redacted>"
    );
    // The key did reach the server: it is only hidden from what people read.
    assert_eq!(server.requests()[0].header("x-api-key"), Some(SECRETS[0]));
}

/// A mid-stream error event that quotes the key is scrubbed too.
#[tokio::test]
async fn a_stream_error_quoting_the_key_gets_it_redacted() {
    let body = format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_1\",\"usage\":{{\"input_tokens\":1}}}}}}\n\n\
         event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"api_error\",\"message\":\"bad key {}\"}}}}\n\n",
        SECRETS[0]
    );
    let server = TestServer::start([HttpReply::sse(&body)]).await;
    let model = with_every_secret(&server.base_url()).build().unwrap();
    let outcome = agentscope_test::model_conformance::run(&model, hello()).await;
    let error = outcome.result.unwrap_err();
    assert_no_secret("stream error", &error_texts(&error));
    assert_eq!(error.to_string(), "model stream error: bad key <redacted>");
}

/// `endpoint()` is for showing (the examples print it): the password and the query's
/// values are hidden, the host and path kept; the request still goes to the URL as given.
#[tokio::test]
async fn the_endpoint_shown_hides_the_password_and_the_query_but_requests_use_them() {
    let server = TestServer::start([HttpReply::status(401, "no")]).await;
    // `127.0.0.1:<port>/v1`
    let at = server.base_url().replace("http://", "");
    let url = format!("http://alice:{}@{at}?key={}&beta=1", SECRETS[3], SECRETS[2]);
    let model = AnthropicModel::builder()
        .base_url(url)
        .model("m")
        .max_retries(0)
        .build()
        .unwrap();
    let shown = model.endpoint();
    assert_eq!(
        shown,
        format!("http://alice:<redacted>@{at}/messages?key=<redacted>&beta=<redacted>")
    );
    assert_no_secret("endpoint", shown);
    let _ = model.stream(hello()).await;
    assert_eq!(
        server.requests()[0].target,
        format!("/v1/messages?key={}&beta=1", SECRETS[2])
    );
}
