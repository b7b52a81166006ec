//! Building the model: builder, environment, validation, auto traits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use agentscope_core::{Model, ModelError, ModelRequest};
use agentscope_openai::{OpenAIChatModel, OpenAIChatModelBuilder};

fn config_message(result: Result<OpenAIChatModel, ModelError>) -> String {
    match result {
        Err(ModelError::Config { message }) => message,
        other => panic!("expected a config error, got {other:?}"),
    }
}

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| vars.get(name).cloned()
}

#[test]
fn builder_defaults_to_openai() {
    let model = OpenAIChatModel::builder()
        .api_key("sk-abc")
        .model("gpt-4o-mini")
        .build()
        .unwrap();
    assert_eq!(
        model.endpoint(),
        "https://api.openai.com/v1/chat/completions"
    );
    assert_eq!(model.model(), "gpt-4o-mini");
    assert_eq!(model.model_name(), "gpt-4o-mini");
}

#[test]
fn a_model_is_required() {
    let message = config_message(OpenAIChatModel::builder().api_key("sk-abc").build());
    assert!(message.contains("AGENTSCOPE_MODEL"), "{message}");
    let message = config_message(OpenAIChatModel::builder().api_key("k").model("  ").build());
    assert!(message.contains("no model"), "{message}");
}

#[test]
fn a_base_url_alone_is_enough_for_a_local_server() {
    let model = OpenAIChatModelBuilder::from_lookup(env(&[(
        "OPENAI_BASE_URL",
        "http://127.0.0.1:8081/v1",
    )]))
    .build()
    .unwrap();
    assert_eq!(model.model(), agentscope_openai::DEFAULT_LOCAL_MODEL);
    assert_eq!(
        model.endpoint(),
        "http://127.0.0.1:8081/v1/chat/completions"
    );
    // OpenAI's own URL, given explicitly, still needs a model.
    let message = config_message(
        OpenAIChatModelBuilder::from_lookup(env(&[
            ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            ("OPENAI_API_KEY", "sk-abc"),
        ]))
        .build(),
    );
    assert!(message.contains("AGENTSCOPE_MODEL"), "{message}");
}

#[test]
fn openai_needs_a_key_local_servers_do_not() {
    let message = config_message(OpenAIChatModel::builder().model("gpt-4o").build());
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    let message = config_message(
        OpenAIChatModel::builder()
            .api_key("")
            .model("gpt-4o")
            .build(),
    );
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    let local = OpenAIChatModel::builder()
        .base_url("http://localhost:1234/v1/")
        .model("lmstudio-community/qwen3")
        .build()
        .unwrap();
    assert_eq!(
        local.endpoint(),
        "http://localhost:1234/v1/chat/completions"
    );
}

#[test]
fn bad_urls_and_headers_are_config_errors() {
    let base = || OpenAIChatModel::builder().model("m");
    let message = config_message(base().base_url("localhost:8000/v1").build());
    assert!(message.contains("localhost:8000/v1"), "{message}");
    config_message(base().base_url("ftp://example.com/v1").build());
    let message = config_message(
        base()
            .base_url("http://x/v1")
            .header("bad header", "v")
            .build(),
    );
    assert!(message.contains("bad header"), "{message}");
    let message = config_message(
        base()
            .base_url("http://x/v1")
            .header("x-ok", "line\nbreak")
            .build(),
    );
    assert!(message.contains("x-ok"), "{message}");
    let message = config_message(base().base_url("http://x/v1").api_key("sk\nx").build());
    assert!(!message.contains("sk\nx"), "{message}");
}

#[test]
fn from_lookup_reads_the_three_variables() {
    let model = OpenAIChatModelBuilder::from_lookup(env(&[
        ("OPENAI_API_KEY", "sk-env"),
        ("OPENAI_BASE_URL", "https://api.deepseek.com"),
        ("AGENTSCOPE_MODEL", "deepseek-reasoner"),
    ]))
    .build()
    .unwrap();
    assert_eq!(
        model.endpoint(),
        "https://api.deepseek.com/chat/completions"
    );
    assert_eq!(model.model(), "deepseek-reasoner");
    assert!(!format!("{model:?}").contains("sk-env"));
}

#[test]
fn from_lookup_treats_empty_values_as_unset_and_reports_what_is_missing() {
    let message = config_message(
        OpenAIChatModelBuilder::from_lookup(env(&[
            ("OPENAI_API_KEY", "sk-env"),
            ("AGENTSCOPE_MODEL", ""),
        ]))
        .build(),
    );
    assert!(message.contains("AGENTSCOPE_MODEL"), "{message}");
    let message = config_message(
        OpenAIChatModelBuilder::from_lookup(env(&[
            ("OPENAI_API_KEY", " "),
            ("OPENAI_BASE_URL", ""),
            ("AGENTSCOPE_MODEL", "gpt-4o"),
        ]))
        .build(),
    );
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    // Settings can still be changed after reading the environment.
    let model = OpenAIChatModelBuilder::from_lookup(env(&[("AGENTSCOPE_MODEL", "gpt-4o")]))
        .api_key("sk-late")
        .build()
        .unwrap();
    assert_eq!(model.model(), "gpt-4o");
}

#[test]
fn the_model_its_builder_and_its_futures_are_send_and_sync() {
    fn send_sync<T: Send + Sync + Clone + 'static>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let builder = OpenAIChatModel::builder()
        .base_url("http://x/v1")
        .model("m");
    send_sync(&builder);
    let model = builder.build().unwrap();
    send_sync(&model);
    let future = model.stream(ModelRequest::default());
    send(&future);
    let boxed = agentscope_core::BoxedModel::new(model.clone());
    assert_eq!(boxed.model_name(), "m");
}
