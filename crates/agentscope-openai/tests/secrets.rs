//! Secrets never appear in `Debug` output: the API key (however it is given: `api_key`, the environment, a header, a key in the base URL's query or user info), for the builder and for the model; nor in any error text, `Debug` or source chain, whether the server echoes them or the transport quotes the URL. (errors.rs checks more error messages; config.rs the environment.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use agentscope_core::Model;
use agentscope_openai::{OpenAIChatModel, OpenAIChatModelBuilder};
use agentscope_test::model_conformance::error_texts;
use agentscope_test::model_conformance::secrets::{self, SECRETS, assert_no_secret};
use support::{HttpReply, TestServer, hello};

#[test]
fn the_builder_and_the_model_never_print_a_key_given_with_api_key_or_a_header() {
    let builder = OpenAIChatModel::builder()
        .api_key(SECRETS[0])
        .header("x-api-key", SECRETS[1])
        .base_url("http://127.0.0.1:9/v1")
        .model("m");
    let builder_debug = format!("{builder:?}");
    let builder_pretty = format!("{builder:#?}");
    let model = builder.build().unwrap();
    assert_no_secret("builder", &builder_debug);
    assert_no_secret("builder (pretty)", &builder_pretty);
    assert_no_secret("model", &format!("{model:?}"));
    assert_no_secret("model (pretty)", &format!("{model:#?}"));
    assert!(builder_debug.contains("<redacted>"), "{builder_debug}");
}

#[test]
fn a_key_read_from_the_environment_is_never_printed() {
    let builder = OpenAIChatModelBuilder::from_lookup(|name| match name {
        "OPENAI_API_KEY" => Some(SECRETS[4].to_owned()),
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_owned()),
        "AGENTSCOPE_MODEL" => Some("m".to_owned()),
        _ => None,
    });
    assert_no_secret("builder", &format!("{builder:?}"));
    let model = builder.build().unwrap();
    assert_no_secret("model", &format!("{model:?}"));
}

/// A key in the base URL's query (some gateways take it there) or a password in its user
/// info: the builder's and the model's `Debug` hide both.
#[test]
fn a_key_or_a_password_in_the_base_url_is_never_printed() {
    secrets::check_base_url_secrets_hidden(|base_url| {
        let builder = OpenAIChatModel::builder().base_url(base_url).model("m");
        let builder_debug = format!("{builder:?}");
        (builder_debug, format!("{:?}", builder.build().unwrap()))
    });
}

fn with_every_secret(base_url: &str) -> OpenAIChatModelBuilder {
    OpenAIChatModel::builder()
        .api_key(SECRETS[0])
        .header("x-api-key", SECRETS[1])
        .base_url(base_url)
        .model("m")
        .max_retries(1)
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(2))
        .timeout(Duration::from_secs(5))
}

/// A connection that fails quotes no URL: not the query's key, not the password.
#[tokio::test]
async fn connection_errors_never_show_a_secret_of_the_url() {
    secrets::check_connection_error_hides_url_secrets(
        |url| with_every_secret(url).build().unwrap(),
        "chat/completions",
    )
    .await;
}

/// A server that echoes what it received (headers, the key, the query) in its error body.
#[tokio::test]
async fn a_server_echoing_the_secrets_in_its_error_gets_them_redacted() {
    let echo = format!(
        r#"{{"error": {{"message": "invalid credentials: authorization=Bearer {}, x-api-key={}, key={}"}}}}"#,
        SECRETS[0], SECRETS[1], SECRETS[2]
    );
    let server = TestServer::start([HttpReply::status(401, &echo)]).await;
    let url = format!("{}?key={}", server.base_url(), SECRETS[2]);
    let model = with_every_secret(&url).build().unwrap();
    let Err(error) = model.stream(hello()).await else {
        panic!("the server answers 401");
    };
    assert_no_secret("401 error", &error_texts(&error));
    assert_eq!(
        error.to_string(),
        "HTTP 401: invalid credentials: authorization=Bearer <redacted>, x-api-key=<redacted>, key=<redacted>"
    );
}

/// `endpoint()` is for showing (the examples print it): the password and the query's
/// values are hidden, the host and path kept; the request still goes to the URL as given.
#[tokio::test]
async fn the_endpoint_shown_hides_the_password_and_the_query_but_requests_use_them() {
    let server = TestServer::start([HttpReply::status(401, "no")]).await;
    // `127.0.0.1:<port>/v1`
    let at = server.base_url().replace("http://", "");
    let url = format!(
        "http://alice:{}@{at}?key={}&api-version=2024-06-01",
        SECRETS[3], SECRETS[2]
    );
    let model = OpenAIChatModel::builder()
        .base_url(url)
        .model("m")
        .max_retries(0)
        .build()
        .unwrap();
    let shown = model.endpoint();
    assert_eq!(
        shown,
        format!(
            "http://alice:<redacted>@{at}/chat/completions\
             ?key=<redacted>&api-version=<redacted>"
        )
    );
    assert_no_secret("endpoint", shown);
    let _ = model.stream(hello()).await;
    assert_eq!(
        server.requests()[0].target,
        format!(
            "/v1/chat/completions?key={}&api-version=2024-06-01",
            SECRETS[2]
        )
    );
}
