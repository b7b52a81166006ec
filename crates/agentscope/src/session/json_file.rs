//! [`JsonFileSessionStore`]: one JSON file per session in a directory, written atomically.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{AgentState, SessionError, SessionStore, run_blocking, validate_session_id};

/// The extension of session files.
const EXTENSION: &str = "json";

/// Stores each session as `<dir>/<session id>.json`, the embedded default store.
///
/// Writes are atomic: the state goes to a temporary file in the same directory
/// (`.<id>.json.tmp-<uuid>`), which is flushed to disk (`fsync`) and then renamed over the
/// session file (and, on Unix, the directory is synced so the rename itself survives a power
/// loss). A crash at any moment leaves either the old session or the new one, never a
/// half-written file. A crash can leave a temporary file behind: it starts with `.`, so
/// [`list`](SessionStore::list) and [`load`](SessionStore::load) never see it, and it can be
/// deleted at any time.
///
/// The directory is created on the first save; a missing directory holds no sessions.
/// Session ids must pass [`validate_session_id`](super::validate_session_id) (letters,
/// digits, `-`, `_`, `.`; no path separators), so an id can never name a file outside the
/// directory. Files are pretty-printed JSON in the format of [`AgentState`]: easy to read,
/// diff and back up.
///
/// Several processes may share the directory (a rename replaces a file atomically), but the
/// last save of a session wins: see `docs/sessions.md` for sharing sessions between service
/// instances. File work runs on tokio's blocking thread pool when called inside a tokio
/// runtime, and inline otherwise.
///
/// A cheap `Clone` handle.
///
/// ```
/// use agentscope::session::{AgentIdentity, AgentState, JsonFileSessionStore, SessionStore};
/// use agentscope::Msg;
///
/// # let dir = std::env::temp_dir().join(format!("agentscope-doc-{}", std::process::id()));
/// # futures::executor::block_on(async {
/// let store = JsonFileSessionStore::new(&dir);
/// let state = AgentState::new(AgentIdentity::new("assistant", "a1"), vec![Msg::user("hi")]);
/// store.save("chat-1", &state).await?;
/// assert_eq!(store.load("chat-1").await?, Some(state));
/// assert_eq!(store.list().await?, ["chat-1"]);
/// assert!(dir.join("chat-1.json").exists());
/// assert!(store.delete("chat-1").await?);
/// assert_eq!(store.load("chat-1").await?, None);
/// # Ok::<(), agentscope::session::SessionError>(())
/// # }).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct JsonFileSessionStore {
    dir: Arc<Path>,
    /// Test-only fault injection: stop after writing the temporary file, as a crash would.
    #[cfg(test)]
    crash_before_rename: bool,
}

impl JsonFileSessionStore {
    /// A store keeping its sessions in `dir` (created on the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Arc::from(dir.into()),
            #[cfg(test)]
            crash_before_rename: false,
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding session `session`.
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidSessionId`] when `session` is not a valid id.
    pub fn path_of(&self, session: &str) -> Result<PathBuf, SessionError> {
        validate_session_id(session)?;
        Ok(self.dir.join(format!("{session}.{EXTENSION}")))
    }
}

impl SessionStore for JsonFileSessionStore {
    fn save<'a>(
        &'a self,
        session: &'a str,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let path = self.path_of(session)?;
            let bytes = serde_json::to_vec_pretty(state).map_err(|error| {
                SessionError::corrupt(session, format_args!("cannot serialise: {error}"))
            })?;
            let dir = Arc::clone(&self.dir);
            let id = session.to_owned();
            #[cfg(test)]
            let crash = self.crash_before_rename;
            #[cfg(not(test))]
            let crash = false;
            run_blocking(Some(session), move || {
                write_atomic(&dir, &id, &path, &bytes, crash)
            })
            .await?
        })
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        Box::pin(async move {
            let path = self.path_of(session)?;
            let id = session.to_owned();
            let bytes = run_blocking(Some(session), move || match fs::read(&path) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(error) => Err(SessionError::io(
                    Some(&id),
                    format_args!("reading {}", path.display()),
                    error,
                )),
            })
            .await??;
            bytes
                .map(|bytes| AgentState::decode(session, &bytes))
                .transpose()
        })
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(async move {
            let path = self.path_of(session)?;
            let id = session.to_owned();
            run_blocking(Some(session), move || match fs::remove_file(&path) {
                Ok(()) => Ok(true),
                Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
                Err(error) => Err(SessionError::io(
                    Some(&id),
                    format_args!("deleting {}", path.display()),
                    error,
                )),
            })
            .await?
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        Box::pin(async move {
            let dir = Arc::clone(&self.dir);
            run_blocking(None, move || list_dir(&dir)).await?
        })
    }
}

/// Writes `bytes` to a temporary file next to `path`, syncs it, and renames it over `path`.
/// With `crash`, stops after the temporary file is written, leaving it behind as a crash
/// would.
fn write_atomic(
    dir: &Path,
    session: &str,
    path: &Path,
    bytes: &[u8],
    crash: bool,
) -> Result<(), SessionError> {
    let io_error = |what: &str, target: &Path, error: io::Error| {
        SessionError::io(
            Some(session),
            format_args!("{what} {}", target.display()),
            error,
        )
    };
    fs::create_dir_all(dir).map_err(|error| io_error("creating directory", dir, error))?;
    let temp = dir.join(format!(
        ".{session}.{EXTENSION}.tmp-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let written = File::create_new(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(io_error("writing", &temp, error));
    }
    if crash {
        return Err(io_error(
            "renaming",
            &temp,
            io::Error::other("simulated crash before rename"),
        ));
    }
    if let Err(error) = fs::rename(&temp, path) {
        let _ = fs::remove_file(&temp);
        return Err(io_error("renaming", &temp, error));
    }
    sync_dir(dir).map_err(|error| io_error("syncing directory", dir, error))
}

/// Makes a rename in `dir` durable (Unix; elsewhere the rename is what we have).
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

/// The session ids in `dir`, sorted: files `<valid id>.json` (temporary files start with `.`
/// and are not valid ids).
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
        if path.extension().and_then(|ext| ext.to_str()) != Some(EXTENSION) {
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
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::AgentIdentity;
    use agentscope_core::Msg;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "agentscope-json-store-{name}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn state(text: &str) -> AgentState {
        AgentState::new(AgentIdentity::new("a", "1"), vec![Msg::user(text)])
    }

    /// A crash between writing the temporary file and renaming it leaves the old session
    /// intact and loadable; the temporary file is ignored by list() and load(), and the next
    /// save succeeds.
    #[test]
    fn crash_between_temp_write_and_rename_keeps_the_old_session() {
        futures::executor::block_on(async {
            let dir = temp_dir("crash");
            let store = JsonFileSessionStore::new(&dir);
            let old = state("old");
            store.save("s1", &old).await.unwrap();
            let old_bytes = fs::read(dir.join("s1.json")).unwrap();

            let crashing = JsonFileSessionStore {
                crash_before_rename: true,
                ..store.clone()
            };
            let new = state("new");
            let err = crashing.save("s1", &new).await.unwrap_err();
            let message = err.to_string();
            assert!(
                message.starts_with("session 's1': I/O error: renaming ")
                    && message.ends_with(": simulated crash before rename"),
                "{message}"
            );

            // The temporary file with the complete new state is left behind, as after a crash.
            let mut names: Vec<String> = fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            assert_eq!(names.len(), 2, "{names:?}");
            assert_eq!(names[1], "s1.json");
            assert!(names[0].starts_with(".s1.json.tmp-"), "{names:?}");
            let temp = fs::read(dir.join(&names[0])).unwrap();
            assert_eq!(serde_json::from_slice::<AgentState>(&temp).unwrap(), new);

            // The old session is intact: same bytes, loads, and is the only one listed.
            assert_eq!(fs::read(dir.join("s1.json")).unwrap(), old_bytes);
            assert_eq!(store.load("s1").await.unwrap(), Some(old.clone()));
            assert_eq!(store.list().await.unwrap(), ["s1"]);

            // A later save replaces it; the stale temporary file is still ignored.
            let newer = state("newer");
            store.save("s1", &newer).await.unwrap();
            assert_eq!(store.load("s1").await.unwrap(), Some(newer));
            assert_eq!(store.list().await.unwrap(), ["s1"]);
            fs::remove_dir_all(&dir).unwrap();
        });
    }

    #[test]
    fn a_crash_leaves_no_session_where_there_was_none() {
        futures::executor::block_on(async {
            let dir = temp_dir("crash-new");
            let crashing = JsonFileSessionStore {
                crash_before_rename: true,
                ..JsonFileSessionStore::new(&dir)
            };
            assert!(crashing.save("s1", &state("x")).await.is_err());
            let store = JsonFileSessionStore::new(&dir);
            assert_eq!(store.load("s1").await.unwrap(), None);
            assert!(store.list().await.unwrap().is_empty());
            fs::remove_dir_all(&dir).unwrap();
        });
    }
}
