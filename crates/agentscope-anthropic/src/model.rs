//! [`AnthropicModel`]: the handle callers hold, and its [`Model`] implementation.
//!
//! The handle is an `Arc` of the [`Transport`] (the HTTP half, shared with the other
//! clients) and the protocol settings; each call to [`stream`](Model::stream) builds the
//! request body and hands it to the transport with this crate's decoder. The constructors
//! ([`AnthropicModel::builder`], [`AnthropicModel::from_env`]) live with the builder in
//! `builder.rs`, so that this module does not depend on it.

use std::sync::Arc;

use agentscope_core::redact::url_for_display;
use agentscope_core::{ChatStream, Model, ModelError, ModelRequest};
use agentscope_http::Transport;

use crate::decode::Decoder;
use crate::request::{Settings, build_body};

/// A Claude model served over Anthropic's Messages API (`POST /v1/messages`).
///
/// Every request is streamed (`stream: true`) and decoded into [`ChatResponse`] deltas:
/// text, thinking (with its signature, which the next request of a tool loop sends back),
/// tool-call fragments, usage and the stop reason.
///
/// Cloning is cheap (an `Arc` inside) and clones share one connection pool, so there is no
/// need to wrap it in an `Arc`.
///
/// [`ChatResponse`]: agentscope_core::ChatResponse
///
/// ```no_run
/// use agentscope_anthropic::AnthropicModel;
/// use agentscope::{Model, ModelRequest, Msg};
/// use futures::StreamExt;
///
/// # async fn run() -> Result<(), agentscope_core::ModelError> {
/// let model = AnthropicModel::builder()
///     .api_key("sk-ant-...")
///     .model("claude-sonnet-4-5")
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
/// Anthropic's message and `Retry-After` (see
/// [`is_rate_limited`](ModelError::is_rate_limited), [`is_auth`](ModelError::is_auth),
/// [`is_context_length`](ModelError::is_context_length) for "prompt is too long"); a
/// timeout [`ModelError::Timeout`]; a connection failure [`ModelError::Connection`]; an
/// `error` event in the middle of a stream (e.g. `overloaded_error`) [`ModelError::Stream`]
/// with the event's message; a body that is not the protocol
/// [`ModelError::InvalidResponse`].
///
/// Connection failures and the statuses 408, 429 and 5xx (529 `overloaded_error`
/// included) are retried (up to [`max_retries`](crate::AnthropicModelBuilder::max_retries)
/// times, default 2) with exponential backoff and jitter, waiting what `Retry-After` asks
/// for when the server sends it. Retries only happen before the response starts: once the
/// stream has begun, an error ends it. A response that ends at once without any content is
/// sent once more.
///
/// The API key is sent as the `x-api-key` header and never appears in `Debug` output, logs
/// or error messages.
// `Debug` is derived: the transport's own `Debug` keeps the secrets out (the settings hold
// none).
#[derive(Clone, Debug)]
pub struct AnthropicModel {
    transport: Arc<Transport>,
    /// The endpoint as shown ([`endpoint`](Self::endpoint)): without its secrets.
    endpoint: Arc<str>,
    settings: Settings,
}

impl AnthropicModel {
    pub(crate) fn new(transport: Transport, settings: Settings) -> Self {
        Self {
            endpoint: url_for_display(transport.endpoint().as_str()).into(),
            transport: Arc::new(transport),
            settings,
        }
    }

    /// The URL requests are posted to (`<base_url>/v1/messages`), as it may be shown: the password
    /// of its user information and the value of every query parameter are replaced by
    /// `<redacted>` (a gateway may take its key as `?key=...`), by the workspace's one rule,
    /// [`url_for_display`]. Requests still go to the URL as given.
    ///
    /// ```
    /// # use agentscope_anthropic::AnthropicModel;
    /// let model = AnthropicModel::builder()
    ///     .base_url("http://alice:pw-secret@127.0.0.1:8080/v1?key=k-secret")
    ///     .model("m")
    ///     .build()?;
    /// assert_eq!(
    ///     model.endpoint(),
    ///     "http://alice:<redacted>@127.0.0.1:8080/v1/messages?key=<redacted>"
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

    /// The `max_tokens` sent when a request sets none.
    pub fn max_tokens(&self) -> u32 {
        self.settings.max_tokens
    }

    /// The extended-thinking budget, when thinking is on.
    pub fn thinking_budget(&self) -> Option<u32> {
        self.settings.thinking_budget
    }
}

impl Model for AnthropicModel {
    fn model_name(&self) -> &str {
        self.transport.model()
    }

    fn provider_name(&self) -> Option<&str> {
        Some("anthropic")
    }

    /// Posts the request and returns the decoded stream once the response has started.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future or the returned stream closes the HTTP request.
    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let body = build_body(self.transport.model(), &request, &self.settings);
        self.transport.stream_json::<Decoder>(body).await
    }
}
