//! What the multi-process tests share (A2A: `tests/a2a/processes.rs`; AG-UI:
//! `agentscope-server/tests/agui_instances.rs`, which includes this file): the agent their
//! server processes serve (the [`Payer`] model and the ledgered [`pay`] tool), the stores
//! ([`Kind`]), the worker processes ([`Instances`]) and the client that drives them
//! ([`drive`]: kills on request), and how the ledger and a conversation read.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope::{ChatStream, ModelError, ModelRequest};
use agentscope_postgres::PostgresSessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::process::SelfProcess;
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
            Kind::Sqlite => Arc::new(
                SqliteSessionStore::builder(target)
                    .lease_ttl(ttl)
                    .open()
                    .unwrap(),
            ),
            Kind::Redis => Arc::new(
                RedisSessionStore::builder(target)
                    .lease_ttl(ttl)
                    .connect()
                    .await
                    .unwrap(),
            ),
            Kind::Postgres => Arc::new(
                PostgresSessionStore::builder(target)
                    .lease_ttl(ttl)
                    .connect()
                    .await
                    .unwrap(),
            ),
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
pub(crate) fn ledger_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["effects", "release"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    dir
}

/// The ledger: the keys of `pay`'s runs by invoice, in order, and the keys paid.
pub(crate) fn ledger(dir: &Path) -> (BTreeMap<u64, Vec<String>>, BTreeSet<String>) {
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
    (attempts, effects)
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
