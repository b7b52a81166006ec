//! What a [`RecordingHook`] saw, in forms to compare exactly: event sequences written as one
//! line of names, the events of one type, and the texts of streamed chunks.

use agentscope::prelude::*;
use agentscope_core::engine::TypedEvent;
use agentscope_test::RecordingHook;

/// The event types named in `names` (separated by white space), in order: a long expected
/// sequence reads better as one line of names than as one line per kind. Panics on a name
/// that is no [`HookEventType`].
#[track_caller]
pub(crate) fn kinds(names: &str) -> Vec<HookEventType> {
    names
        .split_whitespace()
        .map(|name| {
            HookEventType::ALL
                .into_iter()
                .find(|kind| kind.to_string() == name)
                .unwrap_or_else(|| panic!("no event type is named {name:?}"))
        })
        .collect()
}

/// The events of type `E` (a `PostActingEvent`, say) that `rec` saw, in order.
pub(crate) fn events_of<E: TypedEvent>(rec: &RecordingHook) -> Vec<E> {
    rec.events()
        .into_iter()
        .filter_map(|event| E::from_event(event).ok())
        .collect()
}

/// Asserts that the chunks of `kind` (`ReasoningChunk` or `SummaryChunk`) that `rec` saw were
/// exactly `expected`, each as its `(incremental, accumulated)` text.
#[track_caller]
pub(crate) fn assert_chunks(rec: &RecordingHook, kind: HookEventType, expected: &[(&str, &str)]) {
    let seen: Vec<(String, String)> = rec
        .events()
        .iter()
        .filter(|event| event.event_type() == kind)
        .filter_map(|event| match event {
            HookEvent::ReasoningChunk(e) => {
                Some((e.incremental_chunk().text(), e.accumulated().text()))
            }
            HookEvent::SummaryChunk(e) => {
                Some((e.incremental_chunk().text(), e.accumulated().text()))
            }
            _ => None,
        })
        .collect();
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(incremental, accumulated)| ((*incremental).to_owned(), (*accumulated).to_owned()))
        .collect();
    assert_eq!(seen, expected, "{kind} texts");
}
