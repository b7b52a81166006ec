//! The validated configuration a model handle and its in-flight streams share.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::HeaderMap;

use crate::retry::RetryPolicy;

/// Everything [`OpenAIChatModelBuilder::build`](crate::OpenAIChatModelBuilder::build)
/// checked, ready to send requests with. Immutable once built; shared behind an `Arc`.
///
/// Deliberately not `Debug`: it holds the API key. The model's `Debug` prints a redacted
/// view of it.
pub(crate) struct Settings {
    /// The HTTP client (its connection pool is shared by every clone of the model).
    pub(crate) client: reqwest::Client,
    /// `<base_url>/chat/completions`.
    pub(crate) endpoint: Url,
    /// The model name sent in every request.
    pub(crate) model: String,
    /// Every secret the client sends (the API key, extra header values, the endpoint's
    /// password and query values), kept to scrub them from error messages and logs (they
    /// are sent from `headers` and `endpoint`). Longest first.
    pub(crate) secrets: Vec<String>,
    /// Every request's headers, values marked sensitive.
    pub(crate) headers: HeaderMap,
    /// How long to wait for the response to start, and between two pieces of it.
    pub(crate) timeout: Duration,
    /// The client's connect timeout (already applied to `client`; kept for `Debug`).
    pub(crate) connect_timeout: Duration,
    pub(crate) retry: RetryPolicy,
    /// Whether to ask for `stream_options.include_usage`.
    pub(crate) include_usage: bool,
}
