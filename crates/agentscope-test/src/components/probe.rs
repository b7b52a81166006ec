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

/// The directory of PostgreSQL's server programs (`initdb`, `postgres`, `pg_ctl`, `psql`):
/// where the `initdb` on `PATH` really is, else the newest `/usr/lib/postgresql/<major>/bin`
/// (Debian installs them there, off `PATH`).
pub fn postgres_bin() -> Option<PathBuf> {
    if let Some(dir) = on_path("initdb")
        .and_then(|initdb| initdb.canonicalize().ok())
        .and_then(|initdb| initdb.parent().map(PathBuf::from))
    {
        return Some(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let major: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((major, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}
