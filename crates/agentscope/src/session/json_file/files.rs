//! The files of a session in the store's directory, and the file operations every path of
//! the store shares: naming a session's files, reading a log from an offset, removing a file
//! that may be gone, syncing the directory, listing the sessions, the I/O errors that name
//! the file, and where blocking file work runs ([`file_work`]).

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{MAIN_SEPARATOR_STR, Path, PathBuf};
use std::sync::Arc;

use agentscope_core::session::{SessionError, run_blocking, validate_session_id};

/// What follows a session id in its log's name.
const LOG_SUFFIX: &str = ".jsonl";
/// The extension of session logs.
const LOG_EXTENSION: &str = LOG_SUFFIX.split_at(1).1;
/// The extension of whole-state files written by earlier versions of the store.
const LEGACY_EXTENSION: &str = "json";

/// The files of one session. The log and the lock are named at every store operation; the
/// rarely used temporary and legacy files are named on demand.
pub(super) struct Files {
    pub(super) dir: Arc<Path>,
    /// `<id>.jsonl`.
    pub(super) log: PathBuf,
    /// `.<id>.lock`.
    pub(super) lock: PathBuf,
}

impl Files {
    /// The files of session `session` (a valid id) in `dir`.
    pub(super) fn new(dir: &Arc<Path>, session: &str) -> Self {
        Self {
            dir: Arc::clone(dir),
            log: log_of(dir, session),
            lock: file_in(dir, ".", session, ".lock"),
        }
    }

    /// `<id>.json`: the whole-state file of earlier versions.
    pub(super) fn legacy(&self) -> PathBuf {
        self.log.with_extension(LEGACY_EXTENSION)
    }

    /// `.<id>.jsonl.tmp`: a rewrite's temporary file.
    pub(super) fn temp(&self) -> PathBuf {
        let mut name = std::ffi::OsString::from(".");
        name.push(self.log.file_name().unwrap_or_default());
        name.push(".tmp");
        self.dir.join(name)
    }
}

/// `<dir>/<session>.jsonl`: the log of session `session` (a valid id).
pub(super) fn log_of(dir: &Path, session: &str) -> PathBuf {
    file_in(dir, "", session, LOG_SUFFIX)
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
pub(super) fn io_error(session: &str, what: &str, path: &Path, error: io::Error) -> SessionError {
    SessionError::io(
        Some(session),
        format_args!("{what} {}", path.display()),
        error,
    )
}

/// Removes `path`; returns whether it existed.
pub(super) fn remove_if_exists(session: &str, path: &Path) -> Result<bool, SessionError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(io_error(session, "removing", path, error)),
    }
}

/// Makes a rename or removal in `dir` durable (Unix; elsewhere the rename is what we have).
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
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

/// The length of the log open as `file`.
pub(super) fn file_len(session: &str, path: &Path, file: &File) -> Result<u64, SessionError> {
    Ok(file
        .metadata()
        .map_err(|error| io_error(session, "reading the metadata of", path, error))?
        .len())
}

/// Reads log `file` from `offset` to its end.
pub(super) fn read_from(
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

/// The session ids in `dir`, sorted: files `<valid id>.jsonl` and `<valid id>.json` (the
/// lock and temporary files start with `.` and are not valid ids).
pub(super) fn list_dir(dir: &Path) -> Result<Vec<String>, SessionError> {
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

/// Runs blocking file work inline when asked (`inline`, the store's
/// [`inline`](super::JsonFileSessionStore::inline)), else where every store runs its blocking
/// work ([`run_blocking`]: tokio's blocking pool inside a tokio runtime, inline otherwise).
pub(super) async fn file_work<T, F>(
    inline: bool,
    session: Option<&str>,
    work: F,
) -> Result<T, SessionError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match inline {
        true => Ok(work()),
        false => run_blocking(session, work).await,
    }
}
