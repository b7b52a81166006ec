//! What a store knows of each session's log, so that a save need not read the log to find
//! the stored revision and message count, and a load need not decode a log it decoded
//! before: the [`LogCache`], its bounds (sessions, and decoded states by log bytes), and the
//! rule for trusting an entry (the log file's id and length).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Mutex;

use agentscope_core::session::{AgentState, SessionError};

use super::files::io_error;
use super::replay::LogInfo;
use crate::sync::lock;

/// The cache forgets every session when it reaches this many (the next save of each
/// rescans its log once).
const CACHE_CAPACITY: usize = 4096;
/// The log bytes ([`LogInfo::len`]) whose decoded states the cache keeps at most, summed
/// over its sessions: 64 MiB. Reaching it drops every decoded state (the next load of each
/// replays its log once); a session whose log is longer is never kept decoded.
const STATE_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// A store's cache, shared by its clones (see [the cache](crate::session::JsonFileSessionStore#the-cache)).
pub(super) type Cache = Mutex<LogCache>;

/// What a store knows of each session's log.
pub(super) struct LogCache {
    sessions: HashMap<String, CachedLog>,
    /// The sum of `info.len` over the sessions whose decoded state is kept.
    state_bytes: u64,
    /// The most `state_bytes` may reach: [`STATE_CACHE_BYTES`] (less in tests).
    state_budget: u64,
}

/// What the cache knows of one session's log.
pub(super) struct CachedLog {
    /// What the log's first `info.len` bytes say.
    pub(super) info: LogInfo,
    /// The state those bytes hold, when kept.
    pub(super) state: Option<AgentState>,
}

impl LogCache {
    /// An empty cache.
    pub(super) fn new() -> Self {
        Self {
            sessions: HashMap::new(),
            state_bytes: 0,
            state_budget: STATE_CACHE_BYTES,
        }
    }

    /// What is known of session `session`'s log.
    pub(super) fn info(&self, session: &str) -> Option<&LogInfo> {
        self.sessions.get(session).map(|cached| &cached.info)
    }

    /// The info of session `session`'s log and a copy of its decoded state, if kept.
    pub(super) fn state(&self, session: &str) -> Option<(LogInfo, AgentState)> {
        let cached = self.sessions.get(session)?;
        Some((cached.info.clone(), cached.state.clone()?))
    }

    /// Forgets session `session`; returns what was known.
    pub(super) fn remove(&mut self, session: &str) -> Option<CachedLog> {
        let cached = self.sessions.remove(session)?;
        if cached.state.is_some() {
            self.state_bytes = self.state_bytes.saturating_sub(cached.info.len);
        }
        Some(cached)
    }

    /// Keeps `info` for session `session`, and `state` (what the log's first `info.len`
    /// bytes hold) within the budget. A log without an id is never kept.
    pub(super) fn insert(&mut self, session: &str, info: LogInfo, state: Option<AgentState>) {
        self.remove(session);
        if info.id.is_none() {
            return;
        }
        if self.sessions.len() >= CACHE_CAPACITY {
            self.sessions.clear();
            self.state_bytes = 0;
        }
        let state = state.filter(|_| info.len <= self.state_budget);
        if state.is_some() {
            if self.state_bytes + info.len > self.state_budget {
                for cached in self.sessions.values_mut() {
                    cached.state = None;
                }
                self.state_bytes = 0;
            }
            self.state_bytes += info.len;
        }
        self.sessions
            .insert(session.to_owned(), CachedLog { info, state });
    }
}

/// Keeps `info` and `state` for session `session` (see [`LogCache::insert`]).
pub(super) fn remember(cache: &Cache, session: &str, info: LogInfo, state: Option<AgentState>) {
    lock(cache).insert(session, info, state);
}

/// Forgets session `session` (see [`LogCache::remove`]).
pub(super) fn forget(cache: &Cache, session: &str) {
    lock(cache).remove(session);
}

/// Whether the log open as `file`, whose complete records (and maybe a torn tail) are `len`
/// bytes, starts with the bytes the cache entry `info` describes: `info.len <= len`, and
/// the file is the log of `info`'s id. `held` is what the log a lease keeps open holds,
/// when `file` is that log: its id tells (no one else can write it); else the file's first
/// bytes do.
pub(super) fn starts_with(
    session: &str,
    path: &Path,
    file: &mut File,
    len: u64,
    info: &LogInfo,
    held: Option<&LogInfo>,
) -> Result<bool, SessionError> {
    if info.len > len {
        return Ok(false);
    }
    match held {
        Some(held) => Ok(info.id.is_some() && info.id == held.id),
        None => has_prefix(session, path, file, info),
    }
}

/// Whether the log file `file` starts as a file of `info`'s id does.
fn has_prefix(
    session: &str,
    path: &Path,
    file: &mut File,
    info: &LogInfo,
) -> Result<bool, SessionError> {
    let Some(prefix) = info.prefix() else {
        return Ok(false);
    };
    let mut bytes = vec![0; prefix.len()];
    let read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.read_exact(&mut bytes));
    match read {
        Ok(()) => Ok(bytes == prefix.as_bytes()),
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(error) => Err(io_error(session, "reading", path, error)),
    }
}

#[cfg(test)]
impl LogCache {
    /// Sets the most log bytes whose decoded states are kept.
    pub(super) fn set_state_budget(&mut self, budget: u64) {
        self.state_budget = budget;
    }

    /// The log bytes whose decoded states are kept.
    pub(super) fn state_bytes(&self) -> u64 {
        self.state_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_bounded() {
        let cache: Cache = Mutex::new(LogCache::new());
        let info = LogInfo {
            id: Some("x".into()),
            ..LogInfo::default()
        };
        for index in 0..CACHE_CAPACITY + 10 {
            remember(&cache, &format!("s{index}"), info.clone(), None);
            assert!(lock(&cache).sessions.len() <= CACHE_CAPACITY);
        }
        // A log without an id is never cached.
        remember(&cache, "s0", LogInfo::default(), None);
        assert!(lock(&cache).info("s0").is_none());
    }
}
