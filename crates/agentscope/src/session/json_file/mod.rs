//! [`JsonFileSessionStore`]: one append-only JSON Lines log per session in a directory.
//!
//! This file holds the store type, its documentation (the files, the record format, the
//! lock, leases, the cache, what crashes leave behind) and its [`SessionStore`] methods,
//! which validate the id and hand the file work to the rooms below:
//!
//! - `files`: a session's file names, and the file operations every path shares;
//! - `format`: the record format (a record as written and as read, one line's parse);
//! - `replay`: reading a log back (replaying its records, a file of an earlier version);
//! - `cache`: what the store knows of each log, its bounds, and when an entry is trusted;
//! - `lock`: the session's lock file, locked waiting or without waiting;
//! - `lease`: the leases this process holds, by lock file;
//! - `watch`: the thread that checks the lock files of the leases while calls run;
//! - `write`: saves, taking a lease and deletes, under the session's lock;
//! - `read`: loads, which take no lock;
//! - `recent`: `list_recent`, from each log's last record.
//!
//! Their unit tests sit in each room; `tests` tests the store as a whole, by area, and
//! `test_support` holds the helpers both share.

mod cache;
mod files;
mod format;
mod lease;
mod lock;
mod read;
mod recent;
mod replay;
mod watch;
mod write;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentscope_core::CancellationToken;
use agentscope_core::session::{
    AgentState, SessionError, SessionLease, SessionStore, SessionSummary, StateChange,
    validate_session_id,
};
use futures::future::BoxFuture;

use cache::{Cache, LogCache};
use files::{Files, file_work};
use lease::{Holder, JsonFileLease};

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
///   closed or locked (and one `stat` of the lock file: see below). Everything else is as without a lease: the compare-and-swap, the
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
/// - **No renewal, no expiry, but a lock file must stay.** The kernel's lock needs no
///   renewal and holds as long as the holding process lives. It is lost only if the lock
///   file is removed or replaced while held (by hand, by a clean-up job): a process that
///   locks the file now at that path holds the session too. So a lease checks that its
///   lock file is still the file it locked at every fenced save (else the save is refused
///   with [`SessionError::LeaseLost`] and writes nothing) and every second while its call
///   runs: the first time it finds the file removed or replaced, it stops the call (as an
///   interrupt does: its last save is then refused) and logs a warning once (`tracing`).
///   This is the JSON file store's form of the rule every leasing store follows: a holder
///   that can no longer hold its lease stops its call.
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
/// # Listing by recency
///
/// [`list_recent`](SessionStore::list_recent) lists the directory, then reads, for every
/// session whose id starts with the prefix, its log's **last complete record** from the end
/// of the file (a few kilobytes: one `open`, one `fstat`, one read; a longer last record in
/// doubling tails): the record carries the revision and `saved_at` the state has, so
/// nothing is replayed and no message is decoded. It then sorts those summaries and cuts
/// the page in memory. There is no index: a page costs a small read per matching session,
/// its files opened and closed (about 20 µs each on tmpfs on a busy 2-core machine: 43 ms
/// for a page over 2,000 sessions, where loading every session costs 59 ms through a store
/// that holds them decoded and 153 ms through a new one; see `docs/sessions.md`), so for
/// many thousands of sessions listed often, use a store with an index (SQLite on one host).
///
/// A file's modification time is not the state's `saved_at` (a change carries its own
/// time, and a rewrite, a copy or a restore moves the file's), and an index file kept
/// beside the logs would need its own `fsync` at every save, or could disagree with the
/// logs after a crash; the last record is the state's own word, and it costs the saves
/// nothing. A session of an earlier version (`<id>.json`) is read whole.
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
///
/// [`File::lock`]: std::fs::File::lock
/// [`File::sync_data`]: std::fs::File::sync_data
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
    /// use agentscope::prelude::*;
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
    /// use agentscope::prelude::*;
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
        Ok(files::log_of(&self.dir, session))
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
                        return Err(SessionError::lease_lost(session));
                    }
                },
            };
            let cache = Arc::clone(&self.cache);
            let id = session.to_owned();
            let change = change.clone();
            // A fenced save holds the lock already; an unfenced one may wait for it.
            let inline = self.inline_for(&files.lock, held.is_none());
            file_work(inline, Some(session), move || match held {
                Some(held) => write::save_leased(&files, &cache, &id, &change, &held),
                None => write::save(&files, &cache, &id, &change),
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
            if let Some(state) = read::cached_under_lease(&files, &self.cache, session) {
                return Ok(Some(state));
            }
            let cache = Arc::clone(&self.cache);
            let id = session.to_owned();
            file_work(self.inline, Some(session), move || {
                read::load(&files, &cache, &id)
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
            file_work(inline, Some(session), move || {
                write::delete(&files, &cache, &id)
            })
            .await?
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        Box::pin(async move {
            let dir = Arc::clone(&self.dir);
            file_work(self.inline, None, move || files::list_dir(&dir)).await?
        })
    }

    /// Reads the last record of the log of every session whose id starts with `prefix`
    /// (its revision and `saved_at`; no replay, no message decoded), then sorts and pages in
    /// memory; see [Listing by recency](#listing-by-recency).
    ///
    /// # Errors
    ///
    /// The directory or a log could not be read; a session whose last record cannot be read
    /// (no complete record, a damaged one, another format version) is an error naming it.
    fn list_recent<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a SessionSummary>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, SessionError>> {
        Box::pin(async move {
            let dir = Arc::clone(&self.dir);
            let prefix = prefix.to_owned();
            let after = after.cloned();
            file_work(self.inline, None, move || {
                recent::list_recent(&dir, &prefix, after.as_ref(), limit)
            })
            .await?
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
            let fence = format::new_log_id();
            let token = fence.clone();
            let interrupt = interrupt.clone();
            let inline = self.inline_for(&files.lock, true);
            let held = file_work(inline, Some(session), move || {
                write::take_lease(&files, &cache, &id, token, interrupt)
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
