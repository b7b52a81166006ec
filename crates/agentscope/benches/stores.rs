//! `stores`: one step's save and one load on every session store, in one run, so their
//! figures compare: `JsonFileSessionStore`, `SqliteSessionStore`, `RedisSessionStore` and
//! `PostgresSessionStore`.
//!
//! - **Save of a step**: an assistant message with a tool call (~350 bytes of JSON) and its
//!   tool result (~530 bytes) appended to a session of exactly N messages (10 and 1,000),
//!   as an agent saves after a tool ran; an unmeasured save drops them again, so the session
//!   never grows. Saves go straight to the store (no call, so no lease is held).
//! - **Load**: the whole session of N messages, decoded. The JSON file store keeps the
//!   state it last saved or loaded, decoded, and returns a copy while the file is unchanged:
//!   its row measures a load through a new store value each time (what another process or a
//!   restarted one pays: the file read and decoded), and a line after the table gives the
//!   cached load.
//!
//! Where: the file stores on tmpfs (`/dev/shm`, where `fsync` costs nothing) and on a
//! temporary directory of the disk (where it is most of a save), or on the disk only
//! without `/dev/shm`; the printout says which. Redis and PostgreSQL are servers the bench
//! starts on 127.0.0.1 (`agentscope_test::components`): redis-server without persistence,
//! PostgreSQL with `fsync=off` (the test fixture's settings), so their rows compare with
//! the tmpfs rows: the stores' own work and one loopback round trip, no durable write. A
//! store whose server is not installed is skipped, with the reason printed.
//!
//! Every operation runs through `block_on` of a 2-worker tokio runtime, as an agent's call
//! does (the file stores do their file work on tokio's blocking pool); each figure is the
//! p50 and p99 of 1,000 samples after 50 unmeasured ones.
//!
//! Run: `cargo bench -p agentscope --bench stores` (it prints a markdown table).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::session::{JsonFileSessionStore, SessionStore, StateChange};
use agentscope_postgres::PostgresSessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::components::postgres::PostgresServer;
use agentscope_test::components::redis::RedisServer;
use agentscope_test::conversation::{agent, assistant_call, history, tool_result};
use tokio::runtime::Runtime;

const SIZES: [usize; 2] = [10, 1_000];
const SAMPLES: usize = 1_000;
const WARM_UP: usize = 50;

/// p50 and p99 of some samples.
#[derive(Clone, Copy)]
struct Figures {
    p50: Duration,
    p99: Duration,
}

impl Figures {
    fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let at = |p: f64| samples[((p / 100.0) * (samples.len() - 1) as f64).round() as usize];
        Self {
            p50: at(50.0),
            p99: at(99.0),
        }
    }
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {}", micros(self.p50), micros(self.p99))
    }
}

/// `123 µs`, or `1.23 ms` from a millisecond on.
fn micros(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1e6;
    match micros < 1_000.0 {
        true => format!("{micros:.0} µs"),
        false => format!("{:.2} ms", micros / 1_000.0),
    }
}

/// One store to measure.
struct Subject {
    /// The table's first column.
    name: String,
    store: Arc<dyn SessionStore>,
    /// The store a load goes through.
    loader: Box<dyn Fn() -> Arc<dyn SessionStore>>,
}

/// A store's figures at each of [`SIZES`].
struct Row {
    name: String,
    saves: Vec<Figures>,
    loads: Vec<Figures>,
}

/// Measures `subject`'s saves and loads at each size, on sessions of its own.
fn measure(runtime: &Runtime, subject: &Subject) -> Row {
    let (mut saves, mut loads) = (Vec::new(), Vec::new());
    for stored in SIZES {
        let session = format!("bench-{stored}");
        let store = &subject.store;
        runtime.block_on(store.delete(&session)).unwrap();
        let mut revision = runtime
            .block_on(store.save(&session, &StateChange::new(0, 0, history(stored), agent())))
            .unwrap();
        let (mut save_samples, mut load_samples) = (Vec::new(), Vec::new());
        for i in 0..WARM_UP + SAMPLES {
            let step = StateChange::new(
                revision,
                stored,
                vec![assistant_call(i), tool_result(i)],
                agent(),
            );
            let start = Instant::now();
            revision = runtime.block_on(store.save(&session, &step)).unwrap();
            let save = start.elapsed();
            let back = StateChange::new(revision, stored, Vec::new(), agent());
            revision = runtime.block_on(store.save(&session, &back)).unwrap();

            let loader = (subject.loader)();
            let start = Instant::now();
            let state = runtime.block_on(loader.load(&session)).unwrap().unwrap();
            let load = start.elapsed();
            assert_eq!(state.messages.len(), stored);
            if i >= WARM_UP {
                save_samples.push(save);
                load_samples.push(load);
            }
        }
        runtime.block_on(store.delete(&session)).unwrap();
        saves.push(Figures::of(save_samples));
        loads.push(Figures::of(load_samples));
    }
    Row {
        name: subject.name.clone(),
        saves,
        loads,
    }
}

/// The JSON file store's cached load (the same store value that saved), at each size.
fn cached_json_loads(runtime: &Runtime, dir: &Path) -> Vec<Figures> {
    let store = JsonFileSessionStore::new(dir);
    SIZES
        .iter()
        .map(|&stored| {
            let session = format!("cached-{stored}");
            let whole = StateChange::new(0, 0, history(stored), agent());
            runtime.block_on(store.save(&session, &whole)).unwrap();
            let samples = (0..WARM_UP + SAMPLES)
                .map(|_| {
                    let start = Instant::now();
                    runtime.block_on(store.load(&session)).unwrap().unwrap();
                    start.elapsed()
                })
                .skip(WARM_UP)
                .collect();
            runtime.block_on(store.delete(&session)).unwrap();
            Figures::of(samples)
        })
        .collect()
}

/// The file stores in `dir`, described as `place`.
fn file_stores(dir: &Path, place: &str) -> [Subject; 2] {
    let json_dir = dir.join("json");
    let json = Arc::new(JsonFileSessionStore::new(&json_dir));
    let sqlite: Arc<dyn SessionStore> =
        Arc::new(SqliteSessionStore::open(dir.join("sessions.db")).unwrap());
    let loader = Arc::clone(&sqlite);
    [
        Subject {
            name: format!("`JsonFileSessionStore`, {place}"),
            store: json,
            // A new store value: no decoded state cached.
            loader: Box::new(move || Arc::new(JsonFileSessionStore::new(&json_dir))),
        },
        Subject {
            name: format!("`SqliteSessionStore`, {place}"),
            store: sqlite,
            loader: Box::new(move || Arc::clone(&loader)),
        },
    ]
}

/// A subject whose loads go through the store that saves.
fn server_store(name: &str, store: Arc<dyn SessionStore>) -> Subject {
    let loader = Arc::clone(&store);
    Subject {
        name: name.to_owned(),
        store,
        loader: Box::new(move || Arc::clone(&loader)),
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let step = [assistant_call(0), tool_result(0)];
    println!(
        "stores: a step is an assistant message of {} bytes and a tool result of {} bytes of \
         JSON; the 1,000-message session is {} bytes",
        serde_json::to_vec(&step[0]).unwrap().len(),
        serde_json::to_vec(&step[1]).unwrap().len(),
        serde_json::to_vec(&history(1_000)).unwrap().len(),
    );

    let mut subjects = Vec::new();
    let tmpfs = Path::new("/dev/shm")
        .is_dir()
        .then(|| tempfile::tempdir_in("/dev/shm").unwrap());
    match &tmpfs {
        Some(dir) => {
            println!("stores: file stores on tmpfs: {}", dir.path().display());
            subjects.extend(file_stores(dir.path(), "tmpfs"));
        }
        None => println!("stores: no /dev/shm: the file stores run on the disk only"),
    }
    let disk = tempfile::tempdir().unwrap();
    println!("stores: file stores on the disk: {}", disk.path().display());
    subjects.extend(file_stores(disk.path(), "disk"));

    // The servers live until the end of `main`.
    let redis = RedisServer::start();
    match &redis {
        Some(server) => {
            println!(
                "stores: redis-server on 127.0.0.1:{} (no persistence)",
                server.port()
            );
            let store = runtime
                .block_on(RedisSessionStore::connect(server.url()))
                .unwrap();
            subjects.push(server_store("`RedisSessionStore`", Arc::new(store)));
        }
        None => println!("stores: Redis skipped: redis-server is not installed"),
    }
    let postgres = PostgresServer::start();
    match &postgres {
        Some(server) => {
            println!(
                "stores: PostgreSQL on 127.0.0.1:{} (fsync=off)",
                server.port()
            );
            let store = runtime
                .block_on(PostgresSessionStore::connect(server.url()))
                .unwrap();
            subjects.push(server_store("`PostgresSessionStore`", Arc::new(store)));
        }
        None => println!("stores: PostgreSQL skipped: it is not installed"),
    }

    let started = Instant::now();
    let rows: Vec<Row> = subjects
        .iter()
        .map(|subject| measure(&runtime, subject))
        .collect();
    let cached_dir = tmpfs.as_ref().unwrap_or(&disk).path().join("cached");
    let cached = cached_json_loads(&runtime, &cached_dir);

    println!();
    println!(
        "| store | save of a step, 10 messages | save, 1,000 messages | load, 10 messages | \
         load, 1,000 messages |"
    );
    println!("|---|---|---|---|---|");
    for row in &rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            row.name, row.saves[0], row.saves[1], row.loads[0], row.loads[1]
        );
    }
    println!();
    println!(
        "stores: p50 / p99 of {SAMPLES} samples each; the JSON file store's loads through a \
         new store value (its cached load, same store value, {}: 10 messages {}, 1,000 \
         messages {}); measured in {:.1?}",
        if tmpfs.is_some() { "tmpfs" } else { "disk" },
        cached[0],
        cached[1],
        started.elapsed()
    );
}
