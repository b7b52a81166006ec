//! Keeping secrets out of what people read: `Debug` output, logs and error messages.
//!
//! A key can hide in three places: the API key itself (echoed back by some servers in their
//! error messages), a URL's password, and a URL's query string (gateways that take
//! `?api-key=...`). Header values are marked sensitive when the headers are built and never
//! printed.

use agentscope_core::ModelError;
use reqwest::Url;

/// What is shown instead of a secret.
pub const REDACTED: &str = "<redacted>";

/// The endpoint without its password and query string (either might hold a credential),
/// for logs, errors and `Debug`.
pub fn endpoint_for_display(endpoint: &Url) -> String {
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
pub fn url_for_display(raw: &str) -> String {
    match Url::parse(raw.trim()) {
        Ok(url) => endpoint_for_display(&url),
        Err(_) => "<unparseable URL>".to_owned(),
    }
}

/// Removes every secret (see `Settings::secrets`) from an error's message, in case a
/// server echoed it (a 401 that repeats the headers it got) or a transport error quoted the
/// URL.
pub fn redact_secrets(error: ModelError, secrets: &[String]) -> ModelError {
    if secrets.is_empty() {
        return error;
    }
    let clean = |message: String| scrub(message, secrets);
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

/// `text` with every secret (and its URL-encoded form) replaced by [`REDACTED`].
pub fn scrub(mut text: String, secrets: &[String]) -> String {
    for secret in secrets {
        let encoded = percent_encoded(secret);
        for form in [secret.as_str(), encoded.as_str()] {
            if text.contains(form) {
                text = text.replace(form, REDACTED);
            }
        }
    }
    text
}

/// `text` percent-encoded as a URL's query writes it (unreserved characters kept).
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
