//! The stream driver: one request from its first attempt to the end of its body.
//!
//! [`start`] posts the body, retrying failed attempts as [`RetryPolicy`](crate::retry::RetryPolicy)
//! allows until the response starts; then the body is read piece by piece (each read
//! bounded by the timeout), decoded into [`ChatResponse`] deltas, and, once `[DONE]` has
//! arrived, drained so the connection can go back to the pool. Every error is scrubbed of
//! the API key before anyone sees it.

use std::sync::Arc;
use std::time::Duration;

use agentscope_core::{ChatResponse, ChatStream, ModelError};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use reqwest::header;
use reqwest::{StatusCode, Url};

use crate::decode::{Decoder, snippet};
use crate::redact::{endpoint_for_display, redact_secrets, scrub};
use crate::response::{ErrorBody, from_object};
use crate::retry::{is_retryable_status, retry_after};
use crate::settings::Settings;

/// How long a background task keeps reading after `[DONE]` so the connection can go back
/// to the pool.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Posts `body` (retrying as the policy allows) and returns the decoded stream once the
/// response has started.
pub(crate) async fn start(
    settings: Arc<Settings>,
    body: bytes::Bytes,
) -> Result<ChatStream, ModelError> {
    let response = send_with_retries(&settings, body).await?;
    Ok(decode_response(settings, response))
}

fn redact(settings: &Settings, error: ModelError) -> ModelError {
    redact_secrets(error, &settings.secrets)
}

async fn send_with_retries(
    settings: &Settings,
    body: bytes::Bytes,
) -> Result<reqwest::Response, ModelError> {
    let mut attempt: u32 = 0;
    loop {
        let failure = match send_once(settings, body.clone()).await {
            Ok(response) => return Ok(response),
            Err(failure) => failure,
        };
        let delay = if failure.retryable && attempt < settings.retry.max_retries {
            settings.retry.delay(attempt, failure.retry_after())
        } else {
            None
        };
        let Some(delay) = delay else {
            return Err(redact(settings, failure.error));
        };
        attempt += 1;
        tracing::warn!(
            model = %settings.model,
            attempt,
            max_retries = settings.retry.max_retries,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %redact(settings, failure.error),
            "chat completion failed, retrying"
        );
        tokio::time::sleep(delay).await;
    }
}

async fn send_once(settings: &Settings, body: bytes::Bytes) -> Result<reqwest::Response, Failure> {
    tracing::debug!(
        model = %settings.model,
        endpoint = %endpoint_for_display(&settings.endpoint),
        "sending chat completion request"
    );
    let request = settings
        .client
        .post(settings.endpoint.clone())
        .headers(settings.headers.clone())
        .body(body)
        .send();
    let response = match tokio::time::timeout(settings.timeout, request).await {
        Err(_elapsed) => return Err(Failure::fatal(ModelError::Timeout)),
        Ok(Err(err)) => return Err(Failure::from_reqwest(err, &settings.endpoint)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let text = match tokio::time::timeout(settings.timeout, response.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    // Scrubbed before it is logged: a server may echo the key or a header's value.
    let message = scrub(status_message(status, &text), &settings.secrets);
    tracing::debug!(status = status.as_u16(), %message, "chat completion request failed");
    Err(Failure {
        error: ModelError::Status {
            status: status.as_u16(),
            message,
            retry_after,
        },
        retryable: is_retryable_status(status),
    })
}

fn decode_response(settings: Arc<Settings>, response: reqwest::Response) -> ChatStream {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    let state = StreamState {
        body: response.bytes_stream().boxed(),
        decoder: Decoder::new(),
        finished: false,
        whole_json: is_json.then(Vec::new),
        settings,
    };
    // Each step reads one piece of the body and yields the items it completes (often none);
    // `flat_map` hands them out one by one before the next read.
    futures::stream::unfold(state, StreamState::next_batch)
        .flat_map(futures::stream::iter)
        .fuse()
        .boxed()
}

type ByteStream = BoxStream<'static, reqwest::Result<bytes::Bytes>>;
type Batch = Vec<Result<ChatResponse, ModelError>>;

struct StreamState {
    body: ByteStream,
    decoder: Decoder,
    /// Set once the last item has been produced (an error always is the last).
    finished: bool,
    /// The body collected so far, when the server answered with one JSON completion.
    whole_json: Option<Vec<u8>>,
    settings: Arc<Settings>,
}

impl StreamState {
    /// Reads the next piece of the body; `None` when the response is over.
    async fn next_batch(mut self) -> Option<(Batch, Self)> {
        if self.finished {
            return None;
        }
        if self.decoder.is_done() {
            self.finished = true;
            self.drain();
            return None;
        }
        let batch = match tokio::time::timeout(self.settings.timeout, self.body.next()).await {
            Err(_elapsed) => vec![Err(ModelError::Timeout)],
            Ok(Some(Ok(bytes))) => match &mut self.whole_json {
                Some(collected) => {
                    collected.extend_from_slice(bytes.as_ref());
                    Vec::new()
                }
                None => self.decoder.feed(bytes.as_ref()),
            },
            Ok(Some(Err(err))) => vec![Err(body_error(err))],
            Ok(None) => {
                self.finished = true;
                match self.whole_json.take() {
                    Some(collected) => self.decoder.decode_completion(&collected),
                    None => self.decoder.finish(),
                }
            }
        };
        if batch.iter().any(Result::is_err) {
            self.finished = true;
        }
        let settings = &self.settings;
        let batch = batch
            .into_iter()
            .map(|item| item.map_err(|err| redact(settings, err)))
            .collect();
        Some((batch, self))
    }

    /// Reads what follows `[DONE]` (normally just the end of the body, already received)
    /// so the connection can go back to the pool, without making the caller wait: what is
    /// not there yet is read by a background task, when there is a tokio runtime.
    fn drain(&mut self) {
        let mut body = std::mem::replace(&mut self.body, futures::stream::empty().boxed());
        loop {
            match body.next().now_or_never() {
                Some(Some(Ok(_))) => {}
                Some(Some(Err(_)) | None) => return,
                None => break,
            }
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
                    while let Some(Ok(_)) = body.next().await {}
                })
                .await;
            });
        }
    }
}

/// A failed attempt, and whether it may be retried.
struct Failure {
    error: ModelError,
    retryable: bool,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retryable: false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match &self.error {
            ModelError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    fn from_reqwest(err: reqwest::Error, endpoint: &Url) -> Self {
        // Nothing reached the server when the connection failed: always safe to retry.
        let retryable = err.is_connect();
        let error = if err.is_timeout() {
            ModelError::Timeout
        } else {
            // The URL may hold a credential (a password, `?key=...`): the error forgets it,
            // and the message names the endpoint as `endpoint_for_display` shows it.
            let err = err.without_url();
            ModelError::Connection {
                message: format!(
                    "sending the request to {}: {}",
                    endpoint_for_display(endpoint),
                    error_chain(&err)
                ),
                source: Some(agentscope_core::ErrorSource::new(err)),
            }
        };
        Self { error, retryable }
    }
}

fn body_error(err: reqwest::Error) -> ModelError {
    if err.is_timeout() {
        ModelError::Timeout
    } else {
        ModelError::Connection {
            message: format!(
                "the response stream broke: {}",
                error_chain(&err.without_url())
            ),
            source: None,
        }
    }
}

/// An error's message followed by its sources' (`a: b: c`).
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The provider's error message from an error body: `error.message` when it is JSON,
/// otherwise the body text, otherwise the status reason.
fn status_message(status: StatusCode, body: &str) -> String {
    let error_body = serde_json::from_str(body)
        .ok()
        .and_then(from_object::<ErrorBody>);
    if let Some(message) = error_body.and_then(ErrorBody::into_message) {
        return message;
    }
    let body = body.trim();
    if body.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("no error message")
            .to_owned()
    } else {
        snippet(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_messages() {
        let s = StatusCode::BAD_REQUEST;
        assert_eq!(
            status_message(
                s,
                r#"{"error":{"message":"bad tools","type":"invalid_request_error"}}"#
            ),
            "bad tools"
        );
        assert_eq!(
            status_message(s, r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(status_message(s, r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            status_message(s, "upstream exploded\n"),
            "upstream exploded"
        );
        assert_eq!(status_message(StatusCode::BAD_GATEWAY, ""), "Bad Gateway");
    }
}
