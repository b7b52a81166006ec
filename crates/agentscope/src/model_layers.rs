//! Model middleware, in the spirit of tower's layers: wrappers over any [`Model`] that are
//! themselves models, so they compose and an agent takes them like any other.
//!
//! - [`Retry`]: sends a request again after a retryable failure
//!   ([`ModelError::is_retryable`]), waiting as the workspace's one [`RetryPolicy`] says
//!   (the model clients' transports follow it too);
//! - [`Fallback`]: uses a second model when the first one fails;
//! - [`Cached`]: answers a request it has seen (same messages, tools and options) from
//!   memory, for tests and evaluation runs.
//!
//! A failure counts when the model's `stream()` fails or its stream fails before its first
//! chunk: once output has begun, it belongs to the caller (the engine has shown it to hooks
//! and the stream), and a mid-answer failure is the caller's.
//!
//! Retries do not multiply: a retry that gives up after more than one attempt (a model
//! client's own, or a [`Retry`] layer's) fails with [`ModelError::RetriesExhausted`], which
//! is not retryable, so a [`Retry`] around a client that retries by itself does not send
//! again what the client already gave up on (see [`RetryPolicy`]).
//!
//! The layers are visible in `tracing` (target `agentscope::model_layers`): each try of
//! [`Retry`] runs in a `model_attempt` span (`model`, `attempt` from 1) and a retry is a
//! `warn!` event `agentscope.model.retry` (`model`, `retry`, `max_retries`, `delay_ms`,
//! `error.type`, `error`); the second model of [`Fallback`] runs in a `model_fallback` span
//! (`model`, `fallback`) after a `warn!` event `agentscope.model.fallback` (`model`,
//! `fallback`, `error.type`, `error`); [`Cached`] records a `debug!` event with `cache_hit`
//! true or false. With a `TracingHook`, they happen inside the step's `chat` span (the
//! event messages are the span events' names once exported).
//!
//! ```
//! use std::time::Duration;
//!
//! use agentscope::RetryPolicy;
//! use agentscope::model_layers::ModelExt;
//! use agentscope::prelude::*;
//! use agentscope::ModelError;
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let overloaded = || ModelError::Status { status: 503, message: "overloaded".into(), retry_after: None };
//! let primary = ScriptedModel::new([
//!     ScriptedResponse::failure(overloaded()),
//!     ScriptedResponse::failure(overloaded()),
//! ]);
//! let backup = ScriptedModel::new([ScriptedResponse::text("Hello from the backup.")]);
//! let model = primary
//!     .clone()
//!     .with_retry(RetryPolicy::new(1).backoff(Duration::from_millis(1), Duration::from_millis(2)))
//!     .with_fallback(backup);
//! let agent = ReActAgent::builder().model(model).build()?;
//! assert_eq!(agent.call("hi").await?.text(), "Hello from the backup.");
//! assert_eq!(primary.request_count(), 2); // the first try and one retry
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use agentscope_core::{ChatResponse, ChatStream, Model, ModelError, ModelRequest, RetryPolicy};
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use tracing::Instrument;

/// The layers as methods on every model: `model.with_retry(..).with_fallback(other)`.
pub trait ModelExt: Model + Sized {
    /// Retries retryable failures (see [`Retry`]). Around a model client that retries by
    /// itself, a request the client gave up on is not retried again
    /// ([`ModelError::RetriesExhausted`] is not retryable): give the retries to one of the
    /// two, or let this layer retry what the client does not (a stream cut before its first
    /// chunk).
    fn with_retry(self, policy: RetryPolicy) -> Retry<Self> {
        Retry {
            inner: self,
            policy,
        }
    }

    /// Falls back on `fallback` when this model fails (see [`Fallback`]).
    fn with_fallback<F: Model>(self, fallback: F) -> Fallback<Self, F> {
        Fallback {
            primary: self,
            fallback,
        }
    }

    /// Answers repeated requests from memory (see [`Cached`]).
    fn cached(self) -> Cached<Self> {
        Cached {
            inner: self,
            responses: Arc::default(),
        }
    }
}

impl<M: Model> ModelExt for M {}

/// Starts `model`'s answer: its `stream()` and first chunk. A failure of either is the
/// model's failure; after the first chunk the stream is the caller's.
async fn start<M: Model>(model: &M, request: ModelRequest) -> Result<ChatStream, ModelError> {
    let mut answer = model.stream(request).await?;
    match answer.next().await {
        Some(Err(error)) => Err(error),
        Some(Ok(first)) => Ok(stream::once(async { Ok(first) }).chain(answer).boxed()),
        None => Ok(stream::empty().boxed()),
    }
}

/// A model that sends a request again after a retryable failure
/// ([`ModelError::is_retryable`]) before any output, waiting as its [`RetryPolicy`] says
/// (on tokio's timer; a provider's `Retry-After` first). Other failures, and the last one,
/// go to the caller: after more than one attempt, inside
/// [`ModelError::RetriesExhausted`], which no retry retries again (so stacked retries do
/// not multiply their attempts).
pub struct Retry<M> {
    inner: M,
    policy: RetryPolicy,
}

impl<M: Model> Model for Retry<M> {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn provider_name(&self) -> Option<&str> {
        self.inner.provider_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let mut retry = 0;
        // The last try takes the request; earlier ones a copy.
        let mut request = Some(request);
        loop {
            let last = retry >= self.policy.max_retries;
            let attempt = match (last, &request) {
                (false, Some(kept)) => kept.clone(),
                _ => match request.take() {
                    Some(owned) => owned,
                    None => return Err(ModelError::msg("retry: no request left")),
                },
            };
            let span = tracing::debug_span!(
                target: "agentscope::model_layers",
                "model_attempt",
                model = self.inner.model_name(),
                attempt = retry + 1,
            );
            match start(&self.inner, attempt).instrument(span).await {
                Err(error) if !last && error.is_retryable() => {
                    let Some(delay) = self.policy.delay(retry, error.retry_after()) else {
                        return Err(ModelError::gave_up_after(retry + 1, error));
                    };
                    tracing::warn!(
                        target: "agentscope::model_layers",
                        model = self.inner.model_name(),
                        // Signed: `tracing-opentelemetry` exports unsigned fields as text.
                        retry = i64::from(retry + 1),
                        max_retries = i64::from(self.policy.max_retries),
                        delay_ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                        error.type = %crate::engine::spans::model_error_type(&error),
                        %error,
                        "agentscope.model.retry"
                    );
                    tokio::time::sleep(delay).await;
                    retry += 1;
                }
                Err(error) => return Err(ModelError::gave_up_after(retry + 1, error)),
                answer => return answer,
            }
        }
    }
}

impl<M: Model> fmt::Debug for Retry<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("model", &self.inner.model_name())
            .field("policy", &self.policy)
            .finish()
    }
}

/// A model that answers with `fallback` when `primary` fails before any output (any
/// failure: a provider that is down, out of quota or refuses the request). Reports the
/// primary's name; logs each fallback.
pub struct Fallback<P, F> {
    primary: P,
    fallback: F,
}

impl<P: Model, F: Model> Model for Fallback<P, F> {
    fn model_name(&self) -> &str {
        self.primary.model_name()
    }

    fn provider_name(&self) -> Option<&str> {
        self.primary.provider_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        match start(&self.primary, request.clone()).await {
            Ok(answer) => Ok(answer),
            Err(error) => {
                tracing::warn!(
                    target: "agentscope::model_layers",
                    model = self.primary.model_name(),
                    fallback = self.fallback.model_name(),
                    error.type = %crate::engine::spans::model_error_type(&error),
                    %error,
                    "agentscope.model.fallback"
                );
                let span = tracing::debug_span!(
                    target: "agentscope::model_layers",
                    "model_fallback",
                    model = self.primary.model_name(),
                    fallback = self.fallback.model_name(),
                );
                self.fallback.stream(request).instrument(span).await
            }
        }
    }
}

impl<P: Model, F: Model> fmt::Debug for Fallback<P, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fallback")
            .field("primary", &self.primary.model_name())
            .field("fallback", &self.fallback.model_name())
            .finish()
    }
}

/// A model that remembers each answer it streamed to the end without error and replays it
/// for a request with the same content: the messages' roles, names and content, the tools
/// and the options (message ids and timestamps differ between runs and are not part of the
/// key). For tests and evaluation runs, where the same conversation is replayed; answers
/// are kept in memory for the wrapper's life (clones share them).
pub struct Cached<M> {
    inner: M,
    responses: Arc<Mutex<HashMap<String, Vec<ChatResponse>>>>,
}

impl<M> Cached<M> {
    /// How many answers are remembered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no answer is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<ChatResponse>>> {
        self.responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The cache key: what the model sees, without what changes between runs.
fn cache_key(request: &ModelRequest) -> String {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|msg| json!({"role": msg.role, "name": msg.name, "content": msg.content}))
        .collect();
    json!({"messages": messages, "tools": request.tools, "options": request.options}).to_string()
}

impl<M: Model> Model for Cached<M> {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn provider_name(&self) -> Option<&str> {
        self.inner.provider_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let key = cache_key(&request);
        let cached = self.lock().get(&key).cloned();
        tracing::debug!(
            target: "agentscope::model_layers",
            model = self.inner.model_name(),
            cache_hit = cached.is_some(),
            "model response cache"
        );
        if let Some(chunks) = cached {
            return Ok(stream::iter(chunks.into_iter().map(Ok)).boxed());
        }
        let answer = self.inner.stream(request).await?;
        let responses = Arc::clone(&self.responses);
        // Records the chunks as they pass; an answer that ends without error is kept.
        let recorded = stream::unfold(
            (answer, Vec::new(), Some((key, responses))),
            |(mut answer, mut seen, mut store)| async move {
                match answer.next().await {
                    Some(Ok(chunk)) => {
                        seen.push(chunk.clone());
                        Some((Ok(chunk), (answer, seen, store)))
                    }
                    Some(Err(error)) => Some((Err(error), (answer, seen, None))),
                    None => {
                        if let Some((key, responses)) = store.take() {
                            responses
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .insert(key, seen);
                        }
                        None
                    }
                }
            },
        );
        Ok(recorded.boxed())
    }
}

impl<M: Model> fmt::Debug for Cached<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cached")
            .field("model", &self.inner.model_name())
            .field("answers", &self.len())
            .finish()
    }
}

impl<M: Clone> Clone for Cached<M> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            responses: Arc::clone(&self.responses),
        }
    }
}
