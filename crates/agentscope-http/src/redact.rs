//! The transport's side of keeping secrets out of what people read: its endpoint as shown,
//! and its errors scrubbed. The rules themselves (the placeholder, how a URL is shown, how
//! text is scrubbed) live in [`agentscope_core::redact`].
//!
//! Header values are marked sensitive when the headers are built and never printed.

use agentscope_core::ModelError;
use agentscope_core::redact::{Redactor, url_for_display};
use reqwest::Url;

/// The endpoint without its password and query values (either might hold a credential),
/// for logs, errors and `Debug`.
pub(crate) fn endpoint_for_display(endpoint: &Url) -> String {
    url_for_display(endpoint.as_str())
}

/// `error` with every secret removed from its message, in case a server echoed one (a 401
/// that repeats the headers it got) or a transport error quoted the URL.
pub(crate) fn redact_error(error: ModelError, redactor: &Redactor) -> ModelError {
    if redactor.is_empty() {
        return error;
    }
    let clean = |message: String| redactor.scrub(message);
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
        ModelError::RetriesExhausted { attempts, source } => ModelError::RetriesExhausted {
            attempts,
            source: Box::new(redact_error(*source, redactor)),
        },
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_message_of_an_error_is_scrubbed() {
        let redactor = Redactor::new(["sk-secret"]);
        let error = ModelError::gave_up_after(
            3,
            ModelError::Status {
                status: 401,
                message: "bad key sk-secret".into(),
                retry_after: None,
            },
        );
        assert_eq!(
            redact_error(error, &redactor).to_string(),
            "gave up after 3 attempts: HTTP 401: bad key <redacted>"
        );
        let stream = ModelError::Stream {
            message: "sk-secret".into(),
        };
        assert_eq!(
            redact_error(stream, &redactor).to_string(),
            "model stream error: <redacted>"
        );
    }

    #[test]
    fn the_endpoint_is_shown_without_its_secrets() {
        let url: Url = "http://user:pw-secret@127.0.0.1:9/v1?key=q-secret"
            .parse()
            .unwrap();
        assert_eq!(
            endpoint_for_display(&url),
            "http://user:<redacted>@127.0.0.1:9/v1?key=<redacted>"
        );
    }
}
