//! The HTTP transport the agentscope-rs model clients share (`agentscope-openai`,
//! `agentscope-anthropic`), for writing a client for another provider the same way.
//!
//! A model client is two halves. The protocol half builds a request body from a
//! [`ModelRequest`](agentscope_core::ModelRequest) and decodes the response with a
//! [`Decode`] implementation. The transport half, this crate, does everything else, once
//! for every client:
//!
//! - [`Transport`] posts the body (reqwest with rustls), retries a connection that could
//!   not be made or was reset or closed before the response began (a server restarting),
//!   and the statuses 408, 429 and 5xx, as the core's
//!   [`RetryPolicy`](agentscope_core::RetryPolicy) says (exponential backoff
//!   with jitter, honouring `Retry-After` / `retry-after-ms`), times out a stalled response,
//!   reads the streamed body piece by piece through the decoder, sends a request once more
//!   when the response carried no content at all, and drains the end of the body so the
//!   connection goes back to the pool; it keeps credentials (header values, URL passwords
//!   and query values) out of `Debug` output, logs and every error message, with the core's
//!   [`redact`](agentscope_core::redact); [`stream_json`](Transport::stream_json)
//!   takes the body as the protocol half built it, a JSON value;
//! - [`ProviderConfig`] holds what every provider's client builder holds (API key, base
//!   URL, model, [`HttpOptions`]), reads it from the provider's environment variables, and
//!   checks it into a [`TransportBuilder`]; [`provider_builder_methods!`] writes the builder
//!   methods that only forward to it;
//! - [`sse`] parses server-sent events from pieces of any size; its [`SseBody`](sse::SseBody)
//!   reads a response through the parser and says when it is not an event stream at all,
//!   and [`cut_off`](sse::cut_off) is the error for a stream that ended too soon;
//! - [`lenient`] reads provider JSON field by field, so one odd field does not fail a
//!   response, and extracts the message of an HTTP error body;
//! - [`endpoint_url`] checks a base URL and completes it with the protocol's path;
//! - `testing` (feature `testing`, for a client's tests) decodes bodies in pieces, and
//!   `fixture_split_tests!` declares the split tests every decoder runs over its fixtures.
#![warn(missing_docs, missing_debug_implementations)]

mod builder_methods;
mod endpoint;
pub mod lenient;
mod provider;
mod redact;
mod retry;
pub mod sse;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod transport;

pub use endpoint::endpoint_url;
pub use provider::{ApiKeyHeader, ProviderConfig, ProviderSpec};
pub use retry::{is_retryable_status, retry_after};
pub use transport::{Decode, HttpOptions, Transport, TransportBuilder};
