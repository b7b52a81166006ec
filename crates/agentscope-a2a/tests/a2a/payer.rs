//! What the multi-process tests share (A2A: `tests/a2a/processes.rs`; AG-UI:
//! `agentscope-server/tests/agui_instances.rs`, which includes this file): the agent their
//! server processes serve (the [`Payer`] model and the ledgered [`pay`] tool), the stores
//! ([`Kind`]), the worker processes ([`Instances`]) and the client that drives them
//! ([`drive`]: kills on request), how the ledger and a conversation read, and the checks
//! both make of the trials ([`check_trials`], [`stored_problems`], [`assert_trials`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agentscope::prelude::*;
use agentscope::session::{AgentState, SessionStore};
use agentscope::{ChatStream, ModelError, ModelRequest};
use agentscope_postgres::PostgresSessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_serving::idempotency_key;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::process::{SelfProcess, json_settings};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use agentscope_test::{ledger, tools};
use serde_json::{Value, json};

/// How long `pay` waits, at most, for the client to let it finish.
const TOOL_HOLD: Duration = Duration::from_secs(60);
/// How long a client may take over all the trials of a store.
const CLIENT_DEADLINE: Duration = Duration::from_secs(600);

/// Where the server processes keep their sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Sqlite,
    Redis,
    Postgres,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Redis => "redis",
            Kind::Postgres => "postgres",
        }
    }

    pub(crate) fn parse(name: &str) -> Self {
        match name {
            "sqlite" => Kind::Sqlite,
            "redis" => Kind::Redis,
            "postgres" => Kind::Postgres,
            other => panic!("unknown store {other:?}"),
        }
    }

    /// A store on `target` (a file, or a server's URL), leasing sessions for `ttl`.
    pub(crate) async fn open(self, target: &str, ttl: Duration) -> Arc<dyn SessionStore> {
        match self {
            Kind::Sqlite => {
                let builder = SqliteSessionStore::builder(target).lease_ttl(ttl);
                Arc::new(builder.open().unwrap())
            }
            Kind::Redis => {
                let builder = RedisSessionStore::builder(target).lease_ttl(ttl);
                Arc::new(builder.connect().await.unwrap())
            }
            Kind::Postgres => {
                let builder = PostgresSessionStore::builder(target).lease_ttl(ttl);
                Arc::new(builder.connect().await.unwrap())
            }
        }
    }
}

/// The model of every worker: it answers from the conversation, whatever instance asks and
/// in whatever order: "Pay invoice N" calls `pay` (call id `pay-N`); a result of `pay-N`
/// is answered "Invoice N is paid."; "Was it paid?" is answered "Yes, it was paid.".
#[derive(Clone)]
pub(crate) struct Payer;

impl Model for Payer {
    fn model_name(&self) -> &str {
        "payer"
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let last = request.messages.last();
        let result = last.and_then(|msg| msg.tool_results().first().map(|r| r.id.to_string()));
        let text = last.map(Msg::text).unwrap_or_default();
        let response = if let Some(call) = result {
            let invoice = call.strip_prefix("pay-").unwrap_or(&call);
            ScriptedResponse::text(format!("Invoice {invoice} is paid."))
        } else if let Some(invoice) = text.strip_prefix("Pay invoice ") {
            let invoice: u64 = invoice.parse().map_err(|_| ModelError::InvalidResponse {
                message: format!("no invoice in {text:?}"),
            })?;
            ScriptedResponse::tool_call(
                format!("pay-{invoice}"),
                "pay",
                json!({"invoice": invoice}),
            )
        } else if text == "Was it paid?" {
            ScriptedResponse::text("Yes, it was paid.")
        } else {
            return Err(ModelError::InvalidResponse {
                message: format!("nothing scripted after {text:?}"),
            });
        };
        ScriptedModel::new([response]).stream(request).await
    }
}

/// `pay {"invoice": n}`: pays once per idempotency key (`effects/<key>`, created at most
/// once), records the run (`attempts`: `<invoice> <key>`), then waits until the client lets
/// it finish (`release/<invoice>` exists) and answers "paid invoice n".
pub(crate) fn pay(dir: PathBuf) -> impl Tool {
    tools::pay(move |invoice, ctx| {
        let dir = dir.clone();
        async move {
            let key = ctx.idempotency_key();
            // Paid once per key, whichever process gets there first; then the run is
            // recorded (a client that sees the run knows the payment was made).
            let _ = std::fs::File::create_new(dir.join("effects").join(&key));
            ledger::append(&dir.join("attempts"), &format!("{invoice} {key}"));
            let release = dir.join("release").join(invoice.to_string());
            let deadline = tokio::time::Instant::now() + TOOL_HOLD;
            while !release.exists() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            format!("paid invoice {invoice}")
        }
    })
}

/// The server processes of a run: copies of the test binary running the ignored test
/// `worker` (its exact name), each told `{"store", "target", "ttl_ms", "dir"}` through `env`;
/// each prints `LISTENING <url>` once it serves.
pub(crate) struct Instances {
    worker: &'static str,
    env: &'static str,
    settings: Value,
    workers: Vec<Option<SelfProcess>>,
}

impl Instances {
    /// `count` processes of `worker` on the store `kind` at `target` (leases of `ttl`), with
    /// the ledger in `dir`; and their URLs.
    pub(crate) fn start(
        worker: &'static str,
        env: &'static str,
        count: usize,
        (kind, target, ttl): (Kind, &str, Duration),
        dir: &Path,
    ) -> (Self, Vec<String>) {
        let settings = json!({
            "store": kind.name(),
            "target": target,
            "ttl_ms": ttl.as_millis() as u64,
            "dir": dir,
        });
        let mut instances = Self {
            worker,
            env,
            settings,
            workers: Vec::new(),
        };
        let mut urls = Vec::new();
        for _ in 0..count {
            let (worker, url) = instances.spawn();
            instances.workers.push(Some(worker));
            urls.push(url);
        }
        (instances, urls)
    }

    fn spawn(&self) -> (SelfProcess, String) {
        let mut worker = SelfProcess::spawn_json(self.worker, self.env, &self.settings);
        let url = worker.expect("LISTENING ");
        (worker, url)
    }

    /// Kills instance `index` with SIGKILL.
    fn kill(&mut self, index: usize) {
        self.workers[index].take().unwrap().kill();
    }

    /// Starts a new process as instance `index`; its URL.
    fn restart(&mut self, index: usize) -> String {
        let (worker, url) = self.spawn();
        self.workers[index] = Some(worker);
        url
    }
}

/// Runs `client` (a Python or Node client, its arguments given) against the instances: it
/// asks for kills on its stdout (`KILL i`, answered on its stdin `KILLED i` once the process
/// is dead, then `URL i <url>` once a new process serves as instance `i`) and ends with
/// `REPORT <json>`, the report returned. Its other lines, and its stderr, are shown.
pub(crate) fn drive(mut client: Command, instances: &mut Instances) -> Value {
    let mut client = client
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut to_client = client.stdin.take().unwrap();
    let from_client = BufReader::new(client.stdout.take().unwrap());
    // The client's deadline: a stuck client is killed, and the test fails below.
    let pid = client.id();
    let (done, stop) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if stop.recv_timeout(CLIENT_DEADLINE).is_err() {
            eprintln!("the client took over {CLIENT_DEADLINE:?}: killing it");
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    });
    let mut report = None;
    for line in from_client.lines() {
        let line = line.unwrap();
        if let Some(index) = line.strip_prefix("KILL ") {
            let index: usize = index.parse().unwrap();
            instances.kill(index);
            writeln!(to_client, "KILLED {index}").unwrap();
            to_client.flush().unwrap();
            let url = instances.restart(index);
            writeln!(to_client, "URL {index} {url}").unwrap();
            to_client.flush().unwrap();
        } else if let Some(json) = line.strip_prefix("REPORT ") {
            report = Some(serde_json::from_str(json).unwrap());
        } else {
            eprintln!("[client] {line}");
        }
    }
    let status = client.wait().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    assert!(status.success(), "the client failed: {status:?}");
    report.expect("the client printed no report")
}

/// A folder for the ledger: `effects/` and `release/` in it.
fn ledger_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["effects", "release"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    dir
}

/// The ledger, read once the trials are over.
pub(crate) struct Books {
    /// The keys of `pay`'s runs by invoice, in order.
    pub(crate) attempts: BTreeMap<u64, Vec<String>>,
    /// The keys paid.
    pub(crate) effects: BTreeSet<String>,
}

impl Books {
    /// How many invoices `pay` ran for under more than one key.
    pub(crate) fn duplicates(&self) -> usize {
        self.attempts
            .values()
            .filter(|keys| keys.iter().collect::<BTreeSet<_>>().len() > 1)
            .count()
    }
}

/// The ledger in `dir`.
fn ledger(dir: &Path) -> Books {
    let mut attempts: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let text = std::fs::read_to_string(dir.join("attempts")).unwrap_or_default();
    for line in text.lines() {
        let (invoice, key) = line.split_once(' ').unwrap();
        attempts
            .entry(invoice.parse().unwrap())
            .or_default()
            .push(key.to_owned());
    }
    let effects = std::fs::read_dir(dir.join("effects"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    Books { attempts, effects }
}

/// A trial of the client's report, as both checks read it.
pub(crate) struct Trial<'a> {
    /// Its number.
    pub(crate) index: u64,
    /// `complete`, `kill`, ...
    pub(crate) kind: &'a str,
    pub(crate) invoice: u64,
    /// Its conversation: the field `conversation` names (A2A `context`, AG-UI `thread`).
    pub(crate) conversation: &'a str,
    /// Whether an instance was killed.
    pub(crate) killed: bool,
}

impl<'a> Trial<'a> {
    pub(crate) fn read(trial: &'a Value, conversation: &str) -> Self {
        let kind = trial["kind"].as_str().unwrap();
        Self {
            index: trial["trial"].as_u64().unwrap(),
            kind,
            invoice: trial["invoice"].as_u64().unwrap(),
            conversation: trial[conversation].as_str().unwrap(),
            killed: kind.starts_with("kill"),
        }
    }

    /// `what` as a problem of this trial.
    pub(crate) fn problem(&self, what: String) -> String {
        format!(
            "trial {} ({}, {}): {what}",
            self.index, self.kind, self.conversation
        )
    }
}

/// A stored message as a line: `Role: text`, a tool call as `call <id> <name> <input>`, a
/// tool result as `result <id> (ok|error): <text>`.
pub(crate) fn transcript(messages: &[Msg]) -> Vec<String> {
    messages
        .iter()
        .map(|msg| {
            let mut parts = vec![msg.text()];
            for call in msg.tool_uses() {
                parts.push(format!("call {} {} {}", call.id, call.name, call.input));
            }
            for result in msg.tool_results() {
                let status = if result.is_error { "error" } else { "ok" };
                parts.push(format!(
                    "result {} ({status}): {}",
                    result.id,
                    result.text_output()
                ));
            }
            parts.retain(|part| !part.is_empty());
            format!("{:?}: {}", msg.role, parts.join(" | "))
        })
        .collect()
}

/// What a worker serves on, from the settings [`Instances::start`] gave it in `env`: the
/// store (`store`, `target`, `ttl_ms`) and the ledger's folder (`dir`).
pub(crate) async fn worker_settings(env: &str) -> (Arc<dyn SessionStore>, PathBuf) {
    let settings: Value = json_settings(env);
    let kind = Kind::parse(settings["store"].as_str().unwrap());
    let target = settings["target"].as_str().unwrap();
    let ttl = Duration::from_millis(settings["ttl_ms"].as_u64().unwrap());
    let dir = PathBuf::from(settings["dir"].as_str().unwrap());
    (kind.open(target, ttl).await, dir)
}

/// What a run of the trials came to: the client's report, the ledger, how many trials.
pub(crate) struct Outcome {
    #[allow(dead_code)] // read by the AG-UI test only
    pub(crate) report: Value,
    pub(crate) books: Books,
    pub(crate) trials: usize,
}

/// The trials on one store: `count` processes of `worker` (settings in `env`) on `store`,
/// driven by `client` (the program and its script: the ledger's folder, the number of
/// trials and the instances' URLs are added); then, with the instances gone, each trial of
/// the client's report checked by `check` on the store opened anew, in a runtime of its
/// own.
pub(crate) fn run_trials(
    (worker, env, count): (&'static str, &'static str, usize),
    store: (Kind, &str, Duration),
    mut client: Command,
    trials: usize,
    mut check: impl AsyncFnMut(&Value, &dyn SessionStore, &Books),
) -> Outcome {
    let dir = ledger_dir();
    let (mut instances, urls) = Instances::start(worker, env, count, store, dir.path());
    client.arg(dir.path()).arg(trials.to_string()).args(&urls);
    let report = drive(client, &mut instances);
    drop(instances);
    let books = ledger(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (kind, target, ttl) = store;
    let trials = runtime.block_on(async {
        let store = kind.open(target, ttl).await;
        let trials = report["trials"].as_array().unwrap();
        for trial in trials {
            check(trial, &*store, &books).await;
        }
        trials.len()
    });
    Outcome {
        report,
        books,
        trials,
    }
}

/// What differs between a trial's stored session (`session`) and what happened: the
/// conversation against `expected` (as [`transcript`] reads it), tools left running, and
/// the key `pay` got (`key`) against the key of its call `pay-<invoice>` in the session.
pub(crate) fn stored_problems(
    stored: &AgentState,
    session: &str,
    invoice: u64,
    key: &str,
    expected: &[String],
) -> Vec<String> {
    let mut problems = Vec::new();
    let got = transcript(&stored.messages);
    if got != expected {
        problems.push(format!("the conversation: {got:?}, expected {expected:?}"));
    }
    if !stored.running_tools.is_empty() {
        problems.push(format!("tools left running: {:?}", stored.running_tools));
    }
    if let Some(call) = stored
        .messages
        .iter()
        .flat_map(|msg| msg.tool_uses())
        .find(|call| call.id == format!("pay-{invoice}").as_str())
    {
        let derived = idempotency_key(session, call);
        if derived != key {
            problems.push(format!(
                "the tool got key {key}, the call's key is {derived}"
            ));
        }
    }
    problems
}

/// Fails, listing them, when the trials came to any problem; then when `trials` trials were
/// checked, not `expected`.
pub(crate) fn assert_trials(problems: &[String], trials: usize, expected: usize) {
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert_eq!(trials, expected);
}
