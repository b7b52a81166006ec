//! A real backend: Arize Phoenix (PyPI `arize-phoenix`, pinned in
//! `tests/python/requirements.txt`) started on loopback ports with a temporary working
//! directory and every outside connection of its own turned off; the golden scenarios are
//! exported to its OTLP HTTP endpoint with the crate's real pipeline (batch export, flush)
//! and read back through its REST API (`GET /v1/projects/{project}/spans`): the same span
//! names, parents, status, attributes and events arrive as the golden files hold.
//!
//! Phoenix keeps no OTLP span kind (it stores its own, derived from `gen_ai.operation.name`):
//! the kind checked here is that one (`AGENT`, `LLM`, `TOOL`); the OTLP kinds are checked by
//! the golden tests.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentscope_otel::{Otel, Protocol};
use agentscope_test::components::{available, free_port};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::golden::{Flat, SCENARIOS, golden, tree_of};
use crate::in_memory;

/// The Python of `tests/python/.venv` with Phoenix installed: as found, or made with
/// `python3 -m venv` and `pip install -r requirements.txt`.
fn python() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let python = dir.join(".venv/bin/python");
    let has_phoenix = |python: &Path| {
        Command::new(python)
            .args(["-c", "import phoenix.server.main"])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    if has_phoenix(&python) {
        return Ok(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv", ".venv"])
        .current_dir(&dir)
        .status()
        .is_ok_and(|status| status.success())
        && Command::new(dir.join(".venv/bin/pip"))
            .args(["install", "-q", "-r", "requirements.txt"])
            .current_dir(&dir)
            .status()
            .is_ok_and(|status| status.success());
    match made && has_phoenix(&python) {
        true => Ok(python),
        false => Err(format!(
            "Arize Phoenix is not installed in {} (`python3 -m venv .venv` and \
             `.venv/bin/pip install -r requirements.txt` there failed, or python3 is missing)",
            dir.display()
        )),
    }
}

/// A running Phoenix server, stopped when dropped.
struct Phoenix {
    child: Child,
    url: String,
    /// Its OTLP gRPC endpoint.
    grpc: String,
    dir: TempDir,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Phoenix {
    /// Starts Phoenix on free loopback ports (again on others when a port was taken in
    /// between) and waits until it answers.
    async fn start(python: &Path) -> Result<Self, String> {
        let mut why = String::new();
        for _ in 0..3 {
            let mut phoenix = Self::spawn(python)?;
            match phoenix.wait_ready().await {
                Ok(()) => return Ok(phoenix),
                Err(error) => why = error,
            }
        }
        Err(why)
    }

    fn spawn(python: &Path) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let (port, grpc) = (free_port(), free_port());
        let log =
            std::fs::File::create(dir.path().join("phoenix.log")).map_err(|e| e.to_string())?;
        let child = Command::new(python)
            .args(["-m", "phoenix.server.main", "serve"])
            // Nothing of the caller's environment (OTEL_*, proxies, PHOENIX_*).
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            // No analytics pixels, no fonts or downloads from the internet, no assistant,
            // agents or MCP server: Phoenix talks to nothing but this test, on loopback.
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            .env("PHOENIX_DISABLE_AGENT_ASSISTANT", "true")
            .env("PHOENIX_ENABLE_MCP_SERVER", "false")
            .env("PHOENIX_AGENTS_DISABLE_WEB_ACCESS", "true")
            .env("PHOENIX_AGENTS_DISABLE_BASH", "true")
            .env("PHOENIX_AGENTS_DISABLE_GITHUB", "true")
            .env("PHOENIX_LOG_MIGRATIONS", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start Phoenix: {e}"))?;
        Ok(Phoenix {
            child,
            url: format!("http://127.0.0.1:{port}"),
            grpc: format!("http://127.0.0.1:{grpc}"),
            dir,
        })
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(180);
        let health = format!("{}/healthz", self.url);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("Phoenix exited ({status}):\n{}", self.log()));
            }
            if let Ok(response) = client.get(&health).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Err(format!("Phoenix did not answer in 180 s:\n{}", self.log()))
    }

    fn log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("phoenix.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

/// The kind Phoenix gives a span of this GenAI operation.
fn phoenix_kind(operation: &str) -> &'static str {
    match operation {
        "invoke_agent" => "AGENT",
        "chat" => "LLM",
        "execute_tool" => "TOOL",
        _ => "UNKNOWN",
    }
}

/// The golden tree as Phoenix should show it: its own kind instead of the OTLP one.
fn as_phoenix_shows(mut nodes: Value) -> Value {
    for node in nodes.as_array_mut().unwrap() {
        let operation = node["attributes"]["gen_ai.operation.name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        node["kind"] = json!(phoenix_kind(&operation));
        let children = node["children"].take();
        node["children"] = as_phoenix_shows(children);
    }
    nodes
}

/// The attributes this crate exports (Phoenix adds its own, `llm.*`, `input.value`, ...).
fn ours(key: &str) -> bool {
    key.starts_with("gen_ai.") || key.starts_with("agentscope.") || key.starts_with("error.")
}

/// A span of Phoenix's REST API as a [`Flat`] span.
fn flat(span: &Value) -> Flat {
    let attributes = span["attributes"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(key, _)| ours(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let events = span["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| {
            let attributes = event["attributes"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            (event["name"].as_str().unwrap().to_owned(), attributes)
        })
        .collect();
    let status = match span["status_code"].as_str().unwrap() {
        "UNSET" => "Unset".to_owned(),
        "OK" => "Ok".to_owned(),
        _ => format!(
            "Error {{ description: {:?} }}",
            span["status_message"].as_str().unwrap_or_default()
        ),
    };
    Flat {
        id: span["context"]["span_id"].as_str().unwrap().to_owned(),
        parent: span["parent_id"].as_str().map(str::to_owned),
        start: span["start_time"].as_str().unwrap().to_owned(),
        name: span["name"].as_str().unwrap().to_owned(),
        kind: span["span_kind"].as_str().unwrap().to_owned(),
        status,
        attributes,
        events,
    }
}

/// How many spans a tree holds.
fn count(nodes: &Value) -> usize {
    nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|node| 1 + count(&node["children"]))
        .sum()
}

/// The spans of `project`, once Phoenix has stored `expected` of them (it ingests in the
/// background).
async fn spans_of(url: &str, project: &str, expected: usize) -> Vec<Value> {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = Value::Null;
    while Instant::now() < deadline {
        let response = client
            .get(format!("{url}/v1/projects/{project}/spans?limit=1000"))
            .send()
            .await
            .unwrap();
        if response.status().is_success() {
            last = response.json().await.unwrap();
            let spans = last["data"].as_array().unwrap();
            if spans.len() >= expected {
                assert_eq!(last["next_cursor"], Value::Null);
                return spans.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("Phoenix holds fewer than {expected} spans of {project} after 60 s: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_golden_traces_arrive_in_phoenix_intact() {
    let Some(python) = available(python()) else {
        return;
    };
    let started = Instant::now();
    let phoenix = Phoenix::start(&python)
        .await
        .unwrap_or_else(|why| panic!("{why}"));
    eprintln!("Phoenix answered after {:?}", started.elapsed());
    for (name, scenario) in SCENARIOS {
        export_and_compare(&phoenix, name, scenario, Protocol::HttpProtobuf).await;
    }
    // The same over OTLP/gRPC, with the `grpc` feature (CI runs this test with it too).
    #[cfg(feature = "grpc")]
    for (name, scenario) in SCENARIOS {
        export_and_compare(&phoenix, name, scenario, Protocol::Grpc).await;
    }
    eprintln!("Phoenix test done after {:?}", started.elapsed());
}

/// Exports scenario `name` to Phoenix over `protocol`, into a project of its own, and
/// compares what Phoenix holds with the golden tree.
async fn export_and_compare(
    phoenix: &Phoenix,
    name: &str,
    scenario: crate::golden::MakeScenario,
    protocol: Protocol,
) {
    // A project of its own per scenario and protocol (Phoenix files spans by this resource
    // attribute).
    let (endpoint, transport) = match protocol {
        Protocol::Grpc => (&phoenix.grpc, "grpc"),
        _ => (&phoenix.url, "http"),
    };
    let project = format!("agentscope-{transport}-{}", name.replace('_', "-"));
    let otel = Otel::builder()
        .service_name("agentscope-otel-tests")
        .protocol(protocol)
        .endpoint(endpoint)
        .attribute("openinference.project.name", project.clone())
        // Phoenix takes traces only; the metrics stay in memory.
        .metric_exporter(opentelemetry_sdk::metrics::InMemoryMetricExporter::default())
        .build()
        .unwrap();
    {
        let _default = in_memory::set_default(&otel);
        scenario().await;
    }
    let guard = otel.into_guard();
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .unwrap()
        .unwrap();
    let expected = as_phoenix_shows(golden(name));
    let spans = spans_of(&phoenix.url, &project, count(&expected)).await;
    let arrived = tree_of(spans.iter().map(flat).collect());
    assert_eq!(
        serde_json::to_string_pretty(&arrived).unwrap(),
        serde_json::to_string_pretty(&expected).unwrap(),
        "{name} over {transport}: what Phoenix holds differs from tests/golden/{name}.json"
    );
}
