//! Skills: the catalogue reaches only the system message of model requests (never memory),
//! `load_skill` returns a skill's instructions, and bad skill files give errors naming them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::describe::system_texts;
use crate::support::describe::without_reason::{describe, memory_of};
use agentscope::hooks::{Skill, SkillError, SkillHook};
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

const CATALOGUE: &str = "## Skills\n\
You have skills: packaged instructions for specialised tasks. Only their names and \
descriptions are listed here. When a task matches a skill's description, call the \
`load_skill` tool with the skill's name to read its full instructions, then follow them.\n\
\n\
- pdf-forms: Fill in PDF forms from structured data.\n\
- git-release: Prepare a release: bump the version, tag, write the changelog.";

const RELEASE_SKILL: &str = "---\n\
name: git-release\n\
description: >\n  Prepare a release: bump the version,\n  tag, write the changelog.\n\
license: MIT\n\
---\n\
\n\
# Releasing\n\
1. Bump the version in Cargo.toml.\n\
2. Tag `vX.Y.Z`.\n";

const RELEASE_INSTRUCTIONS: &str =
    "# Releasing\n1. Bump the version in Cargo.toml.\n2. Tag `vX.Y.Z`.";

const PDF_SKILL: &str = "---\n\
name: pdf-forms\n\
description: \"Fill in PDF forms from structured data.\"\n\
---\n\
Read the form fields first.\n";

/// A fresh, empty directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "agentscope-skills-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `<dir>/<folder>/SKILL.md` and returns its path.
    fn skill(&self, folder: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let dir = self.0.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("SKILL.md");
        std::fs::write(&file, content).unwrap();
        file
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn skills_dir() -> TempDir {
    let dir = TempDir::new("ok");
    // Loading sorts by folder name: "pdf" before "release".
    dir.skill("pdf", PDF_SKILL);
    dir.skill("release", RELEASE_SKILL);
    // Ignored: a folder without SKILL.md, a top-level file, a SKILL.md at the top.
    std::fs::create_dir_all(dir.path().join("assets")).unwrap();
    std::fs::write(dir.path().join("assets").join("notes.md"), "not a skill").unwrap();
    std::fs::write(dir.path().join("README.md"), "not a skill").unwrap();
    std::fs::write(dir.path().join("SKILL.md"), "not a skill either").unwrap();
    dir
}

/// The skills of [`skills_dir`], loaded (the directory lives as long as the `TempDir`).
fn loaded_skills() -> (TempDir, SkillHook) {
    let dir = skills_dir();
    let skills = SkillHook::from_dir(dir.path()).unwrap();
    (dir, skills)
}

fn agent(sys_prompt: &str, skills: &SkillHook, model: &ScriptedModel) -> ReActAgent {
    ReActAgent::builder()
        .sys_prompt(sys_prompt)
        .model(model.clone())
        .hook(skills.clone())
        .toolkit(Toolkit::new().tool(skills.load_skill_tool()))
        .build()
        .unwrap()
}

#[tokio::test]
async fn catalogue_is_appended_to_the_system_message_only() {
    let (_dir, skills) = loaded_skills();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "load_skill", json!({"name": "git-release"})),
        ScriptedResponse::text("Released."),
        ScriptedResponse::text("Bye."),
    ]);
    let agent = agent("You are helpful.", &skills, &model);

    let reply = agent.call("Cut a release").await.unwrap();
    assert_eq!(reply.text(), "Released.");
    agent.call("Thanks").await.unwrap();

    // Every request (both iterations of the first call, and the second call) carries the
    // catalogue exactly once, after the prompt.
    let expected = vec!["You are helpful.".to_owned(), CATALOGUE.to_owned()];
    assert_eq!(system_texts(&model), vec![expected; 3]);
    let requests = model.requests();
    assert_eq!(requests[0].messages[0].name, "system");
    assert_eq!(
        requests[0].messages[1..]
            .iter()
            .map(describe)
            .collect::<Vec<_>>(),
        ["user/user: text \"Cut a release\""]
    );
    let tools: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["load_skill"]);
    assert_eq!(
        requests[0].tools[0].description,
        "Loads the full instructions of a skill by its name. Available skills: pdf-forms, git-release."
    );

    // Memory: the conversation and the loaded instructions (a real tool result), no
    // catalogue anywhere.
    assert_eq!(
        memory_of(&agent),
        [
            "user/user: text \"Cut a release\"".to_owned(),
            "assistant/assistant: tool_use c1 load_skill {\"name\":\"git-release\"}".to_owned(),
            format!("tool/load_skill: tool_result c1 load_skill {RELEASE_INSTRUCTIONS:?}"),
            "assistant/assistant: text \"Released.\"".to_owned(),
            "user/user: text \"Thanks\"".to_owned(),
            "assistant/assistant: text \"Bye.\"".to_owned(),
        ]
    );
    for msg in agent.memory().messages() {
        assert_ne!(msg.role, Role::System);
        assert!(!msg.text().contains("## Skills"), "{}", describe(&msg));
    }
}

#[tokio::test]
async fn without_a_prompt_the_catalogue_is_the_system_message() {
    let (_dir, skills) = loaded_skills();
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    agent("", &skills, &model).call("hi").await.unwrap();
    assert_eq!(system_texts(&model), [[CATALOGUE]]);
    assert_eq!(model.requests()[0].messages[0].name, "system");
}

#[tokio::test]
async fn no_skills_append_nothing() {
    let dir = TempDir::new("empty");
    let skills = SkillHook::from_dir(dir.path()).unwrap();
    assert!(skills.skills().is_empty());
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    agent("Prompt.", &skills, &model).call("hi").await.unwrap();
    assert_eq!(system_texts(&model), [["Prompt."]]);
}

#[tokio::test]
async fn unknown_skill_is_an_error_result_listing_the_skills() {
    let (_dir, skills) = loaded_skills();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "load_skill", json!({"name": "nope"})),
        ScriptedResponse::text("Sorry."),
    ]);
    let agent = agent("", &skills, &model);
    agent.call("do it").await.unwrap();
    assert_eq!(
        memory_of(&agent)[2],
        "tool/load_skill: tool_result c1 load_skill error \"Error: Parameter validation failed for tool 'load_skill': unknown skill 'nope'. Available skills: pdf-forms, git-release.\""
    );
}

#[tokio::test]
async fn the_hook_is_visible_in_hook_order() {
    let skills = SkillHook::new(vec![Skill::new("a", "b", "c")]).unwrap();
    let model = ScriptedModel::new([]);
    let order = agent("", &skills, &model).hook_order();
    assert_eq!(order.len(), 1);
    assert_eq!(order[0].name, "skills");
    assert_eq!(order[0].priority, 85);
    assert_eq!(order[0].interests, HookEventType::PreCall.into());
}

#[test]
fn loaded_skills_keep_their_file_metadata_and_order() {
    let (dir, skills) = loaded_skills();
    let names: Vec<&str> = skills.skills().iter().map(Skill::name).collect();
    assert_eq!(names, ["pdf-forms", "git-release"]);
    let release = skills.skill("git-release").unwrap();
    assert_eq!(
        release.description(),
        "Prepare a release: bump the version, tag, write the changelog."
    );
    assert_eq!(release.instructions(), RELEASE_INSTRUCTIONS);
    assert_eq!(
        release.path(),
        Some(dir.path().join("release/SKILL.md").as_path())
    );
    assert_eq!(release.metadata()["license"], "MIT");
    assert_eq!(skills.catalogue(), Some(CATALOGUE));
}

/// Loads a directory holding one skill folder `bad` with `content`; returns the error text
/// and the file's path.
fn load_error(content: &[u8]) -> (String, PathBuf) {
    let dir = TempDir::new("bad");
    let file = dir.skill("bad", content);
    let err = SkillHook::from_dir(dir.path()).unwrap_err();
    assert!(
        matches!(err, SkillError::InvalidFile { ref path, .. } if *path == file),
        "{err:?}"
    );
    (err.to_string(), file)
}

#[test]
fn bad_skill_files_give_errors_naming_the_file() {
    let cases: [(&str, &str); 9] = [
        (
            "# Just markdown\n",
            "missing YAML front matter: the file must start with a line `---`",
        ),
        (
            "---\nname: x\ndescription: y\n",
            "the YAML front matter is not closed: no line `---` after the opening one",
        ),
        (
            "---\ndescription: y\n---\nbody\n",
            "missing `name` in the front matter",
        ),
        (
            "---\nname: x\n---\nbody\n",
            "missing `description` in the front matter",
        ),
        (
            "---\nname: x\ndescription: \"  \"\n---\nbody\n",
            "`description` is empty",
        ),
        (
            "---\nname: 42\ndescription: y\n---\nbody\n",
            "`name` must be a string",
        ),
        (
            "---\nname: x\ndescription: y\n---\n\n",
            "no instructions after the front matter",
        ),
        (
            "---\nname: x\ndescription: y\n  extra: [\n---\nbody\n",
            "invalid YAML in the front matter at line 4, column 8: mapping values are not allowed in this context",
        ),
        (
            "---\nname: x\nname: y\ndescription: z\n---\nbody\n",
            "invalid YAML in the front matter at line 3, column 7: duplicate key `name`",
        ),
    ];
    for (content, problem) in cases {
        let (message, file) = load_error(content.as_bytes());
        assert_eq!(
            message,
            format!("invalid skill file {}: {problem}", file.display()),
            "{content:?}"
        );
    }
}

#[test]
fn unreadable_files_and_duplicates_name_the_files() {
    let dir = TempDir::new("utf8");
    let file = dir.skill("bin", [0xff, 0xfe, 0x00]);
    let err = SkillHook::from_dir(dir.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot read {}: stream did not contain valid UTF-8",
            file.display()
        )
    );

    let dir = TempDir::new("dup");
    let first = dir.skill("a", PDF_SKILL);
    let second = dir.skill("b", PDF_SKILL);
    let err = SkillHook::from_dir(dir.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "duplicate skill name 'pdf-forms' in {} and {}",
            first.display(),
            second.display()
        )
    );

    let missing = std::env::temp_dir().join("agentscope-skills-does-not-exist-7f3a");
    let err = SkillHook::from_dir(&missing).unwrap_err();
    assert!(matches!(err, SkillError::Io { ref path, .. } if *path == missing));
    assert!(
        err.to_string()
            .starts_with(&format!("cannot read {}: ", missing.display()))
    );
}

#[test]
fn in_code_skills_are_validated() {
    let err = SkillHook::new(vec![Skill::new("", "d", "i")]).unwrap_err();
    assert_eq!(err.to_string(), "invalid skill '': `name` is empty");
    let err =
        SkillHook::new(vec![Skill::new("x", "d", "i"), Skill::new("x", "e", "j")]).unwrap_err();
    assert_eq!(err.to_string(), "duplicate skill name 'x'");
    let dir = skills_dir();
    let mut skills = SkillHook::from_dir(dir.path()).unwrap().skills().to_vec();
    skills.push(Skill::new("pdf-forms", "mine", "x"));
    let err = SkillHook::new(skills).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "duplicate skill name 'pdf-forms' in {} and code",
            dir.path().join("pdf/SKILL.md").display()
        )
    );
}
