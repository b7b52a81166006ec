//! Timestamps as text, one form for every store: RFC 3339 in UTC with `Z` and the shortest
//! of 0, 3, 6 or 9 fractional digits, as chrono writes them, without its formatting
//! machinery (every stored or sent message carries one, and chrono's `Display`-based
//! serialisation cost about 2,700 instructions per timestamp: callgrind, the JSON session
//! store's saves).
//!
//! - [`serialize`] writes a timestamp into serde output;
//! - [`format`](fn@format) gives the same text as a `String`, for stores that keep a
//!   timestamp in a column or field of its own;
//! - [`parse_saved_at`] reads such a stored text back, with the error a store reports for a
//!   corrupt session.
//!
//! [`Msg`](crate::Msg) and the session states serialise their timestamps this way; a store
//! with record types of its own can too:
//!
//! ```
//! use chrono::{DateTime, TimeZone, Utc};
//! use serde::Serialize;
//!
//! #[derive(Serialize)]
//! struct Record {
//!     #[serde(serialize_with = "agentscope_core::rfc3339::serialize")]
//!     saved_at: DateTime<Utc>,
//! }
//!
//! let saved_at = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
//! let json = serde_json::to_string(&Record { saved_at }).unwrap();
//! assert_eq!(json, r#"{"saved_at":"2026-12-01T10:00:00Z"}"#);
//! assert_eq!(json, serde_json::to_string(&serde_json::json!({ "saved_at": saved_at })).unwrap());
//! ```

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};
use serde::{Serialize, Serializer};

use crate::session::SessionError;

/// Serialises `timestamp` exactly as `chrono`'s `Serialize` does (which remains the
/// fallback for years outside 0..=9999), for `#[serde(serialize_with = ...)]`.
pub fn serialize<S: Serializer>(
    timestamp: &DateTime<Utc>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut buffer = [0u8; 30];
    match write(timestamp, &mut buffer) {
        Some(text) => serializer.serialize_str(text),
        None => timestamp.serialize(serializer),
    }
}

/// `timestamp` as text, exactly as chrono's
/// `timestamp.to_rfc3339_opts(SecondsFormat::AutoSi, true)` writes it (and as [`serialize`]
/// does): what a store keeps in a column or field of its own.
///
/// ```
/// use chrono::{TimeZone, Utc};
///
/// let at = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
/// assert_eq!(agentscope_core::rfc3339::format(&at), "2026-12-01T10:00:00Z");
/// let later = at + chrono::Duration::milliseconds(250);
/// assert_eq!(agentscope_core::rfc3339::format(&later), "2026-12-01T10:00:00.250Z");
/// ```
pub fn format(timestamp: &DateTime<Utc>) -> String {
    let mut buffer = [0u8; 30];
    match write(timestamp, &mut buffer) {
        Some(text) => text.to_owned(),
        None => timestamp.to_rfc3339_opts(SecondsFormat::AutoSi, true),
    }
}

/// Reads the `saved_at` time a store kept for session `session` (any RFC 3339 text, such
/// as [`format`](fn@format) writes), in UTC.
///
/// ```
/// use agentscope_core::rfc3339;
/// use agentscope_core::session::SessionError;
///
/// let at = rfc3339::parse_saved_at("chat-1", "2026-12-01T10:00:00.250Z")?;
/// assert_eq!(rfc3339::format(&at), "2026-12-01T10:00:00.250Z");
/// let error = rfc3339::parse_saved_at("chat-1", "yesterday").unwrap_err();
/// assert!(matches!(error, SessionError::Corrupt { .. }));
/// assert!(error.to_string().starts_with(
///     "session 'chat-1' is corrupt: saved_at 'yesterday' is not an RFC 3339 time"
/// ));
/// # Ok::<(), SessionError>(())
/// ```
///
/// # Errors
///
/// [`SessionError::Corrupt`] naming the session, the text and what the parser found wrong.
pub fn parse_saved_at(session: &str, text: &str) -> Result<DateTime<Utc>, SessionError> {
    DateTime::parse_from_rfc3339(text)
        .map(|time| time.with_timezone(&Utc))
        .map_err(|error| {
            SessionError::corrupt(
                session,
                format_args!("saved_at '{text}' is not an RFC 3339 time: {error}"),
            )
        })
}

/// `timestamp` as chrono's RFC 3339 form in `buffer`; `None` for a year outside 0..=9999.
fn write<'a>(timestamp: &DateTime<Utc>, buffer: &'a mut [u8; 30]) -> Option<&'a str> {
    let year = u32::try_from(timestamp.year())
        .ok()
        .filter(|year| *year <= 9999)?;
    let (mut second, mut nano) = (timestamp.second(), timestamp.nanosecond());
    // A leap second: chrono keeps it as nanoseconds past 1e9 and prints second 60.
    if nano >= 1_000_000_000 {
        second += 1;
        nano -= 1_000_000_000;
    }
    let mut at = 0;
    let mut put = |digits: usize, value: u32, before: Option<u8>| {
        if let Some(byte) = before {
            buffer[at] = byte;
            at += 1;
        }
        let mut value = value;
        for slot in buffer[at..at + digits].iter_mut().rev() {
            // `value % 10` is below 10.
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
        at += digits;
    };
    put(4, year, None);
    put(2, timestamp.month(), Some(b'-'));
    put(2, timestamp.day(), Some(b'-'));
    put(2, timestamp.hour(), Some(b'T'));
    put(2, timestamp.minute(), Some(b':'));
    put(2, second, Some(b':'));
    match nano {
        0 => {}
        _ if nano % 1_000_000 == 0 => put(3, nano / 1_000_000, Some(b'.')),
        _ if nano % 1_000 == 0 => put(6, nano / 1_000, Some(b'.')),
        _ => put(9, nano, Some(b'.')),
    }
    put(0, 0, Some(b'Z'));
    std::str::from_utf8(&buffer[..at]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDate, TimeZone};
    use proptest::prelude::*;

    /// Ours, through serde_json.
    fn ours(timestamp: &DateTime<Utc>) -> String {
        let mut out = Vec::new();
        serialize(timestamp, &mut serde_json::Serializer::new(&mut out)).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// chrono's, through serde_json.
    fn chrono(timestamp: &DateTime<Utc>) -> String {
        serde_json::to_string(timestamp).unwrap()
    }

    /// What the stores wrote before [`format`].
    fn chrono_text(timestamp: &DateTime<Utc>) -> String {
        timestamp.to_rfc3339_opts(SecondsFormat::AutoSi, true)
    }

    #[test]
    fn the_edges_serialise_as_chrono_does() {
        let at = |y, mo, d, h, mi, s, nano| {
            Utc.from_utc_datetime(
                &NaiveDate::from_ymd_opt(y, mo, d)
                    .unwrap()
                    .and_hms_nano_opt(h, mi, s, nano)
                    .unwrap(),
            )
        };
        for timestamp in [
            at(2026, 11, 30, 10, 0, 0, 0),
            at(2026, 12, 1, 23, 59, 59, 120_000_000),
            at(2026, 12, 1, 23, 59, 59, 123_456_000),
            at(2026, 12, 1, 23, 59, 59, 123_456_789),
            at(2026, 12, 1, 23, 59, 59, 1),
            // A leap second.
            at(2016, 12, 31, 23, 59, 59, 1_500_000_000),
            at(0, 1, 1, 0, 0, 0, 0),
            at(9999, 12, 31, 23, 59, 59, 999_999_999),
            // Outside 0..=9999: chrono's own form.
            at(10000, 1, 1, 0, 0, 0, 0),
            at(-1, 1, 1, 0, 0, 0, 5_000),
        ] {
            assert_eq!(ours(&timestamp), chrono(&timestamp), "{timestamp:?}");
            assert_eq!(format(&timestamp), chrono_text(&timestamp), "{timestamp:?}");
        }
        assert_eq!(
            ours(&at(2026, 11, 30, 10, 0, 0, 0)),
            "\"2026-11-30T10:00:00Z\""
        );
    }

    #[test]
    fn format_writes_what_the_stores_wrote_and_parse_reads_it_back() {
        let at = |nano| {
            Utc.from_utc_datetime(
                &NaiveDate::from_ymd_opt(2026, 12, 1)
                    .unwrap()
                    .and_hms_nano_opt(23, 59, 59, nano)
                    .unwrap(),
            )
        };
        for (nano, text) in [
            (0, "2026-12-01T23:59:59Z"),
            (120_000_000, "2026-12-01T23:59:59.120Z"),
            (123_456_000, "2026-12-01T23:59:59.123456Z"),
            (123_456_789, "2026-12-01T23:59:59.123456789Z"),
            (1, "2026-12-01T23:59:59.000000001Z"),
        ] {
            let timestamp = at(nano);
            assert_eq!(format(&timestamp), text);
            assert_eq!(chrono_text(&timestamp), text);
            assert_eq!(parse_saved_at("s", text).unwrap(), timestamp);
        }
        // Another offset is read as the same instant, in UTC.
        assert_eq!(
            parse_saved_at("s", "2026-12-02T00:59:59.120+01:00").unwrap(),
            at(120_000_000)
        );
        assert_eq!(
            parse_saved_at("s1", "yesterday").unwrap_err().to_string(),
            "session 's1' is corrupt: saved_at 'yesterday' is not an RFC 3339 time: premature \
             end of input"
        );
    }

    proptest! {
        #[test]
        fn any_timestamp_serialises_as_chrono_does(
            seconds in -100_000_000_000i64..300_000_000_000,
            nanos in prop_oneof![Just(0u32), 0u32..1_000, (0u32..1_000).prop_map(|n| n * 1_000_000), (0u32..1_000_000).prop_map(|n| n * 1_000), 0u32..2_000_000_000],
        ) {
            if let Some(timestamp) = DateTime::from_timestamp(seconds, nanos) {
                prop_assert_eq!(ours(&timestamp), chrono(&timestamp));
                prop_assert_eq!(format(&timestamp), chrono_text(&timestamp));
            }
        }
    }
}
