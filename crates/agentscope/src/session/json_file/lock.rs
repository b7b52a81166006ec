//! The session's lock file `.<id>.lock`: locked waiting for it (a save without a lease, a
//! delete), or without waiting (taking a lease: a session another call holds is busy). The
//! kernel's lock holds between processes and between handles of one process, and ends when
//! the file is closed. Whether a lease's locked lock file is still the file at its path is
//! `watch`'s.

use agentscope_core::session::SessionError;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;

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
    let busy = || SessionError::busy(session);
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
