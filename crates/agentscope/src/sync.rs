//! Locking the agent's mutexes.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex, recovering the data of a poisoned one (a panicking hook must not make the
/// agent unusable).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
