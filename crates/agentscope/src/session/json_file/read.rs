//! The read path: a load takes no lock. It returns the state the cache decoded when the log
//! is still the bytes it was decoded from (in the process holding the session's lease,
//! through the log the lease keeps open, without touching a file), else replays what the
//! cache has not seen of the log, else reads a whole-state file of an earlier version.

use std::fs::File;
use std::io;

use agentscope_core::session::{AgentState, SessionError};

use super::cache::{Cache, remember, starts_with};
use super::files::{Files, file_len, io_error, read_from};
use super::lease;
use super::replay::{LogInfo, read_legacy, state_of_log};
use crate::sync::lock;

/// The state session `session` holds, if any.
pub(super) fn load(
    files: &Files,
    cache: &Cache,
    session: &str,
) -> Result<Option<AgentState>, SessionError> {
    // In the process holding the session's lease, the log the lease keeps open is the
    // file at the log's path (no other writer can replace it): read it through that.
    if let Some(held) = lease::holding(&files.lock) {
        let mut held_log = lock(&held.log);
        if let Some(log) = held_log.as_mut() {
            let state = load_log(files, cache, session, &mut log.file, Some(&log.info))?;
            return Ok(Some(state));
        }
    }
    // The log, else a `.json` file of an earlier version, else the log again: a save may
    // have migrated the `.json` file to a log in between.
    for attempt in 0..2 {
        match File::open(&files.log) {
            Ok(mut file) => return load_log(files, cache, session, &mut file, None).map(Some),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(session, "reading", &files.log, error)),
        }
        if attempt == 0
            && let Some(state) = read_legacy(session, &files.legacy())?
        {
            return Ok(Some(state));
        }
    }
    Ok(None)
}

/// The cached state of session `session`, when this process holds its lease and the log the
/// lease keeps open is exactly what the cache decoded (same log id and length): what
/// [`load`] would return, without reading anything.
pub(super) fn cached_under_lease(
    files: &Files,
    cache: &Cache,
    session: &str,
) -> Option<AgentState> {
    let held = lease::holding(&files.lock)?;
    let mut held_log = lock(&held.log);
    let log = held_log.as_mut()?;
    let (info, state) = lock(cache).state(session)?;
    // `load_log`'s rule for a cached state, where a held log needs no reading.
    let current = info.len == log.info.len
        && starts_with(
            session,
            &files.log,
            &mut log.file,
            log.info.len,
            &info,
            Some(&log.info),
        )
        .ok()?;
    current.then_some(state)
}

/// The state the log open as `file` holds (`held`: what it holds when it is the log a
/// lease keeps open), kept in the cache: the cached state when the file is the bytes it
/// was decoded from; the cached state with the records after those bytes replayed when
/// the file grew; else the whole log replayed.
fn load_log(
    files: &Files,
    cache: &Cache,
    session: &str,
    file: &mut File,
    held: Option<&LogInfo>,
) -> Result<AgentState, SessionError> {
    let path = &files.log;
    let len = match held {
        Some(held) => held.len,
        None => file_len(session, path, file)?,
    };
    let cached = lock(cache).state(session);
    let base = match cached {
        Some((info, state)) if starts_with(session, path, file, len, &info, held)? => {
            if info.len == len {
                return Ok(state);
            }
            Some((info, state))
        }
        _ => None,
    };
    let offset = base.as_ref().map_or(0, |(info, _)| info.len);
    let bytes = read_from(session, path, file, offset)?;
    let (state, info) = state_of_log(session, path, &bytes, base)?;
    remember(cache, session, info, Some(state.clone()));
    Ok(state)
}
