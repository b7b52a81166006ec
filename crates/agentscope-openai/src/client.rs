//! [`OpenAIChatModel`], its builder, the HTTP exchange and the retry loop.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentscope_core::{ChatResponse, ChatStream, Model, ModelError, ModelRequest};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};

use crate::decode::{Decoder, error_message, snippet};
use crate::request::build_body;

/// The default base URL: OpenAI's API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The environment variable holding the API key.
pub const ENV_API_KEY: &str = "OPENAI_API_KEY";
/// The environment variable holding the base URL.
pub const ENV_BASE_URL: &str = "OPENAI_BASE_URL";
/// The environment variable holding the model name.
pub const ENV_MODEL: &str = "AGENTSCOPE_MODEL";

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_RETRIES: u32 = 2;
const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(500);
const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(8);
/// A `Retry-After` longer than this is not waited for: the error goes to the caller.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How long a background task keeps reading after `[DONE]` so the connection can go back
/// to the pool.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
const REDACTED: &str = "<redacted>";

/// A chat model served over the OpenAI chat-completions protocol.
///
/// Works with OpenAI and with the many servers that speak the same wire protocol: Azure-style
/// gateways, vLLM, llama.cpp server, Ollama, LM Studio, DeepSeek, DashScope (compatible
/// mode), OpenRouter, ... Every request is streamed (`stream: true`) and decoded into
/// [`ChatResponse`] deltas: text, thinking (`reasoning_content` / `reasoning`), tool-call
/// fragments, usage and finish reason.
///
/// Cloning is cheap (an `Arc` inside) and clones share one connection pool, so there is no
/// need to wrap it in an `Arc`.
///
/// ```no_run
/// use agentscope_core::{Model, ModelRequest, Msg};
/// use agentscope_openai::OpenAIChatModel;
/// use futures::StreamExt;
///
/// # async fn run() -> Result<(), agentscope_core::ModelError> {
/// let model = OpenAIChatModel::builder()
///     .api_key("sk-...")
///     .model("gpt-4o-mini")
///     .build()?;
/// let request = ModelRequest { messages: vec![Msg::user("Hi!")], ..Default::default() };
/// let mut stream = model.stream(request).await?;
/// while let Some(chunk) = stream.next().await {
///     println!("{:?}", chunk?.content);
/// }
/// # Ok(()) }
/// ```
///
/// # Errors and retries
///
/// Failures are [`ModelError`]s: an HTTP error status becomes [`ModelError::Status`] with
/// the provider's message and `Retry-After` (see [`is_rate_limited`](ModelError::is_rate_limited),
/// [`is_auth`](ModelError::is_auth)); a timeout [`ModelError::Timeout`]; a connection
/// failure [`ModelError::Connection`]; an `{"error": ...}` event in the middle of a stream
/// [`ModelError::Stream`]; a body that is not the protocol
/// [`ModelError::InvalidResponse`].
///
/// Connection failures and the statuses 408, 429 and 5xx are retried (up to
/// [`max_retries`](OpenAIChatModelBuilder::max_retries) times, default 2) with exponential
/// backoff and jitter, waiting what `Retry-After` / `retry-after-ms` ask for when the server
/// sends them. Retries only happen before the response starts: once the stream has begun,
/// an error ends it. A timeout waiting for the response is not retried (the server may be
/// working on it).
///
/// The API key is sent as a bearer token and never appears in `Debug` output, logs or error
/// messages.
#[derive(Clone)]
pub struct OpenAIChatModel {
    inner: Arc<Inner>,
}

struct Inner {
    client: reqwest::Client,
    endpoint: Url,
    model: String,
    api_key: Option<String>,
    headers: HeaderMap,
    timeout: Duration,
    connect_timeout: Duration,
    retry: RetryPolicy,
    include_usage: bool,
}

impl OpenAIChatModel {
    /// Starts a builder.
    ///
    /// ```
    /// use agentscope_openai::OpenAIChatModel;
    /// use std::time::Duration;
    ///
    /// let model = OpenAIChatModel::builder()
    ///     .base_url("http://localhost:11434/v1") // Ollama: no key needed
    ///     .model("qwen3:8b")
    ///     .timeout(Duration::from_secs(120))
    ///     .max_retries(3)
    ///     .build()?;
    /// assert_eq!(model.endpoint(), "http://localhost:11434/v1/chat/completions");
    /// # Ok::<(), agentscope_core::ModelError>(())
    /// ```
    pub fn builder() -> OpenAIChatModelBuilder {
        OpenAIChatModelBuilder::new()
    }

    /// Builds a model from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` (optional,
    /// default OpenAI) and `AGENTSCOPE_MODEL`.
    ///
    /// Use [`OpenAIChatModelBuilder::from_env`] to adjust more settings before building.
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`] when `AGENTSCOPE_MODEL` is not set, or when `OPENAI_API_KEY`
    /// is not set and the base URL is OpenAI's (local servers need no key).
    ///
    /// ```no_run
    /// let model = agentscope_openai::OpenAIChatModel::from_env()?;
    /// # Ok::<(), agentscope_core::ModelError>(())
    /// ```
    pub fn from_env() -> Result<Self, ModelError> {
        OpenAIChatModelBuilder::from_env().build()
    }

    /// The URL requests are posted to (`<base_url>/chat/completions`).
    pub fn endpoint(&self) -> &str {
        self.inner.endpoint.as_str()
    }

    /// The model name sent in every request.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    async fn send_with_retries(&self, body: bytes::Bytes) -> Result<reqwest::Response, ModelError> {
        let inner = &self.inner;
        let mut attempt: u32 = 0;
        loop {
            let failure = match self.send_once(body.clone()).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            let delay = if failure.retryable && attempt < inner.retry.max_retries {
                inner.retry.delay(attempt, failure.retry_after())
            } else {
                None
            };
            let Some(delay) = delay else {
                return Err(self.redact(failure.error));
            };
            attempt += 1;
            tracing::warn!(
                model = %inner.model,
                attempt,
                max_retries = inner.retry.max_retries,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %self.redact(failure.error),
                "chat completion failed, retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn send_once(&self, body: bytes::Bytes) -> Result<reqwest::Response, Failure> {
        let inner = &self.inner;
        tracing::debug!(
            model = %inner.model,
            endpoint = %endpoint_for_display(&inner.endpoint),
            "sending chat completion request"
        );
        let request = inner
            .client
            .post(inner.endpoint.clone())
            .headers(inner.headers.clone())
            .body(body)
            .send();
        let response = match tokio::time::timeout(inner.timeout, request).await {
            Err(_elapsed) => return Err(Failure::fatal(ModelError::Timeout)),
            Ok(Err(err)) => return Err(Failure::from_reqwest(err)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let text = match tokio::time::timeout(inner.timeout, response.text()).await {
            Ok(Ok(text)) => text,
            _ => String::new(),
        };
        let message = status_message(status, &text);
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

    /// Removes the API key from an error's message, in case a server echoed it.
    fn redact(&self, error: ModelError) -> ModelError {
        let Some(key) = self.inner.api_key.as_deref() else {
            return error;
        };
        let clean = |message: String| {
            if message.contains(key) {
                message.replace(key, REDACTED)
            } else {
                message
            }
        };
        match error {
            ModelError::Status {
                status,
                message,
                retry_after,
            } => ModelError::Status {
                status,
                message: clean(message),
                retry_after,
            },
            ModelError::Stream { message } => ModelError::Stream {
                message: clean(message),
            },
            ModelError::InvalidResponse { message } => ModelError::InvalidResponse {
                message: clean(message),
            },
            ModelError::Connection { message, source } => ModelError::Connection {
                message: clean(message),
                source,
            },
            other => other,
        }
    }
}

impl fmt::Debug for OpenAIChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        f.debug_struct("OpenAIChatModel")
            .field("model", &inner.model)
            .field("endpoint", &endpoint_for_display(&inner.endpoint))
            .field("api_key", &inner.api_key.as_ref().map(|_| REDACTED))
            .field("timeout", &inner.timeout)
            .field("connect_timeout", &inner.connect_timeout)
            .field("max_retries", &inner.retry.max_retries)
            .field("include_usage", &inner.include_usage)
            .finish_non_exhaustive()
    }
}

impl Model for OpenAIChatModel {
    fn model_name(&self) -> &str {
        &self.inner.model
    }

    /// Posts the request and returns the decoded stream once the response has started.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future or the returned stream closes the HTTP request.
    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let body = build_body(&self.inner.model, &request, self.inner.include_usage);
        let body = serde_json::to_vec(&body).map_err(|err| ModelError::Other {
            message: format!("cannot serialise the request: {err}"),
            source: Some(Arc::new(err)),
        })?;
        let response = self.send_with_retries(body.into()).await?;
        Ok(self.decode_response(response))
    }
}

impl OpenAIChatModel {
    fn decode_response(&self, response: reqwest::Response) -> ChatStream {
        let is_json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        let state = StreamState {
            body: response.bytes_stream().boxed(),
            decoder: Decoder::new(),
            pending: VecDeque::new(),
            finished: false,
            whole_json: is_json.then(Vec::new),
            timeout: self.inner.timeout,
            model: self.clone(),
        };
        futures::stream::unfold(state, StreamState::next)
            .fuse()
            .boxed()
    }
}

type ByteStream = BoxStream<'static, reqwest::Result<bytes::Bytes>>;

struct StreamState {
    body: ByteStream,
    decoder: Decoder,
    pending: VecDeque<Result<ChatResponse, ModelError>>,
    finished: bool,
    /// The body collected so far, when the server answered with one JSON completion.
    whole_json: Option<Vec<u8>>,
    timeout: Duration,
    model: OpenAIChatModel,
}

impl StreamState {
    async fn next(mut self) -> Option<(Result<ChatResponse, ModelError>, Self)> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                let item = item.map_err(|err| self.model.redact(err));
                return Some((item, self));
            }
            if self.finished {
                return None;
            }
            if self.decoder.is_done() {
                self.finished = true;
                self.drain();
                return None;
            }
            match tokio::time::timeout(self.timeout, self.body.next()).await {
                Err(_elapsed) => self.fail(ModelError::Timeout),
                Ok(Some(Ok(bytes))) => match &mut self.whole_json {
                    Some(collected) => collected.extend_from_slice(bytes.as_ref()),
                    None => {
                        let items = self.decoder.feed(bytes.as_ref());
                        self.push(items);
                    }
                },
                Ok(Some(Err(err))) => self.fail(body_error(&err)),
                Ok(None) => {
                    let items = match self.whole_json.take() {
                        Some(collected) => self.decoder.decode_completion(&collected),
                        None => self.decoder.finish(),
                    };
                    self.push(items);
                    self.finished = true;
                }
            }
        }
    }

    fn push(&mut self, items: Vec<Result<ChatResponse, ModelError>>) {
        if items.iter().any(Result::is_err) {
            self.finished = true;
        }
        self.pending.extend(items);
    }

    fn fail(&mut self, error: ModelError) {
        self.finished = true;
        self.pending.push_back(Err(error));
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

    fn from_reqwest(err: reqwest::Error) -> Self {
        // Nothing reached the server when the connection failed: always safe to retry.
        let retryable = err.is_connect();
        let error = if err.is_timeout() {
            ModelError::Timeout
        } else {
            ModelError::Connection {
                message: error_chain(&err),
                source: Some(Arc::new(err)),
            }
        };
        Self { error, retryable }
    }
}

fn body_error(err: &reqwest::Error) -> ModelError {
    if err.is_timeout() {
        ModelError::Timeout
    } else {
        ModelError::Connection {
            message: format!("the response stream broke: {}", error_chain(err)),
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

fn is_retryable_status(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// The provider's error message from an error body: `error.message` when it is JSON,
/// otherwise the body text, otherwise the status reason.
fn status_message(status: StatusCode, body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        let message = error_message(&value).or_else(|| {
            ["message", "detail"].iter().find_map(|key| {
                value
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            })
        });
        if let Some(message) = message {
            return message;
        }
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

/// `retry-after-ms` (OpenAI) or `Retry-After` in seconds.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|value| value.is_finite() && *value >= 0.0)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    // An HTTP-date `Retry-After` is rare from model servers: it falls back to backoff.
    number("retry-after").and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

#[derive(Debug, Clone, Copy)]
struct RetryPolicy {
    max_retries: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
}

impl RetryPolicy {
    /// How long to wait before retry number `attempt + 1`; `None` when the server asks for
    /// a wait longer than we are willing to block a call for.
    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(wait) = retry_after {
            return (wait <= MAX_RETRY_AFTER.max(self.max_backoff)).then_some(wait);
        }
        let factor = 2u32.saturating_pow(attempt.min(16));
        let backoff = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        // Jitter: a random point in [backoff / 2, backoff], so clients that failed together
        // do not retry together.
        let half = backoff / 2;
        let spread = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let jitter = if spread == 0 {
            0
        } else {
            fastrand::u64(..spread)
        };
        Some(half + Duration::from_nanos(jitter))
    }
}

/// Builds an [`OpenAIChatModel`]; start with [`OpenAIChatModel::builder`].
///
/// Setters never fail; [`build`](Self::build) checks everything and reports the first
/// problem as [`ModelError::Config`].
#[must_use]
#[derive(Clone)]
pub struct OpenAIChatModelBuilder {
    api_key: Option<String>,
    base_url: Option<String>,
    model: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    retry: RetryPolicy,
    headers: Vec<(String, String)>,
    include_usage: bool,
}

impl Default for OpenAIChatModelBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenAIChatModelBuilder {
    /// A builder with the defaults: OpenAI's base URL, no key, no model, a 600 s timeout, a
    /// 10 s connect timeout, 2 retries.
    pub fn new() -> Self {
        Self {
            api_key: None,
            base_url: None,
            model: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            retry: RetryPolicy {
                max_retries: DEFAULT_MAX_RETRIES,
                initial_backoff: DEFAULT_INITIAL_BACKOFF,
                max_backoff: DEFAULT_MAX_BACKOFF,
            },
            headers: Vec::new(),
            include_usage: true,
        }
    }

    /// A builder filled from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` and
    /// `AGENTSCOPE_MODEL` (each only when set and not empty).
    ///
    /// ```no_run
    /// use agentscope_openai::OpenAIChatModelBuilder;
    ///
    /// let model = OpenAIChatModelBuilder::from_env().max_retries(5).build()?;
    /// # Ok::<(), agentscope_core::ModelError>(())
    /// ```
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// A builder filled by `lookup` (called with the names of the environment variables
    /// [`from_env`](Self::from_env) reads): for configuration that comes from elsewhere, and
    /// for tests.
    ///
    /// ```
    /// use agentscope_openai::OpenAIChatModelBuilder;
    ///
    /// let model = OpenAIChatModelBuilder::from_lookup(|name| match name {
    ///     "OPENAI_BASE_URL" => Some("http://127.0.0.1:8000/v1".into()),
    ///     "AGENTSCOPE_MODEL" => Some("Qwen/Qwen3-8B".into()),
    ///     _ => None,
    /// })
    /// .build()?;
    /// assert_eq!(model.model(), "Qwen/Qwen3-8B");
    /// # Ok::<(), agentscope_core::ModelError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let mut builder = Self::new();
        builder.api_key = get(ENV_API_KEY);
        builder.base_url = get(ENV_BASE_URL);
        builder.model = get(ENV_MODEL);
        builder
    }

    /// Sets the API key, sent as `Authorization: Bearer <key>`. Optional for servers that
    /// need none (local ones); required for OpenAI's base URL.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.api_key = (!key.is_empty()).then_some(key);
        self
    }

    /// Sets the base URL (default `https://api.openai.com/v1`); requests go to
    /// `<base_url>/chat/completions`. A URL that already ends with `/chat/completions` is
    /// used as it is, and a query string (e.g. `?api-version=...`) is kept.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets the model name sent with every request (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
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
        self.retry.initial_backoff = initial;
        self.retry.max_backoff = max.max(initial);
        self
    }

    /// Adds a header to every request (e.g. `api-key` for Azure, `HTTP-Referer` for
    /// OpenRouter). Header values never appear in `Debug` output.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Whether to ask for token usage at the end of the stream
    /// (`stream_options.include_usage`, default true). Turn it off for servers that reject
    /// `stream_options`.
    pub fn include_usage(mut self, include: bool) -> Self {
        self.include_usage = include;
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`] when no model is set, the base URL is not an `http(s)` URL,
    /// no API key is set for OpenAI's own base URL, a header is invalid, or the HTTP client
    /// cannot be created.
    pub fn build(self) -> Result<OpenAIChatModel, ModelError> {
        let model = self
            .model
            .filter(|model| !model.trim().is_empty())
            .ok_or_else(|| config("no model set: call .model(..) or set AGENTSCOPE_MODEL"))?;
        let base_url = self.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        let endpoint = endpoint(base_url)?;
        if self.api_key.is_none() && endpoint.host_str() == Some("api.openai.com") {
            return Err(config(
                "no API key set for api.openai.com: call .api_key(..) or set OPENAI_API_KEY",
            ));
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json"),
        );
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| config("the API key contains characters not allowed in a header"))?;
            value.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, value);
        }
        for (name, value) in &self.headers {
            let header_name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| config(format!("invalid header name {name:?}")))?;
            let mut header_value = HeaderValue::from_str(value)
                .map_err(|_| config(format!("invalid value for header {name:?}")))?;
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .user_agent(concat!("agentscope-openai/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| config(format!("cannot create the HTTP client: {err}")))?;
        Ok(OpenAIChatModel {
            inner: Arc::new(Inner {
                client,
                endpoint,
                model,
                api_key: self.api_key,
                headers,
                timeout: self.timeout,
                connect_timeout: self.connect_timeout,
                retry: self.retry,
                include_usage: self.include_usage,
            }),
        })
    }
}

impl fmt::Debug for OpenAIChatModelBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("OpenAIChatModelBuilder")
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("base_url", &self.base_url.as_deref().map(url_for_display))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.retry.max_retries)
            .field("headers", &header_names)
            .field("include_usage", &self.include_usage)
            .finish()
    }
}

/// The endpoint without its password and query string (either might hold a credential),
/// for logs, errors and `Debug`.
fn endpoint_for_display(endpoint: &Url) -> String {
    let mut shown = endpoint.clone();
    if shown.password().is_some() {
        // Only fails for URLs that cannot have a password, which this one has.
        let _ = shown.set_password(Some("redacted"));
    }
    if shown.query().is_some() {
        shown.set_query(Some("..."));
    }
    shown.to_string()
}

/// A configured URL for display: parsed and redacted like the endpoint, or, when it does not
/// parse, not shown at all (it might still hold a credential).
fn url_for_display(raw: &str) -> String {
    match Url::parse(raw.trim()) {
        Ok(url) => endpoint_for_display(&url),
        Err(_) => "<unparseable URL>".to_owned(),
    }
}

fn config(message: impl Into<String>) -> ModelError {
    ModelError::Config {
        message: message.into(),
    }
}

/// `<base_url>/chat/completions`, keeping a query string.
fn endpoint(base_url: &str) -> Result<Url, ModelError> {
    let mut url =
        Url::parse(base_url.trim()).map_err(|err| config(format!("invalid base URL: {err}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(config(format!(
            "invalid base URL {}: expected an http(s) URL",
            url_for_display(base_url)
        )));
    }
    if url
        .path()
        .trim_end_matches('/')
        .ends_with("/chat/completions")
    {
        return Ok(url);
    }
    match url.path_segments_mut() {
        Ok(mut segments) => {
            segments.pop_if_empty().extend(["chat", "completions"]);
        }
        Err(()) => {
            return Err(config(format!(
                "invalid base URL {}",
                url_for_display(base_url)
            )));
        }
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_joins_paths_and_keeps_queries() {
        let cases = [
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "http://localhost:8000",
                "http://localhost:8000/chat/completions",
            ),
            (
                "https://gw.example.com/openai/deployments/gpt4o?api-version=2024-10-21",
                "https://gw.example.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21",
            ),
            (
                "http://127.0.0.1:1234/v1/chat/completions",
                "http://127.0.0.1:1234/v1/chat/completions",
            ),
        ];
        for (base, expected) in cases {
            assert_eq!(endpoint(base).unwrap().as_str(), expected, "{base}");
        }
        for bad in [
            "",
            "localhost:8000",
            "ftp://x/v1",
            "not a url",
            "data:text/plain,x",
        ] {
            assert!(
                matches!(endpoint(bad), Err(ModelError::Config { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn backoff_doubles_is_capped_and_jittered() {
        let policy = RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        for _ in 0..50 {
            for (attempt, full) in [
                (0, 100),
                (1, 200),
                (2, 400),
                (3, 800),
                (4, 1000),
                (30, 1000),
            ] {
                let delay = policy.delay(attempt, None).unwrap();
                let full = Duration::from_millis(full);
                assert!(delay >= full / 2 && delay <= full, "{attempt}: {delay:?}");
            }
        }
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(policy.delay(0, Some(Duration::from_secs(3600))), None);
    }

    #[test]
    fn retry_after_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
        date.insert("retry-after", HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&date), None);
    }

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
