//! The decoded states in the cache: loads that read nothing, or only what the cache has not
//! seen, the budget, and failed saves.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use agentscope_core::session::{AgentState, SessionError, SessionStore, StateChange};

use crate::session::json_file::JsonFileSessionStore;
use crate::session::json_file::lease;
use crate::session::json_file::test_support::*;
use crate::sync::lock;

/// Changes the text `from` in the log of `path` to `to` (of the same length), at its first
/// occurrence after the first record's id, in place (the same file, the same length): what
/// a reader that trusts its cache cannot notice.
fn tamper(path: &Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let log = fs::read_to_string(path).unwrap();
    let offset = 60 + log[60..].find(from).unwrap();
    let mut file = OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(offset as u64)).unwrap();
    file.write_all(to.as_bytes()).unwrap();
    assert_eq!(fs::read_to_string(path).unwrap().len(), log.len());
}

/// A load of a log unchanged since this store saved it returns the saved state (every
/// field) without reading the file: bytes changed behind the store's back (same id, same
/// length) are not seen, while a store without a cache sees them. After a rewrite too.
#[test]
fn a_load_after_a_save_returns_the_saved_state_without_reading_the_log() {
    block_on(async {
        let (dir, store) = fresh("cached-load");
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
        let loaded = must_load(&store, "s").await;
        assert_eq!(loaded, expected);
        assert_eq!(loaded.revision, 2);
        assert_eq!(loaded.running_tools, ["call-1"]);
        assert_eq!(loaded.hooks, hooks("two"));

        tamper(&path, "question", "QUESTION");
        assert_eq!(texts(&decoded(&dir).await), ["QUESTION", "answer"]);
        assert_eq!(must_load(&store, "s").await, expected);

        // A change keeping nothing rewrites the log: its state is cached as written.
        let third = step(2, 0, &["fresh start"]).with_hooks(hooks("three"));
        let expected = third.apply("s", Some(expected)).unwrap();
        store.save("s", &third).await.unwrap();
        assert_eq!(decoded(&dir).await, expected);
        tamper(&path, "fresh", "FRESH");
        assert_eq!(must_load(&store, "s").await, expected);
    });
}

/// Another store value (another process) appends to the log: the next load decodes only
/// the new records, on top of the cached state (the earlier bytes, changed behind the
/// store's back, are not read again). After another store rewrites the log (a new
/// file), the load decodes it all.
#[test]
fn a_load_decodes_only_the_records_another_store_appended() {
    block_on(async {
        let (dir, one, two) = two_stores("cached-growth").await;
        let path = one.path_of("s").unwrap();
        let appended = step(2, 2, &["b"])
            .with_metadata(hooks("two's"))
            .with_running_tools(vec!["call-2".into()]);
        two.save("s", &appended).await.unwrap();
        tamper(&path, "\"q\"", "\"Q\"");

        let loaded = must_load(&one, "s").await;
        assert_holds(&loaded, 3, &["q", "a", "b"]);
        assert_eq!(loaded.metadata, hooks("two's"));
        assert_eq!(loaded.running_tools, ["call-2"]);
        assert_eq!(loaded.saved_at, appended.saved_at);
        assert_eq!(texts(&decoded(&dir).await), ["Q", "a", "b"]);
        // Now cached at the new length.
        tamper(&path, "\"b\"", "\"B\"");
        assert_eq!(must_load(&one, "s").await, loaded);

        two.save("s", &step(3, 0, &["z"])).await.unwrap();
        let loaded = must_load(&one, "s").await;
        assert_holds(&loaded, 4, &["z"]);
        assert_eq!(loaded, decoded(&dir).await);
    });
}

/// Under a lease, a load goes through the log the lease keeps open: nothing is read
/// when the cached state is of its length; only what was appended since otherwise
/// (here by a save through another store value under the same lease).
#[test]
fn a_load_under_a_lease_reads_only_what_the_cache_has_not_seen() {
    block_on(async {
        let (dir, one, lease) = started_leased("cached-lease").await;
        let path = one.path_of("s").unwrap();
        let change = fenced(&lease, step(1, 1, &["a"]).with_hooks(hooks("h")));
        one.save("s", &change).await.unwrap();
        let saved = must_load(&one, "s").await;
        assert_eq!(saved, decoded(&dir).await);
        assert_eq!((saved.revision, saved.hooks.clone()), (2, hooks("h")));

        tamper(&path, "\"q\"", "\"Q\"");
        assert_eq!(must_load(&one, "s").await, saved);

        let two = JsonFileSessionStore::new(&dir);
        let more = fenced(&lease, step(2, 2, &["b"]));
        two.save("s", &more).await.unwrap();
        let loaded = must_load(&one, "s").await;
        assert_eq!(loaded, more.apply("s", Some(saved)).unwrap());
        assert_eq!(texts(&decoded(&dir).await), ["Q", "a", "b"]);
        // `two` has no decoded state: it reads the whole log (through the lease's).
        assert_eq!(texts(&must_load(&two, "s").await), ["Q", "a", "b"]);
        lease.release().await.unwrap();
    });
}

/// Decoded states are kept within the budget (in log bytes): a state whose log exceeds
/// it is never kept, and keeping one more over the budget drops the others. Loads of
/// states not kept read the log, and return the same.
#[test]
fn decoded_states_are_kept_within_the_budget() {
    block_on(async {
        let (dir, store) = fresh("cached-budget");
        lock(&store.cache).set_state_budget(2048);
        let kept = |session: &str| lock(&store.cache).state(session).is_some();
        // The log bytes of the decoded states kept, and the length of `session`'s log.
        let state_bytes = || lock(&store.cache).state_bytes();
        let len = |session: &str| {
            fs::metadata(dir.join(format!("{session}.jsonl")))
                .unwrap()
                .len()
        };
        // A whole state of one message `text`; a load of `session` returning what `change`
        // saved.
        let replace = |text: &str| StateChange::replace(&state(&[text]));
        let loads_as_saved = async |session: &str, change: &StateChange| {
            let expected = change.apply(session, None).unwrap();
            assert_eq!(must_load(&store, session).await, expected);
        };

        let big = replace(&"x".repeat(3000));
        store.save("big", &big).await.unwrap();
        assert!(lock(&store.cache).info("big").is_some());
        assert!(!kept("big"));
        loads_as_saved("big", &big).await;
        assert!(!kept("big"));
        // Not kept: the load reads the log.
        tamper(&dir.join("big.jsonl"), "xxx", "yyy");
        assert!(texts(&must_load(&store, "big").await)[0].starts_with("yyy"));

        let a = replace(&"a".repeat(1200));
        let b = replace(&"b".repeat(1200));
        store.save("a", &a).await.unwrap();
        assert!(kept("a"));
        assert_eq!(state_bytes(), len("a"));
        store.save("b", &b).await.unwrap();
        assert!(!kept("a") && kept("b"));
        assert_eq!(state_bytes(), len("b"));
        loads_as_saved("a", &a).await;
        assert!(kept("a") && !kept("b"));
        assert_eq!(state_bytes(), len("a"));
        loads_as_saved("b", &b).await;
        // Forgetting a session gives its bytes back.
        assert!(store.delete("b").await.unwrap());
        assert_eq!(state_bytes(), 0);
    });
}

/// A save that fails to append (under a lease) or to rewrite leaves no cached state
/// that differs from the log: the next load returns what the log holds, and the next
/// save applies.
#[test]
fn a_failed_save_leaves_no_cached_state_that_differs_from_the_log() {
    block_on(async {
        let (dir, store, lease) = started_leased("cached-failure").await;
        let files = store.files("s").unwrap();
        store
            .save("s", &fenced(&lease, step(1, 1, &["a"])))
            .await
            .unwrap();
        let saved = must_load(&store, "s").await;
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
        assert_eq!(must_load(&store, "s").await, saved);
        assert_eq!(decoded(&dir).await, saved);
        store
            .save("s", &fenced(&lease, step(2, 2, &["b"])))
            .await
            .unwrap();
        assert_eq!(texts(&must_load(&store, "s").await), ["q", "a", "b"]);
        lease.release().await.unwrap();

        // A rewrite whose temporary file cannot be created.
        let saved = must_load(&store, "s").await;
        fs::create_dir(files.temp()).unwrap();
        let error = store.save("s", &step(3, 0, &["lost"])).await.unwrap_err();
        assert!(matches!(error, SessionError::Io { .. }), "{error:?}");
        assert!(!differs(&saved));
        assert_eq!(must_load(&store, "s").await, saved);
        fs::remove_dir(files.temp()).unwrap();
        store.save("s", &step(3, 0, &["z"])).await.unwrap();
        assert_eq!(texts(&must_load(&store, "s").await), ["z"]);
        assert_eq!(must_load(&store, "s").await, decoded(&dir).await);
    });
}
