//! `durability`: what step-level persistence adds to a ReAct call.
//!
//! The call of `react_call` (one tool call, then the answer; instant model and tool), on an
//! agent without a session and on one bound to a `JsonFileSessionStore`: the call takes the
//! session's lease (locks the session's lock file and opens its log, once), loads the
//! session, saves at every step (after reasoning, before and after the tool, at the end:
//! one appended line and one `fsync` each, through the open log) and gives the lease back.
//! The store's directory is on `/dev/shm` (tmpfs, where `fsync` costs next to nothing) when
//! it exists, so the figure is the engine's and the store's own work, not the disk's; pass a
//! directory as `DURABILITY_DIR` to measure a real disk.
//!
//! Each round builds 500 agents of each kind and makes one untimed call on each (so the
//! session exists and the memory holds one exchange), then times a second call on each, the
//! two kinds in alternation. It prints the median per-call time of each kind over the rounds
//! and their ratio. Run with `cargo bench -p agentscope --bench durability`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use futures::executor::block_on;

const AGENTS: usize = 500;
const ROUNDS: usize = 15;

/// Builds `AGENTS` agents (bound to sessions of `store` when given), makes the untimed first
/// call on each, and returns the time per call of the second.
fn round(store: Option<&JsonFileSessionStore>, round: usize) -> Duration {
    let agents: Vec<ReActAgent> = (0..AGENTS)
        .map(|i| {
            support::react_agent(|builder| match store {
                Some(store) => builder.session(store.clone(), format!("r{round}-a{i}")),
                None => builder,
            })
        })
        .collect();
    block_on(async {
        for agent in &agents {
            assert_eq!(agent.call(Msg::user("ping")).await.unwrap().text(), "done");
        }
        let start = Instant::now();
        for agent in &agents {
            assert_eq!(agent.call(Msg::user("ping")).await.unwrap().text(), "done");
        }
        start.elapsed() / AGENTS as u32
    })
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
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
    let (mut plain, mut durable) = (Vec::new(), Vec::new());
    for r in 0..ROUNDS {
        plain.push(round(None, r));
        durable.push(round(Some(&store), r));
    }
    let (plain, durable) = (median(plain), median(durable));
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
}
