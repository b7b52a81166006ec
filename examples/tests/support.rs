//! What every example relies on from `examples/support`: errors printed as their `Display`
//! chain, warnings (retries) printed, and `AGENTSCOPE_MAX_TOKENS` capping the answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

use std::time::Duration;

use agentscope::model_layers::ModelExt;
use agentscope::prelude::*;
use agentscope::{ErrorSource, GenerateOptions, ModelError, RetryPolicy};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use tracing_subscriber::layer::SubscriberExt;

fn refused() -> ModelError {
    ModelError::Connection {
        message: "sending the request to http://127.0.0.1:9/v1/chat/completions".into(),
        source: Some(ErrorSource::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        ))),
    }
}

/// A refused connection as the HTTP clients report it: the message quotes the transport's
/// whole chain, and the source is that chain again (reqwest, hyper, io).
fn refused_as_the_clients_say_it() -> ModelError {
    let io = std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "Connection refused (os error 111)",
    );
    let chain = Layer("error sending request", Layer("client error (Connect)", io));
    ModelError::Connection {
        message: "sending the request to http://127.0.0.1:9/v1/chat/completions: error sending \
                  request: client error (Connect): Connection refused (os error 111)"
            .into(),
        source: Some(ErrorSource::new(chain)),
    }
}

#[test]
fn an_error_is_printed_as_its_display_chain_one_line_per_cause() {
    let error: Box<dyn std::error::Error> =
        Box::new(AgentError::Model(ModelError::gave_up_after(3, refused())));
    assert_eq!(
        support::error_lines(&*error),
        [
            "error: model error",
            "caused by: gave up after 3 attempts",
            "caused by: connection error: sending the request to \
             http://127.0.0.1:9/v1/chat/completions",
            "caused by: Connection refused (os error 111)",
        ]
    );
}

#[test]
fn a_cause_a_line_above_already_says_is_not_repeated() {
    let error = AgentError::Model(ModelError::gave_up_after(
        3,
        refused_as_the_clients_say_it(),
    ));
    assert_eq!(
        support::error_lines(&error),
        [
            "error: model error",
            "caused by: gave up after 3 attempts",
            "caused by: connection error: sending the request to \
             http://127.0.0.1:9/v1/chat/completions: error sending request: client error \
             (Connect): Connection refused (os error 111)",
        ]
    );
}

#[test]
fn a_message_keeps_only_what_its_cause_does_not_say() {
    let error = AgentError::Hook {
        hook: "audit".into(),
        event: HookEventType::PreActing,
        source: HookError::Failed {
            message: "the audit log is full".into(),
            source: Some(ErrorSource::new(std::io::Error::other("disk full"))),
        },
    };
    assert_eq!(
        support::error_lines(&error),
        [
            "error: hook 'audit' failed at PreActing",
            "caused by: the audit log is full",
            "caused by: disk full",
        ]
    );
    // A message that only repeats its cause (`#[error("{0}")]`) gives its line to the cause.
    let transparent = Transparent(std::io::Error::other("disk full"));
    assert_eq!(support::error_lines(&transparent), ["error: disk full"]);
    let plain: Box<dyn std::error::Error> = "PORT=\"x\": invalid digit found in string".into();
    assert_eq!(
        support::error_lines(&*plain),
        ["error: PORT=\"x\": invalid digit found in string"]
    );
}

#[tokio::test]
async fn a_retry_is_printed_as_a_warning_line() {
    let (printer, lines) = support::collecting_printer();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(printer));
    let model = ScriptedModel::new([
        ScriptedResponse::failure(refused()),
        ScriptedResponse::text("Hello."),
    ])
    .with_name("flaky")
    .with_retry(RetryPolicy::new(2).backoff(Duration::from_millis(1), Duration::from_millis(1)));
    let agent = ReActAgent::builder().model(model).build().unwrap();
    assert_eq!(agent.call("hi").await.unwrap().text(), "Hello.");
    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 1, "{lines:?}");
    // The delay is jittered: everything else is exact.
    let (start, rest) = lines[0].split_once(", delay_ms=").unwrap();
    assert_eq!(
        start,
        "warning: agentscope.model.retry (model=flaky, retry=1, max_retries=2"
    );
    let (delay, end) = rest.split_once(", ").unwrap();
    assert!(delay.parse::<u64>().unwrap() <= 1, "{delay}");
    assert_eq!(
        end,
        "error.type=connection_error, error=connection error: sending the request to \
         http://127.0.0.1:9/v1/chat/completions)"
    );
}

#[test]
fn agentscope_max_tokens_is_read_and_checked() {
    let lookup = |value: &'static str| {
        move |name: &str| (name == "AGENTSCOPE_MAX_TOKENS").then(|| value.to_owned())
    };
    assert_eq!(support::max_tokens_from(lookup("64")).unwrap(), Some(64));
    assert_eq!(support::max_tokens_from(lookup(" 64 ")).unwrap(), Some(64));
    assert_eq!(support::max_tokens_from(lookup("  ")).unwrap(), None);
    assert_eq!(support::max_tokens_from(|_| None).unwrap(), None);
    for bad in ["0", "-1", "lots"] {
        let error = support::max_tokens_from(lookup(bad)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "model configuration error: AGENTSCOPE_MAX_TOKENS must be a positive integer, \
                 got \"{bad}\""
            )
        );
    }
}

#[tokio::test]
async fn the_cap_fills_or_lowers_every_requests_max_tokens() {
    let inner = ScriptedModel::new([
        ScriptedResponse::text("a"),
        ScriptedResponse::text("b"),
        ScriptedResponse::text("c"),
    ]);
    for asked in [None, Some(1_000), Some(10)] {
        let mut options = GenerateOptions::default();
        options.max_tokens = asked;
        let agent = ReActAgent::builder()
            .model(support::MaxTokens {
                inner: inner.clone(),
                cap: 64,
            })
            .generate_options(options)
            .build()
            .unwrap();
        agent.call("hi").await.unwrap();
    }
    let sent: Vec<Option<u32>> = inner
        .requests()
        .iter()
        .map(|request| request.options.max_tokens)
        .collect();
    assert_eq!(sent, [Some(64), Some(64), Some(10)]);
}

/// An error whose message is its cause's.
#[derive(Debug)]
struct Transparent(std::io::Error);

impl std::fmt::Display for Transparent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Transparent {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// An error with a message and a cause (as reqwest's and hyper's are).
#[derive(Debug)]
struct Layer<E>(&'static str, E);

impl<E> std::fmt::Display for Layer<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Layer<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.1)
    }
}
