//! The real MCP servers the tests run: `@modelcontextprotocol/server-everything` and the
//! small fixture server (`tests/servers/fixture.mjs`), both pinned by
//! `tests/servers/package-lock.json`.
//!
//! Without Node.js and npm the crate's build script leaves `has_node` unset and the tests
//! that need a server are ignored, with the reason (a machine with only the Rust toolchain).
//! Under CI (`AGENTSCOPE_CI=1`, set by `.ci/run`, which installs Node and runs `npm ci`
//! first) they always run and a missing component fails them. With npm present the test
//! installs the Node packages itself (`npm ci`, pinned by the committed lock file); when that
//! fails outside CI, it says why and skips.
#![allow(dead_code, clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use agentscope_mcp::McpServerConfig;
use agentscope_test::components;

/// The folder of the pinned Node packages, installed (once per test binary).
fn servers_dir() -> Option<PathBuf> {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        if !components::runs("node") {
            return Err("node is not installed".to_owned());
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers");
        components::node_packages(&dir, "node_modules/@modelcontextprotocol/server-everything")
    });
    components::available(result.clone())
}

/// server-everything's entry point.
pub(crate) fn everything_js() -> Option<PathBuf> {
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

/// server-everything over stdio, started by a shell that first writes its process id to
/// `pid_file` (the shell then becomes node), so a test can kill it.
pub(crate) fn everything_stdio_killable(pid_file: &Path) -> Option<McpServerConfig> {
    let js = everything_js()?;
    Some(
        McpServerConfig::stdio("sh")
            .arg("-c")
            .arg(r#"echo $$ > "$0"; exec node "$1" stdio"#)
            .arg(pid_file.to_string_lossy())
            .arg(js.to_string_lossy())
            .name("everything"),
    )
}

/// The fixture server over stdio, named "fixture".
pub(crate) fn fixture_stdio() -> Option<McpServerConfig> {
    let dir = servers_dir()?;
    Some(
        McpServerConfig::stdio("node")
            .arg(dir.join("fixture.mjs").to_string_lossy())
            .name("fixture"),
    )
}

/// Kills the process whose id is in `pid_file` with SIGKILL.
pub(crate) fn kill_from_pid_file(pid_file: &Path) {
    let pid = std::fs::read_to_string(pid_file).expect("the pid file");
    let status = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -9 {pid} failed");
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

/// The tool results at the end of `request` (the tool messages after the model's last
/// turn: the results the model reads), in order.
pub(crate) fn last_results(request: &agentscope::ModelRequest) -> Vec<agentscope::ToolResultBlock> {
    let trailing = request
        .messages
        .iter()
        .rev()
        .take_while(|msg| msg.role == agentscope::Role::Tool)
        .count();
    request.messages[request.messages.len() - trailing..]
        .iter()
        .flat_map(|msg| msg.content.iter())
        .filter_map(|block| match block {
            agentscope::ContentBlock::ToolResult(result) => Some(result.clone()),
            _ => None,
        })
        .collect()
}

/// The texts of the ActingChunk events `hook` recorded, in order.
pub(crate) fn acting_chunks(hook: &agentscope_test::RecordingHook) -> Vec<String> {
    hook.events()
        .iter()
        .filter_map(|event| match event {
            agentscope::HookEvent::ActingChunk(chunk) => Some(chunk.chunk().text_output()),
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
