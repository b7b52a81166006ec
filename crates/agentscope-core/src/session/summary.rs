//! [`SessionSummary`]: one line of [`SessionStore::list_recent`](super::SessionStore::list_recent),
//! and the order that listing follows, in one place.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::AgentState;

/// A stored session as [`SessionStore::list_recent`](super::SessionStore::list_recent) lists
/// it: its id, its revision and when it was saved, without its messages.
///
/// `revision` and `saved_at` are the stored state's, exactly as
/// [`load`](super::SessionStore::load) returns them: [`AgentState::revision`] and
/// [`AgentState::saved_at`] (the [`StateChange::saved_at`](super::StateChange::saved_at) of
/// the last save), never a store's clock.
///
/// # The order
///
/// Listings go **most recently saved first**: `saved_at` descending, then `id` ascending
/// (byte order) among sessions saved at the same instant. [`cmp_recent`](Self::cmp_recent)
/// is that order and [`is_after`](Self::is_after) the "strictly after" test a page starts
/// from; every store follows them (a store that sorts in its database keeps
/// [`recency_key`](Self::recency_key), whose byte order is the same). A leap second
/// (`23:59:60.5`) counts as the first second of the next minute, as PostgreSQL and most
/// clocks read it.
///
/// ```
/// use agentscope_core::session::SessionSummary;
/// use chrono::{TimeZone, Utc};
///
/// let at = |second| Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, second).unwrap();
/// let mut listed = vec![
///     SessionSummary::new("b", 3, at(5)),
///     SessionSummary::new("c", 1, at(9)),
///     SessionSummary::new("a", 7, at(5)),
/// ];
/// listed.sort_by(SessionSummary::cmp_recent);
/// let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
/// assert_eq!(ids, ["c", "a", "b"]); // newest first; "a" and "b" tie, by id
///
/// // The next page starts strictly after the last summary of this one.
/// assert!(listed[2].is_after(&listed[1]));
/// assert!(!listed[1].is_after(&listed[1]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// The stored revision ([`AgentState::revision`]).
    pub revision: u64,
    /// When the stored state was saved ([`AgentState::saved_at`]).
    #[serde(serialize_with = "crate::rfc3339::serialize")]
    pub saved_at: DateTime<Utc>,
}

impl SessionSummary {
    /// The summary of session `id`, stored at `revision`, saved at `saved_at`.
    pub fn new(id: impl Into<String>, revision: u64, saved_at: DateTime<Utc>) -> Self {
        Self {
            id: id.into(),
            revision,
            saved_at,
        }
    }

    /// The summary of session `id` holding `state` (its revision and `saved_at`).
    pub fn of(id: impl Into<String>, state: &AgentState) -> Self {
        Self::new(id, state.revision, state.saved_at)
    }

    /// The listing order (see [the order](#the-order)): `Less` when `self` is listed
    /// before `other`, that is saved later, or at the same instant with a smaller id. The
    /// revision plays no part.
    pub fn cmp_recent(&self, other: &Self) -> Ordering {
        // Newer first: the other's time against this one's.
        instant(&other.saved_at)
            .cmp(&instant(&self.saved_at))
            .then_with(|| self.id.as_bytes().cmp(other.id.as_bytes()))
    }

    /// Whether `self` is listed strictly after `cursor` (the last summary of the previous
    /// page): saved before it, or at the same instant with a greater id. Only the cursor's
    /// `saved_at` and `id` count.
    pub fn is_after(&self, cursor: &SessionSummary) -> bool {
        self.cmp_recent(cursor) == Ordering::Greater
    }

    /// A key whose byte order is the listing order, for stores that sort in their database:
    /// sessions sorted by `(recency_key(saved_at), id)` ascending, both compared byte by byte
    /// (SQL's `COLLATE "C"` or `BINARY`, a Redis sorted set's lexical order), are in
    /// [`cmp_recent`](Self::cmp_recent)'s order, and a page after `cursor` is the rows
    /// whose `(key, id)` is greater than the cursor's.
    ///
    /// 24 lowercase hexadecimal digits: `2^62 - seconds` since the Unix epoch (16 digits),
    /// then `999,999,999 - nanoseconds` (8), so later times give smaller keys.
    ///
    /// ```
    /// use agentscope_core::session::SessionSummary;
    /// use chrono::{TimeZone, Utc};
    ///
    /// let at = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
    /// let key = SessionSummary::recency_key(&at);
    /// assert_eq!(key, "3fffffff94f165603b9ac9ff");
    /// let later = at + chrono::Duration::nanoseconds(1);
    /// assert!(SessionSummary::recency_key(&later) < key);
    /// ```
    pub fn recency_key(saved_at: &DateTime<Utc>) -> String {
        let (seconds, nanos) = instant(saved_at);
        // chrono's times span about ±8.2e12 s, far inside ±2^62: the difference is
        // positive and below 2^63.
        let high = (1i128 << 62) - i128::from(seconds);
        let low = 999_999_999 - nanos;
        format!("{high:016x}{low:08x}")
    }

    /// The page of `summaries` that [`SessionStore::list_recent`](super::SessionStore::list_recent)
    /// returns: those whose id starts with `prefix` and that come strictly after `after`,
    /// in the listing order, at most `limit`. For stores that gather summaries and page
    /// them in memory (the provided `list_recent` does).
    ///
    /// ```
    /// use agentscope_core::session::SessionSummary;
    /// use chrono::{TimeZone, Utc};
    ///
    /// let at = |second| Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, second).unwrap();
    /// let all = vec![
    ///     SessionSummary::new("chat-1", 1, at(1)),
    ///     SessionSummary::new("task-1", 1, at(2)),
    ///     SessionSummary::new("chat-2", 1, at(3)),
    ///     SessionSummary::new("chat-3", 1, at(4)),
    /// ];
    /// let first = SessionSummary::page(all.clone(), "chat-", None, 2);
    /// assert_eq!(first.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["chat-3", "chat-2"]);
    /// let next = SessionSummary::page(all, "chat-", first.last(), 2);
    /// assert_eq!(next.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["chat-1"]);
    /// ```
    pub fn page(
        mut summaries: Vec<SessionSummary>,
        prefix: &str,
        after: Option<&SessionSummary>,
        limit: usize,
    ) -> Vec<SessionSummary> {
        summaries.retain(|summary| {
            summary.id.starts_with(prefix) && after.is_none_or(|cursor| summary.is_after(cursor))
        });
        if summaries.len() > limit {
            if limit > 0 {
                summaries.select_nth_unstable_by(limit - 1, Self::cmp_recent);
            }
            summaries.truncate(limit);
        }
        summaries.sort_by(Self::cmp_recent);
        summaries
    }
}

/// `saved_at` as whole seconds since the Unix epoch and nanoseconds below a billion (a leap
/// second, which chrono keeps as nanoseconds past a billion, folded into the next second).
fn instant(saved_at: &DateTime<Utc>) -> (i64, u32) {
    let (seconds, nanos) = (saved_at.timestamp(), saved_at.timestamp_subsec_nanos());
    match nanos.checked_sub(1_000_000_000) {
        Some(past) => (seconds.saturating_add(1), past),
        None => (seconds, nanos),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDate, TimeZone};
    use proptest::prelude::*;

    fn at(seconds: i64, nanos: u32) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, nanos).unwrap()
    }

    #[test]
    fn newest_first_then_by_id() {
        let mut listed = [
            SessionSummary::new("b", 1, at(10, 5)),
            SessionSummary::new("a", 9, at(10, 5)),
            SessionSummary::new("z", 1, at(10, 6)),
            SessionSummary::new("B", 1, at(10, 5)),
            SessionSummary::new("old", 1, at(-5, 0)),
        ];
        listed.sort_by(SessionSummary::cmp_recent);
        let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["z", "B", "a", "b", "old"]);
        // The revision plays no part.
        let a = SessionSummary::new("a", 1, at(1, 0));
        let again = SessionSummary::new("a", 2, at(1, 0));
        assert_eq!(a.cmp_recent(&again), Ordering::Equal);
        assert!(!a.is_after(&again) && !again.is_after(&a));
    }

    #[test]
    fn a_leap_second_is_the_next_second() {
        let leap = Utc.from_utc_datetime(
            &NaiveDate::from_ymd_opt(2016, 12, 31)
                .unwrap()
                .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
                .unwrap(),
        );
        let next = Utc.with_ymd_and_hms(2017, 1, 1, 0, 0, 0).unwrap()
            + chrono::Duration::milliseconds(500);
        assert_eq!(instant(&leap), instant(&next));
        assert_eq!(
            SessionSummary::recency_key(&leap),
            SessionSummary::recency_key(&next)
        );
    }

    #[test]
    fn keys_at_the_edges() {
        assert_eq!(
            SessionSummary::recency_key(&at(0, 0)),
            "40000000000000003b9ac9ff"
        );
        assert_eq!(
            SessionSummary::recency_key(&at(0, 999_999_999)),
            "400000000000000000000000"
        );
        for extreme in [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
            let key = SessionSummary::recency_key(&extreme);
            assert_eq!(key.len(), 24, "{key}");
        }
        assert!(
            SessionSummary::recency_key(&DateTime::<Utc>::MAX_UTC)
                < SessionSummary::recency_key(&DateTime::<Utc>::MIN_UTC)
        );
    }

    #[test]
    fn page_filters_sorts_and_cuts() {
        let all: Vec<SessionSummary> = (0..10)
            .map(|n: u64| {
                SessionSummary::new(format!("s{n}"), n, at(i64::try_from(n % 3).unwrap(), 0))
            })
            .collect();
        let mut walked = Vec::new();
        let mut after: Option<SessionSummary> = None;
        loop {
            let page = SessionSummary::page(all.clone(), "", after.as_ref(), 3);
            if page.is_empty() {
                break;
            }
            after = page.last().cloned();
            walked.extend(page.into_iter().map(|s| s.id));
        }
        // Seconds 2 (s2, s5, s8), 1 (s1, s4, s7), 0 (s0, s3, s6, s9).
        assert_eq!(
            walked,
            ["s2", "s5", "s8", "s1", "s4", "s7", "s0", "s3", "s6", "s9"]
        );
        assert!(SessionSummary::page(all.clone(), "", None, 0).is_empty());
        assert_eq!(SessionSummary::page(all.clone(), "s1", None, 5).len(), 1);
        assert_eq!(SessionSummary::page(all, "x", None, 5), Vec::new());
    }

    #[test]
    fn json_shape() {
        let summary = SessionSummary::new("chat-1", 3, at(1_700_000_000, 250_000_000));
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"id": "chat-1", "revision": 3, "saved_at": "2023-11-14T22:13:20.250Z"})
        );
        let back: SessionSummary = serde_json::from_value(json).unwrap();
        assert_eq!(back, summary);
    }

    proptest! {
        /// The keys' byte order, then the ids', is the listing order.
        #[test]
        fn the_key_order_is_the_listing_order(
            a in (-8_000_000_000_000i64..8_000_000_000_000, 0u32..1_000_000_000, "[a-c]{1,3}"),
            b in (-8_000_000_000_000i64..8_000_000_000_000, 0u32..1_000_000_000, "[a-c]{1,3}"),
            near in 0u8..3,
        ) {
            let (a_seconds, a_nanos, a_id) = a;
            let (mut b_seconds, mut b_nanos, b_id) = b;
            // Often the same second, or the same instant, where the finer fields decide.
            if near > 0 {
                b_seconds = a_seconds + b_seconds.rem_euclid(3) - 1;
            }
            if near > 1 {
                b_nanos = a_nanos;
            }
            let (Some(a_at), Some(b_at)) = (
                DateTime::from_timestamp(a_seconds, a_nanos),
                DateTime::from_timestamp(b_seconds, b_nanos),
            ) else {
                return Ok(());
            };
            let x = SessionSummary::new(a_id, 1, a_at);
            let y = SessionSummary::new(b_id, 1, b_at);
            let keys = (SessionSummary::recency_key(&x.saved_at), x.id.clone())
                .cmp(&(SessionSummary::recency_key(&y.saved_at), y.id.clone()));
            prop_assert_eq!(keys, x.cmp_recent(&y));
            prop_assert_eq!(x.is_after(&y), keys == Ordering::Greater);
        }
    }
}
