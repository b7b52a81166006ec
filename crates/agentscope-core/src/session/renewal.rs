//! The lease rules every store that coordinates instances shares: how long a lease lives
//! ([`DEFAULT_LEASE_TTL`], [`MIN_LEASE_TTL`], [`MAX_LEASE_TTL`], [`clamp_lease_ttl`]) and
//! [`RenewalDeadline`], when a holder that cannot renew its lease stops its call (see
//! [`SessionStore::lease`](crate::session::SessionStore::lease)).
//!
//! A lease renewed in the background lives `ttl` from the moment its last successful
//! renewal (or the take) was sent. When renewals keep failing (the store is unreachable,
//! the database is locked) until that moment has passed, the lease may have expired and
//! another instance may hold the session: the holder stops its call by cancelling the call's
//! interrupt token, once, and logs it once. Measuring from the moment a request was *sent*
//! is conservative: the store set the expiry no earlier. [`keep_renewed`](super::keep_renewed)
//! is the renewal loop built on it.

use std::time::{Duration, Instant};

use crate::CancellationToken;

/// How long a session lease lives without being renewed, unless a store is configured
/// otherwise: a call killed with its process keeps its session busy that long at most.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// The shortest lease time to live: the holder renews every third of it, so a millisecond
/// apart at least.
pub const MIN_LEASE_TTL: Duration = Duration::from_millis(3);

/// The longest lease time to live (a year): a longer one is taken as this, so that no
/// instant computed from it overflows.
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// A lease time to live as every store takes it: whole milliseconds (rounded down), at
/// least [`MIN_LEASE_TTL`], at most [`MAX_LEASE_TTL`]. A store's builder applies it to the
/// time to live it is given.
///
/// ```
/// use std::time::Duration;
/// use agentscope_core::session::{MAX_LEASE_TTL, MIN_LEASE_TTL, clamp_lease_ttl};
///
/// assert_eq!(clamp_lease_ttl(Duration::from_micros(2_500_700)), Duration::from_millis(2_500));
/// assert_eq!(clamp_lease_ttl(Duration::ZERO), MIN_LEASE_TTL);
/// assert_eq!(clamp_lease_ttl(Duration::MAX), MAX_LEASE_TTL);
/// ```
pub fn clamp_lease_ttl(ttl: Duration) -> Duration {
    let ttl = ttl.min(MAX_LEASE_TTL);
    let millis = Duration::from_millis(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
    millis.max(MIN_LEASE_TTL)
}

/// When a lease renewed in the background would expire, and whether its holder has
/// stopped its call for it: renewed in the background, a lease lives `ttl` from the moment
/// its last successful renewal (or the take) was sent, and a holder whose renewals keep
/// failing until then stops its call, once.
///
/// ```
/// use std::time::{Duration, Instant};
/// use agentscope_core::CancellationToken;
/// use agentscope_core::session::RenewalDeadline;
///
/// let ttl = Duration::from_secs(30);
/// let taken = Instant::now();
/// let mut lease = RenewalDeadline::new(ttl, taken);
/// let call = CancellationToken::new();
///
/// // A renewal sent 10 s later succeeded: the lease lives 30 s from then.
/// lease.renewed(taken + Duration::from_secs(10));
/// assert_eq!(lease.deadline(), taken + Duration::from_secs(40));
/// // Renewals failed since: nothing happens before the deadline...
/// assert!(!lease.stop_if_expired(taken + Duration::from_secs(39), &call));
/// assert!(!call.is_cancelled());
/// // ...and at it the call is stopped, once (log when this returns true).
/// assert!(lease.stop_if_expired(taken + Duration::from_secs(40), &call));
/// assert!(call.is_cancelled());
/// assert!(!lease.stop_if_expired(taken + Duration::from_secs(41), &call));
/// assert!(lease.is_stopped());
/// ```
#[derive(Debug, Clone)]
pub struct RenewalDeadline {
    ttl: Duration,
    deadline: Instant,
    margin: Duration,
    stopped: bool,
}

impl RenewalDeadline {
    /// A lease living `ttl` (at most [`MAX_LEASE_TTL`]), taken by a request sent at `sent`.
    pub fn new(ttl: Duration, sent: Instant) -> Self {
        let ttl = ttl.min(MAX_LEASE_TTL);
        Self {
            ttl,
            deadline: later(sent, ttl),
            margin: Duration::ZERO,
            stopped: false,
        }
    }

    /// Stops the call `margin` before the lease would expire instead of at the expiry (at
    /// most the time to live): for a store whose expiry is set by a server's clock, so that
    /// a timer that fires late, or a task scheduled late on a busy host, still stops the
    /// call before the server lets another instance take the session.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use agentscope_core::session::RenewalDeadline;
    ///
    /// let taken = Instant::now();
    /// let lease = RenewalDeadline::new(Duration::from_secs(30), taken)
    ///     .with_stop_margin(Duration::from_secs(3));
    /// assert_eq!(lease.deadline(), taken + Duration::from_secs(30));
    /// assert_eq!(lease.stop_at(), taken + Duration::from_secs(27));
    /// ```
    #[must_use]
    pub fn with_stop_margin(mut self, margin: Duration) -> Self {
        self.margin = margin.min(self.ttl);
        self
    }

    /// How long the lease lives without renewal (at most [`MAX_LEASE_TTL`]).
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// A renewal sent at `sent` succeeded: the lease lives until `sent + ttl`. (A call
    /// stopped already stays stopped: its token cannot be un-cancelled.)
    pub fn renewed(&mut self, sent: Instant) {
        self.deadline = self.deadline.max(later(sent, self.ttl));
    }

    /// When the next renewal is due after one sent at `sent`: a third of the time to live
    /// later (so two more can fail before the lease would expire).
    pub fn next_renewal(&self, sent: Instant) -> Instant {
        later(sent, self.ttl / 3)
    }

    /// When the lease expires unless it is renewed before: a renewal should not be waited
    /// for beyond it.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// How long from `now` until the [`deadline`](Self::deadline) (zero once it passed).
    pub fn remaining(&self, now: Instant) -> Duration {
        self.deadline.saturating_duration_since(now)
    }

    /// When the holder's call is stopped unless the lease is renewed before: the
    /// [`deadline`](Self::deadline), or the [stop margin](Self::with_stop_margin) before it.
    /// A renewal should not be waited for beyond it.
    pub fn stop_at(&self) -> Instant {
        self.deadline
            .checked_sub(self.margin)
            .unwrap_or(self.deadline)
    }

    /// The lease was not renewed in time if `now` is at or past [`stop_at`](Self::stop_at):
    /// then cancels `interrupt` (the holder's call stops) and returns `true`, the first time
    /// only, so the store logs it once.
    pub fn stop_if_expired(&mut self, now: Instant, interrupt: &CancellationToken) -> bool {
        if self.stopped || now < self.stop_at() {
            return false;
        }
        self.stopped = true;
        interrupt.cancel();
        true
    }

    /// Whether the holder's call was stopped because the lease could not be renewed.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }
}

/// `at + by`, or as far as an instant goes.
fn later(at: Instant, by: Duration) -> Instant {
    at.checked_add(by)
        .or_else(|| at.checked_add(MAX_LEASE_TTL))
        .unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewal_never_moves_the_deadline_back() {
        let ttl = Duration::from_secs(3);
        let start = Instant::now();
        let mut lease = RenewalDeadline::new(ttl, start);
        lease.renewed(start + Duration::from_secs(2));
        // A slow renewal sent earlier that answers late.
        lease.renewed(start + Duration::from_secs(1));
        assert_eq!(lease.deadline(), start + Duration::from_secs(5));
        assert_eq!(
            lease.remaining(start + Duration::from_secs(4)),
            Duration::from_secs(1)
        );
        assert_eq!(
            lease.remaining(start + Duration::from_secs(9)),
            Duration::ZERO
        );
        assert_eq!(lease.ttl(), ttl);
        assert_eq!(
            lease.next_renewal(start + Duration::from_secs(3)),
            start + Duration::from_secs(4)
        );
    }

    #[test]
    fn a_margin_stops_the_call_early() {
        let start = Instant::now();
        let ttl = Duration::from_millis(300);
        let mut lease =
            RenewalDeadline::new(ttl, start).with_stop_margin(Duration::from_millis(30));
        let call = CancellationToken::new();
        assert_eq!(lease.stop_at(), start + Duration::from_millis(270));
        assert!(!lease.stop_if_expired(start + Duration::from_millis(269), &call));
        assert!(lease.stop_if_expired(start + Duration::from_millis(270), &call));
        assert!(call.is_cancelled());
        // A margin beyond the time to live is the time to live.
        let whole = RenewalDeadline::new(ttl, start).with_stop_margin(Duration::from_secs(9));
        assert_eq!(whole.stop_at(), start);
    }

    #[test]
    fn a_huge_ttl_is_a_year() {
        let start = Instant::now();
        let lease = RenewalDeadline::new(Duration::MAX, start);
        assert_eq!(lease.ttl(), MAX_LEASE_TTL);
        assert_eq!(lease.deadline(), start + MAX_LEASE_TTL);
    }

    #[test]
    fn the_call_stops_once_at_the_deadline() {
        let start = Instant::now();
        let mut lease = RenewalDeadline::new(Duration::from_millis(300), start);
        let call = CancellationToken::new();
        assert!(!lease.stop_if_expired(start + Duration::from_millis(299), &call));
        assert!(!call.is_cancelled() && !lease.is_stopped());
        assert!(lease.stop_if_expired(start + Duration::from_millis(300), &call));
        assert!(call.is_cancelled() && lease.is_stopped());
        // Renewed later (the store came back): still stopped, never reported twice.
        lease.renewed(start + Duration::from_secs(1));
        assert!(!lease.stop_if_expired(start + Duration::from_secs(5), &call));
        assert!(lease.is_stopped());
    }
}
