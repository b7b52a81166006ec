//! [`RetryPolicy`]: when a failed model request is sent again, and how long to wait first.
//! The one policy of the workspace: the HTTP transport of the model clients and the `Retry`
//! model layer of `agentscope` both follow it.

use std::time::Duration;

const DEFAULT_MAX_RETRIES: u32 = 2;
const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(500);
const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(8);
/// A server's `Retry-After` longer than this (and than `max_backoff`) is not waited for:
/// the error goes to the caller, who may have a better use for the time.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How many times a failed model request is retried, and the exponential backoff between
/// attempts.
///
/// A retry waits about `initial_backoff`, doubling each time up to `max_backoff`, jittered
/// down by up to half (so clients that failed together do not retry together). A server's
/// `Retry-After` takes precedence, when it is no longer than 60 s (or `max_backoff`, if
/// longer); a longer one ends the retrying.
///
/// # Retries do not multiply
///
/// Whoever retries with a policy (a model client's transport, the `Retry` model layer)
/// and gives up after more than one attempt returns
/// [`ModelError::RetriesExhausted`](crate::ModelError::RetriesExhausted), which is never
/// [retryable](crate::ModelError::is_retryable). So a retry stacked on another (a `Retry`
/// layer around a client that retries by itself) does not retry what the one below it
/// already gave up on: a client with 2 retries inside a layer with 3 sends at most 3
/// requests for an overloaded server, not 12. The layer retries what the client does not
/// (a client with retries off, a stream cut before its first chunk).
///
/// ```
/// use std::time::Duration;
/// use agentscope_core::RetryPolicy;
///
/// let policy = RetryPolicy::new(3).backoff(Duration::from_millis(100), Duration::from_secs(1));
/// assert_eq!(policy.max_retries, 3);
/// let first = policy.delay(0, None).unwrap();
/// assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
/// // The server's Retry-After wins, unless it is too long to wait for.
/// assert_eq!(policy.delay(0, Some(Duration::from_secs(2))), Some(Duration::from_secs(2)));
/// assert_eq!(policy.delay(0, Some(Duration::from_secs(3600))), None);
/// assert_eq!(RetryPolicy::default(), RetryPolicy::new(2));
/// assert_eq!(RetryPolicy::none().max_retries, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
        Self::new(DEFAULT_MAX_RETRIES)
    }
}

impl RetryPolicy {
    /// At most `max_retries` retries, waiting about 500 ms before the first and doubling up
    /// to 8 s.
    pub fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
        }
    }

    /// Never retry.
    pub fn none() -> Self {
        Self::new(0)
    }

    /// Waits about `initial` before the first retry, doubling each time up to `max` (`max`
    /// below `initial` counts as `initial`).
    #[must_use]
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// How long to wait before retry number `attempt + 1` (`attempt` 0 for the first
    /// retry), given the wait the server asked for; `None` when the server asks for a wait
    /// longer than a call should block for.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(wait) = retry_after {
            return (wait <= MAX_RETRY_AFTER.max(self.max_backoff)).then_some(wait);
        }
        let factor = 2u32.saturating_pow(attempt.min(16));
        let backoff = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        // A random point in [backoff / 2, backoff].
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
    fn constructors() {
        let default = RetryPolicy::default();
        assert_eq!(
            (
                default.max_retries,
                default.initial_backoff,
                default.max_backoff
            ),
            (2, Duration::from_millis(500), Duration::from_secs(8))
        );
        assert_eq!(RetryPolicy::new(5).max_retries, 5);
        assert_eq!(RetryPolicy::new(5).max_backoff, Duration::from_secs(8));
        assert_eq!(RetryPolicy::none().max_retries, 0);
        let odd = RetryPolicy::new(1).backoff(Duration::from_secs(2), Duration::from_secs(1));
        assert_eq!(odd.max_backoff, Duration::from_secs(2));
        // A long Retry-After is waited for when the policy's own maximum is longer still.
        let patient = RetryPolicy::new(1).backoff(Duration::from_secs(1), Duration::from_secs(120));
        assert_eq!(
            patient.delay(0, Some(Duration::from_secs(90))),
            Some(Duration::from_secs(90))
        );
    }
}
