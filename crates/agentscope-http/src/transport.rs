//! [`Transport`]: one model endpoint, and the driver that takes a request from its first
//! attempt to the end of its streamed body.
//!
//! [`Transport::stream`] posts a body, retrying failed attempts as the [`RetryPolicy`]
//! allows until the response starts (a request given up on after retries fails with
//! [`ModelError::RetriesExhausted`]); then the body is read piece by piece (each read
//! bounded by the timeout) and decoded by the client's [`Decode`]r into [`ChatResponse`]
//! deltas; once the decoder has seen the end of the response, the rest of the body is
//! drained so the connection can go back to the pool. A response that ends without any
//! content is sent again, once. Every error is scrubbed of the secrets before anyone sees
//! it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentscope_core::error_chain;
use agentscope_core::redact::{REDACTED, Redactor, url_secrets};
use agentscope_core::{
    ChatResponse, ChatStream, ContentBlock, ErrorSource, ModelError, RetryPolicy,
};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use reqwest::Url;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::lenient::status_message;
use crate::redact::{endpoint_for_display, redact_error};
use crate::retry::{is_retryable_status, retry_after};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a background task keeps reading after the end of the response so the
/// connection can go back to the pool.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Turns one response body into [`ChatResponse`] deltas: the protocol-specific half of a
/// model client (the [`Transport`] is the other half).
///
/// An `Err` item is always the last one: the response is over.
pub trait Decode: Default + Send + 'static {
    /// Decodes a piece of an event-stream body; returns the chunks it completes.
    fn feed(&mut self, bytes: &[u8]) -> Vec<Result<ChatResponse, ModelError>>;

    /// The body ended: returns the last chunks, or the error that says the body was cut
    /// off or was not the protocol.
    fn finish(&mut self) -> Vec<Result<ChatResponse, ModelError>>;

    /// Decodes a whole JSON body (a server that answered `application/json` instead of
    /// streaming).
    fn decode_json(&mut self, body: &[u8]) -> Vec<Result<ChatResponse, ModelError>>;

    /// Whether the protocol's end of the response has been seen (nothing more is read
    /// but the rest of the body, drained).
    fn is_done(&self) -> bool;
}

/// The HTTP settings every model client shares: timeouts, retries and extra headers.
///
/// Client builders hold one and forward their setters to it.
///
/// ```
/// use agentscope_http::HttpOptions;
/// use std::time::Duration;
///
/// let options = HttpOptions::new()
///     .timeout(Duration::from_secs(120))
///     .max_retries(3)
///     .header("x-tenant", "blue");
/// assert!(format!("{options:?}").contains("x-tenant"));
/// assert!(!format!("{options:?}").contains("blue"));
/// ```
#[must_use]
#[derive(Clone)]
pub struct HttpOptions {
    timeout: Duration,
    connect_timeout: Duration,
    retry: RetryPolicy,
    headers: Vec<(String, String)>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpOptions {
    /// A 600 s timeout, a 10 s connect timeout, 2 retries with backoff from 500 ms to 8 s,
    /// no extra headers.
    pub fn new() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            retry: RetryPolicy::default(),
            headers: Vec::new(),
        }
    }

    /// How long to wait for the server: for the response to start, and between two pieces
    /// of a streamed response (default 600 s). A long generation never times out while
    /// the server keeps sending; a stalled one fails with [`ModelError::Timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long to wait for a TCP (and TLS) connection (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How many times a failed request is retried (default 2; 0 disables retries).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.retry.max_retries = retries;
        self
    }

    /// The backoff between retries: the first wait is about `initial`, each next one doubles,
    /// never above `max` (defaults 500 ms and 8 s). Each wait is jittered down by up to half.
    /// A server's `Retry-After` takes precedence.
    pub fn retry_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.retry = self.retry.backoff(initial, max);
        self
    }

    /// Adds a header to every request. Its value is treated as a secret: never in `Debug`
    /// output, and scrubbed from every error and log.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("HttpOptions")
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.retry.max_retries)
            .field("headers", &header_names)
            .finish()
    }
}

/// One model endpoint: the HTTP client (its connection pool), the URL, the headers, the
/// secrets to keep out of errors and logs, and the timeouts and retry policy.
///
/// Immutable once built; share it behind an `Arc` (the model handle and its in-flight
/// streams do). Its `Debug` shows no secret.
///
/// ```
/// use agentscope_http::{HttpOptions, Transport};
///
/// let url = "http://127.0.0.1:8080/v1/messages?key=s3cr3t".parse().unwrap();
/// let transport = Transport::builder(url, "my-model")
///     .credential("x-api-key", "sk-abc123")
///     .header("anthropic-version", "2023-06-01")
///     .options(HttpOptions::new().max_retries(0))
///     .build()?;
/// let shown = format!("{transport:?}");
/// assert!(!shown.contains("s3cr3t") && !shown.contains("sk-abc123"));
/// # Ok::<(), agentscope_core::ModelError>(())
/// ```
pub struct Transport {
    client: reqwest::Client,
    endpoint: Url,
    model: String,
    /// Every request's headers, credentials marked sensitive.
    headers: HeaderMap,
    /// Scrubs every secret the client sends (credentials, extra header values, the
    /// endpoint's password and query values).
    redactor: Redactor,
    timeout: Duration,
    connect_timeout: Duration,
    retry: RetryPolicy,
}

/// Builds a [`Transport`]; start with [`Transport::builder`].
#[must_use]
pub struct TransportBuilder {
    endpoint: Url,
    model: String,
    user_agent: String,
    protocol_headers: Vec<(&'static str, String)>,
    credentials: Vec<(&'static str, String)>,
    options: HttpOptions,
}

impl fmt::Debug for TransportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportBuilder")
            .field("endpoint", &endpoint_for_display(&self.endpoint))
            .field("model", &self.model)
            .field("credentials", &self.credentials.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// Starts a transport posting to `endpoint` for `model` (the name is used in logs).
    pub fn builder(endpoint: Url, model: impl Into<String>) -> TransportBuilder {
        TransportBuilder {
            endpoint,
            model: model.into(),
            user_agent: concat!("agentscope-http/", env!("CARGO_PKG_VERSION")).to_owned(),
            protocol_headers: Vec::new(),
            credentials: Vec::new(),
            options: HttpOptions::new(),
        }
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// `error` with every secret of this transport scrubbed from its message.
    pub fn redact(&self, error: ModelError) -> ModelError {
        redact_error(error, &self.redactor)
    }

    /// Posts `body` (retrying as the policy allows) and returns the stream of deltas `D`
    /// decodes, once the response has started.
    ///
    /// Retried, until the response starts: a connection that could not be made, or that
    /// was reset or closed before the first byte of the response (a server restarting),
    /// and the statuses of [`is_retryable_status`](crate::is_retryable_status). Not
    /// retried: a response that does not start within the timeout.
    ///
    /// A response that ends without any content (no text, thinking or tool call; some
    /// servers do that now and then) is sent once more before it is handed on.
    ///
    /// # Errors
    ///
    /// The error, scrubbed of secrets: [`ModelError::Status`], [`ModelError::Timeout`] or
    /// [`ModelError::Connection`]; after more than one attempt, the last attempt's error
    /// inside [`ModelError::RetriesExhausted`] (not retryable, so a retrying model layer
    /// around this client does not multiply the attempts).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future or the returned stream closes the HTTP request.
    pub async fn stream<D: Decode>(
        self: &Arc<Self>,
        body: bytes::Bytes,
    ) -> Result<ChatStream, ModelError> {
        let response = self.send_with_retries(body.clone()).await?;
        let state = StreamState::<D>::new(Arc::clone(self), body, response);
        // Each step reads one piece of the body and yields the items it completes (often
        // none); `flat_map` hands them out one by one before the next read.
        Ok(futures::stream::unfold(state, StreamState::next_batch)
            .flat_map(futures::stream::iter)
            .fuse()
            .boxed())
    }

    /// [`stream`](Self::stream) for a body as a protocol builds it, a JSON value: a body
    /// that could not be built or serialised fails with [`ModelError::Other`] before
    /// anything is sent.
    ///
    /// # Errors
    ///
    /// As [`stream`](Self::stream).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future or the returned stream closes the HTTP request.
    pub async fn stream_json<D: Decode>(
        self: &Arc<Self>,
        body: serde_json::Result<serde_json::Value>,
    ) -> Result<ChatStream, ModelError> {
        let body = body
            .and_then(|body| serde_json::to_vec(&body))
            .map_err(|err| ModelError::Other {
                message: format!("cannot serialise the request: {err}"),
                source: Some(ErrorSource::new(err)),
            })?;
        self.stream::<D>(body.into()).await
    }

    async fn send_with_retries(&self, body: bytes::Bytes) -> Result<reqwest::Response, ModelError> {
        let mut attempt: u32 = 0;
        loop {
            let failure = match self.send_once(body.clone()).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            let delay = if failure.retryable && attempt < self.retry.max_retries {
                self.retry.delay(attempt, failure.error.retry_after())
            } else {
                None
            };
            let Some(delay) = delay else {
                let error = ModelError::gave_up_after(attempt + 1, failure.error);
                return Err(self.redact(error));
            };
            attempt += 1;
            tracing::warn!(
                model = %self.model,
                attempt,
                max_retries = self.retry.max_retries,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %self.redact(failure.error),
                "model request failed, retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn send_once(&self, body: bytes::Bytes) -> Result<reqwest::Response, Failure> {
        tracing::debug!(
            model = %self.model,
            endpoint = %endpoint_for_display(&self.endpoint),
            "sending model request"
        );
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = match tokio::time::timeout(self.timeout, request).await {
            Err(_elapsed) => return Err(Failure::fatal(ModelError::Timeout)),
            Ok(Err(err)) => return Err(Failure::from_reqwest(err, &self.endpoint)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let text = tokio::time::timeout(self.timeout, error_body(response))
            .await
            .unwrap_or_default();
        // Scrubbed before it is logged: a server may echo the key or a header's value.
        let message = self.redactor.scrub(status_message(status, &text));
        tracing::debug!(status = status.as_u16(), %message, "model request failed");
        Err(Failure {
            error: ModelError::Status {
                status: status.as_u16(),
                message,
                retry_after,
            },
            retryable: is_retryable_status(status),
        })
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("model", &self.model)
            .field("endpoint", &endpoint_for_display(&self.endpoint))
            .field("secrets", &vec![REDACTED; self.redactor.len()])
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.retry.max_retries)
            .finish_non_exhaustive()
    }
}

impl TransportBuilder {
    /// The `User-Agent` sent (default `agentscope-http/<version>`).
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// A header of the protocol itself (e.g. `anthropic-version`): not a secret.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.protocol_headers.push((name, value.into()));
        self
    }

    /// A header carrying a credential (e.g. `x-api-key`): marked sensitive, and the value
    /// is scrubbed from every error and log. For `authorization`, use
    /// [`bearer`](Self::bearer).
    pub fn credential(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.credentials.push((name, value.into()));
        self
    }

    /// `Authorization: Bearer <token>`, as [`credential`](Self::credential) (the token is
    /// the secret).
    pub fn bearer(self, token: &str) -> Self {
        self.credential("authorization", format!("Bearer {token}"))
    }

    /// The timeouts, retries and extra headers.
    pub fn options(mut self, options: HttpOptions) -> Self {
        self.options = options;
        self
    }

    /// Builds the transport.
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`] when a header name or value is invalid, or the HTTP client
    /// cannot be created.
    pub fn build(self) -> Result<Transport, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json"),
        );
        for (name, value) in &self.protocol_headers {
            let value = HeaderValue::from_str(value)
                .map_err(|_| config(format!("invalid value for header {name:?}")))?;
            headers.insert(header_name(name)?, value);
        }
        let mut secrets = Vec::new();
        for (name, value) in &self.credentials {
            let mut header_value = HeaderValue::from_str(value).map_err(|_| {
                config(format!(
                    "the credential for header {name:?} contains characters not allowed in a \
                     header"
                ))
            })?;
            header_value.set_sensitive(true);
            headers.insert(header_name(name)?, header_value);
            secrets.push(credential_secret(value).to_owned());
        }
        for (name, value) in &self.options.headers {
            let mut header_value = HeaderValue::from_str(value)
                .map_err(|_| config(format!("invalid value for header {name:?}")))?;
            header_value.set_sensitive(true);
            headers.insert(header_name(name)?, header_value);
            secrets.push(value.clone());
        }
        secrets.extend(url_secrets(self.endpoint.as_str()));
        let client = reqwest::Client::builder()
            .connect_timeout(self.options.connect_timeout)
            .user_agent(self.user_agent)
            .build()
            .map_err(|err| config(format!("cannot create the HTTP client: {err}")))?;
        Ok(Transport {
            client,
            endpoint: self.endpoint,
            model: self.model,
            headers,
            redactor: Redactor::new(secrets),
            timeout: self.options.timeout,
            connect_timeout: self.options.connect_timeout,
            retry: self.options.retry,
        })
    }
}

fn header_name(name: &str) -> Result<HeaderName, ModelError> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| config(format!("invalid header name {name:?}")))
}

/// The secret part of a credential header's value: the token of `Bearer <token>`.
fn credential_secret(value: &str) -> &str {
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .unwrap_or(value)
}

fn config(message: impl Into<String>) -> ModelError {
    ModelError::Config {
        message: message.into(),
    }
}

type ByteStream = BoxStream<'static, reqwest::Result<bytes::Bytes>>;
type Batch = Vec<Result<ChatResponse, ModelError>>;

struct StreamState<D> {
    transport: Arc<Transport>,
    /// The request body, kept to send it again after an empty response.
    request: bytes::Bytes,
    body: ByteStream,
    decoder: D,
    /// Set once the last item has been produced (an error always is the last).
    finished: bool,
    /// The body collected so far, when the server answered with one JSON body.
    whole_json: Option<Vec<u8>>,
    /// Whether a chunk with content has been handed on.
    seen_content: bool,
    /// Chunks without content (usage, a finish reason) that came before any content: held
    /// back until content arrives, dropped when an empty response is sent again.
    held: Vec<ChatResponse>,
    /// Whether an empty response may still be sent again.
    may_resend_empty: bool,
}

impl<D: Decode> StreamState<D> {
    fn new(transport: Arc<Transport>, request: bytes::Bytes, response: reqwest::Response) -> Self {
        let mut state = Self {
            transport,
            request,
            body: futures::stream::empty().boxed(),
            decoder: D::default(),
            finished: false,
            whole_json: None,
            seen_content: false,
            held: Vec::new(),
            may_resend_empty: true,
        };
        state.start(response);
        state
    }

    /// Starts reading a (new) response.
    fn start(&mut self, response: reqwest::Response) {
        let is_json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        self.body = response.bytes_stream().boxed();
        self.decoder = D::default();
        self.whole_json = is_json.then(Vec::new);
        self.held.clear();
    }

    /// Reads the next piece of the body; `None` when the response is over.
    async fn next_batch(mut self) -> Option<(Batch, Self)> {
        loop {
            if self.finished {
                return None;
            }
            let (batch, ended) = self.read().await;
            let failed = batch.iter().any(Result::is_err);
            let mut out = self.release(batch);
            if ended && !failed && !self.seen_content && self.may_resend_empty {
                self.may_resend_empty = false;
                tracing::warn!(
                    model = %self.transport.model,
                    "the model returned an empty response, sending the request once more"
                );
                match self.transport.send_with_retries(self.request.clone()).await {
                    Ok(response) => {
                        self.start(response);
                        continue;
                    }
                    Err(err) => {
                        self.finished = true;
                        return Some((vec![Err(err)], self));
                    }
                }
            }
            if ended || failed {
                self.finished = true;
                out.extend(self.held.drain(..).map(Ok));
            }
            return Some((out, self));
        }
    }

    /// Reads and decodes one piece; `true` when the response ended without an error.
    async fn read(&mut self) -> (Batch, bool) {
        if self.decoder.is_done() {
            self.drain();
            return (Vec::new(), true);
        }
        let timeout = self.transport.timeout;
        let batch = match tokio::time::timeout(timeout, self.body.next()).await {
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
                let batch = match self.whole_json.take() {
                    Some(collected) => self.decoder.decode_json(&collected),
                    None => self.decoder.finish(),
                };
                return (batch, true);
            }
        };
        (batch, false)
    }

    /// What to hand on: chunks before the first content are held back; errors scrubbed.
    fn release(&mut self, batch: Batch) -> Batch {
        let mut out = Vec::with_capacity(batch.len());
        for item in batch {
            match item {
                Ok(chunk) if !self.seen_content => {
                    if has_content(&chunk) {
                        self.seen_content = true;
                        out.extend(self.held.drain(..).map(Ok));
                        out.push(Ok(chunk));
                    } else {
                        self.held.push(chunk);
                    }
                }
                Ok(chunk) => out.push(Ok(chunk)),
                Err(err) => {
                    out.extend(self.held.drain(..).map(Ok));
                    out.push(Err(self.transport.redact(err)));
                }
            }
        }
        out
    }

    /// Reads what follows the end of the response (normally just the end of the body,
    /// already received) so the connection can go back to the pool, without making the
    /// caller wait: what is not there yet is read by a background task, when there is a
    /// tokio runtime.
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

/// Whether a chunk carries anything of a message (not just usage or a finish reason).
fn has_content(chunk: &ChatResponse) -> bool {
    chunk.content.iter().any(|block| match block {
        ContentBlock::Text(text) => !text.text.is_empty(),
        ContentBlock::Thinking(thinking) => {
            !thinking.thinking.is_empty() || thinking.signature.is_some()
        }
        _ => true,
    })
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

    /// An attempt that failed before any byte of a response arrived. A connection that
    /// could not be made, or that was reset or closed before the response began (a server
    /// restarting), is retried: it is a [`ModelError::Connection`], which says it is
    /// retryable, and the server produced nothing, so sending the request again is what a
    /// caller would do. Not retried: a request the server took longer than the timeout to
    /// start answering (waiting that long again is the caller's choice), and a request
    /// reqwest could not even build.
    fn from_reqwest(err: reqwest::Error, endpoint: &Url) -> Self {
        if err.is_timeout() {
            // A connect timeout is a connection that could not be made: nothing was sent.
            let retryable = err.is_connect();
            return Self {
                error: ModelError::Timeout,
                retryable,
            };
        }
        if err.is_builder() {
            return Self::fatal(config(format!(
                "cannot build the request: {}",
                error_chain(&err.without_url())
            )));
        }
        let error = {
            // The URL may hold a credential (a password, `?key=...`): the error forgets it,
            // and the message names the endpoint as `endpoint_for_display` shows it.
            let err = err.without_url();
            ModelError::Connection {
                message: format!(
                    "sending the request to {}: {}",
                    endpoint_for_display(endpoint),
                    error_chain(&err)
                ),
                source: Some(ErrorSource::new(err)),
            }
        };
        Self {
            retryable: error.is_retryable(),
            error,
        }
    }
}

/// The most of an error response's body that is read: enough for any provider's message; a
/// server (or a proxy) that sends megabytes with an error status is not read to the end.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The start of an error response's body (at most [`MAX_ERROR_BODY`] bytes), as text.
async fn error_body(response: reqwest::Response) -> String {
    let mut body = response.bytes_stream();
    let mut bytes = Vec::new();
    while let Some(Ok(piece)) = body.next().await {
        let room = MAX_ERROR_BODY - bytes.len();
        bytes.extend_from_slice(&piece[..piece.len().min(room)]);
        if bytes.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_of_a_credential_is_its_token() {
        assert_eq!(credential_secret("Bearer tok-123"), "tok-123");
        assert_eq!(credential_secret("sk-ant-1"), "sk-ant-1");
    }

    #[test]
    fn bad_headers_are_config_errors() {
        let url: Url = "http://127.0.0.1:1/v1".parse().unwrap();
        let err = Transport::builder(url.clone(), "m")
            .credential("x-api-key", "line\nbreak")
            .build()
            .err();
        assert!(
            matches!(&err, Some(ModelError::Config { message }) if message.contains("x-api-key") && !message.contains("break")),
            "{err:?}"
        );
        let err = Transport::builder(url, "m")
            .options(HttpOptions::new().header("bad name", "v"))
            .build()
            .err();
        assert!(matches!(err, Some(ModelError::Config { .. })), "{err:?}");
    }
}
