//! Real Redis servers for the tests: `redis-server` started on a free port of 127.0.0.1 with
//! a temporary directory, no persistence, killed on drop; and a 3-node cluster.
//!
//! Without `redis-server` (or `redis-cli` for the cluster, `openssl` for TLS) the crate's
//! build script leaves `has_redis` (`has_redis_cli`, `has_openssl`) unset and the tests that
//! need it are ignored, with the reason, so `cargo test --workspace` passes with only the Rust
//! toolchain and counts them as ignored. Under CI (`AGENTSCOPE_CI=1`, set by `.ci/run`) they
//! always run and a missing component fails them; these helpers check again at run time.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used
)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentscope_redis::RedisSessionStore;

/// The run-time half of the rule for missing components (skip here, fail under CI): a
/// component can vanish between the build and the run.
fn unavailable<T>(what: &str) -> Option<T> {
    agentscope_test::components::available(Err(format!(
        "{what} (Debian: `apt-get install -y redis-server`)"
    )))
}

/// `redis-server`, when installed.
pub fn redis_server() -> Option<&'static str> {
    if agentscope_test::components::runs("redis-server") {
        Some("redis-server")
    } else {
        unavailable("redis-server is not installed")
    }
}

/// A port of 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
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

/// A `redis-server` process of the test.
pub struct RedisServer {
    child: Child,
    /// The arguments it was started with (for `restart`; empty for TLS servers).
    args: Vec<std::ffi::OsString>,
    port: u16,
    tls_port: Option<u16>,
    password: Option<String>,
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// A server with no password; `None` (after saying why) when redis-server is missing.
    pub fn start() -> Option<Self> {
        Self::start_with(None, &[])
    }

    /// A server requiring `password`, with `extra` arguments.
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
                tls_port: None,
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

    /// A TLS-only server (`--port 0 --tls-port N`) with the certificate and key in `tls`.
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
            tls_port: Some(port),
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

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://[:password@]127.0.0.1:port` (`rediss://` for a TLS server).
    pub fn url(&self) -> String {
        let scheme = if self.tls_port.is_some() {
            "rediss"
        } else {
            "redis"
        };
        // "localhost" for TLS: the test certificate is issued to it.
        let host = if self.tls_port.is_some() {
            "localhost"
        } else {
            "127.0.0.1"
        };
        match &self.password {
            Some(password) => format!("{scheme}://:{password}@{host}:{}", self.port),
            None => format!("{scheme}://{host}:{}", self.port),
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// A store on this server with the default settings.
    pub async fn store(&self) -> RedisSessionStore {
        RedisSessionStore::connect(self.url())
            .await
            .expect("the store connects")
    }

    /// A plain connection for raw commands.
    pub async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .expect("a raw connection")
    }

    /// Kills the server (SIGKILL) and starts it again on the same port and directory, with
    /// the same arguments (so with `--appendonly yes` it reloads what it had).
    pub fn restart(&mut self) {
        assert!(!self.args.is_empty(), "only plain servers restart");
        self.kill();
        self.child = spawn(
            Command::new("redis-server").args(&self.args),
            "redis-server starts again",
        );
        self.wait_ready().expect("redis-server restarts");
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

/// A CA, and a certificate for `localhost` it signed, made with `openssl`.
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    _dir: tempfile::TempDir,
}

impl TlsFiles {
    pub fn make() -> Option<Self> {
        if !Command::new("openssl")
            .arg("version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
        {
            return unavailable("openssl is not installed (it makes the test certificates)");
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = |name: &str| dir.path().join(name);
        let openssl = |args: &[&str], cwd: &Path| {
            let output = Command::new("openssl")
                .args(args)
                .current_dir(cwd)
                .output()
                .expect("openssl runs");
            assert!(
                output.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        };
        let cwd = dir.path();
        openssl(
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "2",
                "-subj",
                "/CN=agentscope test CA",
            ],
            cwd,
        );
        openssl(
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
            cwd,
        );
        std::fs::write(
            path("ext.cnf"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.crt",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
            ],
            cwd,
        );
        Some(TlsFiles {
            ca: path("ca.crt"),
            cert: path("server.crt"),
            key: path("server.key"),
            _dir: dir,
        })
    }
}

/// A 3-node Redis Cluster (3 primaries, no replicas) on free ports.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> Option<Self> {
        redis_server()?;
        if !agentscope_test::components::runs("redis-cli") {
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

    pub fn seeds(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }
}
