//! The build-time half of the components rule (`agentscope_test::components` states it):
//! for each component a crate's tests need, a `has_*` cfg when this machine has it (always
//! under CI, so a missing one fails the tests there). The tests carry
//! `#[cfg_attr(not(has_redis), ignore = "...")]`, so without the component they show as
//! ignored, with the reason, when the tests run. The build script says nothing outside CI:
//! it runs whenever the crate is built (an example, a user's program), and a warning there
//! reads as an error to a newcomer who only ran the quickstart. Under CI it warns about each
//! missing component, whose tests will fail.
//!
//! A crate's `build.rs` includes this file with `#[path]` instead of depending on
//! `agentscope-test`: a build dependency on the test kit would compile the framework a second
//! time for the build script, and the finder (`src/components/probe.rs`, the one the tests
//! use at run time) needs only the standard library. The crates leave `build.rs` out of their
//! published package (`exclude`), so their users never run it.

#[path = "../src/components/probe.rs"]
// The build scripts use part of it, the tests the rest; it is `pub` for the tests.
#[allow(dead_code, unreachable_pub)]
mod probe;

use std::path::PathBuf;
use std::sync::Once;

/// One component as this build found it.
pub(crate) struct Component {
    /// How the CI warning names it: the program, or "Chromium".
    name: &'static str,
    found: bool,
    /// The file found, watched so that removing it runs the build script again.
    file: Option<PathBuf>,
}

/// `program <arg>` (`--version`, or `version` for openssl), when it runs.
pub(crate) fn program(name: &'static str, arg: &str) -> Component {
    Component {
        name,
        found: probe::answers(name, arg),
        file: probe::on_path(name),
    }
}

/// Chromium, as the browser test finds it (`$CHROMIUM`, else on `PATH`).
#[allow(dead_code)] // Only the server's tests need it.
pub(crate) fn chromium() -> Component {
    println!("cargo::rerun-if-env-changed=CHROMIUM");
    let file = probe::chromium();
    Component {
        name: "Chromium",
        found: file.is_some(),
        file,
    }
}

/// PostgreSQL's server programs, as the test fixture finds them (`initdb` on `PATH`, or
/// under `/usr/lib/postgresql/*/bin`).
#[allow(dead_code)] // Only the Postgres store's tests need it.
pub(crate) fn postgres() -> Component {
    let file = probe::postgres_bin().map(|bin| bin.join("initdb"));
    if file.is_none() {
        // Debian's package installs off `PATH`: watch where it would appear.
        let root = ["/usr/lib/postgresql", "/usr/lib"]
            .into_iter()
            .find(|dir| std::path::Path::new(dir).is_dir());
        if let Some(root) = root {
            println!("cargo::rerun-if-changed={root}");
        }
    }
    Component {
        name: "PostgreSQL (initdb)",
        found: file.is_some(),
        file,
    }
}

/// Sets `cfg` when every one of `components` was found, or under CI; under CI, warns about
/// each missing one.
pub(crate) fn cfg(cfg: &str, components: &[Component]) {
    static ENV: Once = Once::new();
    ENV.call_once(|| {
        println!("cargo::rerun-if-env-changed=AGENTSCOPE_CI");
        println!("cargo::rerun-if-env-changed=PATH");
    });
    println!("cargo::rustc-check-cfg=cfg({cfg})");
    let ci = probe::in_ci();
    for component in components {
        match (&component.file, component.found) {
            (Some(file), true) => println!("cargo::rerun-if-changed={}", file.display()),
            _ => watch_path_dirs(),
        }
        if ci && !component.found {
            println!(
                "cargo::warning={} is not installed and AGENTSCOPE_CI is set: the tests that \
                 need it will fail",
                component.name
            );
        }
    }
    if ci || components.iter().all(|component| component.found) {
        println!("cargo::rustc-cfg={cfg}");
    }
}

/// Watches the directories of `PATH`: installing a missing program changes one of them, and
/// cargo then runs the build script again (`PATH` itself is watched too).
fn watch_path_dirs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Some(path) = std::env::var_os("PATH") else {
            return;
        };
        let mut watched: Vec<PathBuf> = Vec::new();
        // A directory that does not exist would count as changed at every build.
        for dir in std::env::split_paths(&path).filter(|dir| dir.is_absolute() && dir.is_dir()) {
            if !watched.contains(&dir) {
                println!("cargo::rerun-if-changed={}", dir.display());
                watched.push(dir);
            }
        }
    });
}
