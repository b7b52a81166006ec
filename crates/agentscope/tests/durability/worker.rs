//! The worker side: what a spawned copy of this binary does, and how the tests start one.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentscope::CallInput;
use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::session::{Durability, JsonFileSessionStore, SessionError, SessionStore};
use agentscope_postgres::PostgresSessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The environment variable that carries a worker's task (JSON).
pub(crate) const TASK: &str = "AGENTSCOPE_DURABILITY_TASK";

/// How long the SQLite store's session leases live in these tests (workers and tests
/// alike): a killed worker keeps its session busy that long at most.
pub(crate) const SQLITE_LEASE_TTL: Duration = Duration::from_secs(1);

/// Which store a worker uses, on a path the test owns (for Redis and PostgreSQL, the URL of
/// a server the test started: see `stores::Place`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) enum StoreKind {
    Json,
    Sqlite,
    Redis,
    Postgres,
}

/// How long the Redis and PostgreSQL stores' session leases live in these tests (workers and
/// tests alike): a killed worker keeps its session busy that long at most.
pub(crate) const SERVER_LEASE_TTL: Duration = Duration::from_millis(500);

/// What a worker does.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Task {
    /// Resume session `session`, whose `transfer` call `t1` awaits approval: approve it
    /// unless the session already holds the decision (or the call started), then call with
    /// `resolve`'s input. The tool appends `start <key>` and `done <key>` lines to `effects`.
    Resume {
        store: StoreKind,
        path: PathBuf,
        session: String,
        effects: PathBuf,
        approve: bool,
        resolve: Resolve,
    },
    /// On session `session`: with `first`, ask for a sequential batch of three `step` calls
    /// (`s1`, `s2`, `s3`) and their answer; else resume with `call(())`. The tool appends
    /// `start <id>` and `done <id>` lines to `effects`.
    Batch {
        store: StoreKind,
        path: PathBuf,
        session: String,
        effects: PathBuf,
        first: bool,
        mode: Mode,
    },
    /// Make `calls` calls `"{tag}-{i}"` on session `session`; print the outcomes, then
    /// `COUNTS` (how many requests the model got and how many calls hooks saw).
    Write {
        store: StoreKind,
        path: PathBuf,
        session: String,
        tag: String,
        calls: usize,
    },
    /// Resume session `session`, whose `transfer` call `t1` awaits approval, in durability
    /// `mode`: approve it, then call `call(())`, which prints `PAUSED` and blocks its thread
    /// at `pause` (the test kills the worker there). The tool appends `start <key>` to
    /// `effects` first; with `run_again` it declares `InDoubt::RunAgain`.
    Paused {
        store: StoreKind,
        path: PathBuf,
        session: String,
        effects: PathBuf,
        mode: Mode,
        pause: Pause,
        run_again: bool,
    },
    /// Make one call `input` on session `session` whose `wait` tool prints `TOOL_STARTED`
    /// and waits until the call is interrupted; print the outcome.
    Hold {
        store: StoreKind,
        path: PathBuf,
        session: String,
        input: String,
    },
}

/// The session's durability in a `Batch` worker.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) enum Mode {
    Step,
    Async,
    Exit,
}

impl From<Mode> for Durability {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Step => Durability::Step,
            Mode::Async => Durability::Async,
            Mode::Exit => Durability::Exit,
        }
    }
}

/// Where a `Paused` worker stops (printing `PAUSED` and blocking its thread, so nothing of
/// the call, its save queue included, goes on) for the test to kill it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) enum Pause {
    /// At PreActing, after the approval hook applied its decision: PreCall and its
    /// checkpoint are done, the tool has not started.
    BeforeTool,
    /// In the tool, once it has appended its `start <key>` line (its effect).
    InTool,
}

/// Prints `PAUSED` and blocks the thread until the process is killed.
fn pause_here() {
    println!("PAUSED");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// An agent on `session` of `store` in durability `mode` with the approval hook and the
/// `transfer` tool (guarded), which appends `start <key>` to `effects` and answers
/// "transferred"; with `run_again` the tool declares `InDoubt::RunAgain`; `pause` makes the
/// call stop there for good (see [`Pause`]).
pub(crate) fn paused_agent(
    store: Arc<dyn SessionStore>,
    session: &str,
    model: ScriptedModel,
    effects: PathBuf,
    mode: Mode,
    (pause, run_again): (Option<Pause>, bool),
) -> Result<(ReActAgent, ToolApprovalHook), BuildError> {
    let tool = tool_fn(
        "transfer",
        "Transfers money.",
        json!({"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}),
        move |_input, ctx| {
            let effects = effects.clone();
            async move {
                append(&effects, &format!("start {}", ctx.idempotency_key()));
                if pause == Some(Pause::InTool) {
                    pause_here();
                }
                Ok("transferred".to_owned())
            }
        },
    );
    let tool = match run_again {
        true => tool.in_doubt(agentscope::InDoubt::RunAgain),
        false => tool,
    };
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["transfer"]));
    let mut builder = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(tool))
        .hook(approvals.clone())
        .session(store, session)
        .durability(mode.into());
    if pause == Some(Pause::BeforeTool) {
        builder = builder.hook(
            hook_fn(|_event| {
                pause_here();
                Ok(())
            })
            .with_priority(ToolApprovalHook::PRIORITY + 1)
            .with_interests(HookEventType::PreActing),
        );
    }
    Ok((builder.build()?, approvals))
}

/// What a `Write` worker's agent saw over all its calls, printed as `COUNTS <json>`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Requests the model received.
    pub(crate) model_requests: usize,
    /// Calls that reached the hooks (PreCall events).
    pub(crate) pre_calls: usize,
}

/// The input of a resume: how the application resolves `t1` if it is in doubt.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) enum Resolve {
    /// `call(())`: nothing to resolve (yet).
    Nothing,
    /// Run `t1` again, with the same idempotency key (`CallInput::retry`).
    Retry,
    /// Answer `t1` with the result the application verified with the payment service.
    Verified,
}

/// The result the application gives a call in doubt it verified.
pub(crate) const VERIFIED: &str = "transferred (verified by the application)";

/// How one worker call ended, printed as `OUTCOME <json>`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok(String),
    /// The call stopped with these tool calls in doubt (`GenerateReason::ToolInDoubt`).
    InDoubt(Vec<String>),
    Conflict(String),
    Busy(String),
    Other(String),
}

impl StoreKind {
    /// Where a test keeps this kind of store in `dir`.
    pub(crate) fn path_in(self, dir: &Path) -> PathBuf {
        match self {
            StoreKind::Json => dir.join("sessions"),
            StoreKind::Sqlite => dir.join("sessions.db"),
            StoreKind::Redis | StoreKind::Postgres => {
                panic!("{self:?} keeps sessions on a server: see `stores::Place`")
            }
        }
    }

    /// How long a worker killed while it held a session keeps it busy: `None` when the
    /// store frees it at once (the kernel releases the JSON file store's lock with the
    /// process).
    pub(crate) fn lease_outlives_holder(self) -> Option<Duration> {
        match self {
            StoreKind::Json => None,
            StoreKind::Sqlite => Some(SQLITE_LEASE_TTL),
            StoreKind::Redis | StoreKind::Postgres => Some(SERVER_LEASE_TTL),
        }
    }
}

pub(crate) fn open_store(kind: StoreKind, path: &Path) -> Arc<dyn SessionStore> {
    match kind {
        StoreKind::Json => Arc::new(JsonFileSessionStore::new(path)),
        StoreKind::Sqlite => Arc::new(
            SqliteSessionStore::builder(path)
                .lease_ttl(SQLITE_LEASE_TTL)
                .open()
                .unwrap(),
        ),
        StoreKind::Redis => connect(async {
            RedisSessionStore::builder(url(path))
                .lease_ttl(SERVER_LEASE_TTL)
                .connect()
                .await
                .map(|store| Arc::new(store) as Arc<dyn SessionStore>)
        }),
        StoreKind::Postgres => connect(async {
            PostgresSessionStore::builder(url(path))
                .lease_ttl(SERVER_LEASE_TTL)
                .connect()
                .await
                .map(|store| Arc::new(store) as Arc<dyn SessionStore>)
        }),
    }
}

/// The server URL a task carries in its `path` (it holds the password: never print it).
fn url(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// Waits for a store to connect, on the runtime the store then runs its connections on:
/// this blocks the calling thread, so it must be inside a multi-thread tokio runtime (the
/// workers' runtime and the tests that open a server store are).
fn connect(
    connecting: impl std::future::Future<Output = Result<Arc<dyn SessionStore>, SessionError>>,
) -> Arc<dyn SessionStore> {
    let runtime = tokio::runtime::Handle::current();
    // The error names the server without its password.
    tokio::task::block_in_place(|| runtime.block_on(connecting)).unwrap()
}

/// The `wait` tool: prints `TOOL_STARTED`, then waits until its call is interrupted.
fn wait_tool() -> impl Tool {
    tool_fn(
        "wait",
        "Waits until interrupted.",
        json!({"type": "object"}),
        |_input, ctx| async move {
            println!("TOOL_STARTED");
            std::io::stdout().flush().unwrap();
            ctx.cancelled().await;
            Err::<String, _>(ToolError::Cancelled)
        },
    )
}

/// The tool whose runs the kill test counts: `start <key>` when it begins, `done <key>`
/// (synced) when the transfer happens, with a random pause between so kills land inside it
/// too. Like a payment service, it does a transfer once per idempotency key: a call whose
/// key is done already returns without transferring again.
pub(crate) fn transfer_tool(effects: PathBuf) -> impl Tool {
    tool_fn(
        "transfer",
        "Transfers money.",
        json!({"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}),
        move |_input, ctx| {
            let effects = effects.clone();
            async move {
                let key = ctx.idempotency_key();
                append(&effects, &format!("start {key}"));
                tokio::time::sleep(Duration::from_millis(fastrand_ms(5, 40))).await;
                let done = format!("done {key}");
                let already = std::fs::read_to_string(&effects)
                    .unwrap_or_default()
                    .lines()
                    .any(|line| line == done);
                if !already {
                    append(&effects, &done);
                }
                Ok("transferred".to_owned())
            }
        },
    )
}

fn fastrand_ms(low: u64, high: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    low + nanos % (high - low + 1)
}

fn append(path: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(format!("{line}\n").as_bytes()).unwrap();
    file.sync_data().unwrap();
}

/// An agent on `session` of `store` (with durability `mode`) whose model asks for the
/// sequential batch `s1`, `s2`, `s3` of the `step` tool (on the first call) and then answers
/// "Done.".
pub(crate) fn batch_agent(
    store: Arc<dyn SessionStore>,
    session: &str,
    first: bool,
    effects: PathBuf,
    mode: Mode,
) -> ReActAgent {
    let batch = ScriptedResponse::tool_calls(["s1", "s2", "s3"].map(|id| (id, "step", json!({}))));
    let done = ScriptedResponse::text("Done.");
    let model = match first {
        true => ScriptedModel::new([batch, done]),
        false => ScriptedModel::new([done]),
    };
    let step = tool_fn(
        "step",
        "Does one step.",
        json!({"type": "object"}),
        move |_input, ctx| {
            let effects = effects.clone();
            async move {
                let id = ctx.tool_use().id.to_string();
                append(&effects, &format!("start {id}"));
                tokio::time::sleep(Duration::from_millis(fastrand_ms(5, 40))).await;
                append(&effects, &format!("done {id}"));
                Ok(format!("{id} done"))
            }
        },
    );
    ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(step))
        .session(store, session)
        .durability(mode.into())
        .build()
        .unwrap()
}

/// The model of the kill test: one `transfer` call, then the answer.
pub(crate) fn transfer_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("t1", "transfer", json!({"amount": 5})),
        ScriptedResponse::text("Sent."),
    ])
}

/// An agent on `session` of `store` with the approval hook and the `transfer` tool.
pub(crate) fn approval_agent(
    store: Arc<dyn SessionStore>,
    session: &str,
    model: ScriptedModel,
    effects: PathBuf,
) -> (ReActAgent, ToolApprovalHook) {
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["transfer"]));
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(transfer_tool(effects)))
        .hook(approvals.clone())
        .session(store, session)
        .build()
        .unwrap();
    (agent, approvals)
}

pub(crate) fn classify(result: Result<Msg, AgentError>) -> Outcome {
    match result {
        Ok(reply) if reply.generate_reason() == Some(GenerateReason::ToolInDoubt) => {
            Outcome::InDoubt(
                reply
                    .tool_uses()
                    .iter()
                    .map(|call| call.id.to_string())
                    .collect(),
            )
        }
        Ok(reply) => Outcome::Ok(reply.text()),
        Err(AgentError::Session(error @ SessionError::Conflict { .. })) => {
            Outcome::Conflict(error.to_string())
        }
        Err(error @ AgentError::Busy) => Outcome::Busy(error.to_string()),
        Err(error) => Outcome::Other(error.to_string()),
    }
}

/// Starts a worker for `task`; its stdout is piped.
pub(crate) fn spawn(task: &Task) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "worker::run",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(TASK, serde_json::to_string(task).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// What a worker prints once its store is open (see [`spawn_ready`]).
const STORE_OPEN: &str = "STORE_OPEN";

/// Says that the worker's store is open.
fn store_open() {
    println!("{STORE_OPEN}");
}

/// Starts a worker for `task` (a `Resume` or a `Batch`) and waits until its store is open,
/// so that kills timed from then land in the worker's work, not in its start (the process,
/// and for a server store its connection: tens of milliseconds with PostgreSQL). Blocks.
pub(crate) fn spawn_ready(task: &Task) -> Child {
    let mut child = spawn(task);
    let mut stdout = child.stdout.take().unwrap();
    // Byte by byte: what follows the marker stays in the pipe for `finish`.
    let (mut line, mut byte) = (Vec::new(), [0_u8]);
    loop {
        let read = stdout.read(&mut byte).unwrap();
        assert_eq!(read, 1, "the worker exited before its store was open");
        match byte[0] {
            // libtest may print "test worker::run ... " on the same line first.
            b'\n' if String::from_utf8_lossy(&line).contains(STORE_OPEN) => break,
            b'\n' => line.clear(),
            other => line.push(other),
        }
    }
    child.stdout = Some(stdout);
    child
}

/// Waits for a worker and returns the outcomes it printed; panics if it failed.
pub(crate) fn finish(child: Child) -> Vec<Outcome> {
    finish_with_counts(child).0
}

/// Waits for a `Write` worker and returns the outcomes and the counts it printed; panics
/// if it failed.
pub(crate) fn finish_with_counts(child: Child) -> (Vec<Outcome>, Option<Counts>) {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "worker failed: {:?}",
        output.status
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    // libtest may print "test worker::run ... " on the same line first.
    let after = |marker: &'static str| {
        stdout
            .lines()
            .filter_map(move |line| line.split_once(marker).map(|(_, json)| json))
    };
    let outcomes = after("OUTCOME ")
        .map(|json| serde_json::from_str(json).unwrap())
        .collect();
    let counts = after("COUNTS ")
        .map(|json| serde_json::from_str(json).unwrap())
        .next();
    (outcomes, counts)
}

/// The worker entry point: runs the task in `AGENTSCOPE_DURABILITY_TASK`. Ignored, so a
/// normal test run does not run it; the tests start it in child processes.
#[test]
#[ignore = "started by the durability tests in child processes"]
fn run() {
    let task: Task = serde_json::from_str(&std::env::var(TASK).expect("a worker task")).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        match task {
            Task::Resume {
                store,
                path,
                session,
                effects,
                approve,
                resolve,
            } => {
                let store = open_store(store, &path);
                store_open();
                let stored = store.load(&session).await.unwrap().unwrap();
                // This process's model only answers: the tool call is stored already.
                let model = ScriptedModel::new([ScriptedResponse::text("Sent.")]);
                let (agent, approvals) = approval_agent(store, &session, model, effects);
                if approve {
                    approvals.restore_state(&stored).unwrap();
                    approvals.approve("t1").unwrap();
                }
                let input = match resolve {
                    Resolve::Nothing => CallInput::default(),
                    Resolve::Retry => CallInput::default().retry(["t1"]),
                    Resolve::Verified => CallInput::from(Msg::tool_result(ToolResultBlock::text(
                        "t1", "transfer", VERIFIED,
                    ))),
                };
                println!(
                    "OUTCOME {}",
                    serde_json::to_string(&classify(agent.call(input).await)).unwrap()
                );
            }
            Task::Batch {
                store,
                path,
                session,
                effects,
                first,
                mode,
            } => {
                let store = open_store(store, &path);
                store_open();
                let agent = batch_agent(store, &session, first, effects, mode);
                let input = match first {
                    true => CallInput::from("Do three steps."),
                    false => CallInput::default(),
                };
                println!(
                    "OUTCOME {}",
                    serde_json::to_string(&classify(agent.call(input).await)).unwrap()
                );
            }
            Task::Paused {
                store,
                path,
                session,
                effects,
                mode,
                pause,
                run_again,
            } => {
                let store = open_store(store, &path);
                let stored = store.load(&session).await.unwrap().unwrap();
                let model = ScriptedModel::new([ScriptedResponse::text("Sent.")]);
                let (agent, approvals) = paused_agent(
                    store,
                    &session,
                    model,
                    effects,
                    mode,
                    (Some(pause), run_again),
                )
                .unwrap();
                approvals.restore_state(&stored).unwrap();
                approvals.approve("t1").unwrap();
                let outcome = classify(agent.call(()).await);
                println!("OUTCOME {}", serde_json::to_string(&outcome).unwrap());
            }
            Task::Write {
                store,
                path,
                session,
                tag,
                calls,
            } => {
                let store = open_store(store, &path);
                let model = ScriptedModel::new([ScriptedResponse::text("noted")]).cycling();
                let pre_calls = Arc::new(AtomicUsize::new(0));
                let counter = Arc::clone(&pre_calls);
                let agent = ReActAgent::builder()
                    .model(model.clone())
                    .hook(
                        hook_fn(move |_event| {
                            counter.fetch_add(1, Ordering::SeqCst);
                            Ok(())
                        })
                        .with_interests(HookEventType::PreCall),
                    )
                    .session(store, session)
                    .build()
                    .unwrap();
                for i in 0..calls {
                    let outcome = classify(agent.call(format!("{tag}-{i}")).await);
                    println!("OUTCOME {}", serde_json::to_string(&outcome).unwrap());
                }
                let counts = Counts {
                    model_requests: model.request_count(),
                    pre_calls: pre_calls.load(Ordering::SeqCst),
                };
                println!("COUNTS {}", serde_json::to_string(&counts).unwrap());
            }
            Task::Hold {
                store,
                path,
                session,
                input,
            } => {
                let store = open_store(store, &path);
                let model =
                    ScriptedModel::new([ScriptedResponse::tool_call("w1", "wait", json!({}))]);
                let agent = ReActAgent::builder()
                    .model(model)
                    .toolkit(Toolkit::new().tool(wait_tool()))
                    .session(store, session)
                    .build()
                    .unwrap();
                let outcome = classify(agent.call(input).await);
                println!("OUTCOME {}", serde_json::to_string(&outcome).unwrap());
            }
        }
    });
}
