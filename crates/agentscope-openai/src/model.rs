//! [`OpenAIChatModel`]: the handle callers hold, and its [`Model`] implementation.
//!
//! The handle is an `Arc` of the [`Transport`] (the HTTP half, shared with the other
//! clients) and the protocol settings; each call to [`stream`](Model::stream) builds the
//! request body and hands it to the transport with this crate's decoder. The
//! constructors ([`OpenAIChatModel::builder`], [`OpenAIChatModel::from_env`]) live with the
//! builder in `builder.rs`, so that this module does not depend on it.

use std::sync::Arc;

use agentscope_core::redact::url_for_display;
use agentscope_core::{ChatStream, Model, ModelError, ModelRequest};
use agentscope_http::Transport;

use crate::decode::Decoder;
use crate::request::build_body;

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
/// [`ChatResponse`]: agentscope_core::ChatResponse
///
/// ```no_run
/// use agentscope::{Model, ModelRequest, Msg};
/// use agentscope_openai::OpenAIChatModel;
/// use futures::StreamExt;
///
/// # async fn run() -> Result<(), agentscope_core::ModelError> {
/// let model = OpenAIChatModel::builder()
///     .api_key("sk-...")
///     .model("gpt-4o-mini")
///     .build()?;
/// let request = ModelRequest::new(vec![Msg::user("Hi!")], Default::default(), Default::default());
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
/// [`max_retries`](crate::OpenAIChatModelBuilder::max_retries) times, default 2) with exponential
/// backoff and jitter, waiting what `Retry-After` / `retry-after-ms` ask for when the server
/// sends them. Retries only happen before the response starts: once the stream has begun,
/// an error ends it. A timeout waiting for the response is not retried (the server may be
/// working on it). A response that ends at once without any content is sent once more.
///
/// The API key is sent as a bearer token and never appears in `Debug` output, logs or error
/// messages.
// `Debug` is derived: the transport's own `Debug` keeps the secrets out.
#[derive(Clone, Debug)]
pub struct OpenAIChatModel {
    transport: Arc<Transport>,
    /// The endpoint as shown ([`endpoint`](Self::endpoint)): without its secrets.
    endpoint: Arc<str>,
    /// Whether to ask for `stream_options.include_usage`.
    include_usage: bool,
}

impl OpenAIChatModel {
    pub(crate) fn new(transport: Transport, include_usage: bool) -> Self {
        Self {
            endpoint: url_for_display(transport.endpoint().as_str()).into(),
            transport: Arc::new(transport),
            include_usage,
        }
    }

    /// The URL requests are posted to (`<base_url>/chat/completions`), as it may be shown: the password
    /// of its user information and the value of every query parameter are replaced by
    /// `<redacted>` (a gateway may take its key as `?key=...`), by the workspace's one rule,
    /// [`url_for_display`]. Requests still go to the URL as given.
    ///
    /// ```
    /// # use agentscope_openai::OpenAIChatModel;
    /// let model = OpenAIChatModel::builder()
    ///     .base_url("http://alice:pw-secret@127.0.0.1:8080/v1?key=k-secret")
    ///     .model("m")
    ///     .build()?;
    /// assert_eq!(
    ///     model.endpoint(),
    ///     "http://alice:<redacted>@127.0.0.1:8080/v1/chat/completions?key=<redacted>"
    /// );
    /// # Ok::<(), agentscope_core::ModelError>(())
    /// ```
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The model name sent in every request.
    pub fn model(&self) -> &str {
        self.transport.model()
    }
}

impl Model for OpenAIChatModel {
    fn model_name(&self) -> &str {
        self.transport.model()
    }

    /// `"openai"`: the API this client speaks (a compatible server behind it, e.g.
    /// llama.cpp or vLLM, is reported as `"openai"` too, as the conventions allow).
    fn provider_name(&self) -> Option<&str> {
        Some("openai")
    }

    /// Posts the request and returns the decoded stream once the response has started.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future or the returned stream closes the HTTP request.
    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let body = build_body(self.transport.model(), &request, self.include_usage);
        self.transport.stream_json::<Decoder>(body).await
    }
}
