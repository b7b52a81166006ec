//! [`RedisServer`]: a real `redis-server` of a test's own, on a free port of 127.0.0.1 with a
//! temporary directory and no persistence, killed on drop; [`RedisCluster`]: three of them
//! made a cluster (three primaries, no replicas) with `redis-cli`.
//!
//! Both return `None` (after saying why) when the programs are missing; under CI that is a
//! failure (see [`available`]). The tests that need them carry the `has_redis` (and
//! `has_redis_cli`) cfg of their crate's build script.
//!
//! ```no_run
//! use agentscope_test::components::redis::RedisServer;
//!
//! let Some(server) = RedisServer::start() else { return };
//! let url = server.url(); // redis://127.0.0.1:<port>
//! # drop(url);
//! ```

#![allow(clippy::expect_used, clippy::panic)] // test support: a server that cannot start fails the test

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tls::TlsFiles;
use super::{available, free_port, runs};

/// The run-time half of the rule for missing components (skip here, fail under CI).
fn unavailable<T>(what: &str) -> Option<T> {
    available(Err(format!(
        "{what} (Debian: `apt-get install -y redis-server`)"
    )))
}

/// `redis-server`, when installed; `None` (after saying why) when it is missing.
pub fn redis_server() -> Option<&'static str> {
    match runs("redis-server") {
        true => Some("redis-server"),
        false => unavailable("redis-server is not installed"),
    }
}

/// Adds what every test server runs with: on 127.0.0.1 only, no persistence (unless later
/// arguments ask for it), quiet, its files in `dir`.
fn local(command: &mut Command, dir: &Path) {
    command
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args(["--loglevel", "warning"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"));
}

/// Starts `command` with no standard streams; `started` says what must have happened.
fn spawn(command: &mut Command, started: &str) -> Child {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect(started)
}

/// A `redis-server` process of the test, killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    /// The arguments it was started with (for `restart`; empty for TLS servers).
    args: Vec<OsString>,
    port: u16,
    tls: bool,
    password: Option<String>,
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// A server with no password; `None` (after saying why) when redis-server is missing.
    ///
    /// # Panics
    ///
    /// When redis-server is installed but does not start.
    pub fn start() -> Option<Self> {
        Self::start_with(None, &[])
    }

    /// A server requiring `password` (when given), started with the `extra` arguments of
    /// `redis-server` too.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_with(password: Option<&str>, extra: &[&str]) -> Option<Self> {
        let program = redis_server()?;
        let mut last_error = String::new();
        // The free port may be taken between the check and the start: try a few.
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let port = free_port();
            let mut command = Command::new(program);
            command
                .arg("--port")
                .arg(port.to_string())
                .args(["--daemonize", "no"]);
            local(&mut command, dir.path());
            if let Some(password) = password {
                command.args(["--requirepass", password]);
            }
            command.args(extra);
            let args = command.get_args().map(ToOwned::to_owned).collect();
            let child = spawn(&mut command, "redis-server starts");
            let mut server = RedisServer {
                child,
                args,
                port,
                tls: false,
                password: password.map(str::to_owned),
                dir,
            };
            match server.wait_ready() {
                Ok(()) => return Some(server),
                Err(error) => last_error = error,
            }
        }
        panic!("redis-server did not start: {last_error}");
    }

    /// A TLS-only server (`--port 0 --tls-port N`) requiring `password`, with the
    /// certificate and key of `tls`.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_tls(password: &str, tls: &TlsFiles) -> Option<Self> {
        let program = redis_server()?;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = free_port();
        let mut command = Command::new(program);
        command
            .args(["--port", "0", "--tls-port", &port.to_string()])
            .args(["--requirepass", password])
            .arg("--tls-cert-file")
            .arg(&tls.cert)
            .arg("--tls-key-file")
            .arg(&tls.key)
            .arg("--tls-ca-cert-file")
            .arg(&tls.ca)
            .args(["--tls-auth-clients", "no"]);
        local(&mut command, dir.path());
        let child = spawn(&mut command, "redis-server starts");
        let mut server = RedisServer {
            child,
            args: Vec::new(),
            port,
            tls: true,
            password: Some(password.to_owned()),
            dir,
        };
        // No plain-text PING on a TLS port: wait until it accepts connections.
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("redis-server (TLS) exited with {status}: {}", server.log());
            }
            assert!(
                Instant::now() < deadline,
                "redis-server (TLS) did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    /// Waits until the server answers PING (or asks for a password).
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}: {}", self.log()));
            }
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
                let mut answer = [0u8; 64];
                if stream.write_all(b"PING\r\n").is_ok()
                    && let Ok(read) = stream.read(&mut answer)
                    && (answer[..read].starts_with(b"+PONG")
                        || answer[..read].starts_with(b"-NOAUTH"))
                {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err(format!("no answer in 10 s: {}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://[:password@]127.0.0.1:port`, or `rediss://[:password@]localhost:port` for a
    /// TLS server (the test certificate is issued to `localhost`). It holds the password:
    /// show it through `agentscope_core::redact::url_for_display`.
    pub fn url(&self) -> String {
        let (scheme, host) = match self.tls {
            true => ("rediss", "localhost"),
            false => ("redis", "127.0.0.1"),
        };
        match &self.password {
            Some(password) => format!("{scheme}://:{password}@{host}:{}", self.port),
            None => format!("{scheme}://{host}:{}", self.port),
        }
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// Kills the server (SIGKILL) and starts it again on the same port and directory, with
    /// the same arguments (so with `--appendonly yes` it reloads what it had).
    ///
    /// # Panics
    ///
    /// For a TLS server, or when it does not start again.
    pub fn restart(&mut self) {
        assert!(!self.args.is_empty(), "only plain servers restart");
        self.kill();
        self.child = spawn(
            Command::new("redis-server").args(&self.args),
            "redis-server starts again",
        );
        if let Err(error) = self.wait_ready() {
            panic!("redis-server did not start again: {error}");
        }
    }

    /// Kills the server now.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A 3-node Redis Cluster (3 primaries, no replicas) on free ports, killed on drop.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts the nodes and creates the cluster with `redis-cli`; `None` (after saying why)
    /// when redis-server or redis-cli is missing.
    ///
    /// # Panics
    ///
    /// When a node does not start or the cluster does not form.
    pub fn start() -> Option<Self> {
        redis_server()?;
        if !runs("redis-cli") {
            return unavailable("redis-cli is not installed (it creates the test cluster)");
        }
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(RedisServer::start_with(
                None,
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ],
            )?);
        }
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port()))
            .collect();
        let output = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli runs");
        assert!(
            output.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let cluster = RedisCluster { nodes };
        cluster.wait_ok();
        Some(cluster)
    }

    /// Waits until every node reports `cluster_state:ok`.
    fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        for node in &self.nodes {
            loop {
                let output = Command::new("redis-cli")
                    .args(["-p", &node.port().to_string(), "cluster", "info"])
                    .output()
                    .expect("redis-cli runs");
                if String::from_utf8_lossy(&output.stdout).contains("cluster_state:ok") {
                    break;
                }
                assert!(Instant::now() < deadline, "the cluster did not become ok");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The nodes' URLs, to seed a cluster client.
    pub fn seeds(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The nodes.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }
}
