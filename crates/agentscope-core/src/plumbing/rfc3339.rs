//! Serialising timestamps as chrono does (RFC 3339, `Z`, the shortest of 0, 3, 6 or 9
//! fractional digits), without its formatting machinery: every stored or sent message
//! carries one, and chrono's `Display`-based serialisation cost about 2,700 instructions
//! per timestamp (callgrind, the JSON session store's saves).
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
//!     #[serde(serialize_with = "agentscope_core::plumbing::rfc3339::serialize")]
//!     saved_at: DateTime<Utc>,
//! }
//!
//! let saved_at = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
//! let json = serde_json::to_string(&Record { saved_at }).unwrap();
//! assert_eq!(json, r#"{"saved_at":"2026-12-01T10:00:00Z"}"#);
//! assert_eq!(json, serde_json::to_string(&serde_json::json!({ "saved_at": saved_at })).unwrap());
//! ```

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::{Serialize, Serializer};

/// Serialises `timestamp` exactly as `chrono`'s `Serialize` does (which remains the
/// fallback for years outside 0..=9999), for `#[serde(serialize_with = ...)]`.
pub fn serialize<S: Serializer>(
    timestamp: &DateTime<Utc>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut buffer = [0u8; 30];
    match format(timestamp, &mut buffer) {
        Some(text) => serializer.serialize_str(text),
        None => timestamp.serialize(serializer),
    }
}

/// `timestamp` as chrono's RFC 3339 form in `buffer`; `None` for a year outside 0..=9999.
fn format<'a>(timestamp: &DateTime<Utc>, buffer: &'a mut [u8; 30]) -> Option<&'a str> {
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
        }
        assert_eq!(
            ours(&at(2026, 11, 30, 10, 0, 0, 0)),
            "\"2026-11-30T10:00:00Z\""
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
            }
        }
    }
}
