//! The real components some tests start (Node and its pinned packages, Chromium,
//! redis-server): found, installed when that is cheap, or else the rule every such test
//! follows.
//!
//! The rule: under CI (`AGENTSCOPE_CI` set, as `.ci/run` does after installing everything) a
//! missing component **fails** the test; elsewhere (a machine with only the Rust toolchain)
//! the test says why and **skips**, so `cargo test --workspace` passes there.
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

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Whether this run is CI (`AGENTSCOPE_CI` set and not empty).
pub fn in_ci() -> bool {
    std::env::var_os("AGENTSCOPE_CI").is_some_and(|value| !value.is_empty())
}

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

/// Whether `program --version` runs.
pub fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
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
