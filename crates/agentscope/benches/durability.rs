//! `durability`: what step-level persistence adds to a ReAct call.
//!
//! The call of `react_call` (one tool call, then the answer; instant model and tool), on an
//! agent without a session and on one bound to a `JsonFileSessionStore`: the call takes the
//! session's lease (locks the session's lock file and opens its log, once), loads the
//! session, saves at every step (the reasoning message with the tool call it starts, the
//! tool's result, the answer: one appended line and one `fsync` each, through the open log)
//! and gives the lease back.
//! The store's directory is on `/dev/shm` (tmpfs, where `fsync` costs next to nothing) when
//! it exists, so the figure is the engine's and the store's own work, not the disk's; pass a
//! directory as `DURABILITY_DIR` to measure a real disk.
//!
//! Each round builds 500 agents of each kind and makes one untimed call on each (so the
//! session exists and the memory holds one exchange), then times a second call on each, the
//! two kinds in alternation. It prints the median per-call time of each kind over the rounds
//! and their ratio.
//!
//! In the same rounds it measures the floor of the fsync policy: what a call minimally does
//! to the files in a directory on the same file system, without the store: open and lock
//! (without waiting) a lock file, open a log for appending, write the lines the store
//! appends for one call's saves (the bytes a probe session's log grew by in its second
//! call) each followed by `fdatasync`, and close both. It prints that floor, and the time
//! step-level persistence adds to a call as a multiple of it.
//!
//! Then it times the same calls from a task on a tokio multi-thread runtime, where the
//! store's file work goes through tokio's blocking pool (one round trip per lease and per
//! save), next to the policy's floor made the same way (the lock and opens in one trip, each
//! save in its own), and once more with the store's file work inline
//! (`JsonFileSessionStore::inline`). Run with `cargo bench -p agentscope --bench durability`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use agentscope_test::bench::median;
use futures::executor::block_on;

const AGENTS: usize = 500;
const ROUNDS: usize = 15;
const TOKIO_ROUNDS: usize = 7;

/// `AGENTS` agents, bound to sessions `<prefix><round>-a<i>` of `store` when given.
fn agents(store: Option<&JsonFileSessionStore>, prefix: &str, round: usize) -> Vec<ReActAgent> {
    (0..AGENTS)
        .map(|i| {
            support::react_agent(|builder| match store {
                Some(store) => builder.session(store.clone(), format!("{prefix}{round}-a{i}")),
                None => builder,
            })
        })
        .collect()
}

/// Makes the untimed first call on each agent, and returns the time per call of the second.
async fn second_calls(agents: &[ReActAgent]) -> Duration {
    for agent in agents {
        assert_eq!(agent.call(Msg::user("ping")).await.unwrap().text(), "done");
    }
    let start = Instant::now();
    for agent in agents {
        assert_eq!(agent.call(Msg::user("ping")).await.unwrap().text(), "done");
    }
    start.elapsed() / AGENTS as u32
}

/// The second calls of `AGENTS` new agents (bound to sessions of `store` when given).
fn round(store: Option<&JsonFileSessionStore>, round: usize) -> Duration {
    block_on(second_calls(&agents(store, "r", round)))
}

/// The lines the store appends for the saves of one call: the lines a probe session's log
/// gains in its second call.
fn saved_lines(base: &Path) -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir_in(base).unwrap();
    let store = JsonFileSessionStore::new(dir.path());
    let agent = support::react_agent(|builder| builder.session(store.clone(), "probe"));
    let log = || std::fs::read(store.path_of("probe").unwrap()).unwrap();
    block_on(async {
        assert_eq!(agent.call(Msg::user("ping")).await.unwrap().text(), "done");
        let before = log().len();
        assert_eq!(agent.call(Msg::user("ping")).await.unwrap().text(), "done");
        let after = log();
        assert!(after.len() > before, "the second call appended nothing");
        after[before..]
            .split_inclusive(|byte| *byte == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    })
}

/// The start of a call's file work at the floor of the fsync policy, on the session files
/// `name` in `dir`: the lock file, locked, and the log, open for appending.
fn open_floor_files(dir: &Path, name: &str) -> (File, File) {
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(format!(".{name}.lock")))
        .unwrap();
    lock.try_lock().unwrap();
    let log = OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.join(format!("{name}.jsonl")))
        .unwrap();
    (lock, log)
}

/// One save at the floor of the policy: one `write`, one `fdatasync`.
fn append_synced(mut log: &File, line: &[u8]) {
    log.write_all(line).unwrap();
    log.sync_data().unwrap();
}

/// One call's file work at the floor of the fsync policy: open and lock, append `lines`
/// with an `fdatasync` each, close.
fn floor_call(dir: &Path, name: &str, lines: &[Vec<u8>]) {
    let (lock, log) = open_floor_files(dir, name);
    for line in lines {
        append_synced(&log, line);
    }
    drop(log);
    drop(lock);
}

/// The floor's round: an untimed call on each of `AGENTS` sessions (which creates their
/// files), then the time per call of a second.
fn floor_round(dir: &Path, lines: &[Vec<u8>], round: usize) -> Duration {
    let names: Vec<String> = (0..AGENTS).map(|i| format!("r{round}-a{i}")).collect();
    for name in &names {
        floor_call(dir, name, lines);
    }
    let start = Instant::now();
    for name in &names {
        floor_call(dir, name, lines);
    }
    start.elapsed() / AGENTS as u32
}

/// [`round`] on a tokio multi-thread runtime, the calls made from a task (as a server makes
/// them): the store's file work goes through tokio's blocking pool, one trip per lease and
/// per save (unless the store's file work is inline).
fn tokio_round(
    runtime: &tokio::runtime::Runtime,
    store: Option<&JsonFileSessionStore>,
    round: usize,
) -> Duration {
    let agents = agents(store, "t", round);
    runtime.block_on(async move {
        tokio::spawn(async move { second_calls(&agents).await })
            .await
            .unwrap()
    })
}

/// [`floor_round`] on the runtime, each step of the policy in its own trip through the
/// blocking pool as a store must make them (the lock and the opens in one, then each
/// `write` + `fdatasync`, awaited before the next).
fn tokio_floor_round(
    runtime: &tokio::runtime::Runtime,
    dir: &Path,
    lines: &[Vec<u8>],
    round: usize,
) -> Duration {
    let dir = dir.to_owned();
    let lines: Vec<std::sync::Arc<[u8]>> = lines.iter().map(|line| line[..].into()).collect();
    runtime.block_on(async move {
        tokio::spawn(async move {
            let call = |name: String| {
                let (dir, lines) = (dir.clone(), lines.clone());
                async move {
                    let (lock, log) =
                        tokio::task::spawn_blocking(move || open_floor_files(&dir, &name))
                            .await
                            .unwrap();
                    let log = std::sync::Arc::new(log);
                    for line in lines {
                        let log = std::sync::Arc::clone(&log);
                        tokio::task::spawn_blocking(move || append_synced(&log, &line))
                            .await
                            .unwrap();
                    }
                    drop((log, lock));
                }
            };
            let names: Vec<String> = (0..AGENTS).map(|i| format!("t{round}-a{i}")).collect();
            for name in &names {
                call(name.clone()).await;
            }
            let start = Instant::now();
            for name in &names {
                call(name.clone()).await;
            }
            start.elapsed() / AGENTS as u32
        })
        .await
        .unwrap()
    })
}

fn main() {
    let base = std::env::var_os("DURABILITY_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            let shm = PathBuf::from("/dev/shm");
            shm.is_dir().then_some(shm)
        })
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&base).unwrap();
    let store = JsonFileSessionStore::new(dir.path());
    let lines = saved_lines(&base);
    let floor_dir = tempfile::tempdir_in(&base).unwrap();
    let (mut plain, mut durable, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..ROUNDS {
        plain.push(round(None, r));
        durable.push(round(Some(&store), r));
        floor.push(floor_round(floor_dir.path(), &lines, r));
    }
    let (plain, durable, floor) = (
        median(plain).expect("ROUNDS rounds"),
        median(durable).expect("ROUNDS rounds"),
        median(floor).expect("ROUNDS rounds"),
    );
    let stored = std::fs::read_dir(dir.path()).unwrap().count();
    println!(
        "durability: store in {} ({stored} entries written; every save fsync'd)",
        base.display()
    );
    println!(
        "ReAct call without a session {:.2} us, with step-level persistence {:.2} us: {:.2}x (+{:.0}%)",
        plain.as_secs_f64() * 1e6,
        durable.as_secs_f64() * 1e6,
        durable.as_secs_f64() / plain.as_secs_f64(),
        (durable.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0
    );
    let added = durable.saturating_sub(plain);
    let bytes: usize = lines.iter().map(Vec::len).sum();
    println!(
        "floor of the fsync policy (lock, open, {} x write + fdatasync; {bytes} bytes): {:.2} us per call; ours adds {:.2} us = {:.2}x the floor",
        lines.len(),
        floor.as_secs_f64() * 1e6,
        added.as_secs_f64() * 1e6,
        added.as_secs_f64() / floor.as_secs_f64()
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let inline_dir = tempfile::tempdir_in(&base).unwrap();
    let inline_store = JsonFileSessionStore::new(inline_dir.path()).inline(true);
    let (mut plain, mut durable, mut floor, mut inline) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in 0..TOKIO_ROUNDS {
        plain.push(tokio_round(&runtime, None, r));
        durable.push(tokio_round(&runtime, Some(&store), r));
        floor.push(tokio_floor_round(&runtime, floor_dir.path(), &lines, r));
        inline.push(tokio_round(&runtime, Some(&inline_store), r));
    }
    let (plain, durable, floor, inline) = (
        median(plain).expect("TOKIO_ROUNDS rounds"),
        median(durable).expect("TOKIO_ROUNDS rounds"),
        median(floor).expect("TOKIO_ROUNDS rounds"),
        median(inline).expect("TOKIO_ROUNDS rounds"),
    );
    let added = durable.saturating_sub(plain);
    println!(
        "on a tokio multi-thread runtime (calls from a task): without a session {:.2} us, with step-level persistence {:.2} us (+{:.0}%); the policy's floor through the blocking pool (one trip for the lock and opens, one per save) {:.2} us; ours adds {:.2} us = {:.2}x that floor",
        plain.as_secs_f64() * 1e6,
        durable.as_secs_f64() * 1e6,
        (durable.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0,
        floor.as_secs_f64() * 1e6,
        added.as_secs_f64() * 1e6,
        added.as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "the same with the store's file work inline (`JsonFileSessionStore::inline`): {:.2} us (+{:.0}%), adds {:.2} us",
        inline.as_secs_f64() * 1e6,
        (inline.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0,
        inline.saturating_sub(plain).as_secs_f64() * 1e6,
    );
}
