//! Figures for benchmarks: the [`median`] of a bench's samples, one rule for every bench
//! (durations and rates alike), so that their figures compare.
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
