//! The real components the Node and browser tests need, found or installed.
//!
//! Without Node.js and npm (or Chromium), the crate's build script leaves `has_node` (or
//! `has_chromium`) unset and those tests are ignored, with the reason. Under CI
//! (`AGENTSCOPE_CI=1`, set by `.ci/run`, which installs everything first) they always run and
//! a missing component fails them. With npm present the test installs the Node packages
//! itself (`npm ci`, pinned by the committed lock file); when that fails outside CI, it says
//! why and skips.
use std::path::{Path, PathBuf};

use agentscope_test::components::{available, runs};

fn unavailable<T>(what: &str) -> Option<T> {
    available(Err(what.to_owned()))
}

/// `node`, when it runs.
pub(crate) fn node() -> Option<PathBuf> {
    match runs("node") {
        true => Some(PathBuf::from("node")),
        false => unavailable("node is not installed"),
    }
}

/// The folder `dir` (relative to this crate) with its `node_modules` installed: as found,
/// or by `npm ci` when npm is there.
pub(crate) fn node_packages(dir: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    available(agentscope_test::components::node_packages(
        &dir,
        "node_modules",
    ))
}

/// The Chromium binary: `$CHROMIUM`, or `chromium` on `PATH` (Debian's package).
pub(crate) fn chromium() -> Option<PathBuf> {
    match agentscope_test::components::chromium() {
        Some(chromium) => Some(chromium),
        None => unavailable("Chromium is not installed (`apt-get install -y chromium`)"),
    }
}

/// How long a Node script may take.
const NODE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(180);

/// Runs `node <script> <url>` from this crate's folder (with `env` added) and returns its
/// stdout.
///
/// # Panics
///
/// When node cannot start, takes longer than 3 minutes, or exits unsuccessfully (its
/// stderr and stdout are in the message).
pub(crate) async fn run_node(script: &str, url: &str, env: &[(&str, &Path)]) -> String {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(script)
        .arg(url)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `node` ({e}): Node.js 20+ must be on the PATH"));
    let output = tokio::time::timeout(NODE_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish within {NODE_TIMEOUT:?}"))
        .expect("waiting for node");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{script} failed ({}):\n--- stderr ---\n{stderr}\n--- stdout ---\n{stdout}",
        output.status
    );
    stdout
}
