//! The worker side: an agent instance in a process of its own (a copy of the test binary,
//! [`SelfProcess`]), driven line by line over stdin by the tests, as a service instance is
//! driven by requests.

use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::all_said;
use crate::process::{self, SelfProcess};
use crate::{ScriptedModel, ScriptedResponse};

/// Where a store crate's worker entry point is: the exact name of its ignored test, and
/// the environment variable that carries a worker's [`Settings`] (JSON).
#[derive(Debug, Clone, Copy)]
pub struct WorkerEntry {
    /// The exact name of the ignored test that calls [`serve_stdin`], e.g. `worker::run`.
    pub test: &'static str,
    /// The environment variable that carries the settings, e.g. `AGENTSCOPE_REDIS_WORKER`.
    pub env: &'static str,
}

/// How a worker connects and what its agent is called.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    /// The store's URL.
    pub url: String,
    /// The session the worker's agent is bound to.
    pub session: String,
    /// The agent's name.
    pub name: String,
    /// The lease time to live of the worker's store, in milliseconds.
    pub lease_ttl_ms: u64,
}

/// One request to a worker: a call with `input`, answered `reply`; with `wait_ms`, the model
/// first calls the `wait` tool, which sleeps that long (or until interrupted).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// What the call is asked.
    pub input: String,
    /// What the model answers.
    pub reply: String,
    /// How long the `wait` tool runs first, if the model calls it.
    pub wait_ms: Option<u64>,
}

impl Request {
    /// A call `input` answered `reply` at once, without a tool.
    ///
    /// ```
    /// use agentscope_test::session_store::instances::worker::Request;
    ///
    /// assert_eq!(Request::text("q", "a").wait_ms, None);
    /// ```
    pub fn text(input: &str, reply: &str) -> Self {
        Self {
            input: input.into(),
            reply: reply.into(),
            wait_ms: None,
        }
    }

    /// A call `input` whose `wait` tool runs for ten minutes: it ends only when interrupted
    /// (or its process dies).
    ///
    /// ```
    /// use agentscope_test::session_store::instances::worker::Request;
    ///
    /// assert_eq!(Request::until_interrupted("q1").wait_ms, Some(600_000));
    /// ```
    pub fn until_interrupted(input: &str) -> Self {
        Self {
            input: input.into(),
            reply: "never said".into(),
            wait_ms: Some(600_000),
        }
    }
}

/// How a call ended, printed as `OUTCOME <json>`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum Outcome {
    /// The call ended with a reply.
    Ok {
        /// The reply's text.
        reply: String,
        /// What the messages of the call's first model request say ([`super::said`]).
        model_input: Vec<String>,
    },
    /// Another call held the session.
    Busy,
    /// The call failed with this error.
    Failed(String),
}

/// The `wait` tool: prints `TOOL_STARTED`, then sleeps `ms` milliseconds unless the call is
/// interrupted.
pub fn wait_tool() -> impl Tool {
    tool_fn(
        "wait",
        "Waits.",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        |input, ctx| async move {
            println!("TOOL_STARTED");
            std::io::stdout().flush().expect("stdout takes the line");
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
///
/// # Panics
///
/// When the agent does not build.
pub fn agent<S: SessionStore + 'static>(
    store: S,
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
        .expect("the agent builds")
}

/// Scripts `model` for `request`, runs it on `agent`, and says how it ended.
pub async fn serve(agent: &ReActAgent, model: &ScriptedModel, request: &Request) -> Outcome {
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
            model_input: all_said(&model.requests()[before].messages),
        },
        Err(AgentError::Busy) => Outcome::Busy,
        Err(error) => Outcome::Failed(error.to_string()),
    };
    // A call that did not reach the model leaves its script unused.
    model.clear();
    outcome
}

/// A running worker process.
#[derive(Debug)]
pub struct Worker {
    process: SelfProcess,
}

impl Worker {
    /// Starts the worker `entry` with `settings` and waits until it is ready.
    ///
    /// # Panics
    ///
    /// When it cannot be started or does not get ready.
    pub fn spawn(entry: WorkerEntry, settings: &Settings) -> Self {
        let mut process = SelfProcess::spawn_json(entry.test, entry.env, settings);
        process.expect("READY");
        Self { process }
    }

    /// Starts the worker `entry` with an agent named `name` on session `shared` of the store
    /// at `url`, whose leases live `lease_ttl_ms` (the session the [`scenarios`] use).
    ///
    /// [`scenarios`]: super::scenarios
    ///
    /// # Panics
    ///
    /// As [`Worker::spawn`].
    pub fn spawn_shared(entry: WorkerEntry, url: String, name: &str, lease_ttl_ms: u64) -> Self {
        let settings = Settings {
            url,
            session: "shared".into(),
            name: name.into(),
            lease_ttl_ms,
        };
        Self::spawn(entry, &settings)
    }

    /// Sends `request` (the worker runs it at once).
    ///
    /// # Panics
    ///
    /// When the worker's stdin is gone.
    pub fn send(&mut self, request: &Request) {
        self.process
            .send_line(&serde_json::to_string(request).expect("a request serializes to JSON"));
    }

    /// Reads lines until one holds `marker`; returns what follows it.
    ///
    /// # Panics
    ///
    /// When the worker's output ends first.
    pub fn expect(&mut self, marker: &str) -> String {
        self.process.expect(marker)
    }

    /// The outcome of the request sent last.
    ///
    /// # Panics
    ///
    /// When the worker prints none.
    pub fn outcome(&mut self) -> Outcome {
        serde_json::from_str(&self.expect("OUTCOME ")).expect("an outcome in JSON")
    }

    /// Sends `request` and waits for its outcome.
    ///
    /// # Panics
    ///
    /// As [`Worker::send`] and [`Worker::outcome`].
    pub fn call(&mut self, request: &Request) -> Outcome {
        self.send(request);
        self.outcome()
    }

    /// Kills the worker with SIGKILL: no destructor, no lease given back.
    pub fn kill(self) {
        self.process.kill();
    }
}

/// The body of a worker entry point (the ignored test `entry.test`): reads [`Settings`] from
/// `entry.env`, opens its store with `connect`, prints `READY`, then serves the requests
/// read from stdin, printing `OUTCOME <json>` after each.
///
/// # Panics
///
/// When the settings, a request or the runtime is missing or wrong.
pub fn serve_stdin<S, F, Fut>(entry: WorkerEntry, connect: F)
where
    S: SessionStore + 'static,
    F: FnOnce(Settings) -> Fut,
    Fut: Future<Output = S>,
{
    let settings: Settings = process::json_settings(entry.env);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async move {
        let store = connect(settings.clone()).await;
        let model = ScriptedModel::new([]);
        let agent = agent(store, &settings.session, &settings.name, model.clone());
        println!("READY");
        let mut lines = BufReader::new(std::io::stdin()).lines();
        while let Some(Ok(line)) = lines.next() {
            let request: Request = serde_json::from_str(&line).expect("a request in JSON");
            let outcome = serve(&agent, &model, &request).await;
            println!(
                "OUTCOME {}",
                serde_json::to_string(&outcome).expect("an outcome serializes to JSON")
            );
            std::io::stdout().flush().expect("stdout takes the line");
        }
    });
}
