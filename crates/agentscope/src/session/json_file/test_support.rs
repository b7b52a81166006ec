//! What the tests of the JSON file store share: fresh directories that clean up after
//! themselves, the states and changes they save, and the loads and checks they repeat.

use std::fs::{self, File, TryLockError};
use std::ops::Deref;
use std::path::{Path, PathBuf};

use agentscope_core::session::{
    AgentIdentity, AgentState, SessionError, SessionLease, SessionStore, StateChange,
};
use agentscope_core::{CancellationToken, Msg};
use serde_json::{Map, Value};

use super::JsonFileSessionStore;

/// A fresh directory, removed when the test ends (kept when it fails, to look at).
pub(super) struct TestDir(PathBuf);

impl TestDir {
    pub(super) fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "agentscope-json-store-{name}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Deref for TestDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl From<&TestDir> for PathBuf {
    fn from(dir: &TestDir) -> Self {
        dir.0.clone()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            fs::remove_dir_all(&self.0).unwrap();
        }
    }
}

pub(super) fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

pub(super) fn agent() -> AgentIdentity {
    AgentIdentity::new("a", "1")
}

/// A state of user messages `texts`.
pub(super) fn state(texts: &[&str]) -> AgentState {
    AgentState::new(agent(), texts.iter().map(|text| Msg::user(*text)).collect())
}

/// A step from revision `base` keeping `kept` messages and appending assistant messages
/// `texts`.
pub(super) fn step(base: u64, kept: usize, texts: &[&str]) -> StateChange {
    let messages = texts.iter().map(|text| Msg::assistant(*text)).collect();
    StateChange::new(base, kept, messages, agent())
}

/// A hooks' state (or metadata) of one entry.
pub(super) fn hooks(value: &str) -> Map<String, Value> {
    let mut hooks = Map::new();
    hooks.insert("approval".into(), Value::String(value.into()));
    hooks
}

/// Metadata of one entry of `bytes` bytes.
pub(super) fn blob(bytes: usize) -> Map<String, Value> {
    let mut metadata = Map::new();
    metadata.insert("blob".into(), Value::String("m".repeat(bytes)));
    metadata
}

pub(super) fn texts(state: &AgentState) -> Vec<String> {
    state.messages.iter().map(Msg::text).collect()
}

/// Checks the revision and the message texts of `state`.
#[track_caller]
pub(super) fn assert_holds(state: &AgentState, revision: u64, expected: &[&str]) {
    assert_eq!(
        (state.revision, texts(state)),
        (revision, strings(expected))
    );
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|text| (*text).to_owned()).collect()
}

/// A store in a fresh directory.
pub(super) fn fresh(name: &str) -> (TestDir, JsonFileSessionStore) {
    let dir = TestDir::new(name);
    let store = JsonFileSessionStore::new(&dir);
    (dir, store)
}

/// A store in a fresh directory holding session "s" at revision 1 (one message, "q").
pub(super) async fn started(name: &str) -> (TestDir, JsonFileSessionStore) {
    let (dir, store) = fresh(name);
    let revision = store
        .save("s", &StateChange::replace(&state(&["q"])))
        .await
        .unwrap();
    assert_eq!(revision, 1);
    (dir, store)
}

/// A store in a fresh directory holding session "s" at revision 1 (one message, "q"), and a
/// lease it holds on the session.
pub(super) async fn started_leased(name: &str) -> (TestDir, JsonFileSessionStore, SessionLease) {
    let (dir, store) = started(name).await;
    let lease = leased(&store, "s").await;
    (dir, store, lease)
}

/// Two stores on one fresh directory (two processes), session "s" saved through the first
/// at revision 2 (messages "q" and "a").
pub(super) async fn two_stores(
    name: &str,
) -> (TestDir, JsonFileSessionStore, JsonFileSessionStore) {
    let (dir, one) = started(name).await;
    let two = JsonFileSessionStore::new(&dir);
    one.save("s", &step(1, 1, &["a"])).await.unwrap();
    (dir, one, two)
}

/// What `store` loads of session `session`, which exists.
pub(super) async fn must_load(store: &JsonFileSessionStore, session: &str) -> AgentState {
    store.load(session).await.unwrap().unwrap()
}

/// What a store without a cache loads of session "s" (what the log's bytes say).
pub(super) async fn decoded(dir: &Path) -> AgentState {
    must_load(&JsonFileSessionStore::new(dir), "s").await
}

/// The lines of the log at `path`.
pub(super) fn log_lines(path: &Path) -> usize {
    fs::read_to_string(path).unwrap().lines().count()
}

/// The file names in `dir`, sorted.
pub(super) fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[track_caller]
pub(super) fn assert_conflict(error: &SessionError, expected: u64, found: u64) {
    match error {
        SessionError::Conflict {
            expected: e,
            found: f,
            ..
        } => assert_eq!((*e, *f), (expected, found)),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// A lease of `store` on session `session`, with an interrupt token of its own.
pub(super) async fn leased(store: &JsonFileSessionStore, session: &str) -> SessionLease {
    let token = CancellationToken::new();
    store.lease(session, &token).await.unwrap().unwrap()
}

/// `change` fenced by `lease`.
pub(super) fn fenced(lease: &SessionLease, change: StateChange) -> StateChange {
    change.with_fence(lease.fence())
}

/// Whether a lock file handle of its own (as another process has) can lock `path` now.
pub(super) fn lockable(path: &Path) -> bool {
    let file = File::open(path).unwrap();
    match file.try_lock() {
        Ok(()) => true,
        Err(TryLockError::WouldBlock) => false,
        Err(TryLockError::Error(error)) => panic!("{error}"),
    }
}
