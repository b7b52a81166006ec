//! The write path: what the store does under the session's lock. A save (with or without a
//! lease) finds what is stored, checks the change against it, and appends one record or
//! rewrites the log (a new file renamed over it); taking a lease locks the session and
//! checks its log as a save does; a delete removes the session's log, its `.json` file and a
//! rewrite's temporary file (the lock file stays).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use agentscope_core::CancellationToken;
use agentscope_core::session::{AgentState, SessionError, StateChange};
use serde::de::IgnoredAny;

use super::cache::{Cache, forget, remember, starts_with};
use super::files::{Files, file_len, io_error, read_from, remove_if_exists, sync_dir};
use super::format::{RecordOut, new_log_id};
use super::lease::{Held, HeldLog};
use super::lock::{lock_session, try_lock_session};
use super::replay::{LastRecord, LogInfo, no_complete_record, read_legacy, replay, state_of_log};
use crate::sync::lock;

/// A log is rewritten once it holds more dead bytes than live ones, and at least this many.
pub(super) const MIN_DEAD_BYTES: u64 = 64 * 1024;

/// Whether appending a record of `line_len` bytes to the log `info` describes should rather
/// rewrite it: the dead bytes would then exceed both the live ones and [`MIN_DEAD_BYTES`].
fn needs_rewrite(info: &LogInfo, line_len: u64) -> bool {
    let len = info.len + line_len;
    let dead = info.dead.saturating_add(info.last_header).min(len);
    dead > MIN_DEAD_BYTES && dead > len - dead
}

/// What a save found stored.
enum Stored {
    /// Nothing.
    Nothing,
    /// A whole-state `.json` file of an earlier version.
    Legacy(AgentState),
    /// A log, open for reading and appending, what its complete records say, and whether
    /// an interrupted append follows them.
    Log(File, LogInfo, bool),
}

/// What a save left behind: the log it appended to, still open, and what it holds now; or
/// what the log it wrote anew holds (a rewrite replaces the file, so a handle on the old
/// one is stale).
enum Written {
    Appended(File, LogInfo),
    Rewritten(LogInfo),
}

/// Takes session `session`'s lease: locks its lock file without waiting (another holder:
/// [`SessionError::Busy`]), then opens and checks its log as a save does, and registers
/// both under `fence`.
pub(super) fn take_lease(
    files: &Files,
    cache: &Cache,
    session: &str,
    fence: String,
    interrupt: CancellationToken,
) -> Result<Arc<Held>, SessionError> {
    let lock_file = try_lock_session(session, files)?;
    // On error the lock file closes here, which unlocks it.
    let log = match open_stored(files, cache, session)? {
        Stored::Log(file, info, torn) => Some(HeldLog { file, info, torn }),
        Stored::Nothing | Stored::Legacy(_) => None,
    };
    Ok(Held::register(
        files.lock.clone(),
        fence,
        interrupt,
        lock_file,
        log,
    ))
}

/// A save without a lease: under the lock (waiting for it), of what the disk holds.
pub(super) fn save(
    files: &Files,
    cache: &Cache,
    session: &str,
    change: &StateChange,
) -> Result<u64, SessionError> {
    let _lock = lock_session(session, files)?;
    let stored = open_stored(files, cache, session)?;
    write_change(files, cache, session, change, stored).map(|(revision, _)| revision)
}

/// A save under the lease `held` (which holds the lock): through the log the lease keeps
/// open when it has one, else (the session had no log, or a save failed) of what the disk
/// holds; the lease then keeps the log as the save left it.
pub(super) fn save_leased(
    files: &Files,
    cache: &Cache,
    session: &str,
    change: &StateChange,
    held: &Held,
) -> Result<u64, SessionError> {
    let mut held_log = lock(&held.log);
    if held.is_released() || !held.still_holds() {
        return Err(SessionError::lease_lost(session));
    }
    // Taken out: a save that fails leaves no handle behind, and the next one looks at the
    // disk again.
    let stored = match held_log.take() {
        Some(log) => Stored::Log(log.file, log.info, log.torn),
        None => open_stored(files, cache, session)?,
    };
    let (revision, written) = write_change(files, cache, session, change, stored)?;
    *held_log = match written {
        Written::Appended(file, info) => Some(HeldLog {
            file,
            info,
            torn: false,
        }),
        // The lock is held: the file at the log's path is the one just written. (Should it
        // fail to open, the next save opens it.)
        Written::Rewritten(info) => open_log(&files.log).ok().map(|file| HeldLog {
            file,
            info,
            torn: false,
        }),
    };
    Ok(revision)
}

/// Opens the log for reading and appending.
fn open_log(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).append(true).open(path)
}

/// What the disk holds for the session (the lock is held): the log, else a `.json` file of
/// an earlier version, else nothing.
fn open_stored(files: &Files, cache: &Cache, session: &str) -> Result<Stored, SessionError> {
    match open_log(&files.log) {
        Ok(file) => read_log_info(files, cache, session, file),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            remove_if_exists(session, &files.temp())?;
            Ok(match read_legacy(session, &files.legacy())? {
                Some(state) => Stored::Legacy(state),
                None => Stored::Nothing,
            })
        }
        Err(error) => Err(io_error(session, "opening", &files.log, error)),
    }
}

/// Checks `change` against what is `stored` and writes it (the lock is held): appended to
/// the log, or the log rewritten. Returns the new revision and what was written.
fn write_change(
    files: &Files,
    cache: &Cache,
    session: &str,
    change: &StateChange,
    stored: Stored,
) -> Result<(u64, Written), SessionError> {
    // The log rewritten as the one record `whole`.
    let rewritten = |whole: RecordOut<'_>, remove_legacy: bool| {
        let info = write_log(files, cache, session, whole, remove_legacy)?;
        Ok((info.revision, Written::Rewritten(info)))
    };
    match stored {
        Stored::Nothing => {
            change.check(session, 0, 0)?;
            rewritten(RecordOut::of_change(change), false)
        }
        Stored::Legacy(state) => {
            change.check(session, state.revision, state.messages.len())?;
            if change.kept == 0 {
                rewritten(RecordOut::of_change(change), true)
            } else {
                let state = change.apply(session, Some(state))?;
                rewritten(RecordOut::of_state(&state), true)
            }
        }
        Stored::Log(mut file, info, torn) => {
            change.check(session, info.revision, info.messages)?;
            if change.kept == 0 {
                return rewritten(RecordOut::of_change(change), false);
            }
            let (line, header) = RecordOut::of_change(change).encode(session)?;
            let rewrite_needed = torn
                || info.id.is_none()
                || change.kept < info.messages
                || needs_rewrite(&info, line.len() as u64);
            if rewrite_needed {
                let bytes = read_from(session, &files.log, &mut file, 0)?;
                let (state, _) = state_of_log(session, &files.log, &bytes, None)?;
                let state = change.apply(session, Some(state))?;
                drop(file);
                return rewritten(RecordOut::of_state(&state), false);
            }
            let info = append(
                files, cache, session, &mut file, info, &line, header, change,
            )?;
            Ok((info.revision, Written::Appended(file, info)))
        }
    }
}

/// What the log open as `file` holds: from the cache when the file is the one cached, else
/// by reading what the cache has not seen.
fn read_log_info(
    files: &Files,
    cache: &Cache,
    session: &str,
    mut file: File,
) -> Result<Stored, SessionError> {
    let path = &files.log;
    let len = file_len(session, path, &file)?;
    let cached = lock(cache).info(session).cloned();
    let same_file = match &cached {
        Some(info) => starts_with(session, path, &mut file, len, info, None)?,
        None => false,
    };
    let replayed = match cached {
        Some(info) if same_file && info.len == len => return Ok(Stored::Log(file, info, false)),
        Some(info) if same_file => {
            let bytes = read_from(session, path, &mut file, info.len)?;
            let messages = vec![IgnoredAny; info.messages];
            replay(session, path, &bytes, info, messages)?
        }
        _ => {
            let bytes = read_from(session, path, &mut file, 0)?;
            replay::<IgnoredAny>(session, path, &bytes, LogInfo::default(), Vec::new())?
        }
    };
    if replayed.info.records == 0 {
        return Err(no_complete_record(session, path));
    }
    // Sweep what a crash may have left: a rewrite's temporary file, a migrated `.json`.
    remove_if_exists(session, &files.temp())?;
    remove_if_exists(session, &files.legacy())?;
    // Records were read without their messages: the decoded state (if any) is dropped.
    remember(cache, session, replayed.info.clone(), None);
    Ok(Stored::Log(file, replayed.info, replayed.torn))
}

/// Appends `line` (the record of `change`, whose non-message bytes are `header`) to the
/// log open as `file`, described by `info`, with one write, and syncs it
/// ([`File::sync_data`]). Returns what the log holds now.
#[allow(clippy::too_many_arguments)]
fn append(
    files: &Files,
    cache: &Cache,
    session: &str,
    file: &mut File,
    info: LogInfo,
    line: &[u8],
    header: u64,
    change: &StateChange,
) -> Result<LogInfo, SessionError> {
    let written = file.write_all(line).and_then(|()| file.sync_data());
    if let Err(error) = written {
        // Best effort: take back what was written, so the failed save leaves nothing.
        forget(cache, session);
        let _ = file.set_len(info.len);
        return Err(io_error(session, "appending to", &files.log, error));
    }
    let len = info.len + line.len() as u64;
    let dead = info.dead.saturating_add(info.last_header).min(len);
    let appended = LogInfo {
        id: info.id.clone(),
        len,
        records: info.records + 1,
        revision: change.revision(),
        messages: change.kept + change.appended.len(),
        dead,
        last_header: header,
    };
    // The cached state of the log as it was, with the change applied, is what it holds now.
    let mut cache = lock(cache);
    let state = cache
        .remove(session)
        .filter(|cached| cached.info == info)
        .and_then(|cached| cached.state)
        .and_then(|state| change.apply(session, Some(state)).ok());
    cache.insert(session, appended.clone(), state);
    Ok(appended)
}

/// Writes a new log file of the one record `whole` (a whole state: a state, or a change
/// keeping no stored message) under a new log id: to the temporary file, synced, renamed
/// over the log; then removes the `.json` file of an earlier version if `remove_legacy`, and
/// syncs the directory. Returns what the new log holds.
fn write_log(
    files: &Files,
    cache: &Cache,
    session: &str,
    whole: RecordOut<'_>,
    remove_legacy: bool,
) -> Result<LogInfo, SessionError> {
    let log = new_log_id();
    let record = whole.first_in(&log);
    let (line, header) = record.encode(session)?;
    forget(cache, session);
    let temp = files.temp();
    let written = File::create(&temp).and_then(|mut file| {
        file.write_all(&line)?;
        file.sync_all()
    });
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(io_error(session, "writing", &temp, error));
    }
    if let Err(error) = fs::rename(&temp, &files.log) {
        let _ = fs::remove_file(&temp);
        return Err(io_error(session, "renaming", &temp, error));
    }
    if remove_legacy {
        remove_if_exists(session, &files.legacy())?;
    }
    sync_dir(&files.dir)
        .map_err(|error| io_error(session, "syncing directory", &files.dir, error))?;
    let info = LogInfo {
        id: record.log.map(str::to_owned),
        len: line.len() as u64,
        records: 1,
        revision: record.revision,
        messages: record.appended.len(),
        dead: 0,
        last_header: header,
    };
    let state = LastRecord::of(&record).into_state(record.appended.to_vec(), record.revision);
    remember(cache, session, info.clone(), Some(state));
    Ok(info)
}

/// Deletes the session: under the lock (waiting for it), its log, its `.json` file of an
/// earlier version and a rewrite's temporary file; returns whether there was a session.
pub(super) fn delete(files: &Files, cache: &Cache, session: &str) -> Result<bool, SessionError> {
    // Nothing to delete, and no lock file to create, when neither file exists. (A save
    // creating the session meanwhile is ordered after this delete.)
    let exists = |path: &Path| path.try_exists().unwrap_or(true);
    if !exists(&files.log) && !exists(&files.legacy()) {
        return Ok(false);
    }
    let _lock = lock_session(session, files)?;
    forget(cache, session);
    // The `.json` file first: a load that finds no log then finds no `.json` either.
    let legacy = remove_if_exists(session, &files.legacy())?;
    let log = remove_if_exists(session, &files.log)?;
    remove_if_exists(session, &files.temp())?;
    Ok(legacy || log)
}
