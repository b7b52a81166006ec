//! Model middleware: retry, fallback and cache, through a real agent.

use std::time::Duration;

use crate::support::fixtures::cut_after;
use agentscope::ModelError;
use agentscope::RetryPolicy;
use agentscope::model_layers::ModelExt;
use agentscope::prelude::*;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};

fn status(code: u16) -> ModelError {
    ModelError::Status {
        status: code,
        message: format!("status {code}"),
        retry_after: None,
    }
}

fn quick(retries: u32) -> RetryPolicy {
    RetryPolicy::new(retries).backoff(Duration::from_millis(1), Duration::from_millis(2))
}

fn agent(model: impl Model) -> ReActAgent {
    ReActAgent::builder().model(model).build().unwrap()
}

/// The error of a call that fails.
async fn error_of(model: impl Model) -> AgentError {
    agent(model).call("hi").await.unwrap_err()
}

#[tokio::test]
async fn retry_sends_again_after_retryable_failures_before_any_output() {
    let model = ScriptedModel::new([
        ScriptedResponse::failure(status(503)),
        // A stream that fails before its first chunk counts as a failure too.
        ScriptedResponse::chunks([ScriptedChunk::error("connection reset")]),
        ScriptedResponse::text("ok"),
    ]);
    let reply = agent(model.clone().with_retry(quick(2)))
        .call("hi")
        .await
        .unwrap();
    assert_eq!(reply.text(), "ok");
    assert_eq!(model.request_count(), 3);
    // Every try sent the same conversation.
    let requests = model.requests();
    assert!(requests.windows(2).all(|pair| pair[0] == pair[1]));
}

#[tokio::test]
async fn retry_gives_up_after_its_limit_and_never_retries_other_failures() {
    let model = ScriptedModel::new([
        ScriptedResponse::failure(status(503)),
        ScriptedResponse::failure(status(503)),
        ScriptedResponse::failure(status(503)),
    ]);
    let error = error_of(model.clone().with_retry(quick(2))).await;
    assert_eq!(
        error.to_string(),
        "model error: gave up after 3 attempts: HTTP 503: status 503"
    );
    assert!(matches!(
        error.model_error(),
        Some(ModelError::RetriesExhausted { attempts: 3, source })
            if matches!(**source, ModelError::Status { status: 503, .. })
    ));
    assert_eq!(model.request_count(), 3);

    for code in [400, 401, 404] {
        let model = ScriptedModel::new([ScriptedResponse::failure(status(code))]);
        let error = error_of(model.clone().with_retry(quick(2))).await;
        assert_eq!(error.model_error().and_then(ModelError::status), Some(code));
        assert_eq!(model.request_count(), 1, "{code} is not retried");
    }
}

/// A retry layer on a retry layer: the outer one does not retry what the inner one gave up
/// on (2 requests, not 4), and a retry that did not retry returns the error as it is.
#[tokio::test]
async fn stacked_retries_do_not_multiply() {
    let model = ScriptedModel::new(
        std::iter::repeat_with(|| ScriptedResponse::failure(status(503))).take(4),
    );
    let error = error_of(model.clone().with_retry(quick(1)).with_retry(quick(1))).await;
    assert_eq!(
        error.to_string(),
        "model error: gave up after 2 attempts: HTTP 503: status 503"
    );
    assert_eq!(model.request_count(), 2);

    let model = ScriptedModel::new([ScriptedResponse::failure(status(503))]);
    let error = error_of(model.clone().with_retry(quick(0))).await;
    assert_eq!(error.to_string(), "model error: HTTP 503: status 503");
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn a_failure_after_output_began_is_the_callers() {
    let model = ScriptedModel::new([
        cut_after("Half an ans", "connection reset"),
        ScriptedResponse::text("never used"),
    ]);
    let error = error_of(model.clone().with_retry(quick(2))).await;
    assert_eq!(
        error.to_string(),
        "model error: model stream error: connection reset"
    );
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn fallback_answers_when_the_primary_fails() {
    let primary = ScriptedModel::new([
        ScriptedResponse::failure(status(401)),
        ScriptedResponse::text("from the primary"),
    ])
    .with_name("primary");
    let backup =
        ScriptedModel::new([ScriptedResponse::text("from the backup")]).with_name("backup");
    let model = primary.clone().with_fallback(backup.clone());
    assert_eq!(model.model_name(), "primary");
    let agent = agent(model);
    assert_eq!(agent.call("one").await.unwrap().text(), "from the backup");
    assert_eq!(agent.call("two").await.unwrap().text(), "from the primary");
    assert_eq!((primary.request_count(), backup.request_count()), (2, 1));
    // The backup got the same conversation the primary refused.
    assert_eq!(backup.requests()[0], primary.requests()[0]);
}

#[tokio::test]
async fn the_cache_replays_an_answer_for_the_same_conversation() {
    let model = ScriptedModel::new([
        ScriptedResponse::chunks([ScriptedChunk::text("Hel"), ScriptedChunk::text("lo!")]),
        ScriptedResponse::text("Another answer."),
        ScriptedResponse::error("model down"),
    ]);
    let cached = model.clone().cached();
    // Two agents (two runs) ask the same: one model request.
    let first = agent(cached.clone()).call("hi").await.unwrap();
    let second = agent(cached.clone()).call("hi").await.unwrap();
    assert_eq!(
        (first.text(), second.text()),
        ("Hello!".into(), "Hello!".into())
    );
    assert_eq!(model.request_count(), 1);
    assert_eq!(cached.len(), 1);
    // Other content misses.
    assert_eq!(
        agent(cached.clone()).call("bye").await.unwrap().text(),
        "Another answer."
    );
    assert_eq!(model.request_count(), 2);
    // A failed answer is not remembered.
    assert!(agent(cached.clone()).call("fail").await.is_err());
    assert_eq!(cached.len(), 2);
}

#[tokio::test]
async fn layers_compose() {
    let primary = ScriptedModel::new([
        ScriptedResponse::failure(status(503)),
        ScriptedResponse::failure(status(503)),
    ]);
    let backup = ScriptedModel::new([ScriptedResponse::text("composed")]);
    let model = primary
        .clone()
        .with_retry(quick(1))
        .with_fallback(backup.clone())
        .cached();
    let agent_a = agent(model);
    assert_eq!(agent_a.call("hi").await.unwrap().text(), "composed");
    assert_eq!((primary.request_count(), backup.request_count()), (2, 1));
}

#[tokio::test]
async fn each_layer_shows_in_tracing() {
    use crate::support::warnings::TargetLog;

    let log = TargetLog::global("agentscope::model_layers");
    let primary = ScriptedModel::new([
        ScriptedResponse::failure(status(503)),
        ScriptedResponse::failure(status(502)),
    ])
    .with_name("primary");
    let backup = ScriptedModel::new([ScriptedResponse::text("composed")]).with_name("backup");
    let model = primary.with_retry(quick(1)).with_fallback(backup).cached();
    let agent = agent(model);
    assert_eq!(agent.call("hi").await.unwrap().text(), "composed");
    let lines = log.lines();
    let delays: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("delay_ms"))
        .map(String::as_str)
        .collect();
    assert_eq!(delays.len(), 1, "{lines:#?}");
    let without_delay: Vec<String> = lines
        .iter()
        .map(|line| match line.find(" delay_ms=") {
            Some(at) => {
                let rest = &line[at + 1..];
                let end = rest.find(' ').map_or(line.len(), |i| at + 1 + i);
                format!("{}{}", &line[..at], &line[end..])
            }
            None => line.clone(),
        })
        .collect();
    assert_eq!(
        without_delay,
        [
            "DEBUG message=model response cache model=primary cache_hit=false",
            "span model_attempt model=primary attempt=1",
            "WARN message=agentscope.model.retry model=primary retry=1 max_retries=1 \
             error.type=503 error=HTTP 503: status 503",
            "span model_attempt model=primary attempt=2",
            "WARN message=agentscope.model.fallback model=primary fallback=backup \
             error.type=502 error=gave up after 2 attempts: HTTP 502: status 502",
            "span model_fallback model=primary fallback=backup",
        ],
        "{lines:#?}"
    );
}
