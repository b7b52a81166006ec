//! Two processes, one session, 100 calls each.
//!
//! Both stores lease sessions (the JSON file store with its lock file, SQLite with a lease
//! row): a call while the other process runs one is busy before anything happens (no hook
//! sees it, the model is not asked, nothing is stored), so there is no conflict, and no
//! model request is paid for a call that cannot be stored.

use agentscope::prelude::*;

use crate::worker::{Counts, Outcome, StoreKind, Task, finish_with_counts, open_store, spawn};

const CALLS: usize = 100;

async fn two_writers(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = kind.path_in(dir.path());
    // Opened first, so both workers find the database set up.
    let store = open_store(kind, &path);
    let task = |tag: &str| Task::Write {
        store: kind,
        path: path.clone(),
        session: "shared".into(),
        tag: tag.into(),
        calls: CALLS,
    };
    let (a, b) = (spawn(&task("a")), spawn(&task("b")));
    let (a, b) = (finish_with_counts(a), finish_with_counts(b));
    let outcomes = [("a", a.0), ("b", b.0)];
    let counts = [a.1.unwrap(), b.1.unwrap()];

    let stored = store.load("shared").await.unwrap().unwrap().messages;
    let texts: Vec<String> = stored.iter().map(Msg::text).collect();
    let (mut ok, mut conflicts, mut busy) = (0, 0, 0);
    for ((tag, outcomes), counts) in outcomes.iter().zip(counts) {
        assert_eq!(outcomes.len(), CALLS);
        let ok_here = outcomes
            .iter()
            .filter(|outcome| matches!(outcome, Outcome::Ok(_)))
            .count();
        // Each stored call asked the model once and ran its hooks; a busy call did neither.
        assert_eq!(
            counts,
            Counts {
                model_requests: ok_here,
                pre_calls: ok_here,
            },
            "worker {tag}"
        );
        for (i, outcome) in outcomes.iter().enumerate() {
            let input = format!("{tag}-{i}");
            let count = texts.iter().filter(|text| **text == input).count();
            match outcome {
                Outcome::Ok(reply) => {
                    assert_eq!(reply, "noted");
                    assert_eq!(count, 1, "{input} returned Ok but is stored {count} times");
                    ok += 1;
                }
                Outcome::Conflict(message) => {
                    assert!(message.contains("session 'shared' was changed by another writer"));
                    assert_eq!(count, 0, "{input} failed with a conflict but is stored");
                    conflicts += 1;
                }
                Outcome::Busy(message) => {
                    assert_eq!(message, "the agent is busy with another call");
                    assert_eq!(count, 0, "{input} was busy but is stored");
                    busy += 1;
                }
                other => panic!("{input}: {other:?}"),
            }
        }
    }
    // Every stored turn is a whole exchange: the input, then its reply.
    assert_eq!(stored.len(), 2 * ok);
    for pair in texts.chunks(2) {
        assert_eq!(pair[1], "noted");
    }
    println!(
        "{kind:?}: 2 x {CALLS} calls on one session: {ok} stored, {conflicts} conflicts, {busy} busy"
    );
    assert_eq!(ok + conflicts + busy, 2 * CALLS);
    assert_eq!(
        conflicts, 0,
        "the lease refuses a second call before it saves"
    );
}

on_both_stores! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    two_writers:
    two_processes_lose_no_turn_json,
    two_processes_lose_no_turn_sqlite,
}
