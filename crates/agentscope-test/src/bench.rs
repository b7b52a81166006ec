//! Figures for benchmarks: the [`median`] and [`percentile`]s of a bench's samples, one rule
//! each for every bench (durations and rates alike), so that their figures compare, and the
//! [`cpu_time`] a process used.
//!
//! ```
//! use std::time::Duration;
//!
//! use agentscope_test::bench::median;
//!
//! assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
//! assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
//! assert_eq!(
//!     median(vec![Duration::from_millis(10), Duration::from_millis(20)]),
//!     Some(Duration::from_millis(15))
//! );
//! assert_eq!(median(Vec::<f64>::new()), None);
//! ```

use std::cmp::Ordering;
use std::time::Duration;

/// A value a bench samples: ordered, and with a midpoint of two values (what [`median`]
/// needs). Implemented for [`Duration`] and [`f64`].
pub trait Sample: Copy {
    /// The order of two samples (for [`f64`], [`f64::total_cmp`]: NaN sorts after every
    /// number).
    fn order(&self, other: &Self) -> Ordering;
    /// The value halfway between `self` and `other`, where `self <= other`.
    fn midpoint(self, other: Self) -> Self;
}

impl Sample for Duration {
    fn order(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }

    fn midpoint(self, other: Self) -> Self {
        // `self + other` may overflow; `other - self` may not, as `self <= other`.
        self + other.saturating_sub(self) / 2
    }
}

impl Sample for f64 {
    fn order(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }

    fn midpoint(self, other: Self) -> Self {
        (self + other) / 2.0
    }
}

/// The median of `values`: the middle value of an odd count, the mean of the two middle
/// values of an even count (the usual definition); `None` without values.
pub fn median<T: Sample>(mut values: Vec<T>) -> Option<T> {
    values.sort_unstable_by(T::order);
    let mid = values.len() / 2;
    match values.len() % 2 {
        1 => values.get(mid).copied(),
        _ => Some(values.get(mid.checked_sub(1)?)?.midpoint(*values.get(mid)?)),
    }
}

/// The `p`th percentile (0 to 100) of `sorted` (ascending), by the nearest rank: the
/// smallest sample that at least `p` percent of the samples do not exceed. `None` without
/// samples.
///
/// ```
/// use std::time::Duration;
///
/// use agentscope_test::bench::percentile;
///
/// let ms: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
/// assert_eq!(percentile(&ms, 50.0), Some(Duration::from_millis(50)));
/// assert_eq!(percentile(&ms, 99.0), Some(Duration::from_millis(99)));
/// assert_eq!(percentile(&ms, 100.0), Some(Duration::from_millis(100)));
/// assert_eq!(percentile(&ms[..1], 0.0), Some(Duration::from_millis(1)));
/// assert_eq!(percentile::<Duration>(&[], 50.0), None);
/// ```
pub fn percentile<T: Sample>(sorted: &[T], p: f64) -> Option<T> {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// The CPU time (user and system) the process `pid` has used so far, from
/// `/proc/<pid>/stat` (`"self"` for this process); `None` where that cannot be read (not
/// Linux, the process is gone).
pub fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing parenthesis; utime and stime are the 12th and
    // 13th of them, in clock ticks (100 a second on Linux).
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let mut ticks = 0u64;
    for field in after.split_whitespace().skip(11).take(2) {
        ticks += field.parse::<u64>().ok()?;
    }
    Some(Duration::from_millis(ticks * 10))
}
