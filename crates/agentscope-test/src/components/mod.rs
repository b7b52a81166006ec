//! The real components some tests start (Node and its pinned packages, Chromium,
//! redis-server and redis-cli: [`redis`] starts a server or a cluster; openssl: [`tls`]
//! makes certificates; PostgreSQL: [`postgres`] starts one): found, installed when that is
//! cheap, or else the rule every such test follows.
//!
//! The rule: a test that needs a component says so with an attribute, and is **ignored**
//! (with the reason, in the test runner's own summary) on a machine without it; under CI
//! (`AGENTSCOPE_CI` set, as `.ci/run` does after installing everything) it runs, and a
//! missing component **fails** it. So `cargo test --workspace` passes with only the Rust
//! toolchain and says which tests it left out, how many and why:
//!
//! ```text
//! test redis_session_store_conformance ... ignored, redis-server not installed: .ci/run installs it
//! test redis_session_store_conformance_with_ttl ... ignored, redis-server not installed: .ci/run installs it
//!
//! test result: ok. 0 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.00s
//! ```
//!
//! Two halves over one finder (`probe.rs`: whether a component is there):
//!
//! - **At build time**, the build script of each crate whose tests need a component
//!   (`agentscope`, `agentscope-redis`, `agentscope-postgres`, `agentscope-server`,
//!   `agentscope-mcp`) sets a cfg for each one it finds (`has_redis`, `has_redis_cli`,
//!   `has_openssl`, `has_postgres`, `has_node` for node and npm, `has_chromium`; all of them
//!   under CI, where it also warns about each one missing), through
//!   `agentscope-test/build/components.rs`. Outside CI it prints nothing: the script runs
//!   whenever the crate is built, not only for its tests. The test carries
//!   `#[cfg_attr(not(has_redis), ignore = "redis-server not installed: .ci/run installs it")]`.
//!   The scripts run again when `PATH` or `AGENTSCOPE_CI` changes, and when a program appears
//!   in (or leaves) a directory of `PATH`.
//! - **At run time**, the test still asks, through [`available`]: a component can vanish
//!   between the build and the run, and `npm ci` can fail. Under CI that fails the test;
//!   elsewhere the test prints `SKIPPED: ...` and returns.
//!
//! ```
//! use agentscope_test::components::{available, runs};
//!
//! // In a test: `let Some(node) = available(node_or_reason) else { return };`
//! let found: Option<&str> = available(if runs("node") {
//!     Ok("node")
//! } else {
//!     Err("node is not installed".to_owned())
//! });
//! # let _ = found;
//! ```

pub mod postgres;
mod probe;
pub mod redis;
pub mod tls;

pub use probe::{chromium, in_ci, postgres_bin, runs};

use std::path::{Path, PathBuf};
use std::process::Command;

/// The component when found; otherwise, under CI, fails the calling test with `why` (a
/// sentence saying what is missing and how to install it), and elsewhere prints why the test
/// does not run and returns `None` (skip).
///
/// # Panics
///
/// Under CI, when `found` is an error: that is the point (a test that needs a component must
/// run in CI).
#[allow(clippy::panic)]
pub fn available<T>(found: Result<T, String>) -> Option<T> {
    match found {
        Ok(component) => Some(component),
        Err(why) if in_ci() => {
            panic!("{why} (AGENTSCOPE_CI is set: .ci/run installs it; run it, or install it)")
        }
        Err(why) => {
            eprintln!("SKIPPED: {why}. `.ci/run` installs it; under CI this test fails instead.");
            None
        }
    }
}

/// A port of 127.0.0.1 that was free a moment ago, for a server a test starts (it may be
/// taken by the time the server binds it: the fixtures try again with another).
///
/// # Panics
///
/// When the system has no free port.
#[allow(clippy::expect_used)] // test support: no port, no test
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// `dir` with its Node packages installed: as found when `dir/<marker>` exists, else by
/// `npm ci` (pinned by the folder's committed `package-lock.json`).
///
/// # Errors
///
/// Why the packages are not there (`npm ci` failed, or npm is missing).
pub fn node_packages(dir: &Path, marker: &str) -> Result<PathBuf, String> {
    if dir.join(marker).exists() {
        return Ok(dir.to_owned());
    }
    let installed = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .status()
        .is_ok_and(|status| status.success());
    match installed {
        true => Ok(dir.to_owned()),
        false => Err(format!(
            "the Node packages of {} are not installed (`npm ci` there failed or npm is missing)",
            dir.display()
        )),
    }
}
