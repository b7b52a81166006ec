//! Per-call state of built-in hooks, kept in the call's [`Extensions`] and keyed by hook
//! instance (one hook type may be registered more than once on an agent; extensions hold one
//! value per type). The engine drops it with the call, however the call ends.

use std::sync::atomic::{AtomicU64, Ordering};

use agentscope_core::Extensions;

/// Identifies one hook instance (clones of a hook share it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InstanceId(u64);

impl InstanceId {
    /// A new id, unique in this process.
    pub(crate) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        InstanceId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The extension value: the state of each instance of one hook type in this call.
struct PerInstance<T>(Vec<(InstanceId, T)>);

/// Stores `value` as `instance`'s state for this call (replacing an earlier one).
pub(crate) fn insert<T: Send + Sync + 'static>(
    extensions: &mut Extensions,
    instance: InstanceId,
    value: T,
) {
    let entries = &mut extensions
        .get_or_insert_with(|| PerInstance::<T>(Vec::new()))
        .0;
    match entries.iter_mut().find(|(id, _)| *id == instance) {
        Some((_, slot)) => *slot = value,
        None => entries.push((instance, value)),
    }
}

/// `instance`'s state for this call.
pub(crate) fn get_mut<T: Send + Sync + 'static>(
    extensions: &mut Extensions,
    instance: InstanceId,
) -> Option<&mut T> {
    extensions
        .get_mut::<PerInstance<T>>()?
        .0
        .iter_mut()
        .find(|(id, _)| *id == instance)
        .map(|(_, value)| value)
}

/// The state of the first instance of a hook type that has one in this call.
pub(crate) fn first_mut<T: Send + Sync + 'static>(extensions: &mut Extensions) -> Option<&mut T> {
    extensions
        .get_mut::<PerInstance<T>>()?
        .0
        .first_mut()
        .map(|(_, value)| value)
}

/// `instance`'s state for this call, a default one first when it has none.
#[cfg(feature = "context")]
pub(crate) fn get_or_default<T: Default + Send + Sync + 'static>(
    extensions: &mut Extensions,
    instance: InstanceId,
) -> &mut T {
    let entries = &mut extensions
        .get_or_insert_with(|| PerInstance::<T>(Vec::new()))
        .0;
    let at = match entries.iter().position(|(id, _)| *id == instance) {
        Some(at) => at,
        None => {
            entries.push((instance, T::default()));
            entries.len() - 1
        }
    };
    &mut entries[at].1
}

/// Removes and returns `instance`'s state for this call.
pub(crate) fn take<T: Send + Sync + 'static>(
    extensions: &mut Extensions,
    instance: InstanceId,
) -> Option<T> {
    let entries = &mut extensions.get_mut::<PerInstance<T>>()?.0;
    let at = entries.iter().position(|(id, _)| *id == instance)?;
    Some(entries.swap_remove(at).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_do_not_share_state() {
        let (a, b) = (InstanceId::next(), InstanceId::next());
        let mut extensions = Extensions::new();
        insert(&mut extensions, a, String::from("a"));
        insert(&mut extensions, b, String::from("b"));
        get_mut::<String>(&mut extensions, a).unwrap().push('!');
        assert_eq!(take::<String>(&mut extensions, a).as_deref(), Some("a!"));
        assert_eq!(take::<String>(&mut extensions, a), None);
        assert_eq!(take::<String>(&mut extensions, b).as_deref(), Some("b"));
    }

    #[cfg(feature = "context")]
    #[test]
    fn defaults_are_made_once_per_instance() {
        let (a, b) = (InstanceId::next(), InstanceId::next());
        let mut extensions = Extensions::new();
        get_or_default::<String>(&mut extensions, a).push('a');
        get_or_default::<String>(&mut extensions, a).push('!');
        assert_eq!(get_or_default::<String>(&mut extensions, b).as_str(), "");
        assert_eq!(take::<String>(&mut extensions, a).as_deref(), Some("a!"));
    }
}
