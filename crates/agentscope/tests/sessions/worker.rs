//! The worker side of the process tests: an agent in a process of its own (a copy of this
//! binary running the ignored test `worker::run`) that makes one call on a session of a
//! JSON file store, whose tool holds the call until the test says so over stdin.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use agentscope_test::process::SelfProcess;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The environment variable that carries a worker's settings (JSON).
const SETTINGS: &str = "AGENTSCOPE_SESSIONS_WORKER";

/// Where the worker's store is and which session it calls on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Settings {
    pub(crate) dir: PathBuf,
    pub(crate) session: String,
}

/// The worker's call: `child q`, answered by the model with the `hold` call `hold-1`, then
/// with `child done`.
pub(crate) const QUESTION: &str = "child q";
pub(crate) const ANSWER: &str = "child done";

/// A running worker process.
pub(crate) struct Worker {
    process: SelfProcess,
}

impl Worker {
    /// Starts a worker with `settings` and waits until its `hold` tool runs (its call then
    /// holds the session).
    pub(crate) fn spawn_holding(settings: &Settings) -> Self {
        let settings = serde_json::to_string(settings).unwrap();
        let mut process = SelfProcess::spawn("worker::run", SETTINGS, &settings);
        process.expect("TOOL_STARTED");
        Self { process }
    }

    /// Lets the `hold` tool return, and waits for the call's outcome (the reply's text, or
    /// the error) and for the process to exit.
    pub(crate) fn finish(mut self) -> String {
        self.process.send_line("finish");
        let outcome = self.process.expect("OUTCOME ");
        self.process.wait_success();
        outcome
    }

    /// Kills the worker with SIGKILL: no destructor runs, nothing is given back.
    pub(crate) fn kill(self) {
        self.process.kill();
    }
}

/// The `hold` tool: prints `TOOL_STARTED`, then returns `held` once a line arrives on stdin.
fn hold_tool() -> impl Tool {
    tool_fn(
        "hold",
        "Holds the call.",
        json!({"type": "object"}),
        |_input, _ctx| async move {
            println!("TOOL_STARTED");
            std::io::stdout().flush().unwrap();
            tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().lock().read_line(&mut line).unwrap();
            })
            .await
            .unwrap();
            Ok("held")
        },
    )
}

/// The worker entry point: makes the call with the settings in
/// `AGENTSCOPE_SESSIONS_WORKER`. Ignored, so a normal test run does not run it; the process
/// tests start it in child processes.
#[test]
#[ignore = "started by the process tests in child processes"]
fn run() {
    let settings: Settings =
        serde_json::from_str(&std::env::var(SETTINGS).expect("worker settings")).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let agent = ReActAgent::builder()
            .name("child")
            .model(ScriptedModel::new([
                ScriptedResponse::tool_call("hold-1", "hold", json!({})),
                ScriptedResponse::text(ANSWER),
            ]))
            .toolkit(Toolkit::new().tool(hold_tool()))
            .session(JsonFileSessionStore::new(&settings.dir), &settings.session)
            .build()
            .unwrap();
        let outcome = match agent.call(QUESTION).await {
            Ok(reply) => reply.text(),
            Err(error) => format!("error: {error}"),
        };
        println!("OUTCOME {outcome}");
        std::io::stdout().flush().unwrap();
    });
}
