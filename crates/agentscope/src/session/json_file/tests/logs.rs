//! The log on disk: appends and replays, rewrites, torn and corrupt lines, conflicts,
//! temporary files, sessions of earlier versions, missing directories.

use std::fs;
use std::path::PathBuf;

use agentscope_core::Msg;
use agentscope_core::session::{SessionError, SessionStore, StateChange};

use crate::session::json_file::JsonFileSessionStore;
use crate::session::json_file::format::RecordOut;
use crate::session::json_file::test_support::*;
use crate::session::json_file::write::MIN_DEAD_BYTES;
use crate::sync::lock;

/// A store in a fresh directory holding session "s" at revision 2 (messages "q" and "a1"),
/// and the path of its log.
async fn two_records(name: &str) -> (TestDir, JsonFileSessionStore, PathBuf) {
    let (dir, store) = started(name).await;
    store.save("s", &step(1, 1, &["a1"])).await.unwrap();
    let path = store.path_of("s").unwrap();
    (dir, store, path)
}

#[test]
fn steps_append_one_line_each_and_load_replays_them() {
    block_on(async {
        let (dir, store) = started("append").await;
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

        let loaded = must_load(&store, "s").await;
        assert_holds(&loaded, 3, &["q", "a1", "a2", "a3"]);
        assert!(loaded.running_tools.is_empty());
        assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);
        // A new store (another process) loads the same.
        assert_eq!(decoded(&dir).await, loaded);
    });
}

/// A process killed in the middle of an append leaves a last line without its `\n`:
/// loads ignore it, and the next save rewrites the log without it.
#[test]
fn a_torn_last_line_is_ignored_and_repaired() {
    block_on(async {
        let (dir, store, path) = two_records("torn").await;
        let good = fs::read(&path).unwrap();
        let (line, _) = RecordOut::of_change(&step(2, 2, &["lost"]))
            .encode("s")
            .unwrap();
        let mut torn = good.clone();
        torn.extend_from_slice(&line[..line.len() / 2]);
        fs::write(&path, &torn).unwrap();

        for store in [store.clone(), JsonFileSessionStore::new(&dir)] {
            assert_holds(&must_load(&store, "s").await, 2, &["q", "a1"]);
        }
        assert_eq!(fs::read(&path).unwrap(), torn, "loads change nothing");

        // The next save (of a store whose cache predates the torn write) repairs it.
        assert_eq!(store.save("s", &step(2, 2, &["a2"])).await.unwrap(), 3);
        let repaired = fs::read_to_string(&path).unwrap();
        assert!(repaired.ends_with('\n'));
        assert_eq!(repaired.lines().count(), 1, "rewritten as one record");
        assert_holds(&decoded(&dir).await, 3, &["q", "a1", "a2"]);
        assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);
    });
}

#[test]
fn a_corrupt_line_is_reported_with_its_number_by_loads_and_saves() {
    block_on(async {
        let (dir, store, path) = two_records("corrupt").await;
        store.save("s", &step(2, 2, &["a2"])).await.unwrap();
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
        // What a store without a cache reports of the log `text`.
        let error_of = async |text: &str| {
            fs::write(&path, text).unwrap();
            JsonFileSessionStore::new(&dir).load("s").await.unwrap_err()
        };
        // A record keeping more messages than are stored, a system message, another
        // format version.
        let more = lines[2].replacen("\"kept\":2", "\"kept\":7", 1);
        let system = lines[2].replacen("\"role\":\"assistant\"", "\"role\":\"system\"", 1);
        let newer = lines[2].replacen("\"version\":1", "\"version\":2", 1);
        let cases = [
            (
                &more,
                "line 3: the record keeps 7 messages but 2 are stored".to_owned(),
            ),
            (
                &system,
                "line 3: message 2 has the system role; agent memory never holds system messages"
                    .to_owned(),
            ),
        ];
        for (line, message) in cases {
            let error = error_of(&format!("{}\n{}\n{line}\n", lines[0], lines[1])).await;
            assert_eq!(
                error.to_string(),
                format!("session 's' is corrupt: {}: {message}", path.display())
            );
        }
        let error = error_of(&format!("{}\n{}\n{newer}\n", lines[0], lines[1])).await;
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
        let error = error_of(&lines[0][..20]).await;
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
    });
}

#[test]
fn a_conflict_leaves_the_file_byte_identical() {
    block_on(async {
        let (dir, store, path) = two_records("conflict").await;
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
        let mut system = step(2, 2, &[]);
        system.appended.push(Msg::system("x"));
        for invalid in [step(2, 3, &["x"]), system] {
            let error = store.save("s", &invalid).await.unwrap_err();
            assert!(
                matches!(error, SessionError::InvalidChange { .. }),
                "{error:?}"
            );
        }
        assert_eq!(fs::read(&path).unwrap(), before);
        assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);
    });
}

/// Rewrites (compactions) keep the loaded state: after a change dropping some messages,
/// after a change keeping none, and when repeated metadata outweighs the messages.
#[test]
fn rewrites_keep_the_loaded_state() {
    block_on(async {
        let (dir, store) = fresh("compact");
        let path = store.path_of("s").unwrap();
        store
            .save("s", &StateChange::replace(&state(&["1", "2", "3"])))
            .await
            .unwrap();
        store.save("s", &step(1, 3, &["4"])).await.unwrap();
        assert_eq!(log_lines(&path), 2);

        // Dropping messages from the end: the result is written as one record.
        store.save("s", &step(2, 2, &["x"])).await.unwrap();
        assert_eq!(log_lines(&path), 1);
        assert_holds(&must_load(&store, "s").await, 3, &["1", "2", "x"]);

        // Keeping none: the change is the new log.
        store.save("s", &step(3, 3, &["y"])).await.unwrap();
        store.save("s", &step(4, 0, &["only"])).await.unwrap();
        assert_eq!(log_lines(&path), 1);
        assert_holds(&must_load(&store, "s").await, 5, &["only"]);

        // 4 KiB of metadata per record, one short message per step: the dead metadata
        // outgrows the live state, and the log is rewritten before it is twice that.
        let metadata = blob(4096);
        let mut expected = vec!["only".to_owned()];
        let mut max_len = 0;
        let mut rewrites = 0;
        for revision in 5..80u64 {
            let text = format!("step {revision}");
            let change = step(revision, expected.len(), &[&text]).with_metadata(metadata.clone());
            store.save("s", &change).await.unwrap();
            expected.push(text);
            let len = fs::metadata(&path).unwrap().len();
            if log_lines(&path) == 1 {
                rewrites += 1;
            }
            max_len = max_len.max(len);
        }
        assert!(rewrites >= 1, "the log was never rewritten");
        assert!(max_len < 2 * MIN_DEAD_BYTES + 16 * 1024, "{max_len}");
        let loaded = decoded(&dir).await;
        assert_eq!(loaded.revision, 80);
        assert_eq!(texts(&loaded), expected);
        assert_eq!(loaded.metadata, metadata);
        assert_eq!(must_load(&store, "s").await, loaded);
        assert_eq!(names(&dir), [".s.lock", "s.jsonl"]);
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
        assert_eq!(texts(&must_load(&store, "s").await), ["q"]);

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
    });
}

/// A `.json` file of an earlier version loads as it is; its first save (from its
/// revision) writes a log and removes it.
#[test]
fn a_legacy_json_file_is_read_and_migrated() {
    block_on(async {
        let (dir, store) = fresh("legacy");
        // As the earlier version wrote it: pretty-printed, without a revision.
        let old = state(&["old question", "old answer"]).with_metadata_entry("user", "alice");
        let mut value = serde_json::to_value(&old).unwrap();
        value.as_object_mut().unwrap().remove("revision");
        let write_legacy = |session: &str| {
            let bytes = serde_json::to_vec_pretty(&value).unwrap();
            fs::write(dir.join(format!("{session}.json")), bytes).unwrap();
        };
        write_legacy("s");
        write_legacy("t");
        assert_eq!(store.list().await.unwrap(), ["s", "t"]);
        let loaded = must_load(&store, "s").await;
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
        let loaded = decoded(&dir).await;
        assert_holds(&loaded, 1, &["old question", "old answer", "new answer"]);
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
        write_legacy("u");
        assert!(store.delete("u").await.unwrap());
        assert!(!store.delete("u").await.unwrap());
        // Both files (a crash between writing the log and removing the `.json` file):
        // the log wins, listed once, and the next save sweeps the `.json` file.
        write_legacy("s");
        assert_eq!(store.list().await.unwrap(), ["s", "t"]);
        assert_eq!(must_load(&store, "s").await.revision, 2);
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
    });
}

#[test]
fn missing_directories_hold_no_sessions_and_invalid_ids_touch_nothing() {
    block_on(async {
        let parent = TestDir::new("missing");
        let dir = parent.join("not-yet");
        let store = JsonFileSessionStore::new(&dir);
        assert_eq!(store.load("s").await.unwrap(), None);
        assert!(!store.delete("s").await.unwrap());
        assert!(store.list().await.unwrap().is_empty());
        assert!(!dir.exists());
        let change = StateChange::replace(&state(&["x"]));
        for id in ["", ".s", "../s", "a/b"] {
            let error = store.save(id, &change).await.unwrap_err();
            assert!(
                matches!(error, SessionError::InvalidSessionId { .. }),
                "{error:?}"
            );
        }
        assert!(!dir.exists());
        store.save("s", &change).await.unwrap();
        assert_eq!(store.list().await.unwrap(), ["s"]);
    });
}
