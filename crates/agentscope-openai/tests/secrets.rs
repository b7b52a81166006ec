//! Secrets never appear in `Debug` output: the API key (however it is given: `api_key`, the environment, a header, a key in the base URL's query or user info), for the builder and for the model. (errors.rs checks error messages and the `api-key` header; config.rs the environment.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentscope_openai::{OpenAIChatModel, OpenAIChatModelBuilder};

const SECRETS: [&str; 5] = [
    "sk-key-secret-1",
    "header-secret-2",
    "query-secret-3",
    "password-secret-4",
    "env-secret-5",
];

fn assert_no_secret(what: &str, debug: &str) {
    for secret in SECRETS {
        assert!(!debug.contains(secret), "{what} prints {secret}: {debug}");
    }
}

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

fn assert_base_url_secret_hidden(base_url: &str) {
    let builder = OpenAIChatModel::builder().base_url(base_url).model("m");
    let builder_debug = format!("{builder:?}");
    let model = builder.build().unwrap();
    let model_debug = format!("{model:?}");
    assert_no_secret(&format!("model for {base_url}"), &model_debug);
    assert_no_secret(&format!("builder for {base_url}"), &builder_debug);
    assert!(model_debug.contains("127.0.0.1:9"), "{model_debug}");
}

/// Some gateways take the key in the URL (`?api-key=...`, `?key=...`); the model's Debug
/// hides the query string, and the builder's must too.
#[test]
fn a_key_in_the_base_url_query_is_never_printed() {
    assert_base_url_secret_hidden(&format!("http://127.0.0.1:9/v1?api-key={}", SECRETS[2]));
}

/// A password in the base URL's user info is a secret too.
#[test]
fn a_password_in_the_base_url_is_never_printed() {
    assert_base_url_secret_hidden(&format!("http://user:{}@127.0.0.1:9/v1", SECRETS[3]));
}
