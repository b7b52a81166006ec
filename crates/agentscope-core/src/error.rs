//! Errors, one enum per seam.
//!
//! Every error type is `Clone` (sources are shared behind an `Arc`) so that hooks can keep
//! copies of the events that carry them, and `#[non_exhaustive]` so new cases are not
//! breaking changes. No variant holds a dependency's error type; sources are type-erased.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::conversation::ConversationError;
use crate::hook::kinds::HookEventType;
use crate::session::SessionError;

/// The underlying error of a failure (an I/O error, a user tool's error), shared so that
/// errors stay `Clone`.
///
/// The error that holds one returns the underlying error itself from
/// [`source()`](StdError::source), so `downcast_ref` finds its type:
///
/// ```
/// use std::error::Error;
/// use agentscope_core::{ErrorSource, ToolError};
///
/// let error = ToolError::Failed {
///     message: "cannot read the file".into(),
///     source: Some(ErrorSource::new(std::io::Error::other("disk on fire"))),
/// };
/// let io = error.source().and_then(|s| s.downcast_ref::<std::io::Error>());
/// assert_eq!(io.map(ToString::to_string).as_deref(), Some("disk on fire"));
/// ```
#[derive(Clone)]
pub struct ErrorSource(Arc<dyn StdError + Send + Sync + 'static>);

impl ErrorSource {
    /// Shares `error`.
    pub fn new(error: impl StdError + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }
}

/// Derefs to the underlying error (deliberately not `Error` itself: the `source()` of the
/// error holding it is then the underlying error, not this wrapper).
impl std::ops::Deref for ErrorSource {
    type Target = dyn StdError + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl fmt::Debug for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

/// A hook failed.
///
/// Returning `Err` from a chained event (Pre*/Post*) stops the chain and fails the call; from
/// a notification (chunk events, `Error`) it is logged and otherwise ignored.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The hook decided the call must fail.
    #[error("{message}")]
    Failed {
        /// What went wrong.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The hook panicked; the panic was caught.
    #[error("hook panicked: {message}")]
    Panicked {
        /// The panic payload, when it was a string.
        message: String,
    },
    /// `goto_reasoning` was called with messages that cannot continue the conversation
    /// (the rule is the error's `source()`).
    #[error("{0}")]
    InvalidGoto(#[source] ConversationError),
    /// A setter was given a value that would break the call (e.g. a tool-use id change).
    #[error("{message}")]
    InvalidModification {
        /// Why the change was rejected.
        message: String,
    },
}

impl HookError {
    /// A failure with a message.
    ///
    /// ```
    /// use agentscope_core::HookError;
    /// let err = HookError::msg("budget exhausted");
    /// assert_eq!(err.to_string(), "budget exhausted");
    /// ```
    pub fn msg(message: impl fmt::Display) -> Self {
        HookError::Failed {
            message: message.to_string(),
            source: None,
        }
    }

    /// A failure caused by another error (its message becomes this error's message).
    pub fn new(source: impl StdError + Send + Sync + 'static) -> Self {
        HookError::Failed {
            message: source.to_string(),
            source: Some(ErrorSource::new(source)),
        }
    }

    pub(crate) fn panicked(payload: &(dyn std::any::Any + Send)) -> Self {
        HookError::Panicked {
            message: panic_message(payload),
        }
    }
}

/// Extracts a readable message from a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// A model call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider answered with an HTTP error status.
    #[error("HTTP {status}: {message}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The provider's error message (or the response body).
        message: String,
        /// How long the provider asked us to wait (`Retry-After`), if it said.
        retry_after: Option<Duration>,
    },
    /// The request or the stream timed out.
    #[error("model request timed out")]
    Timeout,
    /// The connection could not be established or broke.
    #[error("connection error: {message}")]
    Connection {
        /// What went wrong.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The provider sent something that is not a valid response.
    #[error("invalid model response: {message}")]
    InvalidResponse {
        /// What was wrong with it.
        message: String,
    },
    /// The provider reported an error in the middle of a streamed response.
    #[error("model stream error: {message}")]
    Stream {
        /// The provider's message.
        message: String,
    },
    /// The model produced no content at all.
    #[error("model '{model}' returned an empty response")]
    EmptyResponse {
        /// The model's name.
        model: String,
    },
    /// The model was configured wrongly (missing API key, bad URL, ...).
    #[error("model configuration error: {message}")]
    Config {
        /// What is wrong.
        message: String,
    },
    /// Any other failure.
    #[error("{message}")]
    Other {
        /// What went wrong.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The request was retried (as a [`RetryPolicy`](crate::RetryPolicy) allows) and the
    /// last attempt failed too. Never [retryable](Self::is_retryable), so a retry stacked
    /// on this one does not send the request again; the helpers ([`status`](Self::status),
    /// [`is_timeout`](Self::is_timeout), ...) answer for the last attempt's error.
    #[error("gave up after {attempts} attempts: {source}")]
    RetriesExhausted {
        /// How many times the request was sent.
        attempts: u32,
        /// The last attempt's error.
        source: Box<ModelError>,
    },
}

impl ModelError {
    /// Any other failure, with a message.
    pub fn msg(message: impl fmt::Display) -> Self {
        ModelError::Other {
            message: message.to_string(),
            source: None,
        }
    }

    /// The error of a request given up on after `attempts` attempts: `last` itself after a
    /// single attempt, else [`ModelError::RetriesExhausted`]. When `last` already is one (a
    /// retry below gave up), its attempts are added in rather than nested: the count is of
    /// requests sent.
    ///
    /// ```
    /// use agentscope_core::ModelError;
    ///
    /// let overloaded = ModelError::Status { status: 503, message: "overloaded".into(), retry_after: None };
    /// assert_eq!(ModelError::gave_up_after(1, overloaded.clone()).to_string(), "HTTP 503: overloaded");
    /// let error = ModelError::gave_up_after(3, overloaded);
    /// assert_eq!(error.to_string(), "gave up after 3 attempts: HTTP 503: overloaded");
    /// assert_eq!(error.status(), Some(503));
    /// assert!(!error.is_retryable());
    /// let outer = ModelError::gave_up_after(2, error);
    /// assert_eq!(outer.to_string(), "gave up after 4 attempts: HTTP 503: overloaded");
    /// ```
    pub fn gave_up_after(attempts: u32, last: ModelError) -> ModelError {
        if attempts <= 1 {
            return last;
        }
        match last {
            ModelError::RetriesExhausted {
                attempts: below,
                source,
            } => ModelError::RetriesExhausted {
                attempts: below.saturating_add(attempts - 1),
                source,
            },
            last => ModelError::RetriesExhausted {
                attempts,
                source: Box::new(last),
            },
        }
    }

    /// The error the helpers answer for: the last attempt's, for a request given up on.
    fn last_attempt(&self) -> &ModelError {
        match self {
            ModelError::RetriesExhausted { source, .. } => source.last_attempt(),
            other => other,
        }
    }

    /// The HTTP status, when the provider answered with one.
    pub fn status(&self) -> Option<u16> {
        match self.last_attempt() {
            ModelError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// How long the provider asked to wait before trying again (`Retry-After`), if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.last_attempt() {
            ModelError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether the provider rejected the request for exceeding a rate limit (HTTP 429).
    pub fn is_rate_limited(&self) -> bool {
        self.status() == Some(429)
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self.last_attempt(), ModelError::Timeout)
    }

    /// Whether the provider rejected the credentials (HTTP 401 or 403).
    pub fn is_auth(&self) -> bool {
        matches!(self.status(), Some(401 | 403))
    }

    /// Whether the same request may succeed when sent again: a timeout, a connection that
    /// failed or broke, a stream cut off, or a status that says "later" (408, 409, 425,
    /// 429, 500, 502, 503, 504, 529). Not: bad requests (400, including context length),
    /// authentication (401, 403), unknown models (404), responses that could not be read,
    /// empty responses, configuration errors, and a request already given up on after
    /// retries ([`ModelError::RetriesExhausted`]).
    ///
    /// ```
    /// use agentscope_core::ModelError;
    ///
    /// assert!(ModelError::Timeout.is_retryable());
    /// assert!(ModelError::Stream { message: "cut".into() }.is_retryable());
    /// let bad = ModelError::Status { status: 400, message: "bad".into(), retry_after: None };
    /// assert!(!bad.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Timeout | ModelError::Connection { .. } | ModelError::Stream { .. } => true,
            ModelError::Status { status, .. } => {
                matches!(status, 408 | 409 | 425 | 429 | 500 | 502 | 503 | 504 | 529)
            }
            // A retry below gave up: retrying again would multiply the attempts.
            ModelError::RetriesExhausted { .. } => false,
            _ => false,
        }
    }

    /// Whether the provider refused the request because it does not fit the model's
    /// context window: a 400 or 413 whose message says so, in the words of OpenAI
    /// (`context_length_exceeded`, "maximum context length"), vLLM, llama.cpp ("exceeds the
    /// available context size") or Anthropic ("prompt is too long"). Retrying the same
    /// request fails again; a context-management hook can shorten it and try once more.
    ///
    /// ```
    /// use agentscope_core::ModelError;
    ///
    /// let error = ModelError::Status {
    ///     status: 400,
    ///     message: "request (6287 tokens) exceeds the available context size (4096 tokens), \
    ///               try increasing it"
    ///         .into(),
    ///     retry_after: None,
    /// };
    /// assert!(error.is_context_length());
    /// assert!(!ModelError::Timeout.is_context_length());
    /// ```
    pub fn is_context_length(&self) -> bool {
        let message = match self.last_attempt() {
            ModelError::Status {
                status: 400 | 413,
                message,
                ..
            }
            | ModelError::Other { message, .. } => message,
            _ => return false,
        };
        let message = message.to_ascii_lowercase();
        [
            "context_length_exceeded",
            "context length",
            "context window",
            "context size",
            "prompt is too long",
            "too many tokens",
        ]
        .iter()
        .any(|phrase| message.contains(phrase))
    }
}

/// A tool call failed. The engine turns this into an error result the model sees
/// (`"Error: Tool execution failed: ..."`), never into a failed agent call.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments did not fit the tool (reported to the model as a parameter error).
    #[error("{message}")]
    InvalidArguments {
        /// What is wrong with them.
        message: String,
    },
    /// The tool ran and failed.
    #[error("{message}")]
    Failed {
        /// What went wrong.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The tool observed cancellation and stopped.
    #[error("tool call was cancelled")]
    Cancelled,
    /// The tool did not finish in time.
    #[error("tool timed out after {0:?}")]
    Timeout(Duration),
    /// The tool panicked; the panic was caught.
    #[error("tool panicked: {message}")]
    Panicked {
        /// The panic payload, when it was a string.
        message: String,
    },
}

impl ToolError {
    /// A failure with a message.
    pub fn msg(message: impl fmt::Display) -> Self {
        ToolError::Failed {
            message: message.to_string(),
            source: None,
        }
    }

    /// A failure caused by another error.
    pub fn new(source: impl StdError + Send + Sync + 'static) -> Self {
        ToolError::Failed {
            message: source.to_string(),
            source: Some(ErrorSource::new(source)),
        }
    }

    /// The error for a caught panic, from its payload (what `catch_unwind` returns).
    pub fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        ToolError::Panicked {
            message: panic_message(payload),
        }
    }

    /// Arguments that do not fit the tool.
    pub fn invalid_arguments(message: impl fmt::Display) -> Self {
        ToolError::InvalidArguments {
            message: message.to_string(),
        }
    }
}

/// An agent call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// Another call is running on this agent (see `check_running`), or, with a session store
    /// that leases sessions, on the agent's session in another instance
    /// ([`SessionError::Busy`]). No hook saw this call, and nothing was loaded or stored.
    #[error("the agent is busy with another call")]
    Busy,
    /// The call's admission check refused it (`ReActAgent::stream_admitted` in the
    /// `agentscope` crate): no hook saw the call, and nothing was stored but what the check
    /// recorded in the session's hook state.
    #[error("the call was not admitted: {reason}")]
    Refused {
        /// Why, as the check said.
        reason: String,
    },
    /// The call was interrupted. Only the steps of a custom reply (`ReplyContext` in the
    /// `agentscope` crate) return it: return it on (`?`) and the agent ends the call the way
    /// every interrupted call ends, with the interrupt reply. `call()` and `stream()` never
    /// return it.
    #[error("the call was interrupted")]
    Interrupted,
    /// A hook returned `Err` (or panicked) while handling a chained event.
    #[error("hook '{hook}' failed at {event}: {source}")]
    Hook {
        /// The hook's name.
        hook: String,
        /// The event it was handling.
        event: HookEventType,
        /// What it returned.
        #[source]
        source: HookError,
    },
    /// The model failed.
    #[error("model error: {0}")]
    Model(#[from] ModelError),
    /// The call's input (or a hook's change to it) cannot be processed.
    #[error("{message}")]
    InvalidInput {
        /// Why.
        message: String,
    },
    /// The call's input, or a message a hook changed, breaks a rule of the conversation's
    /// shape (a SYSTEM message, a stray tool result, new input while tool calls are pending,
    /// ...). See [`ConversationError`].
    #[error("{0}")]
    Conversation(#[from] ConversationError),
    /// Hooks requested `goto_reasoning` more often than `max_goto_reasoning` allows. The
    /// messages of the loop (each reasoning message that asked for a goto, and its goto
    /// messages) are removed from memory, so nothing of it is stored or sent again.
    #[error(
        "goto_reasoning was requested more than {max} times in one call (the last request by hook '{hook}')"
    )]
    GotoLimitExceeded {
        /// The configured limit.
        max: usize,
        /// The hook that made the last request.
        hook: String,
    },
    /// The agent's durable session could not be loaded or saved (see
    /// [`session`](crate::session)).
    ///
    /// A failed load fails the call before any hook runs or anything is stored; a failed save
    /// fails a call that otherwise succeeded. The [`SessionError`] names the session; it is
    /// also this error's [`source`](std::error::Error::source).
    #[error("session error: {0}")]
    Session(#[source] SessionError),
    /// A structured-output call (`call_structured`) ended without a usable value: the loop
    /// ended another way (iteration limit, interrupt, stop, suspended tool) or the value did
    /// not deserialise.
    #[error("structured output failed: {message}")]
    StructuredOutput {
        /// Why.
        message: String,
    },
    /// The agent failed for a reason of its own: what an agent whose work is not the ReAct
    /// loop (a custom reply, an `Agent` implemented outside the `agentscope` crate) returns
    /// when that work fails: a remote agent's task failed or was rejected, a service it
    /// relays to refused. The message says what failed; `source` holds the underlying
    /// error, if any.
    #[error("{message}")]
    Failed {
        /// What failed.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<ErrorSource>,
    },
}

/// A session that another call holds is [`AgentError::Busy`], like a busy agent; every other
/// session error is [`AgentError::Session`].
impl From<SessionError> for AgentError {
    fn from(error: SessionError) -> Self {
        match error {
            SessionError::Busy { .. } => AgentError::Busy,
            error => AgentError::Session(error),
        }
    }
}

impl AgentError {
    /// A [`Failed`](AgentError::Failed) error with a message and no source.
    ///
    /// ```
    /// use agentscope_core::AgentError;
    ///
    /// let error = AgentError::failed("the remote agent rejected the task: no such city");
    /// assert_eq!(error.to_string(), "the remote agent rejected the task: no such city");
    /// ```
    pub fn failed(message: impl fmt::Display) -> Self {
        AgentError::Failed {
            message: message.to_string(),
            source: None,
        }
    }

    /// An invalid-input error with a message.
    pub fn invalid_input(message: impl fmt::Display) -> Self {
        AgentError::InvalidInput {
            message: message.to_string(),
        }
    }

    /// Whether this is a busy rejection.
    pub fn is_busy(&self) -> bool {
        matches!(self, AgentError::Busy)
    }

    /// The hook error, when a hook failed the call.
    pub fn hook_error(&self) -> Option<&HookError> {
        match self {
            AgentError::Hook { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The conversation rule the input broke, when it broke one.
    pub fn conversation_error(&self) -> Option<&ConversationError> {
        match self {
            AgentError::Conversation(err) => Some(err),
            _ => None,
        }
    }

    /// The model error, when the model failed the call.
    pub fn model_error(&self) -> Option<&ModelError> {
        match self {
            AgentError::Model(err) => Some(err),
            _ => None,
        }
    }
}

/// An error's message followed by its sources' (`a: b: c`), each cause left out when the
/// text before already holds it (a message that repeats its source's), for errors that
/// must stay one line (a `Display` built on another error, a log field).
///
/// ```
/// use agentscope_core::error_chain;
///
/// let io = std::io::Error::other("connection reset");
/// let error = std::io::Error::new(std::io::ErrorKind::Other, io);
/// assert_eq!(error_chain(&error), "connection reset");
/// ```
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_error_helpers() {
        let rate = ModelError::Status {
            status: 429,
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(2)),
        };
        assert!(rate.is_rate_limited());
        assert!(!rate.is_auth());
        assert_eq!(rate.status(), Some(429));
        assert!(ModelError::Timeout.is_timeout());
        let auth = ModelError::Status {
            status: 401,
            message: "bad key".into(),
            retry_after: None,
        };
        assert!(auth.is_auth());
    }

    /// A request given up on after retries answers the helpers for its last attempt, but is
    /// not retryable itself.
    #[test]
    fn the_helpers_look_through_retries_exhausted() {
        let gave_up = |last: ModelError| ModelError::gave_up_after(3, last);
        let rate = gave_up(ModelError::Status {
            status: 429,
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(2)),
        });
        assert_eq!(rate.status(), Some(429));
        assert_eq!(rate.retry_after(), Some(Duration::from_secs(2)));
        assert!(rate.is_rate_limited() && !rate.is_auth() && !rate.is_retryable());
        assert_eq!(
            rate.to_string(),
            "gave up after 3 attempts: HTTP 429: slow down"
        );
        assert!(gave_up(ModelError::Timeout).is_timeout());
        assert!(!gave_up(ModelError::Timeout).is_retryable());
        let auth = gave_up(ModelError::Status {
            status: 403,
            message: "no".into(),
            retry_after: None,
        });
        assert!(auth.is_auth());
        let long = gave_up(ModelError::Status {
            status: 400,
            message: "prompt is too long".into(),
            retry_after: None,
        });
        assert!(long.is_context_length());
        // The last attempt's error is the source (error chains show it).
        let source = StdError::source(&rate).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("HTTP 429: slow down"));
        // One attempt: the error as it is; given up on twice: the attempts add up.
        assert!(matches!(
            ModelError::gave_up_after(1, ModelError::Timeout),
            ModelError::Timeout
        ));
        assert!(matches!(
            ModelError::gave_up_after(2, gave_up(ModelError::Timeout)),
            ModelError::RetriesExhausted { attempts: 4, ref source } if matches!(**source, ModelError::Timeout)
        ));
    }

    /// The context-length refusals of real servers, and look-alikes that are not.
    #[test]
    fn context_length_errors_are_recognised() {
        let status = |status: u16, message: &str| ModelError::Status {
            status,
            message: message.into(),
            retry_after: None,
        };
        for message in [
            // OpenAI and vLLM.
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.",
            // llama.cpp's llama-server.
            "request (6287 tokens) exceeds the available context size (4096 tokens), try increasing it",
            // Anthropic.
            "prompt is too long: 210000 tokens > 200000 maximum",
            // A gateway that passes the code on.
            "context_length_exceeded",
        ] {
            assert!(status(400, message).is_context_length(), "{message}");
        }
        assert!(status(413, "Input exceeds the context window").is_context_length());
        assert!(!status(400, "model not found").is_context_length());
        assert!(!status(429, "too many tokens per minute").is_context_length());
        assert!(!status(500, "context length").is_context_length());
        assert!(!ModelError::Timeout.is_context_length());
    }

    #[test]
    fn pending_tool_calls_message_names_ids() {
        let err = AgentError::from(ConversationError::PendingToolCalls {
            ids: vec!["c1".into(), "c2".into()],
        });
        assert!(err.to_string().contains("[c1, c2]"), "{err}");
    }

    /// Every error an `AgentError` wraps is its `source()`, and downcasts to its own type;
    /// so is the error under a hook's, a tool's, a model's or a store's failure.
    #[test]
    fn wrapped_errors_are_reachable_by_source_and_downcast() {
        fn source_as<'a, T: StdError + 'static>(error: &'a (dyn StdError + 'static)) -> &'a T {
            error
                .source()
                .and_then(|source| source.downcast_ref::<T>())
                .unwrap_or_else(|| panic!("{error:?}: no {} source", std::any::type_name::<T>()))
        }

        let io = || std::io::Error::other("disk on fire");
        let session =
            AgentError::from(crate::session::SessionError::io(Some("s"), "writing", io()));
        let inner = source_as::<crate::session::SessionError>(&session);
        assert_eq!(
            source_as::<std::io::Error>(inner).to_string(),
            "disk on fire"
        );

        let model = AgentError::from(ModelError::Other {
            message: "x".into(),
            source: Some(ErrorSource::new(io())),
        });
        let inner = source_as::<ModelError>(&model);
        assert_eq!(
            source_as::<std::io::Error>(inner).to_string(),
            "disk on fire"
        );

        let hook = AgentError::Hook {
            hook: "h".into(),
            event: crate::HookEventType::PreCall,
            source: HookError::Failed {
                message: "m".into(),
                source: Some(ErrorSource::new(io())),
            },
        };
        let inner = source_as::<HookError>(&hook);
        assert_eq!(
            source_as::<std::io::Error>(inner).to_string(),
            "disk on fire"
        );

        let goto = HookError::InvalidGoto(ConversationError::NothingToResume);
        assert_eq!(
            source_as::<ConversationError>(&goto),
            &ConversationError::NothingToResume
        );
        let conversation = AgentError::from(ConversationError::NothingToResume);
        assert_eq!(
            source_as::<ConversationError>(&conversation),
            &ConversationError::NothingToResume
        );
        // Wrapping changes no message.
        assert_eq!(
            conversation.to_string(),
            ConversationError::NothingToResume.to_string()
        );
        assert_eq!(
            goto.to_string(),
            ConversationError::NothingToResume.to_string()
        );

        let tool = ToolError::Failed {
            message: "m".into(),
            source: Some(ErrorSource::new(io())),
        };
        assert_eq!(
            source_as::<std::io::Error>(&tool).to_string(),
            "disk on fire"
        );
    }

    #[test]
    fn hook_results_stay_small() {
        // Every hook returns `Result<(), HookError>`; keep it within a few words.
        assert_eq!(std::mem::size_of::<Result<(), HookError>>(), 48);
    }

    #[test]
    fn errors_are_send_sync_clone() {
        fn check<T: Send + Sync + Clone + 'static>() {}
        check::<HookError>();
        check::<ModelError>();
        check::<ToolError>();
        check::<AgentError>();
    }
}
