//! The session's lock file `.<id>.lock`: locked waiting for it (a save without a lease, a
//! delete), or without waiting (taking a lease: a session another call holds is busy). The
//! kernel's lock holds between processes and between handles of one process, and ends when
//! the file is closed. [`LockCheck`] tells whether a locked lock file is still the file at
//! its path.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use agentscope_core::CancellationToken;

use agentscope_core::session::SessionError;

use super::files::{Files, io_error};
use super::lease::{self, Holder};

/// Opens (creating it, and the directory, if needed) and locks the session's lock file,
/// waiting while another holds it; the lock holds until the returned file is dropped.
pub(super) fn lock_session(session: &str, files: &Files) -> Result<File, SessionError> {
    let file = open_lock_file(session, files)?;
    file.lock()
        .map_err(|error| io_error(session, "locking", &files.lock, error))?;
    Ok(file)
}

/// Opens the session's lock file, creating it (and the directory) if needed.
fn open_lock_file(session: &str, files: &Files) -> Result<File, SessionError> {
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&files.lock)
    };
    let file = match open() {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(&files.dir)
                .map_err(|error| io_error(session, "creating directory", &files.dir, error))?;
            open()
        }
        other => other,
    }
    .map_err(|error| io_error(session, "opening lock file", &files.lock, error))?;
    Ok(file)
}

/// Opens (creating it, and the directory, if needed) and locks the session's lock file
/// unless another holds it ([`SessionError::Busy`]); the lock holds until the returned file
/// is dropped.
pub(super) fn try_lock_session(session: &str, files: &Files) -> Result<File, SessionError> {
    let file = open_lock_file(session, files)?;
    try_lock(session, files, &file)?;
    Ok(file)
}

/// Locks `file`, the session's lock file, unless another holds it.
fn try_lock(session: &str, files: &Files, file: &File) -> Result<(), SessionError> {
    let busy = || SessionError::Busy {
        session: session.to_owned(),
    };
    let failed = |error| io_error(session, "locking", &files.lock, error);
    match file.try_lock() {
        Ok(()) => return Ok(()),
        Err(TryLockError::WouldBlock) => {}
        Err(TryLockError::Error(error)) => return Err(failed(error)),
    }
    match lease::holder(&files.lock) {
        Holder::Call => Err(busy()),
        // A lease of this process was given back (its call dropped in the middle of a
        // save, say): the lock is released the moment that save returns.
        Holder::Ending => file.lock().map_err(failed),
        // Another process holds it, or a lease of this process has just unlocked it
        // (unlocking comes before leaving the registry): one more try tells which.
        Holder::None => match file.try_lock() {
            Ok(()) => Ok(()),
            Err(TryLockError::WouldBlock) => Err(busy()),
            Err(TryLockError::Error(error)) => Err(failed(error)),
        },
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
