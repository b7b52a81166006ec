//! [`SelfProcess`]: a copy of the running test binary as a worker process, for tests where
//! processes are the point (two writers, a holder killed with SIGKILL); its settings travel
//! as JSON in an environment variable ([`SelfProcess::spawn_json`], [`json_settings`]).

#![allow(clippy::expect_used)] // test support: a worker that cannot start fails the test

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A copy of this test binary running one ignored test (the worker's entry point) in a
/// process of its own, with its settings in an environment variable. The test talks to it
/// over the worker's stdin and stdout, a line at a time; dropping it kills the process.
///
/// ```no_run
/// use agentscope_test::process::SelfProcess;
///
/// // In the test binary: `#[test] #[ignore] fn worker_run() { ... }` reads
/// // `MY_WORKER` and prints `READY`, then serves lines from stdin.
/// let mut worker = SelfProcess::spawn("worker_run", "MY_WORKER", r#"{"session": "s"}"#);
/// worker.expect("READY");
/// worker.send_line("go");
/// let outcome = worker.expect("OUTCOME ");
/// worker.wait_success();
/// # drop(outcome);
/// ```
#[derive(Debug)]
pub struct SelfProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl SelfProcess {
    /// Starts the ignored test `test` (its exact name) of this binary with the environment
    /// variable `env` set to `settings`.
    ///
    /// # Panics
    ///
    /// When the process cannot be started (this is test support).
    pub fn spawn(test: &str, env: &str, settings: &str) -> Self {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                test,
                "--nocapture",
                "--test-threads=1",
            ])
            .env(env, settings)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting a worker process");
        let stdin = child.stdin.take().expect("the worker's stdin");
        let stdout = BufReader::new(child.stdout.take().expect("the worker's stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// [`spawn`](Self::spawn) with `settings` as JSON; the worker reads them with
    /// [`json_settings`].
    ///
    /// # Panics
    ///
    /// When the settings cannot be serialised or the process cannot be started.
    pub fn spawn_json(test: &str, env: &str, settings: &impl Serialize) -> Self {
        let settings = serde_json::to_string(settings).expect("serialising the worker's settings");
        Self::spawn(test, env, &settings)
    }

    /// Writes `line` (and a newline) to the worker's stdin.
    ///
    /// # Panics
    ///
    /// When the worker's stdin is closed.
    pub fn send_line(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("writing to the worker");
        self.stdin.flush().expect("writing to the worker");
    }

    /// Reads the worker's output until a line holds `marker`; returns what follows the
    /// marker on that line, trimmed (libtest may print `test name ... ` before it).
    ///
    /// # Panics
    ///
    /// When the worker exits before printing `marker`.
    pub fn expect(&mut self, marker: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self
                .stdout
                .read_line(&mut line)
                .expect("reading the worker");
            assert!(read > 0, "the worker exited before printing {marker}");
            if let Some((_, rest)) = line.split_once(marker) {
                return rest.trim().to_owned();
            }
        }
    }

    /// Waits for the worker to exit.
    ///
    /// # Panics
    ///
    /// When it exits with a failure.
    pub fn wait_success(&mut self) {
        let status = self.child.wait().expect("waiting for the worker");
        assert!(status.success(), "worker failed: {status:?}");
    }

    /// Kills the worker with SIGKILL (no destructor of the worker runs) and reaps it.
    pub fn kill(mut self) {
        self.child.kill().expect("killing the worker");
        self.child.wait().expect("reaping the worker");
    }
}

/// In a worker started by [`SelfProcess::spawn_json`]: its settings, read from `env`.
///
/// # Panics
///
/// When `env` is not set or does not hold the settings as JSON.
pub fn json_settings<T: DeserializeOwned>(env: &str) -> T {
    let json = std::env::var(env).expect("the worker's settings");
    serde_json::from_str(&json).expect("the worker's settings, as JSON")
}

impl Drop for SelfProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
