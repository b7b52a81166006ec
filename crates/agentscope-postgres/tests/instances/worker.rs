//! The worker side: an agent instance in a process of its own, driven line by line over
//! stdin by the tests, as a service instance is driven by requests.

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use agentscope::prelude::*;
use agentscope_postgres::PostgresSessionStore;
use agentscope_test::process::{self, SelfProcess};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The environment variable that carries a worker's settings (JSON).
const SETTINGS: &str = "AGENTSCOPE_POSTGRES_WORKER";

/// How a worker connects and what its agent is called.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Settings {
    pub(crate) url: String,
    pub(crate) session: String,
    pub(crate) name: String,
    pub(crate) lease_ttl_ms: u64,
}

/// One request to a worker: a call with `input`, answered `reply`; with `wait_ms`, the model
/// first calls the `wait` tool, which sleeps that long (or until interrupted).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Request {
    pub(crate) input: String,
    pub(crate) reply: String,
    pub(crate) wait_ms: Option<u64>,
}

impl Request {
    /// A call `input` whose `wait` tool runs for ten minutes: it ends only when interrupted
    /// (or its process dies).
    pub(crate) fn until_interrupted(input: &str) -> Self {
        Self {
            input: input.into(),
            reply: "never said".into(),
            wait_ms: Some(600_000),
        }
    }
}

/// How a call ended, printed as `OUTCOME <json>`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The reply's text, and what the messages of the call's first model request say
    /// (`crate::said`).
    Ok {
        reply: String,
        model_input: Vec<String>,
    },
    Busy,
    Failed(String),
}

/// The `wait` tool: prints `TOOL_STARTED`, then sleeps `ms` milliseconds unless the call is
/// interrupted.
pub(crate) fn wait_tool() -> impl Tool {
    tool_fn(
        "wait",
        "Waits.",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        |input, ctx| async move {
            println!("TOOL_STARTED");
            std::io::stdout().flush().unwrap();
            let ms = input["ms"].as_u64().unwrap_or(0);
            let sleep = std::pin::pin!(tokio::time::sleep(Duration::from_millis(ms)));
            match futures::future::select(sleep, ctx.cancelled()).await {
                futures::future::Either::Left(_) => Ok(format!("waited {ms}ms")),
                futures::future::Either::Right(_) => Err(ToolError::Cancelled),
            }
        },
    )
}

/// An agent named `name` on `session` of `store`, answering from `model`, with `wait`.
pub(crate) fn agent(
    store: PostgresSessionStore,
    session: &str,
    name: &str,
    model: ScriptedModel,
) -> ReActAgent {
    ReActAgent::builder()
        .name(name)
        .model(model)
        .toolkit(Toolkit::new().tool(wait_tool()))
        .session(store, session)
        .build()
        .unwrap()
}

/// Scripts `model` for `request`, runs it on `agent`, and says how it ended.
pub(crate) async fn serve(agent: &ReActAgent, model: &ScriptedModel, request: &Request) -> Outcome {
    if let Some(ms) = request.wait_ms {
        model.push(ScriptedResponse::tool_call(
            format!("wait-{}", request.input),
            "wait",
            json!({ "ms": ms }),
        ));
    }
    model.push(ScriptedResponse::text(request.reply.clone()));
    let before = model.requests().len();
    let outcome = match agent.call(request.input.clone()).await {
        Ok(reply) => Outcome::Ok {
            reply: reply.text(),
            model_input: crate::all_said(&model.requests()[before].messages),
        },
        Err(AgentError::Busy) => Outcome::Busy,
        Err(error) => Outcome::Failed(error.to_string()),
    };
    // A call that did not reach the model leaves its script unused.
    model.clear();
    outcome
}

/// A running worker process.
pub(crate) struct Worker {
    process: SelfProcess,
}

impl Worker {
    /// Starts a worker with `settings`.
    pub(crate) fn spawn(settings: &Settings) -> Self {
        let mut process = SelfProcess::spawn_json("worker::run", SETTINGS, settings);
        process.expect("READY");
        Self { process }
    }

    /// Sends `request` (the worker runs it at once).
    pub(crate) fn send(&mut self, request: &Request) {
        self.process
            .send_line(&serde_json::to_string(request).unwrap());
    }

    /// Reads lines until one holds `marker`; returns what follows it.
    pub(crate) fn expect(&mut self, marker: &str) -> String {
        self.process.expect(marker)
    }

    /// The outcome of the request sent last.
    pub(crate) fn outcome(&mut self) -> Outcome {
        serde_json::from_str(&self.expect("OUTCOME ")).unwrap()
    }

    /// Sends `request` and waits for its outcome.
    pub(crate) fn call(&mut self, request: &Request) -> Outcome {
        self.send(request);
        self.outcome()
    }

    /// Kills the worker with SIGKILL: no destructor, no lease given back.
    pub(crate) fn kill(self) {
        self.process.kill();
    }
}

/// The worker entry point: serves the requests read from stdin with the settings in
/// `AGENTSCOPE_POSTGRES_WORKER`. Ignored, so a normal test run does not run it; the tests
/// start it in child processes.
#[test]
#[ignore = "started by the instance tests in child processes"]
fn run() {
    let settings: Settings = process::json_settings(SETTINGS);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let store = PostgresSessionStore::builder(&settings.url)
            .lease_ttl(Duration::from_millis(settings.lease_ttl_ms))
            .connect()
            .await
            .unwrap();
        let model = ScriptedModel::new([]);
        let agent = agent(store, &settings.session, &settings.name, model.clone());
        println!("READY");
        let mut lines = BufReader::new(std::io::stdin()).lines();
        while let Some(Ok(line)) = lines.next() {
            let request: Request = serde_json::from_str(&line).unwrap();
            let outcome = serve(&agent, &model, &request).await;
            println!("OUTCOME {}", serde_json::to_string(&outcome).unwrap());
            std::io::stdout().flush().unwrap();
        }
    });
}
