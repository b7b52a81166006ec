//! When a failed request is tried again, and how long to wait first.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

const DEFAULT_MAX_RETRIES: u32 = 2;
const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(500);
const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(8);
/// A `Retry-After` longer than this is not waited for: the error goes to the caller.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How many times to retry, and the exponential backoff between attempts.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// How many times a failed attempt is retried (0: never).
    pub max_retries: u32,
    /// The first wait; each next one doubles.
    pub initial_backoff: Duration,
    /// No wait is longer than this (a server's `Retry-After` excepted, up to 60 s).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 2 retries, backoff from 500 ms up to 8 s.
    fn default() -> Self {
        Self {
            max_retries: DEFAULT_MAX_RETRIES,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
        }
    }
}

impl RetryPolicy {
    /// How long to wait before retry number `attempt + 1`; `None` when the server asks for
    /// a wait longer than we are willing to block a call for.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
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
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

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
}
