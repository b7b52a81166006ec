//! Several writers on one directory: two store values stand for two processes, each with a
//! cache that the other's saves make stale.

use std::fs;
use std::sync::Arc;

use agentscope_core::session::{AgentState, SessionError, SessionStore, StateChange};

use crate::session::json_file::JsonFileSessionStore;
use crate::session::json_file::format::{RecordOut, new_log_id};
use crate::session::json_file::test_support::*;

/// Two store values on one directory stand for two processes: each one's cache goes
/// stale when the other saves, which its next save notices.
#[test]
fn a_cache_made_stale_by_another_store_is_noticed() {
    block_on(async {
        let (_dir, one, two) = two_stores("stale-cache").await;
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
    });
}

/// Another process deletes the session and saves it anew, at another revision with
/// other messages, in a log of exactly the cached length: the log's id tells the two
/// files apart.
#[test]
fn a_new_log_of_the_cached_length_is_not_mistaken_for_the_cached_one() {
    block_on(async {
        let (dir, one, two) = two_stores("same-length").await;
        let len = fs::metadata(dir.join("s.jsonl")).unwrap().len();

        // Revision 1 holding one message, padded to the same length.
        let id = new_log_id();
        let encoded_len = |state: &AgentState| {
            let (line, _) = RecordOut::of_state(state)
                .first_in(&id)
                .encode("s")
                .unwrap();
            line.len() as u64
        };
        let mut again = state(&["r"]).with_metadata_entry("pad", "");
        again.revision = 1;
        let short = encoded_len(&again);
        assert!(short < len);
        let pad = "p".repeat(usize::try_from(len - short).unwrap());
        again = again.with_metadata_entry("pad", pad);
        assert_eq!(encoded_len(&again), len);
        assert!(two.delete("s").await.unwrap());
        again.revision = 0;
        two.save("s", &StateChange::replace(&again)).await.unwrap();
        assert_eq!(fs::metadata(dir.join("s.jsonl")).unwrap().len(), len);

        // Trusting its cache, `one` would append revision 3 keeping 2 messages.
        let error = one.save("s", &step(2, 2, &["b"])).await.unwrap_err();
        assert_conflict(&error, 2, 1);
        assert_holds(&must_load(&one, "s").await, 1, &["r"]);
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
        let loaded = must_load(store, "s").await;
        assert_eq!(loaded.revision, 21);
        assert_eq!(texts(&loaded), expected);
    }
}
