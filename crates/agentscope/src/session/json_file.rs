//! [`JsonFileSessionStore`]: one append-only JSON Lines log per session in a directory.
//!
//! Saves append a record under a per-session lock file; loads replay the records; a call's
//! lease holds the lock and the log open for the length of the call (the `lease` module).
//! See the type's documentation for the files, the record format, the lock, leases, the
//! cache of what each log holds, and what crashes leave behind.

mod lease;

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{MAIN_SEPARATOR_STR, Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentscope_core::conversation::ConversationError;
use agentscope_core::session::SessionLease;
use agentscope_core::{CancellationToken, Msg, Role};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    AgentIdentity, AgentState, SessionError, SessionStore, StateChange, run_blocking,
    validate_session_id,
};
use crate::runtime::lock;
use lease::{Held, HeldLog, Holder, JsonFileLease};

/// What follows a session id in its log's name.
const LOG_SUFFIX: &str = ".jsonl";
/// The extension of session logs.
const LOG_EXTENSION: &str = LOG_SUFFIX.split_at(1).1;
/// The extension of whole-state files written by earlier versions of the store.
const LEGACY_EXTENSION: &str = "json";
/// A log is rewritten once it holds more dead bytes than live ones, and at least this many.
const MIN_DEAD_BYTES: u64 = 64 * 1024;
/// The cache forgets every session when it reaches this many (the next save of each
/// rescans its log once).
const CACHE_CAPACITY: usize = 4096;
/// The log bytes ([`LogInfo::len`]) whose decoded states the cache keeps at most, summed
/// over its sessions: 64 MiB. Reaching it drops every decoded state (the next load of each
/// replays its log once); a session whose log is longer is never kept decoded.
const STATE_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// Stores each session as an append-only JSON Lines log, `<dir>/<session id>.jsonl`: the
/// embedded default store.
///
/// A save appends one line, the [`StateChange`], to the session's log, so it writes what
/// changed (a step's messages, the metadata) whatever the length of the conversation: a
/// save to a session of 1,000 messages costs what a save to one of 10 does. A load reads the
/// log and replays it, or reads nothing when the log is as this store last read or wrote it
/// (see [the cache](#the-cache)).
///
/// ```
/// use agentscope::session::{
///     AgentIdentity, AgentState, JsonFileSessionStore, SessionError, SessionStore, StateChange,
/// };
/// use agentscope::Msg;
///
/// # let dir = std::env::temp_dir().join(format!("agentscope-doc-{}", std::process::id()));
/// # futures::executor::block_on(async {
/// let store = JsonFileSessionStore::new(&dir);
/// let agent = AgentIdentity::new("assistant", "a1");
/// let state = AgentState::new(agent.clone(), vec![Msg::user("hi")]);
/// // A new session: revision 1.
/// assert_eq!(store.save("chat-1", &StateChange::replace(&state)).await?, 1);
/// // One step later: keep the stored message, append the reply (one line appended).
/// let step = StateChange::new(1, 1, vec![Msg::assistant("Hello!")], agent.clone());
/// assert_eq!(store.save("chat-1", &step).await?, 2);
///
/// let loaded = store.load("chat-1").await?.unwrap();
/// assert_eq!((loaded.revision, loaded.messages.len()), (2, 2));
/// let log = std::fs::read_to_string(store.path_of("chat-1")?).unwrap();
/// assert_eq!(log.lines().count(), 2);
///
/// // A writer still at revision 1 is refused, and nothing is written.
/// let stale = StateChange::new(1, 1, vec![Msg::assistant("Hi!")], agent);
/// let err = store.save("chat-1", &stale).await.unwrap_err();
/// assert!(matches!(err, SessionError::Conflict { expected: 1, found: 2, .. }));
///
/// assert_eq!(store.list().await?, ["chat-1"]);
/// assert!(store.delete("chat-1").await?);
/// assert_eq!(store.load("chat-1").await?, None);
/// # Ok::<(), SessionError>(())
/// # }).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Files
///
/// For session `<id>` in the store's directory:
///
/// - `<id>.jsonl`: the session's log, one JSON record per saved [`StateChange`], each on its
///   own line ended by `\n`;
/// - `.<id>.lock`: the lock file saves and deletes lock, and a call's [lease](#leases) keeps
///   locked (empty, and kept after a delete: see [below](#loading-listing-deleting));
/// - `.<id>.jsonl.tmp`: a log being rewritten (exists only during a rewrite, or after a
///   crash in one);
/// - `<id>.json`: a session saved by an earlier version of this store (one whole
///   [`AgentState`]), read as it is and replaced by a log on its first save.
///
/// # Record format
///
/// ```json
/// {"version":1,"log":"5f0c…","revision":1,"kept":0,"agent":{"name":"assistant","id":"a1"},"metadata":{},"saved_at":"2026-11-30T10:00:00Z","appended":[{"role":"user",…}]}
/// {"version":1,"revision":2,"kept":1,"agent":{"name":"assistant","id":"a1"},"metadata":{},"running_tools":["call-1"],"saved_at":"2026-11-30T10:00:02Z","appended":[{"role":"assistant",…}]}
/// ```
///
/// A record holds the change's fields (`kept`, `appended`, `agent`, `metadata`,
/// `running_tools`, `hooks`, `saved_at`; empty `running_tools` and `hooks` are left out;
/// messages have the JSON shape of [`Msg`](crate::Msg)), the format `version`
/// ([`AgentState::CURRENT_VERSION`]) and the `revision` the change made. The first record of
/// a log file also holds `log`, a random id of that file (see [the cache](#the-cache)), and
/// keeps nothing (`kept` is 0). Loading replays the records: keep the first `kept` messages,
/// append `appended`, take the rest of the record as it is; each record's revision is one
/// more than the one before.
///
/// # Saving
///
/// A save holds the session's lock file `.<id>.lock` locked ([`File::lock`]: an exclusive
/// lock that holds between processes, and between handles of one process): the lock of the
/// call's [lease](#leases) when the change is fenced by one, else a lock it takes for the
/// save (opening the file anew and waiting while another holds it). It finds the stored
/// revision and message count, checks the change against them ([`StateChange::check`]: a
/// stale base is a [`SessionError::Conflict`] and nothing is written) and then either
///
/// - appends the change as one record with a single write, and `fsync`s the log
///   ([`File::sync_data`]) before returning; or
/// - rewrites the log as one record holding the whole new state: written to
///   `.<id>.jsonl.tmp`, `fsync`ed, renamed over the log, and the directory `fsync`ed (on
///   Unix) so the rename survives a power loss. The first save of a session is written so,
///   and so is a change that keeps no stored message (`kept` 0: the change is the whole
///   state, so the rewrite costs what the change does).
///
/// The log is also rewritten (compacted) when appending would leave dead data in it:
///
/// - a change that drops some stored messages but not all (`0 < kept <` stored messages) is
///   applied to the stored state and the result written; that costs a read and a write of
///   the whole session, which the agent never asks for (it appends, or rewrites all of
///   memory with `kept` 0);
/// - every record repeats the agent, the metadata, the hooks' state and the running tools,
///   which the next record supersedes. When those dead bytes would exceed both the live
///   ones and 64 KiB, the save rewrites the log instead of appending. A rewrite costs
///   `O(log size)` and leaves no dead bytes, and at least as many dead bytes as live ones
///   must accumulate again (each appended record adds at most its own size) before the
///   next: the amortised cost of a save stays proportional to its change.
///
/// # Leases
///
/// An agent bound to a session of this store takes the session's lease before each call
/// ([`SessionStore::lease`]) and gives it back after the call's last save. The lease locks
/// the lock file without waiting and keeps it locked, and the log open, until it is given
/// back:
///
/// - **One call at a time per session, on one host.** While a call holds the lease, a second
///   lease on the session is refused at once with [`SessionError::Busy`] (an agent call:
///   `AgentError::Busy`, before any hook runs and with nothing loaded or stored), whether it
///   comes from another agent of this process, through this store or another one on the same
///   directory, or from another process. Taking the lease also opens and checks the log as a
///   save does (a corrupt log fails the lease and leaves the session unlocked).
/// - **Cheap steps.** A save fenced by the lease ([`StateChange::fence`]) appends through the
///   open log: one `write` and one [`File::sync_data`] (`fdatasync`), with no file opened,
///   closed or locked. Everything else is as without a lease: the compare-and-swap, the
///   rewrites (after which the lease holds the new log), the crash safety. Every save is
///   still `fsync`ed before it returns.
/// - **Fencing.** A save fenced by a lease this process does not hold (given back, dropped,
///   or another store's token) is refused with [`SessionError::LeaseLost`] and writes
///   nothing. Fences are looked up by the lock file's path, so a fenced save must go through
///   a store on the same directory path as the lease.
/// - **Giving back.** [`SessionLease::release`] closes the files, which unlocks the session;
///   so does dropping the lease (a dropped call), and so does the kernel when the holding
///   process dies (even by `SIGKILL`): the next call takes the session at once, and settles
///   the tool calls the dead call left running (see `docs/sessions.md`). A lease given back
///   while one of its saves still runs (a call dropped in the middle of a save) unlocks when
///   that save returns; a new lease of this process waits for that instead of reporting
///   busy.
/// - **Interrupts.** [`interrupt`](SessionStore::interrupt) cancels the call of this
///   process that holds the session (the token its lease was given) and returns `true`.
///   There is no channel to another process: a call that another process runs is not
///   interrupted, and `interrupt` returns `false`.
/// - **Saves and deletes without a lease** (a [`StateChange`] with no fence, a
///   [`delete`](SessionStore::delete)) wait for the lock, so while a call holds the session
///   they wait until it ends (do not make them from inside that call: they would wait for
///   themselves). Such a save holds the lock for the length of its write; a lease asked for
///   at that instant is refused as busy.
/// - **Loads** take no lock and read the log as it is, also while a call holds the lease
///   (in the process holding it, through the log the lease keeps open, or not at all: see
///   [the cache](#the-cache)).
///
/// # The cache
///
/// To find the stored revision and message count without reading the log at every save,
/// a store keeps, per session, what the log's complete records say: the log file's `log`
/// id, its length, the revision, the message count and the dead bytes. A save under the
/// lock trusts that entry when the log file still has that id (the first bytes of the file
/// are compared) and that length. Logs only grow between rewrites, and every rewrite (and a
/// session deleted and saved anew) makes a file with a new id, so an equal id and length
/// mean the same bytes. Otherwise the save reads the records the entry has not seen: only
/// those after the cached length when the file grew (another process, or another store
/// value on the same directory, appended), all of them otherwise. Loads refresh the entry.
///
/// The entry also keeps the state those records hold, decoded, as the last load or
/// successful save through this store left it (a save applies its change to it), so that
/// a load of a log unchanged since then decodes nothing: it returns a copy of that state
/// (messages are shared copy-on-write, so the copy is cheap). A load trusts the decoded
/// state by the same rule as a save: the log file's id (its first bytes) and length. In
/// the process holding the session's [lease](#leases), the log the lease keeps open is the
/// session's file and what its complete records are is known (no one else can write it),
/// so a load there touches no file at all. When the file grew, the load decodes only the
/// records after the cached length, on top of the cached state; else it decodes the whole
/// log. A save that fails forgets the entry, and so does a delete; a save that reads
/// records without decoding them (another writer appended) keeps the entry but drops its
/// decoded state. The decoded states kept are bounded by the length of their logs, 64 MiB
/// in all: keeping one more beyond that drops them all first (the rest of each entry
/// stays), and a session whose log alone is longer is not kept decoded.
///
/// Clones of a store share its cache; the cache holds at most 4,096 sessions (then it
/// starts over).
///
/// # Crashes
///
/// A save interrupted at any moment (the process killed, the machine losing power) leaves
/// the previous revision loadable, or the new one once the save wrote it whole:
///
/// - an interrupted append leaves a last line without its `\n`. Loads ignore it, and the
///   next save rewrites the log without it (truncating the file in place could race with a
///   load reading it without the lock; replacing it by rename cannot);
/// - an interrupted rewrite leaves the old log and `.<id>.jsonl.tmp`, which loads and
///   [`list`](SessionStore::list) ignore (its name starts with `.`), and which the next save
///   that reads the log (the first save of a process, or after another process saved) or a
///   delete removes.
///
/// A save that fails to write or `fsync` its record cuts the log back to its previous
/// length (the one in-place change a log ever sees) and reports the error.
///
/// A malformed complete line, a revision out of sequence or a record keeping more messages
/// than are stored is [`SessionError::Corrupt`] naming the session, the file and the line
/// number (loads and saves fail alike; nothing is changed). Repair the file by hand or
/// [`delete`](SessionStore::delete) the session. A line of another format version is
/// [`SessionError::UnsupportedVersion`].
///
/// # Loading, listing, deleting
///
/// Loads take no lock: they read the log file (which is only ever appended to, and replaced
/// by rename) and replay its complete records, so they see one saved revision. Deletes take
/// the lock (waiting while a call holds the session's lease), then remove `<id>.json`,
/// `<id>.jsonl` and a temporary file. The lock file stays: removing it while another
/// process waits on it would let a third process lock a new file of the same name at the
/// same time. Lock files are empty and hidden from
/// [`list`](SessionStore::list); remove them only while no process uses the directory.
///
/// # Sessions of earlier versions
///
/// A session stored by an earlier version of this store as `<id>.json` loads as it is, as
/// the revision it records (`0` for files written before revisions existed). Its first save
/// (from that revision) writes the new state as a log and removes the `.json` file, under the
/// lock. [`list`](SessionStore::list) lists both kinds; [`delete`](SessionStore::delete)
/// removes both.
///
/// # The directory
///
/// The directory is created on the first save or lease; a missing directory holds no
/// sessions.
/// Session ids must pass [`validate_session_id`](super::validate_session_id) (letters,
/// digits, `-`, `_`, `.`; no path separators, not starting with `.`), so an id can never name
/// a file outside the directory, nor one of the hidden files.
///
/// # Where the file work runs
///
/// Inside a tokio runtime, file work (a lease's opens, a save's `write` and `fdatasync`, a
/// load that reads the log) runs on tokio's blocking thread pool by default, so a slow
/// disk never stalls a worker thread; outside one, it runs inline. Each trip through the
/// pool is a round trip between threads, which can cost more than the work: 25-40 µs per
/// trip on a 2-core VM, where a save on tmpfs takes a few microseconds and a one-tool call
/// makes four trips (see `docs/performance.md`). [`inline`](Self::inline) makes the store
/// do its file work on the calling task instead, for directories whose `fsync` is fast
/// (tmpfs, a local SSD). A load under the call's lease of a log the store already holds
/// decoded touches no file and never leaves the task.
///
/// A cheap `Clone` handle.
#[derive(Clone)]
pub struct JsonFileSessionStore {
    dir: Arc<Path>,
    cache: Arc<Cache>,
    /// File work on the calling task even inside a tokio runtime.
    inline: bool,
}

impl fmt::Debug for JsonFileSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonFileSessionStore")
            .field("dir", &self.dir)
            .field("inline", &self.inline)
            .finish_non_exhaustive()
    }
}

impl JsonFileSessionStore {
    /// A store keeping its sessions in `dir` (created on the first save).
    ///
    /// `dir` is kept without trailing or repeated separators and without `.` components,
    /// so that stores given one directory spelled differently share its sessions' leases.
    ///
    /// ```
    /// use agentscope::session::JsonFileSessionStore;
    ///
    /// let store = JsonFileSessionStore::new("sessions/./today/");
    /// assert_eq!(store.dir().as_os_str(), "sessions/today");
    /// ```
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        // One spelling per directory (no trailing or doubled separators, no `.` inside): the
        // process's lease registry compares the lock files' paths byte for byte.
        let dir: PathBuf = dir.into().components().collect();
        Self {
            dir: Arc::from(dir),
            cache: Arc::new(Mutex::new(LogCache::new())),
            inline: false,
        }
    }

    /// Whether to do the file work on the calling task also inside a tokio runtime (default
    /// `false`: on tokio's blocking pool there; see
    /// [Where the file work runs](#where-the-file-work-runs)). Inline, a save blocks the
    /// worker thread running the call for its `write` and `fdatasync`, and a save without a
    /// lease or a delete blocks it while another process's call holds the session: choose
    /// it for a directory on tmpfs or a fast local disk, not for a network or spinning disk.
    /// (The engine's saves are made under the call's lease and never wait.)
    ///
    /// ```
    /// use agentscope::session::JsonFileSessionStore;
    ///
    /// let store = JsonFileSessionStore::new("/dev/shm/sessions").inline(true);
    /// assert!(store.is_inline());
    /// ```
    #[must_use]
    pub fn inline(mut self, inline: bool) -> Self {
        self.inline = inline;
        self
    }

    /// Whether the store does its file work on the calling task (see
    /// [`inline`](Self::inline)).
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// Whether to run file work for the session of lock file `lock` inline: when the store
    /// is [`inline`](Self::inline), unless the work may wait for that lock (`may_wait`) while
    /// a lease of this process holds it. On a current-thread runtime the holder could not
    /// run while the thread waits, so such work goes to the blocking pool (waiting for
    /// another process's lease is only blocking).
    fn inline_for(&self, lock: &Path, may_wait: bool) -> bool {
        self.inline && (!may_wait || matches!(lease::holder(lock), Holder::None))
    }

    /// The directory, as [`new`](Self::new) keeps it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log holding session `session`: `<dir>/<session>.jsonl` (a session saved by an
    /// earlier version of the store and not saved since is `<dir>/<session>.json` instead).
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidSessionId`] when `session` is not a valid id.
    pub fn path_of(&self, session: &str) -> Result<PathBuf, SessionError> {
        validate_session_id(session)?;
        Ok(file_in(&self.dir, "", session, LOG_SUFFIX))
    }

    fn files(&self, session: &str) -> Result<Files, SessionError> {
        validate_session_id(session)?;
        Ok(Files::new(&self.dir, session))
    }
}

impl SessionStore for JsonFileSessionStore {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        Box::pin(async move {
            let files = self.files(session)?;
            let held = match &change.fence {
                None => None,
                Some(fence) => match lease::find(&files.lock, fence) {
                    Some(held) => Some(held),
                    None => {
                        return Err(SessionError::LeaseLost {
                            session: session.to_owned(),
                        });
                    }
                },
            };
            let cache = Arc::clone(&self.cache);
            let id = session.to_owned();
            let change = change.clone();
            // A fenced save holds the lock already; an unfenced one may wait for it.
            let inline = self.inline_for(&files.lock, held.is_none());
            run_blocking(inline, Some(session), move || match held {
                Some(held) => save_leased(&files, &cache, &id, &change, &held),
                None => save(&files, &cache, &id, &change),
            })
            .await?
        })
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        Box::pin(async move {
            let files = self.files(session)?;
            // The load at the start of a leased call finds what the lease read or the last
            // save wrote: no file to touch, so no trip through the blocking pool.
            if let Some(state) = cached_under_lease(&files, &self.cache, session) {
                return Ok(Some(state));
            }
            let cache = Arc::clone(&self.cache);
            let id = session.to_owned();
            run_blocking(self.inline, Some(session), move || {
                load(&files, &cache, &id)
            })
            .await?
        })
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(async move {
            let files = self.files(session)?;
            let cache = Arc::clone(&self.cache);
            let id = session.to_owned();
            let inline = self.inline_for(&files.lock, true);
            run_blocking(inline, Some(session), move || delete(&files, &cache, &id)).await?
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        Box::pin(async move {
            let dir = Arc::clone(&self.dir);
            run_blocking(self.inline, None, move || list_dir(&dir)).await?
        })
    }

    /// Locks the session's lock file without waiting and opens its log, for the length of
    /// one call; see [Leases](#leases).
    ///
    /// # Errors
    ///
    /// [`SessionError::Busy`] while another call (of any process on this host) holds the
    /// lock; an invalid id; a lock file that cannot be opened; a log that cannot be read
    /// or is corrupt (as a save reports it).
    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Option<SessionLease>, SessionError>> {
        Box::pin(async move {
            let files = self.files(session)?;
            let cache = Arc::clone(&self.cache);
            let id = session.to_owned();
            let fence = new_log_id();
            let token = fence.clone();
            let interrupt = interrupt.clone();
            let inline = self.inline_for(&files.lock, true);
            let held = run_blocking(inline, Some(session), move || {
                take_lease(&files, &cache, &id, token, interrupt)
            })
            .await??;
            Ok(Some(SessionLease::new(fence, JsonFileLease::new(held))))
        })
    }

    /// Interrupts the call of this process that holds session `session`'s lease (through
    /// any store on the same directory path): returns `true` and cancels the call, which
    /// ends as a local `interrupt()` ends it. Returns `false` when no call of this process
    /// holds it, also when a call of another process does: there is no channel to it (see
    /// [Leases](#leases)).
    ///
    /// # Errors
    ///
    /// An invalid id.
    fn interrupt<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(async move {
            let files = self.files(session)?;
            Ok(lease::interrupt(&files.lock))
        })
    }
}

// ---------------------------------------------------------------------------------------
// Files and errors.

/// The files of one session. The log and the lock are named at every store operation; the
/// rarely used temporary and legacy files are named on demand.
struct Files {
    dir: Arc<Path>,
    /// `<id>.jsonl`.
    log: PathBuf,
    /// `.<id>.lock`.
    lock: PathBuf,
}

impl Files {
    fn new(dir: &Arc<Path>, session: &str) -> Self {
        Self {
            dir: Arc::clone(dir),
            log: file_in(dir, "", session, LOG_SUFFIX),
            lock: file_in(dir, ".", session, ".lock"),
        }
    }

    /// `<id>.json`: the whole-state file of earlier versions.
    fn legacy(&self) -> PathBuf {
        self.log.with_extension(LEGACY_EXTENSION)
    }

    /// `.<id>.jsonl.tmp`: a rewrite's temporary file.
    fn temp(&self) -> PathBuf {
        let mut name = std::ffi::OsString::from(".");
        name.push(self.log.file_name().unwrap_or_default());
        name.push(".tmp");
        self.dir.join(name)
    }
}

/// `dir/<prefix><session><suffix>` in one allocation, without the formatting machinery or
/// `Path::join` (which copies `dir` and then grows the copy): a session's paths are named
/// at every store operation.
fn file_in(dir: &Path, prefix: &str, session: &str, suffix: &str) -> PathBuf {
    let dir = dir.as_os_str();
    let mut path = std::ffi::OsString::with_capacity(
        dir.len() + 1 + prefix.len() + session.len() + suffix.len(),
    );
    path.push(dir);
    if !dir.is_empty()
        && !dir
            .as_encoded_bytes()
            .ends_with(MAIN_SEPARATOR_STR.as_bytes())
    {
        path.push(MAIN_SEPARATOR_STR);
    }
    path.push(prefix);
    path.push(session);
    path.push(suffix);
    PathBuf::from(path)
}

/// An I/O error about `session`: `what` failed on `path`.
fn io_error(session: &str, what: &str, path: &Path, error: io::Error) -> SessionError {
    SessionError::io(
        Some(session),
        format_args!("{what} {}", path.display()),
        error,
    )
}

fn corrupt(session: &str, path: &Path, line: u64, message: impl fmt::Display) -> SessionError {
    SessionError::corrupt(
        session,
        format_args!("{}: line {line}: {message}", path.display()),
    )
}

/// Names `path` in a corrupt-state error about a file's content.
fn with_path(error: SessionError, path: &Path) -> SessionError {
    match error {
        SessionError::Corrupt { session, message } => SessionError::Corrupt {
            session,
            message: format!("{}: {message}", path.display()),
        },
        other => other,
    }
}

/// Removes `path`; returns whether it existed.
fn remove_if_exists(session: &str, path: &Path) -> Result<bool, SessionError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(io_error(session, "removing", path, error)),
    }
}

/// Makes a rename or removal in `dir` durable (Unix; elsewhere the rename is what we have).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Opens (creating it, and the directory, if needed) and locks the session's lock file,
/// waiting while another holds it; the lock holds until the returned file is dropped.
fn lock_session(session: &str, files: &Files) -> Result<File, SessionError> {
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

// ---------------------------------------------------------------------------------------
// Records.

/// A record as written: borrowed from the change or the state it stores.
#[derive(Clone, Copy, Serialize)]
struct RecordOut<'a> {
    version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    log: Option<&'a str>,
    revision: u64,
    kept: usize,
    agent: &'a AgentIdentity,
    metadata: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "slice_is_empty")]
    running_tools: &'a [String],
    #[serde(skip_serializing_if = "map_is_empty")]
    hooks: &'a Map<String, Value>,
    #[serde(serialize_with = "saved_at")]
    saved_at: &'a DateTime<Utc>,
    /// Last: [`encode`](Self::encode) writes the messages into the header's `[]`.
    appended: &'a [Msg],
}

fn saved_at<S: serde::Serializer>(at: &&DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    agentscope_core::rfc3339::serialize(at, serializer)
}

fn slice_is_empty(slice: &&[String]) -> bool {
    slice.is_empty()
}

fn map_is_empty(map: &&Map<String, Value>) -> bool {
    map.is_empty()
}

impl<'a> RecordOut<'a> {
    /// The record appending `change` (no `log` id: not the first record of a file).
    fn of_change(change: &'a StateChange) -> Self {
        Self {
            version: AgentState::CURRENT_VERSION,
            log: None,
            revision: change.revision(),
            kept: change.kept,
            agent: &change.agent,
            metadata: &change.metadata,
            running_tools: &change.running_tools,
            hooks: &change.hooks,
            saved_at: &change.saved_at,
            appended: &change.appended,
        }
    }

    /// The record of a whole state, first of the log file `log`.
    fn of_state(state: &'a AgentState, log: &'a str) -> Self {
        Self {
            version: AgentState::CURRENT_VERSION,
            log: Some(log),
            revision: state.revision,
            kept: 0,
            agent: &state.agent,
            metadata: &state.metadata,
            running_tools: &state.running_tools,
            hooks: &state.hooks,
            saved_at: &state.saved_at,
            appended: &state.messages,
        }
    }

    /// The record's line (with its `\n`), and the bytes of it that are not messages (what
    /// becomes dead once another record follows). The header (the record with no messages)
    /// is serialised once; the messages are written between its closing `[]`, which gives
    /// serde_json's bytes for the whole record.
    fn encode(&self, session: &str) -> Result<(Vec<u8>, u64), SessionError> {
        let cannot = |error: serde_json::Error| {
            SessionError::corrupt(session, format_args!("cannot serialise: {error}"))
        };
        let header = RecordOut {
            appended: &[],
            ..*self
        };
        // A step's record is a few hundred bytes to a few kilobytes: start past the sizes
        // `to_vec` would grow through.
        let mut line = Vec::with_capacity(1024);
        serde_json::to_writer(&mut line, &header).map_err(cannot)?;
        let header_len = line.len() as u64 + 1;
        if !line.ends_with(b"[]}") {
            // Unreachable while `appended` is the last field: serialise the whole record.
            line = serde_json::to_vec(self).map_err(cannot)?;
            line.push(b'\n');
            return Ok((line, header_len));
        }
        line.truncate(line.len() - 2);
        for (position, message) in self.appended.iter().enumerate() {
            if position > 0 {
                line.push(b',');
            }
            serde_json::to_writer(&mut line, message).map_err(cannot)?;
        }
        line.extend_from_slice(b"]}\n");
        Ok((line, header_len))
    }

    /// The length of the record's line without its messages (for a record read back).
    fn header_len(&self) -> Result<u64, serde_json::Error> {
        let mut counter = ByteCounter(0);
        serde_json::to_writer(
            &mut counter,
            &RecordOut {
                appended: &[],
                ..*self
            },
        )?;
        Ok(counter.0 + 1)
    }
}

/// Counts the bytes written to it.
struct ByteCounter(u64);

impl Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A record as read, with its messages as `M`: [`Msg`] to load, [`IgnoredAny`] to count
/// them.
#[derive(Deserialize)]
struct Record<M> {
    version: u32,
    #[serde(default)]
    log: Option<String>,
    revision: u64,
    kept: usize,
    agent: AgentIdentity,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    running_tools: Vec<String>,
    #[serde(default)]
    hooks: Map<String, Value>,
    saved_at: DateTime<Utc>,
    appended: Vec<M>,
}

/// Just the version, to report a record of another format version as such.
#[derive(Deserialize)]
struct VersionProbe {
    version: u32,
}

/// What a replay keeps of each message.
trait LogMessage: DeserializeOwned {
    fn is_system(&self) -> bool;
}

impl LogMessage for Msg {
    fn is_system(&self) -> bool {
        self.role == Role::System
    }
}

impl LogMessage for IgnoredAny {
    fn is_system(&self) -> bool {
        false
    }
}

/// What the complete records of a log say, without the messages: what the cache keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct LogInfo {
    /// The id of the log file (from its first record); `None` for a log this store did not
    /// write, which is never trusted from the cache and is rewritten by the next save.
    id: Option<String>,
    /// The bytes of the complete records, up to and including the last `\n`.
    len: u64,
    /// The number of complete records.
    records: u64,
    /// The revision the last record made.
    revision: u64,
    /// The number of messages stored.
    messages: usize,
    /// The bytes a rewrite would drop (at most `len`; estimated: the non-message bytes of
    /// every record but the last, or the whole log after a record that dropped messages).
    dead: u64,
    /// The non-message bytes of the last record (dead once another record follows).
    last_header: u64,
}

impl LogInfo {
    /// The first bytes of the log file when it has this id.
    fn prefix(&self) -> Option<String> {
        self.id.as_ref().map(|id| {
            format!(
                "{{\"version\":{},\"log\":\"{id}\"",
                AgentState::CURRENT_VERSION
            )
        })
    }

    /// Whether appending a record of `line_len` bytes should rather rewrite the log: the
    /// dead bytes would then exceed both the live ones and [`MIN_DEAD_BYTES`].
    fn needs_rewrite(&self, line_len: u64) -> bool {
        let len = self.len + line_len;
        let dead = self.dead.saturating_add(self.last_header).min(len);
        dead > MIN_DEAD_BYTES && dead > len - dead
    }
}

/// The end of a replay: the log's info, its messages, and the rest of its last record.
struct Replayed<M> {
    info: LogInfo,
    messages: Vec<M>,
    last: Option<LastRecord>,
    /// Whether bytes follow the last complete record (an interrupted append).
    torn: bool,
}

/// What the last record says besides its messages.
struct LastRecord {
    agent: AgentIdentity,
    metadata: Map<String, Value>,
    running_tools: Vec<String>,
    hooks: Map<String, Value>,
    saved_at: DateTime<Utc>,
}

impl LastRecord {
    /// What the record `record` says besides its messages.
    fn of(record: &RecordOut<'_>) -> Self {
        Self {
            agent: record.agent.clone(),
            metadata: record.metadata.clone(),
            running_tools: record.running_tools.to_vec(),
            hooks: record.hooks.clone(),
            saved_at: *record.saved_at,
        }
    }

    /// The state of a log whose last record is this one, of revision `revision`, holding
    /// `messages`.
    fn into_state(self, messages: Vec<Msg>, revision: u64) -> AgentState {
        let mut state = AgentState::new(self.agent, messages).with_metadata(self.metadata);
        state.revision = revision;
        state.running_tools = self.running_tools;
        state.hooks = self.hooks;
        state.saved_at = self.saved_at;
        state
    }
}

/// Replays the records in `bytes`, the part of log `path` after what `info` and `messages`
/// describe (all of it for `LogInfo::default()` and no messages).
fn replay<M: LogMessage>(
    session: &str,
    path: &Path,
    bytes: &[u8],
    mut info: LogInfo,
    mut messages: Vec<M>,
) -> Result<Replayed<M>, SessionError> {
    let mut rest = bytes;
    let mut last = None;
    while let Some(end) = rest.iter().position(|byte| *byte == b'\n') {
        let line = &rest[..end];
        rest = &rest[end + 1..];
        let number = info.records + 1;
        let record: Record<M> = parse_line(session, path, number, line)?;
        if info.records == 0 {
            if record.revision == 0 {
                return Err(corrupt(session, path, number, "revision 0 is never stored"));
            }
            info.id = record.log.clone();
        } else if Some(record.revision) != info.revision.checked_add(1) {
            return Err(corrupt(
                session,
                path,
                number,
                format_args!(
                    "revision {} follows revision {}",
                    record.revision, info.revision
                ),
            ));
        }
        if record.kept > messages.len() {
            return Err(corrupt(
                session,
                path,
                number,
                format_args!(
                    "the record keeps {} messages but {} are stored",
                    record.kept,
                    messages.len()
                ),
            ));
        }
        if let Some(index) = record.appended.iter().position(M::is_system) {
            let error = ConversationError::SystemInMemory {
                index: record.kept + index,
            };
            return Err(corrupt(session, path, number, error));
        }
        let header = RecordOut {
            version: record.version,
            log: record.log.as_deref(),
            revision: record.revision,
            kept: record.kept,
            agent: &record.agent,
            metadata: &record.metadata,
            running_tools: &record.running_tools,
            hooks: &record.hooks,
            saved_at: &record.saved_at,
            appended: &[],
        }
        .header_len()
        .map_err(|error| corrupt(session, path, number, error))?;
        let truncates = record.kept < messages.len();
        if info.records > 0 {
            info.dead = info.dead.saturating_add(info.last_header);
        }
        messages.truncate(record.kept);
        messages.extend(record.appended);
        info.len += line.len() as u64 + 1;
        info.records += 1;
        info.revision = record.revision;
        info.messages = messages.len();
        info.last_header = header;
        if truncates {
            // The dropped messages' bytes are not known: count the whole log as dead, so
            // the next save rewrites it.
            info.dead = info.len;
        }
        info.dead = info.dead.min(info.len);
        last = Some(LastRecord {
            agent: record.agent,
            metadata: record.metadata,
            running_tools: record.running_tools,
            hooks: record.hooks,
            saved_at: record.saved_at,
        });
    }
    Ok(Replayed {
        info,
        messages,
        last,
        torn: !rest.is_empty(),
    })
}

/// Parses line `number` of log `path`.
fn parse_line<M: LogMessage>(
    session: &str,
    path: &Path,
    number: u64,
    line: &[u8],
) -> Result<Record<M>, SessionError> {
    let unsupported = |found: u32| SessionError::UnsupportedVersion {
        session: session.to_owned(),
        found,
        supported: AgentState::CURRENT_VERSION,
    };
    // serde reads a struct from an array too; a record is always an object.
    if line
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|first| *first != b'{')
    {
        return Err(corrupt(
            session,
            path,
            number,
            "the record is not a JSON object",
        ));
    }
    match serde_json::from_slice::<Record<M>>(line) {
        Ok(record) if record.version == AgentState::CURRENT_VERSION => Ok(record),
        Ok(record) => Err(unsupported(record.version)),
        Err(error) => match serde_json::from_slice::<VersionProbe>(line) {
            Ok(probe) if probe.version != AgentState::CURRENT_VERSION => {
                Err(unsupported(probe.version))
            }
            _ => Err(corrupt(session, path, number, error)),
        },
    }
}

/// The state log `path` holds, and its info: `bytes` is the log after what `base` (the
/// info and state of the log's first bytes, as the cache keeps them) describes, the whole
/// file for `None`.
fn state_of_log(
    session: &str,
    path: &Path,
    bytes: &[u8],
    base: Option<(LogInfo, AgentState)>,
) -> Result<(AgentState, LogInfo), SessionError> {
    let (info, mut base) = match base {
        Some((info, state)) => (info, Some(state)),
        None => (LogInfo::default(), None),
    };
    let messages = base
        .as_mut()
        .map(|state| std::mem::take(&mut state.messages))
        .unwrap_or_default();
    let replayed = replay::<Msg>(session, path, bytes, info, messages)?;
    let state = match (replayed.last, base) {
        (Some(last), _) => last.into_state(replayed.messages, replayed.info.revision),
        // No complete record after the base's: the base is the state.
        (None, Some(mut state)) => {
            state.messages = replayed.messages;
            state
        }
        (None, None) => {
            return Err(SessionError::corrupt(
                session,
                format_args!("{}: the log holds no complete record", path.display()),
            ));
        }
    };
    state
        .check_for(session)
        .map_err(|error| with_path(error, path))?;
    Ok((state, replayed.info))
}

/// Reads a session file written by an earlier version of the store, if there is one.
fn read_legacy(session: &str, path: &Path) -> Result<Option<AgentState>, SessionError> {
    match fs::read(path) {
        Ok(bytes) => AgentState::decode(session, &bytes)
            .map(Some)
            .map_err(|error| with_path(error, path)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_error(session, "reading", path, error)),
    }
}

// ---------------------------------------------------------------------------------------
// The cache.

/// A store's cache, shared by its clones (see [the cache](JsonFileSessionStore#the-cache)).
type Cache = Mutex<LogCache>;

/// What a store knows of each session's log.
struct LogCache {
    sessions: HashMap<String, CachedLog>,
    /// The sum of `info.len` over the sessions whose decoded state is kept.
    state_bytes: u64,
    /// The most `state_bytes` may reach: [`STATE_CACHE_BYTES`] (less in tests).
    state_budget: u64,
}

/// What the cache knows of one session's log.
struct CachedLog {
    /// What the log's first `info.len` bytes say.
    info: LogInfo,
    /// The state those bytes hold, when kept.
    state: Option<AgentState>,
}

impl LogCache {
    /// An empty cache.
    fn new() -> Self {
        Self {
            sessions: HashMap::new(),
            state_bytes: 0,
            state_budget: STATE_CACHE_BYTES,
        }
    }

    /// What is known of session `session`'s log.
    fn info(&self, session: &str) -> Option<&LogInfo> {
        self.sessions.get(session).map(|cached| &cached.info)
    }

    /// The info of session `session`'s log and a copy of its decoded state, if kept.
    fn state(&self, session: &str) -> Option<(LogInfo, AgentState)> {
        let cached = self.sessions.get(session)?;
        Some((cached.info.clone(), cached.state.clone()?))
    }

    /// Forgets session `session`; returns what was known.
    fn remove(&mut self, session: &str) -> Option<CachedLog> {
        let cached = self.sessions.remove(session)?;
        if cached.state.is_some() {
            self.state_bytes = self.state_bytes.saturating_sub(cached.info.len);
        }
        Some(cached)
    }

    /// Keeps `info` for session `session`, and `state` (what the log's first `info.len`
    /// bytes hold) within the budget. A log without an id is never kept.
    fn insert(&mut self, session: &str, info: LogInfo, state: Option<AgentState>) {
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
fn remember(cache: &Cache, session: &str, info: LogInfo, state: Option<AgentState>) {
    lock(cache).insert(session, info, state);
}

fn forget(cache: &Cache, session: &str) {
    lock(cache).remove(session);
}

/// The length of the log open as `file`.
fn file_len(session: &str, path: &Path, file: &File) -> Result<u64, SessionError> {
    Ok(file
        .metadata()
        .map_err(|error| io_error(session, "reading the metadata of", path, error))?
        .len())
}

/// Whether the log open as `file`, whose complete records (and maybe a torn tail) are `len`
/// bytes, starts with the bytes the cache entry `info` describes: `info.len <= len`, and
/// the file is the log of `info`'s id. `held` is what the log a lease keeps open holds,
/// when `file` is that log: its id tells (no one else can write it); else the file's first
/// bytes do.
fn starts_with(
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

/// Reads log `file` from `offset` to its end.
fn read_from(
    session: &str,
    path: &Path,
    file: &mut File,
    offset: u64,
) -> Result<Vec<u8>, SessionError> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|error| io_error(session, "reading", path, error))?;
    Ok(bytes)
}

// ---------------------------------------------------------------------------------------
// The operations, run on the blocking pool.

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
fn take_lease(
    files: &Files,
    cache: &Cache,
    session: &str,
    fence: String,
    interrupt: CancellationToken,
) -> Result<Arc<Held>, SessionError> {
    let lock_file = open_lock_file(session, files)?;
    try_lock(session, files, &lock_file)?;
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

/// A save without a lease: under the lock (waiting for it), of what the disk holds.
fn save(
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
fn save_leased(
    files: &Files,
    cache: &Cache,
    session: &str,
    change: &StateChange,
    held: &Held,
) -> Result<u64, SessionError> {
    let mut held_log = lock(&held.log);
    if held.is_released() {
        return Err(SessionError::LeaseLost {
            session: session.to_owned(),
        });
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
    let rewritten = |info: LogInfo| Ok((info.revision, Written::Rewritten(info)));
    match stored {
        Stored::Nothing => {
            change.check(session, 0, 0)?;
            rewritten(rewrite_with_change(files, cache, session, change, false)?)
        }
        Stored::Legacy(state) => {
            change.check(session, state.revision, state.messages.len())?;
            if change.kept == 0 {
                rewritten(rewrite_with_change(files, cache, session, change, true)?)
            } else {
                let state = change.apply(session, Some(state))?;
                rewritten(rewrite(files, cache, session, &state, true)?)
            }
        }
        Stored::Log(mut file, info, torn) => {
            change.check(session, info.revision, info.messages)?;
            if change.kept == 0 {
                return rewritten(rewrite_with_change(files, cache, session, change, false)?);
            }
            let (line, header) = RecordOut::of_change(change).encode(session)?;
            let rewrite_needed = torn
                || info.id.is_none()
                || change.kept < info.messages
                || info.needs_rewrite(line.len() as u64);
            if rewrite_needed {
                let bytes = read_from(session, &files.log, &mut file, 0)?;
                let (state, _) = state_of_log(session, &files.log, &bytes, None)?;
                let state = change.apply(session, Some(state))?;
                drop(file);
                return rewritten(rewrite(files, cache, session, &state, false)?);
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
        return Err(SessionError::corrupt(
            session,
            format_args!("{}: the log holds no complete record", path.display()),
        ));
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

/// Writes the whole new state `change` makes (it keeps no stored message) as the log;
/// returns what the new log holds.
fn rewrite_with_change(
    files: &Files,
    cache: &Cache,
    session: &str,
    change: &StateChange,
    remove_legacy: bool,
) -> Result<LogInfo, SessionError> {
    let log = new_log_id();
    let record = RecordOut {
        log: Some(&log),
        ..RecordOut::of_change(change)
    };
    write_log(files, cache, session, record, remove_legacy)
}

/// Writes `state` as the log; returns what the new log holds.
fn rewrite(
    files: &Files,
    cache: &Cache,
    session: &str,
    state: &AgentState,
    remove_legacy: bool,
) -> Result<LogInfo, SessionError> {
    let log = new_log_id();
    write_log(
        files,
        cache,
        session,
        RecordOut::of_state(state, &log),
        remove_legacy,
    )
}

fn new_log_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Writes a log of the one record `record` (a whole state) to the temporary file, syncs it,
/// renames it over the log, removes the `.json` file of an earlier version if
/// `remove_legacy`, and syncs the directory. Returns what the new log holds.
fn write_log(
    files: &Files,
    cache: &Cache,
    session: &str,
    record: RecordOut<'_>,
    remove_legacy: bool,
) -> Result<LogInfo, SessionError> {
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

fn load(files: &Files, cache: &Cache, session: &str) -> Result<Option<AgentState>, SessionError> {
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
fn cached_under_lease(files: &Files, cache: &Cache, session: &str) -> Option<AgentState> {
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

fn delete(files: &Files, cache: &Cache, session: &str) -> Result<bool, SessionError> {
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

/// The session ids in `dir`, sorted: files `<valid id>.jsonl` and `<valid id>.json` (the
/// lock and temporary files start with `.` and are not valid ids).
fn list_dir(dir: &Path) -> Result<Vec<String>, SessionError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(SessionError::io(
                None,
                format_args!("listing {}", dir.display()),
                error,
            ));
        }
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| {
            SessionError::io(None, format_args!("listing {}", dir.display()), error)
        })?;
        let path = entry.path();
        let extension = path.extension().and_then(|ext| ext.to_str());
        if !matches!(extension, Some(LOG_EXTENSION | LEGACY_EXTENSION)) {
            continue;
        }
        let Some(id) = path.file_stem().and_then(|stem| stem.to_str()) else {
            continue;
        };
        if validate_session_id(id).is_ok() && entry.file_type().is_ok_and(|t| t.is_file()) {
            ids.push(id.to_owned());
        }
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "agentscope-json-store-{name}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn agent() -> AgentIdentity {
        AgentIdentity::new("a", "1")
    }

    fn state(texts: &[&str]) -> AgentState {
        AgentState::new(agent(), texts.iter().map(|text| Msg::user(*text)).collect())
    }

    fn step(base: u64, kept: usize, texts: &[&str]) -> StateChange {
        let messages = texts.iter().map(|text| Msg::assistant(*text)).collect();
        StateChange::new(base, kept, messages, agent())
    }

    #[test]
    fn a_record_line_is_serde_jsons_serialisation_of_the_whole_record() {
        let mut with_all = step(4, 1, &["a", "b \"quoted\"", "c"]);
        with_all.running_tools = vec!["call-1".to_owned()];
        with_all.hooks = hooks("x");
        with_all
            .metadata
            .insert("k".to_owned(), serde_json::json!([1, 2]));
        let changes = [step(1, 0, &[]), step(2, 1, &["one"]), with_all];
        for change in &changes {
            let record = RecordOut::of_change(change);
            let (line, header_len) = record.encode("s").unwrap();
            let mut whole = serde_json::to_vec(&record).unwrap();
            whole.push(b'\n');
            assert_eq!(
                String::from_utf8(line).unwrap(),
                String::from_utf8(whole).unwrap()
            );
            assert_eq!(header_len, record.header_len().unwrap());
        }
        let whole_state = state(&["q", "r"]);
        let record = RecordOut::of_state(&whole_state, "log-1");
        let (line, _) = record.encode("s").unwrap();
        assert_eq!(
            &line[..line.len() - 1],
            &serde_json::to_vec(&record).unwrap()[..]
        );
    }

    /// A store in a fresh directory holding session "s" at revision 1 (one message, "q").
    async fn started(name: &str) -> (PathBuf, JsonFileSessionStore) {
        let dir = temp_dir(name);
        let store = JsonFileSessionStore::new(&dir);
        let revision = store
            .save("s", &StateChange::replace(&state(&["q"])))
            .await
            .unwrap();
        assert_eq!(revision, 1);
        (dir, store)
    }

    #[track_caller]
    fn assert_conflict(error: &SessionError, expected: u64, found: u64) {
        match error {
            SessionError::Conflict {
                expected: e,
                found: f,
                ..
            } => assert_eq!((*e, *f), (expected, found)),
            other => panic!("expected a conflict, got {other:?}"),
        }
    }

    fn texts(state: &AgentState) -> Vec<String> {
        state.messages.iter().map(Msg::text).collect()
    }

    fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
        futures::executor::block_on(future)
    }

    /// The file names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn steps_append_one_line_each_and_load_replays_them() {
        block_on(async {
            let dir = temp_dir("append");
            let store = JsonFileSessionStore::new(&dir);
            assert_eq!(
                store
                    .save("s", &StateChange::replace(&state(&["q"])))
                    .await
                    .unwrap(),
                1
            );
            let first = fs::read_to_string(dir.join("s.jsonl")).unwrap();
            // The first record names its file; the prefix is what the cache compares.
            let info = lock(&store.cache).info("s").cloned().unwrap();
            assert!(first.starts_with(&info.prefix().unwrap()), "{first}");
            assert_eq!(info.len, first.len() as u64);
            let running = step(1, 1, &["a1"]).with_running_tools(vec!["call-1".into()]);
            assert_eq!(store.save("s", &running).await.unwrap(), 2);
            assert_eq!(
                store.save("s", &step(2, 2, &["a2", "a3"])).await.unwrap(),
                3
            );

            let log = fs::read_to_string(dir.join("s.jsonl")).unwrap();
            assert!(log.starts_with(&first));
            let lines: Vec<&str> = log.lines().collect();
            assert_eq!(lines.len(), 3);
            assert!(
                lines[1].starts_with(r#"{"version":1,"revision":2,"kept":1,"#),
                "{}",
                lines[1]
            );
            assert!(lines[1].contains(r#""running_tools":["call-1"]"#));
            assert!(!lines[2].contains("running_tools"));

            let loaded = store.load("s").await.unwrap().unwrap();
            assert_eq!(loaded.revision, 3);
            assert_eq!(texts(&loaded), ["q", "a1", "a2", "a3"]);
            assert!(loaded.running_tools.is_empty());
            assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);
            // A new store (another process) loads the same.
            let other = JsonFileSessionStore::new(&dir);
            assert_eq!(other.load("s").await.unwrap().unwrap(), loaded);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// A process killed in the middle of an append leaves a last line without its `\n`:
    /// loads ignore it, and the next save rewrites the log without it.
    #[test]
    fn a_torn_last_line_is_ignored_and_repaired() {
        block_on(async {
            let (dir, store) = started("torn").await;
            store.save("s", &step(1, 1, &["a1"])).await.unwrap();
            let path = store.path_of("s").unwrap();
            let good = fs::read(&path).unwrap();
            let (line, _) = RecordOut::of_change(&step(2, 2, &["lost"]))
                .encode("s")
                .unwrap();
            let mut torn = good.clone();
            torn.extend_from_slice(&line[..line.len() / 2]);
            fs::write(&path, &torn).unwrap();

            for store in [store.clone(), JsonFileSessionStore::new(&dir)] {
                let loaded = store.load("s").await.unwrap().unwrap();
                assert_eq!(
                    (loaded.revision, texts(&loaded)),
                    (2, vec!["q".into(), "a1".into()])
                );
            }
            assert_eq!(fs::read(&path).unwrap(), torn, "loads change nothing");

            // The next save (of a store whose cache predates the torn write) repairs it.
            assert_eq!(store.save("s", &step(2, 2, &["a2"])).await.unwrap(), 3);
            let repaired = fs::read_to_string(&path).unwrap();
            assert!(repaired.ends_with('\n'));
            assert_eq!(repaired.lines().count(), 1, "rewritten as one record");
            let loaded = JsonFileSessionStore::new(&dir)
                .load("s")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                (loaded.revision, texts(&loaded)),
                (3, vec!["q".into(), "a1".into(), "a2".into()])
            );
            assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    #[test]
    fn a_corrupt_line_is_reported_with_its_number_by_loads_and_saves() {
        block_on(async {
            let (dir, store) = started("corrupt").await;
            store.save("s", &step(1, 1, &["a1"])).await.unwrap();
            store.save("s", &step(2, 2, &["a2"])).await.unwrap();
            let path = store.path_of("s").unwrap();
            let log = fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = log.lines().collect();
            let skipped = lines[2].replacen("\"revision\":3", "\"revision\":5", 1);
            // (line number, its bytes, the message)
            let cases = [
                (
                    2,
                    "{\"version\":1,\"revision\":",
                    "EOF while parsing a value at line 1 column 24",
                ),
                (2, "[1, 2]", "the record is not a JSON object"),
                (3, skipped.as_str(), "revision 5 follows revision 2"),
            ];
            for (number, line, message) in cases {
                let mut bad = lines.clone();
                bad[number - 1] = line;
                let bytes = format!("{}\n", bad.join("\n"));
                fs::write(&path, &bytes).unwrap();
                let expected = format!(
                    "session 's' is corrupt: {}: line {number}: {message}",
                    path.display()
                );
                let fresh = JsonFileSessionStore::new(&dir);
                for error in [
                    fresh.load("s").await.unwrap_err(),
                    fresh.save("s", &step(3, 3, &["x"])).await.unwrap_err(),
                ] {
                    assert!(matches!(error, SessionError::Corrupt { .. }), "{error:?}");
                    assert_eq!(error.to_string(), expected);
                }
                assert_eq!(fs::read_to_string(&path).unwrap(), bytes, "nothing changed");
            }
            // A record keeping more messages than are stored, a system message, another
            // format version.
            let more = lines[2].replacen("\"kept\":2", "\"kept\":7", 1);
            let system = lines[2].replacen("\"role\":\"assistant\"", "\"role\":\"system\"", 1);
            let newer = lines[2].replacen("\"version\":1", "\"version\":2", 1);
            let cases = [
                (&more, "line 3: the record keeps 7 messages but 2 are stored".to_owned()),
                (
                    &system,
                    "line 3: message 2 has the system role; agent memory never holds system messages"
                        .to_owned(),
                ),
            ];
            for (line, message) in cases {
                fs::write(&path, format!("{}\n{}\n{line}\n", lines[0], lines[1])).unwrap();
                let error = JsonFileSessionStore::new(&dir).load("s").await.unwrap_err();
                assert_eq!(
                    error.to_string(),
                    format!("session 's' is corrupt: {}: {message}", path.display())
                );
            }
            fs::write(&path, format!("{}\n{}\n{newer}\n", lines[0], lines[1])).unwrap();
            let error = JsonFileSessionStore::new(&dir).load("s").await.unwrap_err();
            assert!(
                matches!(
                    error,
                    SessionError::UnsupportedVersion {
                        found: 2,
                        supported: 1,
                        ..
                    }
                ),
                "{error:?}"
            );
            // A log with no complete record.
            fs::write(&path, &lines[0][..20]).unwrap();
            let error = JsonFileSessionStore::new(&dir).load("s").await.unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "session 's' is corrupt: {}: the log holds no complete record",
                    path.display()
                )
            );
            // Deleting recovers.
            assert!(store.delete("s").await.unwrap());
            assert_eq!(
                store
                    .save("s", &StateChange::replace(&state(&["new"])))
                    .await
                    .unwrap(),
                1
            );
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    #[test]
    fn a_conflict_leaves_the_file_byte_identical() {
        block_on(async {
            let (dir, store) = started("conflict").await;
            store.save("s", &step(1, 1, &["a1"])).await.unwrap();
            let path = store.path_of("s").unwrap();
            let before = fs::read(&path).unwrap();
            let stale = [
                step(1, 1, &["x"]),
                step(0, 0, &["x"]),
                step(5, 2, &["x"]),
                StateChange::replace(&state(&["x"])),
            ];
            for change in &stale {
                let error = store.save("s", change).await.unwrap_err();
                assert!(
                    matches!(&error, SessionError::Conflict { session, found: 2, .. } if session == "s"),
                    "{error:?}"
                );
                assert_eq!(fs::read(&path).unwrap(), before);
            }
            // Invalid changes neither.
            let error = store.save("s", &step(2, 3, &["x"])).await.unwrap_err();
            assert!(
                matches!(error, SessionError::InvalidChange { .. }),
                "{error:?}"
            );
            let mut system = step(2, 2, &[]);
            system.appended.push(Msg::system("x"));
            let error = store.save("s", &system).await.unwrap_err();
            assert!(
                matches!(error, SessionError::InvalidChange { .. }),
                "{error:?}"
            );
            assert_eq!(fs::read(&path).unwrap(), before);
            assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// Rewrites (compactions) keep the loaded state: after a change dropping some messages,
    /// after a change keeping none, and when repeated metadata outweighs the messages.
    #[test]
    fn rewrites_keep_the_loaded_state() {
        block_on(async {
            let dir = temp_dir("compact");
            let store = JsonFileSessionStore::new(&dir);
            let path = store.path_of("s").unwrap();
            let lines = || fs::read_to_string(&path).unwrap().lines().count();
            store
                .save("s", &StateChange::replace(&state(&["1", "2", "3"])))
                .await
                .unwrap();
            store.save("s", &step(1, 3, &["4"])).await.unwrap();
            assert_eq!(lines(), 2);

            // Dropping messages from the end: the result is written as one record.
            store.save("s", &step(2, 2, &["x"])).await.unwrap();
            assert_eq!(lines(), 1);
            let loaded = store.load("s").await.unwrap().unwrap();
            assert_eq!(
                (loaded.revision, texts(&loaded)),
                (3, vec!["1".into(), "2".into(), "x".into()])
            );

            // Keeping none: the change is the new log.
            store.save("s", &step(3, 3, &["y"])).await.unwrap();
            store.save("s", &step(4, 0, &["only"])).await.unwrap();
            assert_eq!(lines(), 1);
            let loaded = store.load("s").await.unwrap().unwrap();
            assert_eq!(
                (loaded.revision, texts(&loaded)),
                (5, vec!["only".to_owned()])
            );

            // 4 KiB of metadata per record, one short message per step: the dead metadata
            // outgrows the live state, and the log is rewritten before it is twice that.
            let mut metadata = Map::new();
            metadata.insert("blob".into(), Value::String("m".repeat(4096)));
            let mut expected = vec!["only".to_owned()];
            let mut max_len = 0;
            let mut rewrites = 0;
            for revision in 5..80u64 {
                let text = format!("step {revision}");
                let change =
                    step(revision, expected.len(), &[&text]).with_metadata(metadata.clone());
                store.save("s", &change).await.unwrap();
                expected.push(text);
                let len = fs::metadata(&path).unwrap().len();
                if lines() == 1 {
                    rewrites += 1;
                }
                max_len = max_len.max(len);
            }
            assert!(rewrites >= 1, "the log was never rewritten");
            assert!(max_len < 2 * MIN_DEAD_BYTES + 16 * 1024, "{max_len}");
            let loaded = JsonFileSessionStore::new(&dir)
                .load("s")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(loaded.revision, 80);
            assert_eq!(texts(&loaded), expected);
            assert_eq!(loaded.metadata, metadata);
            assert_eq!(store.load("s").await.unwrap().unwrap(), loaded);
            assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// A rewrite interrupted by a crash leaves `.<id>.jsonl.tmp`: ignored by load and list,
    /// removed by the next save that reads the log (a store without a cache entry: another
    /// process, or after a restart).
    #[test]
    fn a_stale_temporary_file_is_ignored_and_swept() {
        block_on(async {
            let (dir, store) = started("stale").await;
            let temp = dir.join(".s.jsonl.tmp");
            fs::write(&temp, b"{\"half a rewrite").unwrap();
            assert_eq!(store.list().await.unwrap(), ["s"]);
            assert_eq!(texts(&store.load("s").await.unwrap().unwrap()), ["q"]);

            let restarted = JsonFileSessionStore::new(&dir);
            restarted.save("s", &step(1, 1, &["a"])).await.unwrap();
            assert!(!temp.exists());
            assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);

            // A temporary file of a session never saved: swept by its first save, or by a
            // delete.
            fs::write(dir.join(".t.jsonl.tmp"), b"x").unwrap();
            assert_eq!(store.list().await.unwrap(), ["s"]);
            assert_eq!(store.load("t").await.unwrap(), None);
            store
                .save("t", &StateChange::replace(&state(&["t"])))
                .await
                .unwrap();
            assert_eq!(names(&dir), [".s.lock", ".t.lock", "s.jsonl", "t.jsonl"]);
            fs::write(dir.join(".t.jsonl.tmp"), b"x").unwrap();
            assert!(store.delete("t").await.unwrap());
            assert_eq!(names(&dir), [".s.lock", ".t.lock", "s.jsonl"]);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// A `.json` file of an earlier version loads as it is; its first save (from its
    /// revision) writes a log and removes it.
    #[test]
    fn a_legacy_json_file_is_read_and_migrated() {
        block_on(async {
            let dir = temp_dir("legacy");
            let store = JsonFileSessionStore::new(&dir);
            // As the earlier version wrote it: pretty-printed, without a revision.
            let old = state(&["old question", "old answer"]).with_metadata_entry("user", "alice");
            let mut value = serde_json::to_value(&old).unwrap();
            value.as_object_mut().unwrap().remove("revision");
            fs::write(
                dir.join("s.json"),
                serde_json::to_vec_pretty(&value).unwrap(),
            )
            .unwrap();
            fs::write(
                dir.join("t.json"),
                serde_json::to_vec_pretty(&value).unwrap(),
            )
            .unwrap();
            assert_eq!(store.list().await.unwrap(), ["s", "t"]);
            let loaded = store.load("s").await.unwrap().unwrap();
            assert_eq!(loaded, old);
            assert_eq!(loaded.revision, 0);

            // A stale base is still a conflict, and migrates nothing.
            let error = store.save("s", &step(1, 2, &["x"])).await.unwrap_err();
            assert_conflict(&error, 1, 0);
            assert!(dir.join("s.json").exists());

            // The first save appends to the stored messages, from revision 0.
            let change = step(0, 2, &["new answer"]).with_metadata(old.metadata.clone());
            assert_eq!(store.save("s", &change).await.unwrap(), 1);
            assert!(!dir.join("s.json").exists());
            let loaded = JsonFileSessionStore::new(&dir)
                .load("s")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(loaded.revision, 1);
            assert_eq!(texts(&loaded), ["old question", "old answer", "new answer"]);
            assert_eq!(loaded.metadata["user"], "alice");
            assert_eq!(store.save("s", &step(1, 3, &["more"])).await.unwrap(), 2);

            // A replacing save migrates too; a delete removes a `.json` file.
            assert_eq!(
                store
                    .save("t", &StateChange::replace(&loaded))
                    .await
                    .unwrap_err()
                    .to_string(),
                "session 't' was changed by another writer: this save was made from revision 1, but revision 0 is stored"
            );
            let mut replacement = state(&["fresh"]);
            replacement.revision = 0;
            assert_eq!(
                store
                    .save("t", &StateChange::replace(&replacement))
                    .await
                    .unwrap(),
                1
            );
            assert_eq!(store.list().await.unwrap(), ["s", "t"]);
            assert_eq!(names(&dir), [".s.lock", ".t.lock", "s.jsonl", "t.jsonl"]);
            fs::write(
                dir.join("u.json"),
                serde_json::to_vec_pretty(&value).unwrap(),
            )
            .unwrap();
            assert!(store.delete("u").await.unwrap());
            assert!(!store.delete("u").await.unwrap());
            // Both files (a crash between writing the log and removing the `.json` file):
            // the log wins, listed once, and the next save sweeps the `.json` file.
            fs::write(
                dir.join("s.json"),
                serde_json::to_vec_pretty(&value).unwrap(),
            )
            .unwrap();
            assert_eq!(store.list().await.unwrap(), ["s", "t"]);
            assert_eq!(store.load("s").await.unwrap().unwrap().revision, 2);
            JsonFileSessionStore::new(&dir)
                .save("s", &step(2, 4, &[]))
                .await
                .unwrap();
            assert!(!dir.join("s.json").exists());
            // A corrupt `.json` file is reported with its path.
            fs::write(dir.join("v.json"), b"{").unwrap();
            let error = store.load("v").await.unwrap_err().to_string();
            assert!(
                error.starts_with(&format!(
                    "session 'v' is corrupt: {}: not a valid agent state",
                    dir.join("v.json").display()
                )),
                "{error}"
            );
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// Two store values on one directory stand for two processes: each one's cache goes
    /// stale when the other saves, which its next save notices.
    #[test]
    fn a_cache_made_stale_by_another_store_is_noticed() {
        block_on(async {
            let (dir, one) = started("stale-cache").await;
            let two = JsonFileSessionStore::new(&dir);
            one.save("s", &step(1, 1, &["a"])).await.unwrap();
            // `two` appends (the file grows): `one` reads only the new record.
            two.save("s", &step(2, 2, &["b"])).await.unwrap();
            let error = one.save("s", &step(2, 2, &["c"])).await.unwrap_err();
            assert_conflict(&error, 2, 3);
            assert_eq!(one.save("s", &step(3, 3, &["c"])).await.unwrap(), 4);
            // `two` rewrites the log (a new file): `one` reads it anew.
            two.save("s", &step(4, 0, &["z"])).await.unwrap();
            let error = one.save("s", &step(4, 4, &["d"])).await.unwrap_err();
            assert_conflict(&error, 4, 5);
            // `two` deletes the session: `one` finds no log.
            assert_eq!(one.save("s", &step(5, 1, &["y"])).await.unwrap(), 6);
            assert!(two.delete("s").await.unwrap());
            let error = one.save("s", &step(6, 2, &["y"])).await.unwrap_err();
            assert_conflict(&error, 6, 0);
            let loaded = one.load("s").await.unwrap();
            assert_eq!(loaded, None);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// Another process deletes the session and saves it anew, at another revision with
    /// other messages, in a log of exactly the cached length: the log's id tells the two
    /// files apart.
    #[test]
    fn a_new_log_of_the_cached_length_is_not_mistaken_for_the_cached_one() {
        block_on(async {
            let (dir, one) = started("same-length").await;
            let two = JsonFileSessionStore::new(&dir);
            one.save("s", &step(1, 1, &["a"])).await.unwrap();
            let len = fs::metadata(dir.join("s.jsonl")).unwrap().len();

            // Revision 1 holding one message, padded to the same length.
            let id = new_log_id();
            let mut again = state(&["r"]).with_metadata_entry("pad", "");
            again.revision = 1;
            let short = RecordOut::of_state(&again, &id)
                .encode("s")
                .unwrap()
                .0
                .len() as u64;
            assert!(short < len);
            let pad = "p".repeat(usize::try_from(len - short).unwrap());
            again = again.with_metadata_entry("pad", pad);
            assert_eq!(
                RecordOut::of_state(&again, &id)
                    .encode("s")
                    .unwrap()
                    .0
                    .len() as u64,
                len
            );
            assert!(two.delete("s").await.unwrap());
            again.revision = 0;
            two.save("s", &StateChange::replace(&again)).await.unwrap();
            assert_eq!(fs::metadata(dir.join("s.jsonl")).unwrap().len(), len);

            // Trusting its cache, `one` would append revision 3 keeping 2 messages.
            let error = one.save("s", &step(2, 2, &["b"])).await.unwrap_err();
            assert_conflict(&error, 2, 1);
            let loaded = one.load("s").await.unwrap().unwrap();
            assert_eq!((loaded.revision, texts(&loaded)), (1, vec!["r".to_owned()]));
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// Two store values on one directory (two processes) race from one revision, 20 times:
    /// exactly one save wins each round.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_stores_racing_from_one_revision_one_wins() {
        let (dir, one) = started("race").await;
        let two = JsonFileSessionStore::new(&dir);
        let mut expected = vec!["q".to_owned()];
        for round in 0..20u64 {
            let base = round + 1;
            let barrier = Arc::new(tokio::sync::Barrier::new(2));
            let tasks: Vec<_> = [(one.clone(), "one"), (two.clone(), "two")]
                .into_iter()
                .map(|(store, name)| {
                    let barrier = Arc::clone(&barrier);
                    let change = step(base, expected.len(), &[&format!("{name} {round}")]);
                    tokio::spawn(async move {
                        barrier.wait().await;
                        (name, store.save("s", &change).await)
                    })
                })
                .collect();
            let mut winners = Vec::new();
            for task in tasks {
                let (name, result) = task.await.unwrap();
                match result {
                    Ok(revision) => {
                        assert_eq!(revision, base + 1);
                        winners.push(name);
                    }
                    Err(SessionError::Conflict {
                        expected, found, ..
                    }) => {
                        assert_eq!((expected, found), (base, base + 1));
                    }
                    Err(other) => panic!("{other:?}"),
                }
            }
            assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
            expected.push(format!("{} {round}", winners[0]));
        }
        for store in [&one, &two, &JsonFileSessionStore::new(&dir)] {
            let loaded = store.load("s").await.unwrap().unwrap();
            assert_eq!(loaded.revision, 21);
            assert_eq!(texts(&loaded), expected);
        }
        fs::remove_dir_all(&dir).unwrap();
    }

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

    #[test]
    fn missing_directories_hold_no_sessions_and_invalid_ids_touch_nothing() {
        block_on(async {
            let dir = temp_dir("missing").join("not-yet");
            let store = JsonFileSessionStore::new(&dir);
            assert_eq!(store.load("s").await.unwrap(), None);
            assert!(!store.delete("s").await.unwrap());
            assert!(store.list().await.unwrap().is_empty());
            assert!(!dir.exists());
            for id in ["", ".s", "../s", "a/b"] {
                let error = store
                    .save(id, &StateChange::replace(&state(&["x"])))
                    .await
                    .unwrap_err();
                assert!(
                    matches!(error, SessionError::InvalidSessionId { .. }),
                    "{error:?}"
                );
            }
            assert!(!dir.exists());
            store
                .save("s", &StateChange::replace(&state(&["x"])))
                .await
                .unwrap();
            assert_eq!(store.list().await.unwrap(), ["s"]);
            fs::remove_dir_all(dir.parent().unwrap()).unwrap();
        });
    }

    // -----------------------------------------------------------------------------------
    // Leases.

    /// `step(..)` fenced by `lease`.
    fn fenced(lease: &SessionLease, change: StateChange) -> StateChange {
        change.with_fence(lease.fence())
    }

    /// Whether a lock file handle of its own (as another process has) can lock `path` now.
    fn lockable(path: &Path) -> bool {
        let file = File::open(path).unwrap();
        match file.try_lock() {
            Ok(()) => true,
            Err(TryLockError::WouldBlock) => false,
            Err(TryLockError::Error(error)) => panic!("{error}"),
        }
    }

    /// The log with the random id of each log file (in its first record) blanked, so that
    /// logs written apart compare byte for byte.
    fn without_log_ids(log: &str) -> String {
        let prefix = "{\"version\":1,\"log\":\"";
        log.lines()
            .map(|line| match line.strip_prefix(prefix) {
                Some(rest) => {
                    assert_eq!(rest.as_bytes()[32], b'"', "{line}");
                    format!("{prefix}{}", &rest[32..])
                }
                None => line.to_owned(),
            })
            .map(|line| line + "\n")
            .collect()
    }

    #[track_caller]
    fn assert_busy(error: &SessionError, expected: &str) {
        match error {
            SessionError::Busy { session } => assert_eq!(session, expected),
            other => panic!("expected busy, got {other:?}"),
        }
    }

    #[track_caller]
    fn assert_lease_lost(error: &SessionError) {
        assert!(
            matches!(error, SessionError::LeaseLost { session } if session == "s"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "session 's': this call's lease expired and another call took the session, so the \
             save was refused"
        );
    }

    /// A second lease on a session is busy, through the same store, a clone, or another
    /// store on the directory, and at the kernel's lock (what another process sees); given
    /// back or dropped, the session can be taken again.
    #[test]
    fn a_second_lease_is_busy_until_the_first_is_given_back_or_dropped() {
        block_on(async {
            let (dir, store) = started("lease-busy").await;
            let lock_path = dir.join(".s.lock");
            let token = CancellationToken::new();
            let first = store.lease("s", &token).await.unwrap().unwrap();
            assert_eq!(first.fence().len(), 32);
            assert!(!lockable(&lock_path));
            let other = JsonFileSessionStore::new(&dir);
            for store in [&store, &store.clone(), &other] {
                let error = store.lease("s", &token).await.unwrap_err();
                assert_busy(&error, "s");
                assert_eq!(
                    error.to_string(),
                    "session 's' is busy: another call holds its lease"
                );
            }
            // Another session is another lock; a new one gets its lock file, no log.
            let t = other.lease("t", &token).await.unwrap().unwrap();
            assert_eq!(names(&dir), [".s.lock", ".t.lock", "s.jsonl"]);
            assert_busy(&store.lease("t", &token).await.unwrap_err(), "t");

            first.release().await.unwrap();
            assert!(lockable(&lock_path));
            let second = other.lease("s", &token).await.unwrap().unwrap();
            assert!(!lockable(&lock_path));
            assert_busy(&store.lease("s", &token).await.unwrap_err(), "s");
            // A dropped lease (a dropped call) unlocks too.
            drop(second);
            assert!(lockable(&lock_path));
            let third = store.lease("s", &token).await.unwrap().unwrap();
            drop((third, t));
            assert!(lockable(&lock_path));
            assert!(lockable(&dir.join(".t.lock")));
            // Leases wrote nothing.
            let loaded = store.load("s").await.unwrap().unwrap();
            assert_eq!((loaded.revision, texts(&loaded)), (1, vec!["q".to_owned()]));
            assert_eq!(store.load("t").await.unwrap(), None);
            assert_eq!(store.list().await.unwrap(), ["s"]);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// A save fenced by a lease that is not held (given back, dropped, another token, a
    /// lease on another session) is `LeaseLost` and writes nothing; so is one that a
    /// store on another directory is asked to make.
    #[test]
    fn a_save_fenced_by_a_lease_not_held_is_lease_lost_and_writes_nothing() {
        block_on(async {
            let (dir, store) = started("lease-lost").await;
            let path = store.path_of("s").unwrap();
            let token = CancellationToken::new();
            let lease = store.lease("s", &token).await.unwrap().unwrap();
            assert_eq!(
                store
                    .save("s", &fenced(&lease, step(1, 1, &["a"])))
                    .await
                    .unwrap(),
                2
            );
            let before = fs::read(&path).unwrap();

            let foreign = step(2, 2, &["x"]).with_fence("7f3a0000000000000000000000000000");
            assert_lease_lost(&store.save("s", &foreign).await.unwrap_err());
            let t = store.lease("t", &token).await.unwrap().unwrap();
            assert_lease_lost(
                &store
                    .save("s", &fenced(&t, step(2, 2, &["x"])))
                    .await
                    .unwrap_err(),
            );
            let elsewhere = JsonFileSessionStore::new(temp_dir("lease-lost-elsewhere"));
            let error = elsewhere
                .save("s", &fenced(&lease, StateChange::replace(&state(&["x"]))))
                .await
                .unwrap_err();
            assert_lease_lost(&error);
            assert_eq!(fs::read(&path).unwrap(), before);

            let stale = lease.fence().to_owned();
            lease.release().await.unwrap();
            let error = store
                .save("s", &step(2, 2, &["x"]).with_fence(stale.clone()))
                .await
                .unwrap_err();
            assert_lease_lost(&error);
            // The same after a new lease took the session, and after a dropped one.
            let next = store.lease("s", &token).await.unwrap().unwrap();
            let error = store
                .save("s", &step(2, 2, &["x"]).with_fence(stale))
                .await
                .unwrap_err();
            assert_lease_lost(&error);
            let dropped = next.fence().to_owned();
            drop(next);
            let error = store
                .save("s", &step(2, 2, &["x"]).with_fence(dropped))
                .await
                .unwrap_err();
            assert_lease_lost(&error);
            assert_eq!(fs::read(&path).unwrap(), before);
            assert_eq!(store.load("s").await.unwrap().unwrap().revision, 2);
            drop(t);
            fs::remove_dir_all(&dir).unwrap();
            fs::remove_dir_all(elsewhere.dir()).unwrap();
        });
    }

    /// The same changes saved under a lease and without one leave byte-identical logs
    /// (but for the random log ids), through appends, a conflict, a change keeping nothing
    /// (a rewrite, after which the lease holds the new log), a change dropping messages and
    /// a metadata-driven compaction.
    #[test]
    fn saves_under_a_lease_write_the_log_saves_without_one_write() {
        block_on(async {
            let dir = temp_dir("lease-same");
            let store = JsonFileSessionStore::new(&dir);
            let token = CancellationToken::new();
            let lease = store.lease("leased", &token).await.unwrap().unwrap();
            let mut metadata = Map::new();
            metadata.insert("blob".into(), Value::String("m".repeat(8 * 1024)));
            let mut changes = vec![
                StateChange::replace(&state(&["q"])),
                step(1, 1, &["a1"]).with_running_tools(vec!["call-1".into()]),
                step(2, 2, &["a2", "a3"]),
                step(3, 0, &["only"]),
                step(4, 1, &["b1"]),
                step(5, 2, &["b2"]),
                step(6, 1, &["c1"]),
                step(7, 2, &["c2"]),
            ];
            // Revision 8 holds 3 messages; each of these changes keeps them all and adds one.
            for revision in 8..40u64 {
                let kept = usize::try_from(revision).unwrap() - 5;
                changes.push(step(revision, kept, &["d"]).with_metadata(metadata.clone()));
            }
            let mut log_lines = Vec::new();
            for change in &changes {
                let plain = store.save("plain", change).await.unwrap();
                let leased = store
                    .save("leased", &fenced(&lease, change.clone()))
                    .await
                    .unwrap();
                assert_eq!(plain, change.revision());
                assert_eq!(leased, change.revision());
                if change.base == 2 {
                    // A stale change is a conflict under a lease too, and writes nothing.
                    let before = fs::read(dir.join("leased.jsonl")).unwrap();
                    let stale = fenced(&lease, step(2, 2, &["x"]));
                    assert_conflict(&store.save("leased", &stale).await.unwrap_err(), 2, 3);
                    assert_eq!(fs::read(dir.join("leased.jsonl")).unwrap(), before);
                }
                let plain = fs::read_to_string(dir.join("plain.jsonl")).unwrap();
                let leased = fs::read_to_string(dir.join("leased.jsonl")).unwrap();
                assert_eq!(without_log_ids(&leased), without_log_ids(&plain));
                log_lines.push(leased.lines().count());
            }
            // The path went through rewrites and appends after them.
            assert_eq!(&log_lines[..8], [1, 2, 3, 1, 2, 3, 1, 2]);
            assert!(log_lines[8..].contains(&1), "{log_lines:?}");
            assert!(*log_lines.last().unwrap() > 1, "{log_lines:?}");
            lease.release().await.unwrap();
            let fresh = JsonFileSessionStore::new(&dir);
            let plain = fresh.load("plain").await.unwrap().unwrap();
            let leased = fresh.load("leased").await.unwrap().unwrap();
            assert_eq!(leased, plain);
            assert_eq!(leased.revision, 40);
            assert_eq!(
                names(&dir),
                [".leased.lock", ".plain.lock", "leased.jsonl", "plain.jsonl"]
            );
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// The descriptors of this process open on `path` (Linux).
    #[cfg(target_os = "linux")]
    fn open_descriptors(path: &Path) -> usize {
        let path = fs::canonicalize(path).unwrap();
        fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| *target == path)
            .count()
    }

    /// A lease holds the lock file and the log open for its length: its saves open
    /// nothing; giving it back closes both.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_lease_holds_the_lock_file_and_the_log_open_until_it_is_given_back() {
        block_on(async {
            let (dir, store) = started("lease-open").await;
            let (lock_path, log) = (dir.join(".s.lock"), dir.join("s.jsonl"));
            assert_eq!(
                (open_descriptors(&lock_path), open_descriptors(&log)),
                (0, 0)
            );
            let token = CancellationToken::new();
            let lease = store.lease("s", &token).await.unwrap().unwrap();
            assert_eq!(
                (open_descriptors(&lock_path), open_descriptors(&log)),
                (1, 1)
            );
            for revision in 1..4 {
                let change = fenced(&lease, step(revision, revision as usize, &["a"]));
                store.save("s", &change).await.unwrap();
                assert_eq!(
                    (open_descriptors(&lock_path), open_descriptors(&log)),
                    (1, 1)
                );
            }
            // A rewrite replaces the log: the lease holds the new one.
            store
                .save("s", &fenced(&lease, step(4, 0, &["z"])))
                .await
                .unwrap();
            assert_eq!(
                (open_descriptors(&lock_path), open_descriptors(&log)),
                (1, 1)
            );
            lease.release().await.unwrap();
            assert_eq!(
                (open_descriptors(&lock_path), open_descriptors(&log)),
                (0, 0)
            );
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// Taking a lease checks the log as a save does: a corrupt one fails the lease with the
    /// save's error and leaves the session unlocked; a torn one is repaired by the first
    /// save under the lease, a `.json` file of an earlier version migrated, and the saves
    /// after those append to the new log.
    #[test]
    fn a_lease_checks_the_log_as_a_save_does() {
        block_on(async {
            let (dir, store) = started("lease-check").await;
            let path = store.path_of("s").unwrap();
            let good = fs::read(&path).unwrap();
            fs::write(&path, b"[1]\n").unwrap();
            let token = CancellationToken::new();
            let expected = format!(
                "session 's' is corrupt: {}: line 1: the record is not a JSON object",
                path.display()
            );
            let fresh = JsonFileSessionStore::new(&dir);
            let error = fresh.lease("s", &token).await.unwrap_err();
            assert_eq!(error.to_string(), expected);
            assert_eq!(
                fresh
                    .save("s", &step(1, 1, &["x"]))
                    .await
                    .unwrap_err()
                    .to_string(),
                expected
            );
            assert!(lockable(&dir.join(".s.lock")));

            // Torn: the lease is taken; its first save rewrites, the next appends.
            let (line, _) = RecordOut::of_change(&step(1, 1, &["lost"]))
                .encode("s")
                .unwrap();
            let mut torn = good.clone();
            torn.extend_from_slice(&line[..10]);
            fs::write(&path, &torn).unwrap();
            let lease = JsonFileSessionStore::new(&dir)
                .lease("s", &token)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(fs::read(&path).unwrap(), torn, "a lease writes nothing");
            store
                .save("s", &fenced(&lease, step(1, 1, &["a"])))
                .await
                .unwrap();
            let lines = || fs::read_to_string(&path).unwrap().lines().count();
            assert_eq!(lines(), 1);
            store
                .save("s", &fenced(&lease, step(2, 2, &["b"])))
                .await
                .unwrap();
            assert_eq!(lines(), 2);
            lease.release().await.unwrap();
            let loaded = JsonFileSessionStore::new(&dir)
                .load("s")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                (loaded.revision, texts(&loaded)),
                (3, vec!["q".into(), "a".into(), "b".into()])
            );

            // A `.json` file of an earlier version.
            let old = state(&["old"]);
            fs::write(dir.join("u.json"), serde_json::to_vec(&old).unwrap()).unwrap();
            let lease = store.lease("u", &token).await.unwrap().unwrap();
            store
                .save("u", &fenced(&lease, step(0, 1, &["new"])))
                .await
                .unwrap();
            assert!(!dir.join("u.json").exists());
            store
                .save("u", &fenced(&lease, step(1, 2, &["newer"])))
                .await
                .unwrap();
            assert_eq!(
                fs::read_to_string(dir.join("u.jsonl"))
                    .unwrap()
                    .lines()
                    .count(),
                2
            );
            drop(lease);
            let loaded = store.load("u").await.unwrap().unwrap();
            assert_eq!(texts(&loaded), ["old", "new", "newer"]);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// `interrupt` cancels the token of the call of this process holding the session
    /// (through any store on the directory), and only while it holds it.
    #[test]
    fn interrupt_cancels_the_holder_of_this_process_while_it_holds_the_session() {
        block_on(async {
            let (dir, store) = started("lease-interrupt").await;
            // The same directory spelled another way is the same store.
            let mut spelled = dir.clone().into_os_string();
            spelled.push("/./");
            let other = JsonFileSessionStore::new(spelled);
            assert_eq!(other.dir(), dir);
            assert!(!store.interrupt("s").await.unwrap());
            let token = CancellationToken::new();
            let lease = store.lease("s", &token).await.unwrap().unwrap();
            assert!(!other.interrupt("t").await.unwrap());
            assert!(!token.is_cancelled());
            assert!(other.interrupt("s").await.unwrap());
            assert!(token.is_cancelled());
            // A save fenced by the lease finds it through the other spelling too.
            let fenced = fenced(&lease, step(1, 1, &["a"]));
            assert_eq!(other.save("s", &fenced).await.unwrap(), 2);
            lease.release().await.unwrap();
            let next = CancellationToken::new();
            assert!(!store.interrupt("s").await.unwrap());
            let lease = store.lease("s", &next).await.unwrap().unwrap();
            drop(lease);
            assert!(!store.interrupt("s").await.unwrap());
            assert!(!next.is_cancelled());
            assert!(matches!(
                store.interrupt("../s").await.unwrap_err(),
                SessionError::InvalidSessionId { .. }
            ));
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// While a lease is held, loads read what its saves wrote; a save without a fence
    /// waits for the lock until the lease is given back, then applies (compare-and-swap as
    /// ever).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn loads_read_and_unfenced_saves_wait_while_a_lease_is_held() {
        unfenced_saves_wait_for_the_lease("lease-wait", false).await;
    }

    /// The same with the file work inline, on a current-thread runtime: the waiting save
    /// waits on the blocking pool, not on the one thread the lease's holder needs.
    #[tokio::test(flavor = "current_thread")]
    async fn an_inline_save_waiting_for_a_lease_of_this_process_leaves_the_thread_to_it() {
        unfenced_saves_wait_for_the_lease("lease-wait-inline", true).await;
    }

    async fn unfenced_saves_wait_for_the_lease(name: &str, inline: bool) {
        let (dir, store) = started(name).await;
        let store = store.inline(inline);
        let token = CancellationToken::new();
        let lease = store.lease("s", &token).await.unwrap().unwrap();
        store
            .save("s", &fenced(&lease, step(1, 1, &["a"])))
            .await
            .unwrap();
        for reader in [
            store.clone(),
            JsonFileSessionStore::new(&dir).inline(inline),
        ] {
            let loaded = reader.load("s").await.unwrap().unwrap();
            assert_eq!(
                (loaded.revision, texts(&loaded)),
                (2, vec!["q".into(), "a".into()])
            );
        }
        let waiting = tokio::spawn({
            let store = JsonFileSessionStore::new(&dir).inline(inline);
            async move { store.save("s", &step(2, 2, &["plain"])).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(
            !waiting.is_finished(),
            "an unfenced save waits for the lease"
        );
        store
            .save("s", &fenced(&lease, step(2, 2, &["b"])))
            .await
            .unwrap();
        lease.release().await.unwrap();
        let error = waiting.await.unwrap().unwrap_err();
        assert_conflict(&error, 2, 3);
        let loaded = store.load("s").await.unwrap().unwrap();
        assert_eq!(texts(&loaded), ["q", "a", "b"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A lease given back while a save under it still runs (a call dropped mid-save) keeps
    /// the session locked until that save returns; a new lease of this process waits for
    /// it instead of reporting busy.
    #[test]
    fn a_new_lease_waits_for_the_last_save_of_a_lease_given_back() {
        block_on(async {
            let (dir, store) = started("lease-ending").await;
            let files = store.files("s").unwrap();
            let token = CancellationToken::new();
            let lease = store.lease("s", &token).await.unwrap().unwrap();
            // What a save running on the blocking pool holds.
            let fence = lease.fence().to_owned();
            let running_save = lease::find(&files.lock, &fence).unwrap();
            drop(lease);
            assert!(running_save.is_released());
            assert!(lease::find(&files.lock, &fence).is_none());
            assert!(!lockable(&files.lock));
            let taker = std::thread::spawn({
                let store = store.clone();
                move || block_on(store.lease("s", &CancellationToken::new())).map(|l| l.is_some())
            });
            std::thread::sleep(std::time::Duration::from_millis(200));
            assert!(!taker.is_finished(), "the new lease waits");
            drop(running_save);
            assert!(taker.join().unwrap().unwrap());
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    // -----------------------------------------------------------------------------------
    // Decoded states in the cache.

    /// Overwrites the bytes of `path` at `offset` with `bytes`, in place (the same file, the
    /// same length): what a reader that trusts its cache cannot notice.
    fn overwrite(path: &Path, offset: u64, bytes: &[u8]) {
        let mut file = OpenOptions::new().write(true).open(path).unwrap();
        file.seek(SeekFrom::Start(offset)).unwrap();
        file.write_all(bytes).unwrap();
    }

    /// Changes the text `from` in the log of `path` to `to` (of the same length), at its
    /// first occurrence after the first record's id.
    fn tamper(path: &Path, from: &str, to: &str) {
        assert_eq!(from.len(), to.len());
        let log = fs::read_to_string(path).unwrap();
        let offset = 60 + log[60..].find(from).unwrap();
        overwrite(path, offset as u64, to.as_bytes());
        assert_eq!(fs::read_to_string(path).unwrap().len(), log.len());
    }

    /// What a store without a cache loads (what the log's bytes say).
    async fn decoded(dir: &Path) -> AgentState {
        JsonFileSessionStore::new(dir)
            .load("s")
            .await
            .unwrap()
            .unwrap()
    }

    fn hooks(value: &str) -> Map<String, Value> {
        let mut hooks = Map::new();
        hooks.insert("approval".into(), Value::String(value.into()));
        hooks
    }

    /// A load of a log unchanged since this store saved it returns the saved state (every
    /// field) without reading the file: bytes changed behind the store's back (same id, same
    /// length) are not seen, while a store without a cache sees them. After a rewrite too.
    #[test]
    fn a_load_after_a_save_returns_the_saved_state_without_reading_the_log() {
        block_on(async {
            let dir = temp_dir("cached-load");
            let store = JsonFileSessionStore::new(&dir);
            let path = store.path_of("s").unwrap();
            let first = StateChange::replace(&state(&["question"]))
                .with_metadata(hooks("meta"))
                .with_hooks(hooks("one"));
            let second = step(1, 1, &["answer"])
                .with_metadata(hooks("meta 2"))
                .with_running_tools(vec!["call-1".into()])
                .with_hooks(hooks("two"));
            let expected = second
                .apply("s", Some(first.apply("s", None).unwrap()))
                .unwrap();
            store.save("s", &first).await.unwrap();
            store.save("s", &second).await.unwrap();
            assert_eq!(decoded(&dir).await, expected);
            let loaded = store.load("s").await.unwrap().unwrap();
            assert_eq!(loaded, expected);
            assert_eq!(loaded.revision, 2);
            assert_eq!(loaded.running_tools, ["call-1"]);
            assert_eq!(loaded.hooks, hooks("two"));

            tamper(&path, "question", "QUESTION");
            assert_eq!(texts(&decoded(&dir).await), ["QUESTION", "answer"]);
            assert_eq!(store.load("s").await.unwrap().unwrap(), expected);

            // A change keeping nothing rewrites the log: its state is cached as written.
            let third = step(2, 0, &["fresh start"]).with_hooks(hooks("three"));
            let expected = third.apply("s", Some(expected)).unwrap();
            store.save("s", &third).await.unwrap();
            assert_eq!(decoded(&dir).await, expected);
            tamper(&path, "fresh", "FRESH");
            assert_eq!(store.load("s").await.unwrap().unwrap(), expected);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// Another store value (another process) appends to the log: the next load decodes only
    /// the new records, on top of the cached state (the earlier bytes, changed behind the
    /// store's back, are not read again). After another store rewrites the log (a new
    /// file), the load decodes it all.
    #[test]
    fn a_load_decodes_only_the_records_another_store_appended() {
        block_on(async {
            let (dir, one) = started("cached-growth").await;
            let path = one.path_of("s").unwrap();
            one.save("s", &step(1, 1, &["a"])).await.unwrap();
            let two = JsonFileSessionStore::new(&dir);
            let appended = step(2, 2, &["b"])
                .with_metadata(hooks("two's"))
                .with_running_tools(vec!["call-2".into()]);
            two.save("s", &appended).await.unwrap();
            tamper(&path, "\"q\"", "\"Q\"");

            let loaded = one.load("s").await.unwrap().unwrap();
            assert_eq!(
                (loaded.revision, texts(&loaded)),
                (3, vec!["q".into(), "a".into(), "b".into()])
            );
            assert_eq!(loaded.metadata, hooks("two's"));
            assert_eq!(loaded.running_tools, ["call-2"]);
            assert_eq!(loaded.saved_at, appended.saved_at);
            assert_eq!(texts(&decoded(&dir).await), ["Q", "a", "b"]);
            // Now cached at the new length.
            tamper(&path, "\"b\"", "\"B\"");
            assert_eq!(one.load("s").await.unwrap().unwrap(), loaded);

            two.save("s", &step(3, 0, &["z"])).await.unwrap();
            let loaded = one.load("s").await.unwrap().unwrap();
            assert_eq!((loaded.revision, texts(&loaded)), (4, vec!["z".to_owned()]));
            assert_eq!(loaded, decoded(&dir).await);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// Under a lease, a load goes through the log the lease keeps open: nothing is read
    /// when the cached state is of its length; only what was appended since otherwise
    /// (here by a save through another store value under the same lease).
    #[test]
    fn a_load_under_a_lease_reads_only_what_the_cache_has_not_seen() {
        block_on(async {
            let (dir, one) = started("cached-lease").await;
            let path = one.path_of("s").unwrap();
            let token = CancellationToken::new();
            let lease = one.lease("s", &token).await.unwrap().unwrap();
            let change = fenced(&lease, step(1, 1, &["a"]).with_hooks(hooks("h")));
            one.save("s", &change).await.unwrap();
            let saved = one.load("s").await.unwrap().unwrap();
            assert_eq!(saved, decoded(&dir).await);
            assert_eq!((saved.revision, saved.hooks.clone()), (2, hooks("h")));

            tamper(&path, "\"q\"", "\"Q\"");
            assert_eq!(one.load("s").await.unwrap().unwrap(), saved);

            let two = JsonFileSessionStore::new(&dir);
            let more = fenced(&lease, step(2, 2, &["b"]));
            two.save("s", &more).await.unwrap();
            let loaded = one.load("s").await.unwrap().unwrap();
            assert_eq!(loaded, more.apply("s", Some(saved)).unwrap());
            assert_eq!(texts(&decoded(&dir).await), ["Q", "a", "b"]);
            // `two` has no decoded state: it reads the whole log (through the lease's).
            assert_eq!(
                texts(&two.load("s").await.unwrap().unwrap()),
                ["Q", "a", "b"]
            );
            lease.release().await.unwrap();
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// Decoded states are kept within the budget (in log bytes): a state whose log exceeds
    /// it is never kept, and keeping one more over the budget drops the others. Loads of
    /// states not kept read the log, and return the same.
    #[test]
    fn decoded_states_are_kept_within_the_budget() {
        block_on(async {
            let dir = temp_dir("cached-budget");
            let store = JsonFileSessionStore::new(&dir);
            lock(&store.cache).state_budget = 2048;
            let kept = |session: &str| lock(&store.cache).state(session).is_some();
            let len = |session: &str| {
                fs::metadata(dir.join(format!("{session}.jsonl")))
                    .unwrap()
                    .len()
            };

            let big = StateChange::replace(&state(&[&"x".repeat(3000)]));
            store.save("big", &big).await.unwrap();
            assert!(lock(&store.cache).info("big").is_some());
            assert!(!kept("big"));
            let loaded = store.load("big").await.unwrap().unwrap();
            assert_eq!(loaded, big.apply("big", None).unwrap());
            assert!(!kept("big"));
            // Not kept: the load reads the log.
            tamper(&dir.join("big.jsonl"), "xxx", "yyy");
            assert!(texts(&store.load("big").await.unwrap().unwrap())[0].starts_with("yyy"));

            let a = StateChange::replace(&state(&[&"a".repeat(1200)]));
            let b = StateChange::replace(&state(&[&"b".repeat(1200)]));
            store.save("a", &a).await.unwrap();
            assert!(kept("a"));
            assert_eq!(lock(&store.cache).state_bytes, len("a"));
            store.save("b", &b).await.unwrap();
            assert!(!kept("a") && kept("b"));
            assert_eq!(lock(&store.cache).state_bytes, len("b"));
            assert_eq!(
                store.load("a").await.unwrap().unwrap(),
                a.apply("a", None).unwrap()
            );
            assert!(kept("a") && !kept("b"));
            assert_eq!(lock(&store.cache).state_bytes, len("a"));
            assert_eq!(
                store.load("b").await.unwrap().unwrap(),
                b.apply("b", None).unwrap()
            );
            // Forgetting a session gives its bytes back.
            assert!(store.delete("b").await.unwrap());
            assert_eq!(lock(&store.cache).state_bytes, 0);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    /// A save that fails to append (under a lease) or to rewrite leaves no cached state
    /// that differs from the log: the next load returns what the log holds, and the next
    /// save applies.
    #[test]
    fn a_failed_save_leaves_no_cached_state_that_differs_from_the_log() {
        block_on(async {
            let (dir, store) = started("cached-failure").await;
            let files = store.files("s").unwrap();
            let token = CancellationToken::new();
            let lease = store.lease("s", &token).await.unwrap().unwrap();
            store
                .save("s", &fenced(&lease, step(1, 1, &["a"])))
                .await
                .unwrap();
            let saved = store.load("s").await.unwrap().unwrap();
            assert!(lock(&store.cache).state("s").is_some());
            // The lease's log, read-only: the append's write fails.
            let held = lease::find(&files.lock, lease.fence()).unwrap();
            lock(&held.log).as_mut().unwrap().file = File::open(&files.log).unwrap();
            drop(held);
            let error = store
                .save("s", &fenced(&lease, step(2, 2, &["lost"])))
                .await
                .unwrap_err();
            assert!(matches!(error, SessionError::Io { .. }), "{error:?}");
            let differs = |saved: &AgentState| {
                lock(&store.cache)
                    .state("s")
                    .is_some_and(|(_, cached)| cached != *saved)
            };
            assert!(!differs(&saved));
            assert_eq!(store.load("s").await.unwrap().unwrap(), saved);
            assert_eq!(decoded(&dir).await, saved);
            store
                .save("s", &fenced(&lease, step(2, 2, &["b"])))
                .await
                .unwrap();
            assert_eq!(
                texts(&store.load("s").await.unwrap().unwrap()),
                ["q", "a", "b"]
            );
            lease.release().await.unwrap();

            // A rewrite whose temporary file cannot be created.
            let saved = store.load("s").await.unwrap().unwrap();
            fs::create_dir(files.temp()).unwrap();
            let error = store.save("s", &step(3, 0, &["lost"])).await.unwrap_err();
            assert!(matches!(error, SessionError::Io { .. }), "{error:?}");
            assert!(!differs(&saved));
            assert_eq!(store.load("s").await.unwrap().unwrap(), saved);
            fs::remove_dir(files.temp()).unwrap();
            store.save("s", &step(3, 0, &["z"])).await.unwrap();
            assert_eq!(texts(&store.load("s").await.unwrap().unwrap()), ["z"]);
            assert_eq!(store.load("s").await.unwrap().unwrap(), decoded(&dir).await);
            fs::remove_dir_all(&dir).unwrap();
        });
    }
}
