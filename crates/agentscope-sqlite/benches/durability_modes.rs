//! `durability_modes`: what each durability mode costs, against the store's own floor, in
//! one run, for the JSON file store on a tmpfs (`/dev/shm`) and the SQLite store on a tmpfs
//! and on the disk.
//!
//! 1. **A step's save under `Step`**: `SessionStore::save` of one agent step (an assistant
//!    message with a tool call and its tool result, from `agentscope_test::conversation`)
//!    awaited in a task of a tokio multi-thread runtime, against the floor: the same bytes
//!    written and synced by a minimal program on the same file system (for the JSON store:
//!    the bytes its log grew by, appended to an open file and `fdatasync`ed; for SQLite:
//!    the messages' JSON inserted as one row in one transaction of a WAL database with
//!    `synchronous = FULL`). Target: at most 1.3x. Beside it, the same saves under the
//!    session's lease, as a call makes them (the JSON store keeps the log open then).
//! 2. **What a session adds to a call of several steps under each mode**: a ReAct call with
//!    three rounds of an idempotent tool (`InDoubt::RunAgain`), each model answer taking
//!    300 µs (asleep on tokio's blocking pool, so the call waits as it waits for a real
//!    model), the second turn of its conversation (the session exists), minus the same call
//!    without a session; as a multiple of one floor save. Target for `Async`: at most 1.3x (the call waits only for its last
//!    save). The same call with a tool that is not idempotent is reported beside it.
//!
//! The JSON store does its file work inline (`JsonFileSessionStore::inline(true)`, meant for
//! directories whose `fsync` is fast); SQLite on its blocking pool, as it always does.
//! Rounds alternate the subjects; the figures are medians over rounds.
//!
//! Run: `cargo bench -p agentscope-sqlite --bench durability_modes` (one place only:
//! `DURABILITY_ONLY=json`, `sqlite-tmpfs` or `sqlite-disk`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::{Durability, JsonFileSessionStore, SessionStore, StateChange};
use agentscope::{CancellationToken, ChatStream, InDoubt, ModelError, ModelRequest};
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::bench::median;
use agentscope_test::conversation::{agent, assistant_call, history, tool_result};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

const ROUNDS: usize = 9;
const SAVES: usize = 300;
const CALLS: usize = 200;
const ROUNDS_OF_TOOLS: usize = 3;
const MODEL_LATENCY: Duration = Duration::from_micros(300);

/// Where the stores live.
#[derive(Clone, Copy, Debug)]
enum Place {
    JsonTmpfs,
    SqliteTmpfs,
    SqliteDisk,
}

impl Place {
    fn dir(self) -> tempfile::TempDir {
        let tmpfs = Path::new("/dev/shm");
        match self {
            Place::JsonTmpfs | Place::SqliteTmpfs if tmpfs.is_dir() => {
                tempfile::tempdir_in(tmpfs).unwrap()
            }
            _ => tempfile::tempdir().unwrap(),
        }
    }

    fn store(self, dir: &Path) -> Arc<dyn SessionStore> {
        match self {
            Place::JsonTmpfs => {
                Arc::new(JsonFileSessionStore::new(dir.join("sessions")).inline(true))
            }
            Place::SqliteTmpfs | Place::SqliteDisk => {
                Arc::new(SqliteSessionStore::open(dir.join("sessions.db")).unwrap())
            }
        }
    }
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// The floor of one save on `place`'s file system: `bytes` written and synced by a minimal
/// program, `SAVES` times; the time per save.
struct Floor {
    file: std::fs::File,
    db: Option<rusqlite::Connection>,
    bytes: Vec<u8>,
}

impl Floor {
    fn new(place: Place, dir: &Path, bytes: Vec<u8>) -> Self {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("floor.log"))
            .unwrap();
        let db = match place {
            Place::JsonTmpfs => None,
            Place::SqliteTmpfs | Place::SqliteDisk => {
                let db = rusqlite::Connection::open(dir.join("floor.db")).unwrap();
                db.pragma_update_and_check(None, "journal_mode", "WAL", |row| {
                    row.get::<_, String>(0)
                })
                .unwrap();
                db.pragma_update(None, "synchronous", "FULL").unwrap();
                db.execute_batch("CREATE TABLE log (body BLOB NOT NULL)")
                    .unwrap();
                Some(db)
            }
        };
        Self { file, db, bytes }
    }

    /// The time per save; with `encode`, each save first encodes the step's messages as
    /// JSON (into a reused buffer), as a minimal program given the messages would.
    fn time(&mut self, encode: bool) -> Duration {
        let step = [assistant_call(1), tool_result(1)];
        let mut encoded = Vec::with_capacity(self.bytes.len() * 2);
        let start = Instant::now();
        for _ in 0..SAVES {
            let bytes = if encode {
                encoded.clear();
                serde_json::to_writer(&mut encoded, &step).unwrap();
                encoded.push(b'\n');
                &encoded
            } else {
                &self.bytes
            };
            match &mut self.db {
                None => {
                    self.file.write_all(bytes).unwrap();
                    self.file.sync_data().unwrap();
                }
                Some(db) => {
                    let tx = db.transaction().unwrap();
                    tx.prepare_cached("INSERT INTO log (body) VALUES (?1)")
                        .unwrap()
                        .execute([bytes])
                        .unwrap();
                    tx.commit().unwrap();
                }
            }
        }
        start.elapsed() / SAVES as u32
    }
}

/// Saves one step (two messages) to `store`'s session `session`, which holds 10 messages
/// and a step per revision after the first; `revision` moves on.
async fn save_step(
    store: &dyn SessionStore,
    session: &str,
    revision: &mut u64,
    fence: Option<&str>,
) {
    let stored = 10 + 2 * (usize::try_from(*revision).unwrap() - 1);
    let mut change = StateChange::new(
        *revision,
        stored,
        vec![assistant_call(stored), tool_result(stored)],
        agent(),
    );
    if let Some(fence) = fence {
        change = change.with_fence(fence);
    }
    *revision = store.save(session, &change).await.unwrap();
}

/// `SAVES` step saves in one task; the time per save. `leased`: under the session's lease,
/// as a call saves its steps (taken before and given back after the timed saves).
async fn step_saves(
    store: &dyn SessionStore,
    session: &str,
    revision: &mut u64,
    leased: bool,
) -> Duration {
    let interrupt = CancellationToken::new();
    let lease = if leased {
        store.lease(session, &interrupt).await.unwrap()
    } else {
        None
    };
    let fence = lease.as_ref().map(|lease| lease.fence().to_owned());
    let start = Instant::now();
    for _ in 0..SAVES {
        save_step(store, session, revision, fence.as_deref()).await;
    }
    let elapsed = start.elapsed() / SAVES as u32;
    if let Some(lease) = lease {
        lease.release().await.unwrap();
    }
    elapsed
}

/// A model answering `MODEL_LATENCY` after it is asked, waited for as for a real model: the
/// call's task is free meanwhile, and no core is busy (the time passes asleep on tokio's
/// blocking pool, about 60 µs longer than asked, the kernel's timer slack; tokio's timer
/// would round to milliseconds). The answer's time is fixed when the request is made, as a
/// remote model's clock starts when the request leaves: a sleeping thread that gets its core
/// late (the kernel may wake it on the core of the thread that asked, still busy with the
/// call's own work) does not move it.
struct Slow(ScriptedModel);

impl Model for Slow {
    fn model_name(&self) -> &str {
        self.0.model_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let answer_at = Instant::now() + MODEL_LATENCY;
        tokio::task::spawn_blocking(move || {
            std::thread::sleep(answer_at.saturating_duration_since(Instant::now()));
        })
        .await
        .unwrap();
        self.0.stream(request).await
    }
}

/// Three rounds of the `lookup` tool, then the answer.
fn model() -> ScriptedModel {
    let mut responses: Vec<ScriptedResponse> = (0..ROUNDS_OF_TOOLS)
        .map(|i| ScriptedResponse::tool_call(format!("c{i}"), "lookup", json!({"q": i})))
        .collect();
    responses.push(ScriptedResponse::text("Found it."));
    ScriptedModel::new(responses).cycling().without_recording()
}

struct Lookup {
    idempotent: bool,
}

impl Tool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }

    fn description(&self) -> &str {
        "Looks something up."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }

    async fn call(
        &self,
        _input: serde_json::Value,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("a result of a few words"))
    }

    fn in_doubt(&self) -> Option<InDoubt> {
        self.idempotent.then_some(InDoubt::RunAgain)
    }
}

/// How a call is bound.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Binding {
    None,
    Mode(Durability, bool),
}

/// `CALLS` calls, each on its own agent and session, each the second turn of its
/// conversation (the first, untimed, creates the session); the median time per call.
async fn calls(
    store: &Arc<dyn SessionStore>,
    binding: Binding,
    subject: usize,
    round: usize,
) -> Duration {
    let idempotent = match binding {
        Binding::None => true,
        Binding::Mode(_, idempotent) => idempotent,
    };
    let mut agents = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        let builder = ReActAgent::builder()
            .model(Slow(model()))
            .toolkit(Toolkit::new().tool(Lookup { idempotent }));
        let agent = match binding {
            Binding::None => builder,
            Binding::Mode(durability, _) => builder
                .session(Arc::clone(store), format!("call-{subject}-{round}-{i}"))
                .durability(durability),
        }
        .build()
        .unwrap();
        agent.call("Find it.").await.unwrap();
        agents.push(agent);
    }
    let mut times = Vec::with_capacity(CALLS);
    for agent in &agents {
        let start = Instant::now();
        let reply = agent.call("Find it again.").await.unwrap();
        times.push(start.elapsed());
        assert_eq!(reply.text(), "Found it.");
    }
    median(times).expect("CALLS calls")
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "durability_modes: {ROUNDS} rounds; {SAVES} saves and {CALLS} calls of {ROUNDS_OF_TOOLS} \
         tool rounds (model latency {MODEL_LATENCY:?}) per subject and round; medians"
    );
    // `DURABILITY_ONLY=json|sqlite-tmpfs|sqlite-disk`: one place only.
    let only = std::env::var("DURABILITY_ONLY").ok();
    for place in [Place::JsonTmpfs, Place::SqliteTmpfs, Place::SqliteDisk] {
        let name = match place {
            Place::JsonTmpfs => "json",
            Place::SqliteTmpfs => "sqlite-tmpfs",
            Place::SqliteDisk => "sqlite-disk",
        };
        if only.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        let dir = place.dir();
        let store = place.store(dir.path());
        let session = "steps";
        let mut revision = runtime
            .block_on(store.save(session, &StateChange::new(0, 0, history(10), agent())))
            .unwrap();
        // The bytes one step's save writes: what the JSON log grows by, or the messages'
        // JSON for SQLite.
        let bytes = match place {
            Place::JsonTmpfs => {
                let log = std::fs::read_dir(dir.path().join("sessions"))
                    .unwrap()
                    .map(|entry| entry.unwrap().path())
                    .find(|path| path.extension().is_some_and(|e| e == "jsonl"))
                    .unwrap();
                let before = std::fs::metadata(&log).unwrap().len();
                runtime.block_on(save_step(&*store, session, &mut revision, None));
                let grown = std::fs::metadata(&log).unwrap().len() - before;
                vec![b'x'; usize::try_from(grown).unwrap()]
            }
            Place::SqliteTmpfs | Place::SqliteDisk => {
                runtime.block_on(save_step(&*store, session, &mut revision, None));
                serde_json::to_vec(&[assistant_call(0), tool_result(0)]).unwrap()
            }
        };
        let mut floor = Floor::new(place, dir.path(), bytes.clone());
        let subjects = [
            Binding::None,
            Binding::Mode(Durability::Step, true),
            Binding::Mode(Durability::Async, true),
            Binding::Mode(Durability::Exit, true),
            Binding::Mode(Durability::Step, false),
            Binding::Mode(Durability::Async, false),
        ];
        let mut saves = Vec::new();
        let mut leased_saves = Vec::new();
        let mut floors = Vec::new();
        let mut encoding_floors = Vec::new();
        let mut call_times = vec![Vec::new(); subjects.len()];
        for round in 0..ROUNDS {
            floors.push(floor.time(false));
            encoding_floors.push(floor.time(true));
            saves.push(runtime.block_on(step_saves(&*store, session, &mut revision, false)));
            leased_saves.push(runtime.block_on(step_saves(&*store, session, &mut revision, true)));
            for (index, (subject, times)) in subjects.iter().zip(&mut call_times).enumerate() {
                times.push(runtime.block_on(calls(&store, *subject, index, round)));
            }
        }
        let (save, floor, encoding) = (
            median(saves).expect("ROUNDS rounds"),
            median(floors).expect("ROUNDS rounds"),
            median(encoding_floors).expect("ROUNDS rounds"),
        );
        println!(
            "\n{place:?} ({} bytes per save): step save {:.1} µs; floor {:.1} µs: {:.2}x; floor \
             with the JSON encoding {:.1} µs: {:.2}x",
            bytes.len(),
            micros(save),
            micros(floor),
            save.as_secs_f64() / floor.as_secs_f64(),
            micros(encoding),
            save.as_secs_f64() / encoding.as_secs_f64(),
        );
        let leased = median(leased_saves).expect("ROUNDS rounds");
        println!(
            "  step save under the session's lease (as a call saves): {:.1} µs: {:.2}x the floor, \
             {:.2}x the floor with the encoding",
            micros(leased),
            leased.as_secs_f64() / floor.as_secs_f64(),
            leased.as_secs_f64() / encoding.as_secs_f64(),
        );
        let bare = median(call_times[0].clone()).expect("ROUNDS rounds");
        println!("  call without a session: {:.1} µs", micros(bare));
        for (subject, times) in subjects.iter().zip(call_times).skip(1) {
            let time = median(times).expect("ROUNDS rounds");
            let added = time.saturating_sub(bare);
            let Binding::Mode(mode, idempotent) = subject else {
                continue;
            };
            println!(
                "  {mode:?}, {} tool: call {:.1} µs, added {:.1} µs = {:.2}x one floor save",
                if *idempotent {
                    "idempotent"
                } else {
                    "not idempotent"
                },
                micros(time),
                micros(added),
                added.as_secs_f64() / floor.as_secs_f64()
            );
        }
    }
}
