//! [`PostgresServer`]: a real PostgreSQL server of a test's own: `initdb` in a temporary
//! directory, `postgres` on a free port of 127.0.0.1 (its Unix socket in that directory),
//! stopped and removed on drop; [`stop`](PostgresServer::stop) and
//! [`start_again`](PostgresServer::start_again) restart it on the same port and data.
//!
//! Run as root, the server runs as the `postgres` OS user (PostgreSQL refuses to run as
//! root), which Debian's `postgresql` package creates; the directory is handed to it.
//!
//! Authentication: every user connecting from 127.0.0.1 is trusted, except
//! [`PostgresServer::PASSWORD_USER`], a superuser who must give
//! [`PostgresServer::PASSWORD`] (SCRAM), for tests of what a wrong password shows.
//!
//! ```no_run
//! use agentscope_test::components::postgres::PostgresServer;
//!
//! // `None` (after saying why) when PostgreSQL is not installed; under CI, a failure.
//! let Some(server) = PostgresServer::start() else { return };
//! let url = server.url(); // postgresql://postgres@127.0.0.1:<port>/postgres
//! server.psql("CREATE TABLE t (id int)");
//! # drop(url);
//! ```

#![allow(clippy::expect_used, clippy::panic)] // test support: a server that cannot start fails the test

use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{available, free_port, postgres_bin};

/// A PostgreSQL server of the test, stopped (and its files removed) on drop.
#[derive(Debug)]
pub struct PostgresServer {
    bin: PathBuf,
    /// The user the server runs as, when the test runs as root: (uid, gid).
    owner: Option<(u32, u32)>,
    port: u16,
    settings: Vec<(String, String)>,
    child: Option<Child>,
    /// Holds `data/` (the cluster), `socket/` and `postgres.log`.
    dir: tempfile::TempDir,
}

impl PostgresServer {
    /// The user who must give a password.
    pub const PASSWORD_USER: &'static str = "agentscope_password_user";
    /// [`PASSWORD_USER`](Self::PASSWORD_USER)'s password.
    pub const PASSWORD: &'static str = "pg-Pa55-w0rd-of-the-tests";

    /// A server with the default settings; `None` (after saying why) when PostgreSQL is not
    /// installed (under CI, a failure: see [`available`]).
    ///
    /// # Panics
    ///
    /// When the server is installed but does not start.
    pub fn start() -> Option<Self> {
        Self::start_with(&[], &[])
    }

    /// A server with `settings` (`-c name=value` each) and `files` written into its data
    /// directory first, readable by the server only (a TLS key and certificate, which
    /// settings then name by their file names: the server reads relative paths from its data
    /// directory).
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_with(settings: &[(&str, &str)], files: &[(&str, &[u8])]) -> Option<Self> {
        let bin = available(postgres_bin().ok_or_else(|| {
            "PostgreSQL is not installed: no initdb on PATH or under /usr/lib/postgresql/*/bin \
             (Debian: `apt-get install -y postgresql`)"
                .to_owned()
        }))?;
        let owner = match running_as_root() {
            true => Some(available(postgres_user())?),
            false => None,
        };
        let dir = tempfile::Builder::new()
            .prefix("agentscope-pg-")
            .tempdir()
            .expect("a temporary directory");
        fs::create_dir(dir.path().join("socket")).expect("the socket directory");
        if let Some((uid, gid)) = owner {
            for path in [dir.path().to_owned(), dir.path().join("socket")] {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                    .expect("handing the directory to the postgres user");
            }
        }
        let mut server = Self {
            bin,
            owner,
            port: 0,
            settings: settings
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            child: None,
            dir,
        };
        server.init(files);
        // The free port may be taken between the check and the start: try a few.
        let mut last_error = String::new();
        for _ in 0..5 {
            server.port = free_port();
            match server.launch() {
                Ok(()) => {
                    server.create_password_user();
                    return Some(server);
                }
                Err(error) => last_error = error,
            }
        }
        panic!("postgres did not start: {last_error}");
    }

    /// `initdb`, the authentication rules and `files`.
    fn init(&self, files: &[(&str, &[u8])]) {
        let data = self.data();
        let output = self
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .arg("--no-sync")
            .output()
            .expect("initdb runs");
        assert!(
            output.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let user = Self::PASSWORD_USER;
        fs::write(
            data.join("pg_hba.conf"),
            format!(
                "local all all trust\n\
                 host all {user} 127.0.0.1/32 scram-sha-256\n\
                 host all {user} ::1/128 scram-sha-256\n\
                 host all all 127.0.0.1/32 trust\n\
                 host all all ::1/128 trust\n"
            ),
        )
        .expect("writing pg_hba.conf");
        for (name, bytes) in files {
            let path = data.join(name);
            fs::write(&path, bytes).expect("writing a file of the server");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                .expect("restricting a file of the server");
            if let Some((uid, gid)) = self.owner {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                    .expect("handing a file to the postgres user");
            }
        }
    }

    /// Starts `postgres` and waits until it accepts connections.
    fn launch(&mut self) -> Result<(), String> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.path().join("postgres.log"))
            .expect("the server's log file");
        let mut command = self.command("postgres");
        command
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string()])
            .arg("-k")
            .arg(self.socket_dir())
            .args(["-c", "listen_addresses=127.0.0.1"])
            // Fast and still crash-safe for the tests' purposes: a killed server's commits
            // are in the kernel's page cache (the machine does not crash).
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .args(["-c", "max_connections=300"]);
        for (name, value) in &self.settings {
            command.arg("-c").arg(format!("{name}={value}"));
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the server's log file"))
            .stderr(log)
            .spawn()
            .expect("postgres starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(format!("exited with {status}: {}", self.log()));
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("not ready in 30 s: {}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Creates [`PASSWORD_USER`](Self::PASSWORD_USER) (once: the role survives restarts).
    fn create_password_user(&self) {
        self.psql(&format!(
            "DO $$ BEGIN \
               IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{user}') THEN \
                 CREATE ROLE {user} LOGIN SUPERUSER PASSWORD '{password}'; \
               END IF; \
             END $$",
            user = Self::PASSWORD_USER,
            password = Self::PASSWORD
        ));
    }

    /// A command running `program` of PostgreSQL's directory as the server's user.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        command.env("LC_ALL", "C");
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        command
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("socket")
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the server's files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `postgresql://postgres@127.0.0.1:<port>/postgres`: the superuser, trusted.
    pub fn url(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// A URL for [`PASSWORD_USER`](Self::PASSWORD_USER) giving `password` (right or
    /// wrong).
    pub fn password_url(&self, password: &str) -> String {
        format!(
            "postgresql://{}:{password}@127.0.0.1:{}/postgres",
            Self::PASSWORD_USER,
            self.port
        )
    }

    /// Runs `sql` as the superuser (through `psql` on the server's socket) and returns what
    /// it printed (unaligned, tuples only).
    ///
    /// # Panics
    ///
    /// When the SQL fails.
    pub fn psql(&self, sql: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .arg("-h")
            .arg(self.socket_dir())
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
            ])
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .output()
            .expect("psql runs");
        assert!(
            output.status.success(),
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// The server's log.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`: as a crash, connections cut,
    /// no checkpoint; the next start recovers from the write-ahead log).
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let stopped = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["stop", "-m", "immediate", "-w", "-s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !stopped {
            let _ = child.kill();
        }
        let _ = child.wait();
    }

    /// Starts a stopped server again on the same port and data.
    ///
    /// # Panics
    ///
    /// When it does not start.
    pub fn start_again(&mut self) {
        if self.child.is_none()
            && let Err(error) = self.launch()
        {
            panic!("postgres did not start again: {error}");
        }
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether this process runs as root (PostgreSQL then runs as the `postgres` user).
fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// The uid and gid of the `postgres` OS user.
fn postgres_user() -> Result<(u32, u32), String> {
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            match fields.as_slice() {
                ["postgres", _, uid, gid, ..] => Some((uid.parse().ok()?, gid.parse().ok()?)),
                _ => None,
            }
        })
        .ok_or_else(|| {
            "running as root, PostgreSQL needs the `postgres` OS user, which does not exist \
             (Debian's `postgresql` package creates it)"
                .to_owned()
        })
}
