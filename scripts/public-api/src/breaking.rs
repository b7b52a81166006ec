//! Breaking changes are deliberate: every commit that takes something out of a listing names
//! it in `docs/migrating.md` in the same commit.
//!
//! A line that leaves a listing is an item removed or changed (a new signature, a new
//! `#[non_exhaustive]`), which can break a user's code; a line that only arrives is an
//! addition. For each commit on the first-parent line from the commit named in
//! `scripts/public-api/since` (exclusive) to `HEAD`, a merge included (against its first
//! parent), this reads the listings before and after it and the lines it added to
//! `docs/migrating.md`. Every item that lost a line must be named there: the first segment of
//! its path after the crate (`ChatResponse` for `agentscope_core::ChatResponse::model`,
//! `plumbing` for `agentscope_core::plumbing::redact::REDACTED`, the implementing type of an
//! `impl` line), or the crate's own name when the item is the crate root.
//!
//! Why the listing and git rather than `cargo-semver-checks`: the listings are already the
//! reviewed record of the surface (CI checks them against the code), the check needs no tool
//! to build or download (cargo-semver-checks compiles for minutes on two cores and needs the
//! old version built too), and the mark it asks for is the migration note a user needs
//! anyway. It reads history, so it needs a clone with it (not `--depth 1`).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// A commit whose listings lost items that its `docs/migrating.md` lines do not name.
pub struct Unmarked {
    /// The commit, abbreviated, and its subject.
    pub commit: String,
    /// `crate: item` for each item not named.
    pub items: Vec<String>,
}

/// Checks every commit after `scripts/public-api/since` on `HEAD`'s first-parent line.
///
/// # Errors
///
/// When git cannot read the history (a shallow clone, no git).
pub fn check(root: &Path, crates: &[&str]) -> Result<Vec<Unmarked>, String> {
    let since = std::fs::read_to_string(root.join("scripts/public-api/since"))
        .map_err(|e| format!("cannot read scripts/public-api/since: {e}"))?;
    let since = since.trim();
    let range = format!("{since}..HEAD");
    let commits = git(root, &["rev-list", "--first-parent", "--reverse", &range]).map_err(|e| {
        format!(
            "cannot list the commits since {since} (a shallow clone? the check reads history): {e}"
        )
    })?;
    let mut unmarked = Vec::new();
    for commit in commits.lines().filter(|line| !line.is_empty()) {
        let parent = format!("{commit}^1");
        let added_notes: String = git(root, &["diff", &parent, commit, "--", "docs/migrating.md"])?
            .lines()
            .filter(|line| line.starts_with('+') && !line.starts_with("+++"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut items = Vec::new();
        for name in crates {
            let path = format!("crates/{name}/public-api.txt");
            let before = show(root, &parent, &path);
            let after = show(root, commit, &path);
            let (Some(before), Some(after)) = (before, after) else {
                continue; // a crate added or removed whole: its own entry in the guide
            };
            let kept: BTreeSet<&str> = after.lines().collect();
            let lost: BTreeSet<String> = before
                .lines()
                .filter(|line| !kept.contains(line))
                .map(|line| item_of(line, name))
                .collect();
            for item in lost {
                if !added_notes.contains(item.as_str()) {
                    items.push(format!("{name}: {item}"));
                }
            }
        }
        if !items.is_empty() {
            let subject = git(root, &["log", "-1", "--format=%h %s", commit])?;
            let subject: String = subject.trim().chars().take(100).collect();
            unmarked.push(Unmarked {
                commit: subject,
                items,
            });
        }
    }
    Ok(unmarked)
}

/// The name a migration note must hold for a listing line of crate `name`.
fn item_of(line: &str, name: &str) -> String {
    let krate = name.replace('-', "_");
    let prefix = format!("{krate}::");
    // The item's own path: the implementing type of an impl line, else the first path
    // after the attributes and keywords.
    let own = match line.strip_prefix("impl") {
        Some(rest) => rest.rsplit(" for ").next().unwrap_or(rest).trim(),
        None => line
            .split_whitespace()
            .find(|word| word.contains("::") || *word == krate)
            .unwrap_or(line),
    };
    if let Some(rest) = own.strip_prefix(&prefix) {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        return rest[..end].to_owned();
    }
    if own == krate {
        return krate; // the crate root itself (`pub mod agentscope_core`)
    }
    // A foreign type's impl or method: the type's name, the segment before its generics
    // (`alloc::boxed::Box<S>::lease`) or before the method (`alloc::string::String::len`).
    let (path, generic) = match own.split_once('<') {
        Some((path, _)) => (path, true),
        None => (own.split('(').next().unwrap_or(own), false),
    };
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    if !generic && segments.len() > 1 {
        segments.pop();
    }
    segments.last().map_or(krate.clone(), |s| (*s).to_owned())
}

fn show(root: &Path, commit: &str, path: &str) -> Option<String> {
    git(root, &["show", &format!("{commit}:{path}")]).ok()
}

fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .current_dir(root)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
    }
    String::from_utf8(output.stdout).map_err(|e| format!("git printed non-UTF-8: {e}"))
}

#[cfg(test)]
mod tests {
    use super::item_of;

    #[test]
    fn an_item_is_named_by_its_first_segment_after_the_crate() {
        let cases = [
            (
                "pub agentscope_core::ChatResponse::model: core::option::Option<String>",
                "ChatResponse",
            ),
            (
                "#[non_exhaustive] pub struct agentscope_core::ChatUsage",
                "ChatUsage",
            ),
            (
                "pub const agentscope_core::plumbing::redact::REDACTED: &str",
                "plumbing",
            ),
            (
                "impl core::convert::From<agentscope_core::PreCallEvent> for agentscope_core::HookEvent",
                "HookEvent",
            ),
            (
                "pub fn agentscope_core::error_chain(&str) -> String",
                "error_chain",
            ),
            ("pub mod agentscope_core", "agentscope_core"),
            (
                "pub fn alloc::boxed::Box<S>::lease<'a>(&'a self, &'a str, &'a agentscope_core::CancellationToken) -> X",
                "Box",
            ),
            (
                "impl<S: agentscope_core::session::SessionStore> agentscope_core::session::SessionStore for alloc::boxed::Box<S>",
                "Box",
            ),
            (
                "pub fn alloc::string::String::len(&self) -> usize",
                "String",
            ),
        ];
        for (line, item) in cases {
            assert_eq!(item_of(line, "agentscope-core"), item, "{line}");
        }
    }
}
