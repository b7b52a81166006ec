//! Leases: one call at a time per session, fenced saves through the open log, giving back,
//! interrupts, and what waits for a lease.

use std::fs;
use std::path::Path;

use agentscope_core::CancellationToken;
use agentscope_core::session::{SessionError, SessionStore, StateChange};

use crate::session::json_file::JsonFileSessionStore;
use crate::session::json_file::format::RecordOut;
use crate::session::json_file::lease;
use crate::session::json_file::test_support::*;
use crate::session::json_file::watch;

/// The error of a lease of `store` on session `session` while another call holds it: busy,
/// naming the session.
async fn busy(store: &JsonFileSessionStore, session: &str) -> SessionError {
    let error = store
        .lease(session, &CancellationToken::new())
        .await
        .unwrap_err();
    match &error {
        SessionError::Busy { session: busy } => assert_eq!(busy, session),
        other => panic!("expected busy, got {other:?}"),
    }
    error
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

/// A second lease on a session is busy, through the same store, a clone, or another
/// store on the directory, and at the kernel's lock (what another process sees); given
/// back or dropped, the session can be taken again.
#[test]
fn a_second_lease_is_busy_until_the_first_is_given_back_or_dropped() {
    block_on(async {
        let (dir, store) = started("lease-busy").await;
        let lock_path = dir.join(".s.lock");
        let first = leased(&store, "s").await;
        assert_eq!(first.fence().len(), 32);
        assert!(!lockable(&lock_path));
        let other = JsonFileSessionStore::new(&dir);
        for store in [&store, &store.clone(), &other] {
            assert_eq!(
                busy(store, "s").await.to_string(),
                "session 's' is busy: another call holds its lease"
            );
        }
        // Another session is another lock; a new one gets its lock file, no log.
        let t = leased(&other, "t").await;
        assert_eq!(names(&dir), [".s.lock", ".t.lock", "s.jsonl"]);
        busy(&store, "t").await;

        first.release().await.unwrap();
        assert!(lockable(&lock_path));
        let second = leased(&other, "s").await;
        assert!(!lockable(&lock_path));
        busy(&store, "s").await;
        // A dropped lease (a dropped call) unlocks too.
        drop(second);
        assert!(lockable(&lock_path));
        let third = leased(&store, "s").await;
        drop((third, t));
        assert!(lockable(&lock_path));
        assert!(lockable(&dir.join(".t.lock")));
        // Leases wrote nothing.
        assert_holds(&must_load(&store, "s").await, 1, &["q"]);
        assert_eq!(store.load("t").await.unwrap(), None);
        assert_eq!(store.list().await.unwrap(), ["s"]);
    });
}

/// A save fenced by a lease that is not held (given back, dropped, another token, a
/// lease on another session) is `LeaseLost` and writes nothing; so is one that a
/// store on another directory is asked to make.
#[test]
fn a_save_fenced_by_a_lease_not_held_is_lease_lost_and_writes_nothing() {
    block_on(async {
        let (_dir, store, lease) = started_leased("lease-lost").await;
        let path = store.path_of("s").unwrap();
        let saved = store.save("s", &fenced(&lease, step(1, 1, &["a"]))).await;
        assert_eq!(saved.unwrap(), 2);
        let before = fs::read(&path).unwrap();
        // What saving the change of revision 2 fenced by `fence` through `store` returns.
        let save_fenced_by = async |store: &JsonFileSessionStore, fence: String| {
            let change = step(2, 2, &["x"]).with_fence(fence);
            store.save("s", &change).await.unwrap_err()
        };

        let foreign = "7f3a0000000000000000000000000000".to_owned();
        assert_lease_lost(&save_fenced_by(&store, foreign).await);
        let t = leased(&store, "t").await;
        assert_lease_lost(&save_fenced_by(&store, t.fence().to_owned()).await);
        let (_elsewhere_dir, elsewhere) = fresh("lease-lost-elsewhere");
        let error = elsewhere
            .save("s", &fenced(&lease, StateChange::replace(&state(&["x"]))))
            .await
            .unwrap_err();
        assert_lease_lost(&error);
        assert_eq!(fs::read(&path).unwrap(), before);

        let stale = lease.fence().to_owned();
        lease.release().await.unwrap();
        assert_lease_lost(&save_fenced_by(&store, stale.clone()).await);
        // The same after a new lease took the session, and after a dropped one.
        let next = leased(&store, "s").await;
        assert_lease_lost(&save_fenced_by(&store, stale).await);
        let dropped = next.fence().to_owned();
        drop(next);
        assert_lease_lost(&save_fenced_by(&store, dropped).await);
        assert_eq!(fs::read(&path).unwrap(), before);
        assert_eq!(must_load(&store, "s").await.revision, 2);
        drop(t);
    });
}

/// A lease whose lock file is removed or replaced while held has lost the session: a
/// process that locks the file now at that path holds it too. Fenced saves are refused at
/// once (`LeaseLost`, nothing written), the watch thread stops the call (cancels its
/// interrupt token) within a check interval or two, and the new lock file's lease is what
/// holds the session. Giving the old lease back leaves the new one alone.
#[test]
fn a_lease_whose_lock_file_is_removed_or_replaced_stops_its_call() {
    for replaced in [false, true] {
        block_on(async {
            let (dir, store) = started("lease-lock-file").await;
            let lock_path = dir.join(".s.lock");
            let interrupt = CancellationToken::new();
            let lease = store.lease("s", &interrupt).await.unwrap().unwrap();
            let path = store.path_of("s").unwrap();
            let saved = store.save("s", &fenced(&lease, step(1, 1, &["a"]))).await;
            assert_eq!(saved.unwrap(), 2);
            // Held past a check: nothing happens while the lock file stays.
            std::thread::sleep(watch::CHECK_INTERVAL + watch::CHECK_INTERVAL / 2);
            assert!(!interrupt.is_cancelled());

            fs::remove_file(&lock_path).unwrap();
            let mut other = None;
            if replaced {
                // Another process locks a new lock file at the path.
                let new_lock = fs::File::create(&lock_path).unwrap();
                new_lock.try_lock().unwrap();
                other = Some(new_lock);
            }
            let before = fs::read(&path).unwrap();
            let error = store
                .save("s", &fenced(&lease, step(2, 2, &["x"])))
                .await
                .unwrap_err();
            assert_lease_lost(&error);
            assert_eq!(fs::read(&path).unwrap(), before);
            // The save noticed first; the call is stopped already.
            assert!(interrupt.is_cancelled());
            lease.release().await.unwrap();
            match other {
                Some(new_lock) => {
                    assert!(!lockable(&lock_path), "the new holder's lock stays");
                    drop(new_lock);
                }
                None => assert!(!lock_path.exists()),
            }
            // The session can be taken again, on a lock file at the path.
            let next = leased(&store, "s").await;
            assert!(!lockable(&lock_path));
            drop(next);
            assert_eq!(must_load(&store, "s").await.revision, 2);
        });
    }
}

/// The watch thread stops a call whose lock file was removed, without any save.
#[test]
fn the_watch_thread_stops_a_call_whose_lock_file_was_removed() {
    block_on(async {
        let (dir, store) = started("lease-watch").await;
        let interrupt = CancellationToken::new();
        let lease = store.lease("s", &interrupt).await.unwrap().unwrap();
        fs::remove_file(dir.join(".s.lock")).unwrap();
        let removed = std::time::Instant::now();
        while !interrupt.is_cancelled() {
            assert!(
                removed.elapsed() < watch::CHECK_INTERVAL * 3,
                "the call was not stopped"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(removed.elapsed() <= watch::CHECK_INTERVAL * 2);
        let error = store
            .save("s", &fenced(&lease, step(1, 1, &["a"])))
            .await
            .unwrap_err();
        assert_lease_lost(&error);
        drop(lease);
    });
}

/// The same changes saved under a lease and without one leave byte-identical logs
/// (but for the random log ids), through appends, a conflict, a change keeping nothing
/// (a rewrite, after which the lease holds the new log), a change dropping messages and
/// a metadata-driven compaction.
#[test]
fn saves_under_a_lease_write_the_log_saves_without_one_write() {
    block_on(async {
        let (dir, store) = fresh("lease-same");
        let lease = leased(&store, "leased").await;
        let metadata = blob(8 * 1024);
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
        let plain = must_load(&fresh, "plain").await;
        let leased = must_load(&fresh, "leased").await;
        assert_eq!(leased, plain);
        assert_eq!(leased.revision, 40);
        assert_eq!(
            names(&dir),
            [".leased.lock", ".plain.lock", "leased.jsonl", "plain.jsonl"]
        );
    });
}

/// The descriptors of this process open on the lock file and on the log of session "s"
/// in `dir` (Linux).
#[cfg(target_os = "linux")]
fn open_descriptors(dir: &Path) -> (usize, usize) {
    let open_on = |path: &Path| {
        let path = fs::canonicalize(path).unwrap();
        fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| *target == path)
            .count()
    };
    (open_on(&dir.join(".s.lock")), open_on(&dir.join("s.jsonl")))
}

/// A lease holds the lock file and the log open for its length: its saves open
/// nothing; giving it back closes both.
#[cfg(target_os = "linux")]
#[test]
fn a_lease_holds_the_lock_file_and_the_log_open_until_it_is_given_back() {
    block_on(async {
        let (dir, store) = started("lease-open").await;
        assert_eq!(open_descriptors(&dir), (0, 0));
        let lease = leased(&store, "s").await;
        assert_eq!(open_descriptors(&dir), (1, 1));
        for revision in 1..4 {
            let change = fenced(&lease, step(revision, revision as usize, &["a"]));
            store.save("s", &change).await.unwrap();
            assert_eq!(open_descriptors(&dir), (1, 1));
        }
        // A rewrite replaces the log: the lease holds the new one.
        store
            .save("s", &fenced(&lease, step(4, 0, &["z"])))
            .await
            .unwrap();
        assert_eq!(open_descriptors(&dir), (1, 1));
        lease.release().await.unwrap();
        assert_eq!(open_descriptors(&dir), (0, 0));
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
        let lease = leased(&JsonFileSessionStore::new(&dir), "s").await;
        assert_eq!(fs::read(&path).unwrap(), torn, "a lease writes nothing");
        store
            .save("s", &fenced(&lease, step(1, 1, &["a"])))
            .await
            .unwrap();
        assert_eq!(log_lines(&path), 1);
        store
            .save("s", &fenced(&lease, step(2, 2, &["b"])))
            .await
            .unwrap();
        assert_eq!(log_lines(&path), 2);
        lease.release().await.unwrap();
        assert_holds(&decoded(&dir).await, 3, &["q", "a", "b"]);

        // A `.json` file of an earlier version.
        let old = state(&["old"]);
        fs::write(dir.join("u.json"), serde_json::to_vec(&old).unwrap()).unwrap();
        let lease = leased(&store, "u").await;
        store
            .save("u", &fenced(&lease, step(0, 1, &["new"])))
            .await
            .unwrap();
        assert!(!dir.join("u.json").exists());
        store
            .save("u", &fenced(&lease, step(1, 2, &["newer"])))
            .await
            .unwrap();
        assert_eq!(log_lines(&dir.join("u.jsonl")), 2);
        drop(lease);
        assert_eq!(
            texts(&must_load(&store, "u").await),
            ["old", "new", "newer"]
        );
    });
}

/// `interrupt` cancels the token of the call of this process holding the session
/// (through any store on the directory), and only while it holds it.
#[test]
fn interrupt_cancels_the_holder_of_this_process_while_it_holds_the_session() {
    block_on(async {
        let (dir, store) = started("lease-interrupt").await;
        // The same directory spelled another way is the same store.
        let mut spelled = dir.as_os_str().to_owned();
        spelled.push("/./");
        let other = JsonFileSessionStore::new(spelled);
        assert_eq!(other.dir(), &*dir);
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
    let lease = leased(&store, "s").await;
    store
        .save("s", &fenced(&lease, step(1, 1, &["a"])))
        .await
        .unwrap();
    for reader in [
        store.clone(),
        JsonFileSessionStore::new(&dir).inline(inline),
    ] {
        assert_holds(&must_load(&reader, "s").await, 2, &["q", "a"]);
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
    assert_eq!(texts(&must_load(&store, "s").await), ["q", "a", "b"]);
}

/// A lease given back while a save under it still runs (a call dropped mid-save) keeps
/// the session locked until that save returns; a new lease of this process waits for
/// it instead of reporting busy.
#[test]
fn a_new_lease_waits_for_the_last_save_of_a_lease_given_back() {
    block_on(async {
        let (_dir, store, lease) = started_leased("lease-ending").await;
        let files = store.files("s").unwrap();
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
    });
}
