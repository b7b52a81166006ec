//! Listing by recency: a session's revision and `saved_at` are those of its log's last
//! complete record, found from the end of the file and read up to its messages, without
//! replaying the log; a whole-state
//! file of an earlier version is read whole. The directory holds no index: a page reads the
//! last record of every session whose id matches, then sorts and cuts in memory.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use agentscope_core::session::{SessionError, SessionSummary};

use super::files::{Files, file_len, io_error, list_dir};
use super::format::{At, Head, parse_head};
use super::replay::{no_complete_record, read_legacy};

/// How much of a log's end is read first: a step's record (a reply and a tool result) is a
/// few kilobytes at most; a longer last record is read in doubling tails.
const TAIL: u64 = 8 * 1024;

/// The page of `list_recent` over the sessions in `dir` (see
/// [`SessionStore::list_recent`](agentscope_core::session::SessionStore::list_recent)).
pub(super) fn list_recent(
    dir: &Path,
    prefix: &str,
    after: Option<&SessionSummary>,
    limit: usize,
) -> Result<Vec<SessionSummary>, SessionError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let dir: std::sync::Arc<Path> = std::sync::Arc::from(dir);
    let mut summaries = Vec::new();
    for id in list_dir(&dir)? {
        if !id.starts_with(prefix) {
            continue;
        }
        let files = Files::new(&dir, &id);
        if let Some(summary) = summary(&files, id)?
            && after.is_none_or(|cursor| summary.is_after(cursor))
        {
            summaries.push(summary);
        }
    }
    Ok(SessionSummary::page(summaries, prefix, after, limit))
}

/// The summary of session `id` (files `files`): from its log's last complete record, else
/// from a whole-state file of an earlier version; `None` when it has neither (deleted since
/// the directory was listed).
fn summary(files: &Files, id: String) -> Result<Option<SessionSummary>, SessionError> {
    match File::open(&files.log) {
        Ok(mut file) => {
            let record = last_record(&id, &files.log, &mut file)?;
            Ok(Some(SessionSummary::new(
                id,
                record.revision,
                record.saved_at,
            )))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            Ok(read_legacy(&id, &files.legacy())?.map(|state| SessionSummary::of(id, &state)))
        }
        Err(error) => Err(io_error(&id, "reading", &files.log, error)),
    }
}

/// The head of the last complete record of log `path` (open as `file`): the line before
/// the log's last `\n`, found from the end (the bytes after that `\n`, an interrupted
/// append, are ignored, as loads ignore them), read up to its messages.
fn last_record(session: &str, path: &Path, file: &mut File) -> Result<Head, SessionError> {
    // The log only grows, and a rewrite replaces the file: the first `len` bytes of the
    // file open here never change.
    let len = file_len(session, path, file)?;
    let mut tail = TAIL.min(len);
    loop {
        let start = len - tail;
        let mut bytes = vec![0; usize::try_from(tail).unwrap_or(usize::MAX)];
        file.seek(SeekFrom::Start(start))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|error| io_error(session, "reading", path, error))?;
        // The end of the last complete record.
        let Some(end) = bytes.iter().rposition(|byte| *byte == b'\n') else {
            if start == 0 {
                return Err(no_complete_record(session, path));
            }
            tail = (tail * 2).min(len);
            continue;
        };
        // Its start: after the `\n` before it, or the start of the file.
        match bytes[..end].iter().rposition(|byte| *byte == b'\n') {
            Some(before) => {
                return parse_head(session, path, At::Last, &bytes[before + 1..end]);
            }
            None if start == 0 => return parse_head(session, path, At::Last, &bytes[..end]),
            None => tail = (tail * 2).min(len),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use agentscope_core::session::{SessionStore, StateChange};

    use super::*;
    use crate::session::json_file::JsonFileSessionStore;
    use crate::session::json_file::test_support::{TestDir, block_on, state, step};

    /// The last record is found however its line falls across the tails read: records
    /// longer than the first tail, a log of one long record, a torn last line.
    #[test]
    fn the_last_record_is_read_from_the_end() {
        let dir = TestDir::new("recent-tail");
        let store = JsonFileSessionStore::new(&*dir);
        let path = store.path_of("s").unwrap();
        let long = "x".repeat(3 * TAIL as usize);
        let mut first = state(&[&long]);
        first.revision = 0;
        block_on(store.save("s", &StateChange::replace(&first))).unwrap();
        let read = |expected: u64| {
            let mut file = File::open(&path).unwrap();
            let record = last_record("s", &path, &mut file).unwrap();
            assert_eq!(record.revision, expected);
            record
        };
        // One record, longer than the first tail.
        assert_eq!(read(1).saved_at, first.saved_at);
        // A short record after it, then a long one.
        let mut short = step(1, 1, &["a"]);
        short.saved_at = first.saved_at + chrono::Duration::nanoseconds(7);
        block_on(store.save("s", &short)).unwrap();
        assert_eq!(read(2).saved_at, short.saved_at);
        let long_step = step(2, 2, &[&long]);
        block_on(store.save("s", &long_step)).unwrap();
        assert_eq!(read(3).saved_at, long_step.saved_at);
        // An interrupted append: its bytes are ignored.
        let mut torn = fs::read(&path).unwrap();
        torn.extend_from_slice(br#"{"version":1,"revision":4,"kept":3,"#);
        fs::write(&path, &torn).unwrap();
        assert_eq!(read(3).saved_at, long_step.saved_at);
        // Nothing complete at all.
        fs::write(&path, br#"{"version":1,"revision":1"#).unwrap();
        let mut file = File::open(&path).unwrap();
        let Err(error) = last_record("s", &path, &mut file) else {
            panic!("no complete record")
        };
        assert_eq!(
            error.to_string(),
            format!(
                "session 's' is corrupt: {}: the log holds no complete record",
                path.display()
            )
        );
        // A damaged last record is named as such.
        fs::write(&path, b"{\"version\":1}\n").unwrap();
        let mut file = File::open(&path).unwrap();
        let Err(error) = last_record("s", &path, &mut file) else {
            panic!("a damaged record")
        };
        assert!(
            error.to_string().starts_with(&format!(
                "session 's' is corrupt: {}: the last record: missing field `revision`",
                path.display()
            )),
            "{error}"
        );
    }

    /// A session of an earlier version (`<id>.json`, one whole state) is listed from that
    /// state, in its place among the logs.
    #[test]
    fn a_whole_state_file_of_an_earlier_version_is_listed() {
        let dir = TestDir::new("recent-legacy");
        let store = JsonFileSessionStore::new(&*dir);
        let mut log = state(&["q"]);
        log.saved_at = chrono::DateTime::from_timestamp(1_800_000_000, 2).unwrap();
        block_on(store.save("log", &StateChange::replace(&log))).unwrap();
        let mut old = state(&["old"]);
        old.revision = 4;
        old.saved_at = chrono::DateTime::from_timestamp(1_800_000_000, 3).unwrap();
        fs::write(dir.join("old.json"), old.encode("old").unwrap()).unwrap();
        assert_eq!(
            block_on(store.list_recent("", None, 10)).unwrap(),
            [
                SessionSummary::new("old", 4, old.saved_at),
                SessionSummary::new("log", 1, log.saved_at)
            ]
        );
    }
}
