//! [`Ledger`]: a payment service's books in files, shared by processes: the tests where a
//! process is killed mid-payment read it to tell how often a tool ran and under which
//! idempotency keys.
#![allow(clippy::panic)] // test support: books that cannot be written fail the test

use std::io::Write;
use std::path::{Path, PathBuf};

use agentscope_core::Tool;

use crate::process::SelfProcess;
use crate::tools;

/// A payment service's books in a folder, shared by every process that opens it: each
/// attempt (`attempts`, a line each) and each key paid (`ledger`, once per key). Appends
/// are single writes followed by `fsync`, so lines of several processes never interleave
/// and a process killed right after an append has it on disk.
///
/// ```
/// use agentscope_test::ledger::Ledger;
///
/// let dir = tempfile::tempdir().unwrap();
/// let books = Ledger::new(dir.path());
/// assert!(books.pay("key-1"));
/// assert!(!books.pay("key-1")); // paid once per key
/// assert_eq!(books.attempts(), ["key-1", "key-1"]);
/// assert_eq!(books.paid(), ["key-1"]);
/// ```
#[derive(Debug, Clone)]
pub struct Ledger {
    dir: PathBuf,
}

impl Ledger {
    /// The books in `dir` (created when they are first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Records an attempt under `key` and pays it unless it was paid already; returns
    /// whether it paid now.
    ///
    /// # Panics
    ///
    /// When the files cannot be written (this is test support).
    pub fn pay(&self, key: &str) -> bool {
        append(&self.dir.join("attempts"), key);
        if self.paid().iter().any(|paid| paid == key) {
            return false;
        }
        append(&self.dir.join("ledger"), key);
        true
    }

    /// Every attempt's key, in order.
    pub fn attempts(&self) -> Vec<String> {
        lines(&self.dir.join("attempts"))
    }

    /// The keys paid, in order.
    pub fn paid(&self) -> Vec<String> {
        lines(&self.dir.join("ledger"))
    }

    /// Waits for `worker`, a server process whose [`pay_tool`](Self::pay_tool) hangs, to
    /// print `TOOL_RUNNING <key>`, kills it with SIGKILL, and checks that these books paid
    /// under that key and no other: the payment the killed process made. Returns the key.
    ///
    /// # Panics
    ///
    /// When the worker ends before it prints the line, or the books hold another payment.
    pub fn kill_once_paid(&self, mut worker: SelfProcess) -> String {
        let key = worker.expect("TOOL_RUNNING ");
        worker.kill();
        assert_eq!(
            self.paid(),
            std::slice::from_ref(&key),
            "the service took the payment"
        );
        key
    }

    /// `pay {"invoice": n}` ([`tools::pay`]) on these books, the tool of the tests where a
    /// server process is killed mid-payment: a run pays under its call's idempotency key
    /// and returns `paid invoice n (receipt <key>)`; with `hang`, once it has paid it prints
    /// `TOOL_RUNNING <key>` on stdout and never returns (the test kills the process then).
    pub fn pay_tool(&self, hang: bool) -> impl Tool + use<> {
        let books = self.clone();
        tools::pay(move |invoice, ctx| {
            let books = books.clone();
            async move {
                let key = ctx.idempotency_key();
                books.pay(&key);
                if hang {
                    println!("TOOL_RUNNING {key}");
                    std::future::pending::<()>().await;
                }
                format!("paid invoice {invoice} (receipt {key})")
            }
        })
    }
}

/// The lines of the file at `path` (none when it does not exist).
///
/// # Panics
///
/// When the file exists and cannot be read (this is test support).
pub fn lines(path: &Path) -> Vec<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => text.lines().map(str::to_owned).collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => panic!("reading {}: {error}", path.display()),
    }
}

/// Appends `line` to the file at `path` in one write, and syncs it.
///
/// # Panics
///
/// When the file cannot be written (this is test support).
pub fn append(path: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|error| panic!("opening {}: {error}", path.display()));
    file.write_all(format!("{line}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
}
