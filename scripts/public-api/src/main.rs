//! Lists the public API of each crate of the workspace, one item per line, into
//! `crates/<crate>/public-api.txt`, or checks that the committed listings are current.
//!
//! ```text
//! cargo run --manifest-path scripts/public-api/Cargo.toml --target-dir target/public-api -- [--check] [crate...]
//! ```
//!
//! The listing comes from rustdoc's JSON output (`--output-format json`), which rustc 1.95
//! only writes as an unstable option: the tool sets `RUSTC_BOOTSTRAP=1` for that one
//! `cargo rustdoc` run, as cargo-semver-checks does on a stable toolchain. Every crate is
//! documented with all its features, so the listing is the whole surface a user can reach.
//! Blanket and auto-trait impls are left out: they follow from the types.
//!
//! With `--check`, nothing is written: the tool prints what changed and exits 1 when a listing
//! differs from the code. CI runs it that way, so a change to the public API lands only with
//! its listing updated, on purpose. It then checks that every commit since
//! `scripts/public-api/since` that took an item out of a listing (a breaking change) names it
//! in `docs/migrating.md` in the same commit (see `breaking.rs`).

mod breaking;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The crates whose surface is promised to users: every library crate of the workspace.
const CRATES: &[&str] = &[
    "agentscope-core",
    "agentscope",
    "agentscope-http",
    "agentscope-openai",
    "agentscope-anthropic",
    "agentscope-sqlite",
    "agentscope-redis",
    "agentscope-postgres",
    "agentscope-serving",
    "agentscope-server",
    "agentscope-a2a",
    "agentscope-mcp",
    "agentscope-otel",
    "agentscope-eval",
    "agentscope-test",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = args.iter().any(|a| a == "--check");
    let only: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    for name in &only {
        if !CRATES.contains(name) {
            eprintln!(
                "unknown crate '{name}'; the crates are: {}",
                CRATES.join(", ")
            );
            return ExitCode::from(2);
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = root.join("target/public-api");
    let mut stale = Vec::new();
    for name in CRATES
        .iter()
        .filter(|n| only.is_empty() || only.contains(n))
    {
        let listing = match list(&root, &target, name) {
            Ok(listing) => listing,
            Err(error) => {
                eprintln!("{name}: {error}");
                return ExitCode::FAILURE;
            }
        };
        let path = root.join("crates").join(name).join("public-api.txt");
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        let count = listing.lines().count();
        if committed == listing {
            println!("{name}: {count} items, listing current");
            continue;
        }
        if check {
            println!(
                "{name}: {count} items, listing OUT OF DATE ({})",
                path.display()
            );
            print_diff(&committed, &listing);
            stale.push(*name);
        } else if let Err(error) = std::fs::write(&path, &listing) {
            eprintln!("{}: {error}", path.display());
            return ExitCode::FAILURE;
        } else {
            println!("{name}: {count} items, listing written");
        }
    }
    if stale.is_empty() && check {
        let crates: Vec<&str> = CRATES
            .iter()
            .copied()
            .filter(|n| only.is_empty() || only.contains(n))
            .collect();
        match breaking::check(&root, &crates) {
            Ok(unmarked) if unmarked.is_empty() => {
                println!("breaking changes: every removed item is named in docs/migrating.md");
            }
            Ok(unmarked) => {
                for commit in &unmarked {
                    println!(
                        "{} took items out of the public API without naming them in docs/migrating.md:",
                        commit.commit
                    );
                    for item in &commit.items {
                        println!("  {item}");
                    }
                }
                eprintln!(
                    "\nA breaking change must be deliberate: name each item above in the lines that \
                     commit adds to docs/migrating.md (what replaces it, and why)."
                );
                return ExitCode::FAILURE;
            }
            Err(error) => {
                eprintln!("breaking-change check: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    if stale.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "\nThe public API of {} changed. If that is deliberate, update the listing:\n  \
             cargo run --manifest-path scripts/public-api/Cargo.toml --target-dir target/public-api",
            stale.join(", ")
        );
        ExitCode::FAILURE
    }
}

/// The public API of one crate, sorted, one item per line.
fn list(root: &Path, target: &Path, name: &str) -> Result<String, String> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .args([
            "rustdoc",
            "--quiet",
            "--lib",
            "--all-features",
            "--package",
            name,
            "--target-dir",
        ])
        .arg(target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .status()
        .map_err(|e| format!("cannot run cargo rustdoc: {e}"))?;
    if !status.success() {
        return Err(format!("cargo rustdoc failed ({status})"));
    }
    let json = target
        .join("doc")
        .join(format!("{}.json", name.replace('-', "_")));
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .build()
        .map_err(|e| format!("cannot read {}: {e}", json.display()))?;
    let mut out = String::new();
    for item in api.items() {
        out.push_str(&item.to_string());
        out.push('\n');
    }
    Ok(out)
}

/// Lines removed (`-`) and added (`+`), by content.
fn print_diff(old: &str, new: &str) {
    let old_lines: std::collections::BTreeSet<&str> = old.lines().collect();
    let new_lines: std::collections::BTreeSet<&str> = new.lines().collect();
    for line in old_lines.difference(&new_lines) {
        println!("  - {line}");
    }
    for line in new_lines.difference(&old_lines) {
        println!("  + {line}");
    }
}
