//! Whether a lease's lock file is still the file it locked ([`LockCheck`]), and the thread
//! that watches the lock files of the leases of this process: every [`CHECK_INTERVAL`] it
//! checks each lease's ([`LockCheck::still_holds`]), which stops the call of a lease whose
//! lock file was removed or replaced. One thread for the process, running while a lease is held (the
//! next lease starts it again). It keeps only the checks, never the leases: a lease given
//! back unlocks at once, whatever the thread is doing.

use std::fs::{self, File};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::Duration;

use agentscope_core::CancellationToken;

use crate::sync::lock;

/// How often the leases of this process check their lock files.
pub(super) const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The checks of the leases held, and whether the thread runs; under one lock, so a lease
/// added while the thread ends starts a new one.
static WATCHED: Mutex<Watched> = Mutex::new(Watched {
    checks: Vec::new(),
    running: false,
});

struct Watched {
    /// A check lives as long as its lease.
    checks: Vec<Weak<LockCheck>>,
    running: bool,
}

/// Watches `check` while its lease lives, starting the thread if it does not run.
pub(super) fn add(check: &Arc<LockCheck>) {
    let mut watched = lock(&WATCHED);
    watched.checks.push(Arc::downgrade(check));
    if watched.running {
        return;
    }
    let spawned = thread::Builder::new()
        .name("agentscope-json-leases".to_owned())
        .spawn(watch);
    match spawned {
        Ok(_) => watched.running = true,
        // Fenced saves still check the lock file; only the early stop is missing.
        Err(error) => tracing::warn!(
            %error,
            "starting the thread that watches session lock files failed"
        ),
    }
}

fn watch() {
    loop {
        thread::sleep(CHECK_INTERVAL);
        let checks: Vec<Arc<LockCheck>> = {
            let mut watched = lock(&WATCHED);
            watched.checks.retain(|check| check.strong_count() > 0);
            if watched.checks.is_empty() {
                watched.running = false;
                return;
            }
            watched.checks.iter().filter_map(Weak::upgrade).collect()
        };
        for check in &checks {
            check.still_holds();
        }
    }
}

/// Whether a lease's locked lock file is still the file at its path, and what to stop when
/// it is not: removed or replaced while held (by hand, a clean-up job), it no longer
/// guards the session, since a process that locks the file now at that path holds the
/// session too.
pub(super) struct LockCheck {
    path: PathBuf,
    /// Which file was locked (Unix: device and inode); `None`: not compared.
    identity: Option<FileId>,
    /// The holding call's interrupt token.
    interrupt: CancellationToken,
    /// Set once the file was found removed or replaced: the lease is lost.
    lost: AtomicBool,
}

impl LockCheck {
    /// The check of `file`, locked, at `path`, for the call `interrupt` stops.
    pub(super) fn new(path: PathBuf, file: &File, interrupt: CancellationToken) -> Self {
        Self {
            path,
            identity: file.metadata().ok().and_then(|metadata| file_id(&metadata)),
            interrupt,
            lost: AtomicBool::new(false),
        }
    }

    /// Whether the lock file at the path is still the one locked. The first time it finds
    /// it removed or replaced, it stops the call (cancels its interrupt token) and logs it;
    /// from then on the lease is lost. A lock file that cannot be looked at (another I/O
    /// error) counts as held: the kernel's lock on it still holds.
    pub(super) fn still_holds(&self) -> bool {
        if self.lost.load(Ordering::SeqCst) {
            return false;
        }
        let Some(identity) = self.identity else {
            return true;
        };
        let replaced = match fs::metadata(&self.path) {
            Ok(metadata) => file_id(&metadata) != Some(identity),
            Err(error) => error.kind() == io::ErrorKind::NotFound,
        };
        if replaced && !self.lost.swap(true, Ordering::SeqCst) {
            self.interrupt.cancel();
            tracing::warn!(
                lock_file = %self.path.display(),
                "the session's lock file was removed or replaced while a call held it, so \
                 another call may take the session; stopping this call (its saves are \
                 refused)"
            );
        }
        !replaced
    }
}

/// A file's identity on its file system.
type FileId = (u64, u64);

#[cfg(unix)]
fn file_id(metadata: &fs::Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some((metadata.dev(), metadata.ino()))
}

/// Elsewhere a lock file is not compared (a file held open there cannot be removed).
#[cfg(not(unix))]
fn file_id(_metadata: &fs::Metadata) -> Option<FileId> {
    None
}
