//! The leases of [`JsonFileSessionStore`](super::JsonFileSessionStore): a call holds its
//! session's lock file (locked) and log (open) from `lease` until it gives the lease back.
//!
//! The kernel's lock on the lock file is what refuses a second holder, across processes.
//! Within the process, the leases are registered by lock file path, so that a fenced save
//! finds the handles of its lease, and an interrupt the call holding the session. The
//! registry holds weak references: a lease lives as long as its [`SessionLease`] handle
//! (and, after the handle is gone, as long as a save that started under it), and its lock
//! is released when it is dropped.
//!
//! The lock needs no renewal and cannot expire while its process lives. It is lost only
//! when its lock file is removed or replaced while held (by hand, by a clean-up job): a
//! process locking the file now at that path would hold the session too. A lease checks
//! that its lock file is still the one it locked ([`LockCheck`]) at every fenced save
//! (else [`SessionError::LeaseLost`]) and, through the `watch` thread, every
//! [`watch::CHECK_INTERVAL`] while its call runs, stopping the call when it is not.
//!
//! [`SessionLease`]: agentscope_core::session::SessionLease
//! [`SessionError::LeaseLost`]: agentscope_core::session::SessionError::LeaseLost

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use agentscope_core::CancellationToken;
use agentscope_core::session::{LeaseHandle, SessionError};
use futures::future::BoxFuture;

use super::replay::LogInfo;
use super::watch::{self, LockCheck};
use crate::sync::lock;

/// The leases this process holds, by lock file path. Keyed by the path's bytes, which hash
/// without `Path`'s walk over components: the store normalises its directory, so a lock file
/// has one spelling.
static HELD: LazyLock<Mutex<HashMap<OsString, Weak<Held>>>> = LazyLock::new(Mutex::default);

/// One call's lease on a session: the locked lock file, the open log, the fence token and
/// the call's interrupt token.
pub(super) struct Held {
    /// The lock file's path: the registry key.
    lock_path: PathBuf,
    fence: String,
    interrupt: CancellationToken,
    /// Set when the handle is released or dropped: saves under the lease are refused from
    /// then on, and a new lease waits for the lock instead of reporting busy (it is
    /// released as soon as a save still running under this one returns).
    released: AtomicBool,
    /// The locked lock file; closing it (dropping the lease) unlocks.
    lock_file: Option<File>,
    /// Whether the lock file is still the one locked (shared with the `watch` thread,
    /// which holds no reference to the lease itself, so it never delays an unlock).
    check: Arc<LockCheck>,
    /// The log as the last save (or the lease) left it; `None`: look at the disk. Locked
    /// for the length of a save.
    pub(super) log: Mutex<Option<HeldLog>>,
}

/// The session's log, open for reading and appending, as a lease holds it.
pub(super) struct HeldLog {
    pub(super) file: File,
    /// What the log's complete records say.
    pub(super) info: LogInfo,
    /// Whether an interrupted append follows them.
    pub(super) torn: bool,
}

/// Who holds a lock file in this process, as far as the registry knows.
pub(super) enum Holder {
    /// No lease of this process.
    None,
    /// A call of this process.
    Call,
    /// A lease of this process that was given back (or is being dropped): its lock is
    /// released once a save still running under it returns.
    Ending,
}

impl Held {
    /// Registers a lease on the session of `lock_path`, whose lock file `lock_file` this
    /// process has just locked.
    pub(super) fn register(
        lock_path: PathBuf,
        fence: String,
        interrupt: CancellationToken,
        lock_file: File,
        log: Option<HeldLog>,
    ) -> Arc<Held> {
        let check = Arc::new(LockCheck::new(
            lock_path.clone(),
            &lock_file,
            interrupt.clone(),
        ));
        let held = Arc::new(Held {
            lock_path,
            fence,
            interrupt,
            released: AtomicBool::new(false),
            lock_file: Some(lock_file),
            check,
            log: Mutex::new(log),
        });
        // An entry already there belongs to a lease whose lock was released (else this one
        // could not have been taken), and that is being dropped.
        let previous = lock(&HELD).insert(
            held.lock_path.clone().into_os_string(),
            Arc::downgrade(&held),
        );
        drop(previous);
        watch::add(&held.check);
        held
    }

    /// Whether the lease was given back.
    pub(super) fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    /// Whether the lease still holds its session (see [`LockCheck::still_holds`]).
    pub(super) fn still_holds(&self) -> bool {
        self.check.still_holds()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Unlock first, then forget the entry: a lease that finds the lock taken and no
        // entry can try again at once.
        drop(
            self.log
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        drop(self.lock_file.take());
        let mut held = lock(&HELD);
        // The entry may be a newer lease's by now.
        if held
            .get(self.lock_path.as_os_str())
            .is_some_and(|entry| entry.strong_count() == 0)
        {
            held.remove(self.lock_path.as_os_str());
        }
    }
}

/// The registered lease on the lock file `lock_path`, if any (dropped or not).
fn entry(lock_path: &Path) -> Option<Weak<Held>> {
    lock(&HELD).get(lock_path.as_os_str()).cloned()
}

/// The lease of this process on the lock file `lock_path` fenced by `fence`, unless it was
/// given back.
pub(super) fn find(lock_path: &Path, fence: &str) -> Option<Arc<Held>> {
    holding(lock_path).filter(|held| held.fence == fence)
}

/// The lease of this process on the lock file `lock_path`, unless it was given back.
pub(super) fn holding(lock_path: &Path) -> Option<Arc<Held>> {
    entry(lock_path)?
        .upgrade()
        .filter(|held| !held.is_released())
}

/// Who holds the lock file `lock_path` in this process.
pub(super) fn holder(lock_path: &Path) -> Holder {
    let Some(entry) = entry(lock_path) else {
        return Holder::None;
    };
    match entry.upgrade() {
        Some(held) if !held.is_released() => Holder::Call,
        _ => Holder::Ending,
    }
}

/// Cancels the interrupt token of the call of this process holding the lock file
/// `lock_path`; returns whether there is one.
pub(super) fn interrupt(lock_path: &Path) -> bool {
    match holding(lock_path) {
        Some(held) => {
            held.interrupt.cancel();
            true
        }
        None => false,
    }
}

/// The handle of a [`SessionLease`](agentscope_core::session::SessionLease) of the JSON
/// file store: releasing or dropping it ends the lease (its files close once no save runs
/// under it, which unlocks the session).
pub(super) struct JsonFileLease(Option<Arc<Held>>);

impl JsonFileLease {
    pub(super) fn new(held: Arc<Held>) -> Self {
        Self(Some(held))
    }

    fn end(&mut self) {
        if let Some(held) = self.0.take() {
            held.released.store(true, Ordering::SeqCst);
        }
    }
}

impl LeaseHandle for JsonFileLease {
    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>> {
        // Closing two files: nothing to wait for.
        self.end();
        Box::pin(std::future::ready(Ok(())))
    }
}

impl Drop for JsonFileLease {
    fn drop(&mut self) {
        self.end();
    }
}
