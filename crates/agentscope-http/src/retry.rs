//! What HTTP says about retrying: which statuses may be retried, and how long a server asks
//! to wait. The policy itself (how often, how long by default) is
//! [`RetryPolicy`](agentscope_core::RetryPolicy), shared with the model layers.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// Whether a response with this status may be retried: 408, 429 and 5xx.
pub fn is_retryable_status(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// How long the server asks to wait: `retry-after-ms` (OpenAI) or `Retry-After` in
/// seconds; `None` when it says nothing usable.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

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
    fn retryable_statuses() {
        for status in [408, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(StatusCode::from_u16(status).unwrap()));
        }
        for status in [400, 401, 403, 404] {
            assert!(!is_retryable_status(StatusCode::from_u16(status).unwrap()));
        }
    }
}
