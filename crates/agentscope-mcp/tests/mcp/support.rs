//! The real MCP servers the tests run: `@modelcontextprotocol/server-everything`,
//! `@modelcontextprotocol/server-filesystem` and the small fixture server
//! (`tests/servers/fixture.mjs`), all pinned by `tests/servers/package-lock.json`.
//!
//! Without Node.js and npm the crate's build script leaves `has_node` unset and the tests
//! that need a server are ignored, with the reason (a machine with only the Rust toolchain).
//! Under CI (`AGENTSCOPE_CI=1`, set by `.ci/run`, which installs Node and runs `npm ci`
//! first) they always run and a missing component fails them. With npm present the test
//! installs the Node packages itself (`npm ci`, pinned by the committed lock file); when that
//! fails outside CI, it says why and skips.
//!
//! Below the servers, the scenario the tests share: connecting, a direct call, a scripted
//! model that calls one tool, an agent on it and its reply, and what the model was offered
//! and read.
#![allow(dead_code, clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use agentscope::{
    CallInput, ContentBlock, HookEvent, ModelRequest, Msg, ReActAgent, ReActAgentBuilder, Role,
    ToolResultBlock, ToolSchema, Toolkit,
};
use agentscope_mcp::{McpClient, McpError, McpServerConfig, McpToolResult};
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse, components};
use serde_json::Value;
use tempfile::TempDir;

/// The folder of the pinned Node packages, installed (once per test binary).
fn servers_dir() -> Option<PathBuf> {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        if !components::runs("node") {
            return Err("node is not installed".to_owned());
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers");
        // The package added last: a folder installed before it was added is installed again.
        components::node_packages(&dir, "node_modules/@modelcontextprotocol/server-filesystem")
    });
    components::available(result.clone())
}

/// server-everything's entry point.
fn everything_js() -> Option<PathBuf> {
    servers_dir()
        .map(|dir| dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

/// server-everything over stdio, named "everything".
pub(crate) fn everything_stdio() -> Option<McpServerConfig> {
    let js = everything_js()?;
    Some(
        McpServerConfig::stdio("node")
            .arg(js.to_string_lossy())
            .arg("stdio")
            .name("everything"),
    )
}

/// server-everything over stdio, started by a shell that first writes its process id to a
/// file (the shell then becomes node), so a test can kill it. The file is in a temporary
/// folder the test may use too.
pub(crate) struct KillableEverything {
    dir: TempDir,
    config: McpServerConfig,
}

impl KillableEverything {
    pub(crate) fn new() -> Option<Self> {
        let js = everything_js()?;
        let dir = tempfile::tempdir().unwrap();
        let config = McpServerConfig::stdio("sh")
            .arg("-c")
            .arg(r#"echo $$ > "$0"; exec node "$1" stdio"#)
            .arg(dir.path().join("server.pid").to_string_lossy())
            .arg(js.to_string_lossy())
            .name("everything");
        Some(Self { dir, config })
    }

    /// The server, named "everything".
    pub(crate) fn config(&self) -> McpServerConfig {
        self.config.clone()
    }

    /// The temporary folder (it holds the pid file).
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process id the last started server wrote.
    pub(crate) fn pid(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.pid")).expect("the pid file")
    }

    /// Kills the last started server with SIGKILL.
    pub(crate) fn kill(&self) {
        let pid = self.pid();
        let status = Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -9 {pid} failed");
    }
}

/// server-filesystem over stdio, named "filesystem", allowed to read and write `root`
/// (nothing else).
pub(crate) fn filesystem_stdio(root: &Path) -> Option<McpServerConfig> {
    let dir = servers_dir()?;
    Some(
        McpServerConfig::stdio("node")
            .arg(
                dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
                    .to_string_lossy(),
            )
            .arg(root.to_string_lossy())
            .name("filesystem"),
    )
}

/// The fixture server over stdio, named "fixture".
fn fixture_stdio() -> Option<McpServerConfig> {
    let dir = servers_dir()?;
    Some(
        McpServerConfig::stdio("node")
            .arg(dir.join("fixture.mjs").to_string_lossy())
            .name("fixture"),
    )
}

/// The fixture server over streamable HTTP on a free port of 127.0.0.1 (at `/mcp`), stopped
/// when dropped.
pub(crate) struct HttpFixture {
    port: u16,
    _child: tokio::process::Child,
}

impl HttpFixture {
    pub(crate) async fn start() -> Option<Self> {
        let dir = servers_dir()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = tokio::process::Command::new("node")
            .arg(dir.join("fixture.mjs"))
            .arg("http")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("starting node");
        let address = format!("127.0.0.1:{port}");
        for _ in 0..300 {
            if tokio::net::TcpStream::connect(&address).await.is_ok() {
                return Some(Self {
                    port,
                    _child: child,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the fixture server did not listen on {address} within 15 s");
    }

    /// The server named "fixture" at its URL.
    pub(crate) fn config(&self) -> McpServerConfig {
        McpServerConfig::http(format!("http://127.0.0.1:{}/mcp", self.port)).name("fixture")
    }
}

/// server-everything over streamable HTTP on a free port of 127.0.0.1.
pub(crate) struct HttpEverything {
    js: PathBuf,
    port: u16,
    child: Option<tokio::process::Child>,
}

impl HttpEverything {
    pub(crate) async fn start() -> Option<Self> {
        let js = everything_js()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut server = Self {
            js,
            port,
            child: None,
        };
        server.spawn().await;
        Some(server)
    }

    async fn spawn(&mut self) {
        let child = tokio::process::Command::new("node")
            .arg(&self.js)
            .arg("streamableHttp")
            .env("PORT", self.port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("starting node");
        self.child = Some(child);
        let address = format!("127.0.0.1:{}", self.port);
        for _ in 0..300 {
            if tokio::net::TcpStream::connect(&address).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server-everything did not listen on {address} within 15 s");
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The server named "everything" at this URL.
    pub(crate) fn config(&self) -> McpServerConfig {
        McpServerConfig::http(self.url()).name("everything")
    }

    /// Kills the server (SIGKILL) and waits until it is gone.
    pub(crate) async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.expect("killing node");
        }
    }

    /// Starts the server again on the same port.
    pub(crate) async fn restart(&mut self) {
        self.kill().await;
        self.spawn().await;
    }
}

/// `names`, each after `prefix`: the tool names of a server connected with that prefix.
pub(crate) fn prefixed(prefix: &str, names: &[&str]) -> Vec<String> {
    names.iter().map(|name| format!("{prefix}{name}")).collect()
}

/// Connects to `config`, within 60 s.
pub(crate) async fn connect(config: McpServerConfig) -> McpClient {
    within(60, McpClient::connect(config)).await.unwrap()
}

/// A client of server-everything over stdio, its tools named after `prefix` (`""`: as
/// declared).
pub(crate) async fn everything(prefix: &str) -> Option<McpClient> {
    Some(connect(everything_stdio()?.prefix(prefix)).await)
}

/// A client of the fixture server, its tools named after `prefix` (`""`: as declared).
pub(crate) async fn fixture(prefix: &str) -> Option<McpClient> {
    Some(connect(fixture_stdio()?.prefix(prefix)).await)
}

/// Calls `tool` with `input` (a JSON object) on `client` itself, not through an agent (so
/// nothing on our side validates the arguments), within 30 s.
pub(crate) async fn call_tool(
    client: &McpClient,
    tool: &str,
    input: Value,
) -> Result<McpToolResult, McpError> {
    let Value::Object(arguments) = input else {
        panic!("tool arguments are a JSON object, not {input}");
    };
    within(30, client.call_tool(tool, arguments)).await
}

/// A model that calls `tool` with `input` (call `id`), then answers `answer`.
pub(crate) fn calls_then_answers(
    id: &str,
    tool: &str,
    input: Value,
    answer: &str,
) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call(id, tool, input),
        ScriptedResponse::text(answer),
    ])
}

/// An agent on `model` (a clone: the test keeps reading its requests) with `toolkit`, for
/// the test to add hooks or settings to.
pub(crate) fn agent_on(model: &ScriptedModel, toolkit: Toolkit) -> ReActAgentBuilder {
    ReActAgent::builder().model(model.clone()).toolkit(toolkit)
}

/// A toolkit of `client`'s tools (a copy of its current list).
pub(crate) fn tools_of(client: &McpClient) -> Toolkit {
    Toolkit::new().tools(client.tools())
}

/// An agent on `model` with `client`'s tools, and nothing else.
pub(crate) fn agent_with_tools(model: &ScriptedModel, client: &McpClient) -> ReActAgent {
    agent_on(model, tools_of(client)).build().unwrap()
}

/// The agent's reply to `input`, within 60 s.
pub(crate) async fn reply(agent: &ReActAgent, input: impl Into<CallInput>) -> Msg {
    within(60, agent.call(input)).await.unwrap()
}

/// Asserts that the tool results the model read in its request `index` (see
/// [`last_results`]) are `expected`, in order.
#[track_caller]
pub(crate) fn assert_read(model: &ScriptedModel, index: usize, expected: &[ToolResultBlock]) {
    assert_eq!(last_results(&model.requests()[index]), expected);
}

/// The names of the tools `request` offered the model, in order.
pub(crate) fn offered_names(request: &ModelRequest) -> Vec<&str> {
    request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect()
}

/// The tool `name` as `request` offered it to the model.
pub(crate) fn offered<'a>(request: &'a ModelRequest, name: &str) -> &'a ToolSchema {
    request
        .tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("{name} was not offered"))
}

/// The tool results at the end of `request` (the tool messages after the model's last
/// turn: the results the model reads), in order.
pub(crate) fn last_results(request: &ModelRequest) -> Vec<ToolResultBlock> {
    let trailing = request
        .messages
        .iter()
        .rev()
        .take_while(|msg| msg.role == Role::Tool)
        .count();
    request.messages[request.messages.len() - trailing..]
        .iter()
        .flat_map(|msg| msg.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some(result.clone()),
            _ => None,
        })
        .collect()
}

/// The texts of the ActingChunk events `hook` recorded, in order.
pub(crate) fn acting_chunks(hook: &RecordingHook) -> Vec<String> {
    hook.events()
        .iter()
        .filter_map(|event| match event {
            HookEvent::ActingChunk(chunk) => Some(chunk.chunk().text_output()),
            _ => None,
        })
        .collect()
}

/// Runs `f` with a time limit, so a hang fails the test instead of stalling CI.
pub(crate) async fn within<T>(seconds: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(seconds), f)
        .await
        .unwrap_or_else(|_| panic!("did not finish within {seconds} s"))
}
