//! Whether a component is on this machine: one answer for the tests, which ask at run time,
//! and for the build scripts of the crates whose tests need a component, which ask at build
//! time to ignore those tests. The build scripts include this file with `#[path]`
//! (`agentscope-test/build/components.rs`), so it uses the standard library only.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Whether this run is CI (`AGENTSCOPE_CI` set and not empty).
pub fn in_ci() -> bool {
    std::env::var_os("AGENTSCOPE_CI").is_some_and(|value| !value.is_empty())
}

/// Whether `program --version` runs.
pub fn runs(program: &str) -> bool {
    answers(program, "--version")
}

/// Whether `program <arg>` runs and exits successfully (`openssl` has `version`, not
/// `--version`).
pub(crate) fn answers(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The first file named `program` in a directory of `PATH`.
pub(crate) fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The Chromium binary: `$CHROMIUM` when it names a file, else `chromium` or
/// `chromium-browser` (the Debian and Ubuntu names) on `PATH`.
pub fn chromium() -> Option<PathBuf> {
    let chosen = std::env::var_os("CHROMIUM").map(PathBuf::from);
    chosen.filter(|chosen| chosen.is_file()).or_else(|| {
        ["chromium", "chromium-browser"]
            .into_iter()
            .find_map(on_path)
    })
}
