//! Two processes, one session, 100 calls each.
//!
//! The JSON file store leases sessions: a call while the other process runs one is busy
//! before anything happens, so there is no conflict. SQLite has no lease: the loser of a
//! race fails with a conflict at its first save.

use agentscope::prelude::*;

use crate::worker::{Outcome, StoreKind, Task, finish, open_store, spawn};

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
    let outcomes = [("a", finish(a)), ("b", finish(b))];

    let stored = store.load("shared").await.unwrap().unwrap().messages;
    let texts: Vec<String> = stored.iter().map(Msg::text).collect();
    let (mut ok, mut conflicts, mut busy) = (0, 0, 0);
    for (tag, outcomes) in &outcomes {
        assert_eq!(outcomes.len(), CALLS);
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
                Outcome::Busy(message) if kind == StoreKind::Json => {
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
    if kind == StoreKind::Json {
        assert_eq!(
            conflicts, 0,
            "the lease refuses a second call before it saves"
        );
    }
}

on_both_stores! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    two_writers:
    two_processes_lose_no_turn_json,
    two_processes_lose_no_turn_sqlite,
}
