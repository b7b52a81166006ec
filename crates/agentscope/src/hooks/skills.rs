//! Skills: packaged instructions the model reads on demand.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 85 | PreCall | appends the skill catalogue (name and description of every skill) to this call's system message; never stored in memory |
//!
//! A skill is a folder holding a `SKILL.md` file: YAML front matter between two `---` lines
//! with at least `name` and `description`, then the instructions in markdown.
//!
//! ```text
//! skills/
//!   release-notes/
//!     SKILL.md        ---
//!                     name: release-notes
//!                     description: Write release notes from a list of merged pull requests.
//!                     ---
//!                     # Release notes
//!                     1. Group the pull requests by label...
//! ```
//!
//! Only the catalogue goes into the system message; the model reads a skill's instructions
//! by calling the `load_skill` tool ([`SkillHook::load_skill_tool`]), so many skills cost
//! little context. Register both the hook and the tool:
//!
//! ```no_run
//! use agentscope::hooks::SkillHook;
//! use agentscope::{ReActAgent, Toolkit};
//! # fn demo(model: agentscope_test::ScriptedModel) -> Result<(), Box<dyn std::error::Error>> {
//! let skills = SkillHook::from_dir("skills")?;
//! let agent = ReActAgent::builder()
//!     .model(model)
//!     .hook(skills.clone())
//!     .toolkit(Toolkit::new().tool(skills.load_skill_tool()))
//!     .build()?;
//! # Ok(()) }
//! ```
//!
//! The front matter is parsed by a full YAML parser (`yaml-rust2`); keys other than `name`
//! and `description` are kept, as JSON values, in [`Skill::metadata`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentscope_core::{
    Hook, HookError, HookEvent, SharedString, Tool, ToolContext, ToolError, ToolOutput,
};
use serde_json::{Map, Number, Value, json};
use yaml_rust2::{Yaml, YamlLoader};

/// The name of the tool returned by [`SkillHook::load_skill_tool`].
pub const LOAD_SKILL_TOOL: &str = "load_skill";

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// The text before the list of skills in the catalogue (see [`SkillHook::with_header`]).
pub const DEFAULT_SKILLS_HEADER: &str = "## Skills\n\
You have skills: packaged instructions for specialised tasks. Only their names and \
descriptions are listed here. When a task matches a skill's description, call the \
`load_skill` tool with the skill's name to read its full instructions, then follow them.";

/// One skill: a name, a one-line description for the catalogue, and the instructions the
/// `load_skill` tool returns.
///
/// ```
/// use agentscope::hooks::Skill;
///
/// let skill = Skill::new("haiku", "Answer in haiku form.", "Write three lines of 5, 7 and 5 syllables.");
/// assert_eq!(skill.name(), "haiku");
/// assert!(skill.path().is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    name: String,
    description: String,
    instructions: String,
    path: Option<PathBuf>,
    metadata: Map<String, Value>,
}

impl Skill {
    /// A skill defined in code. [`SkillHook::new`] checks that the name and the description
    /// are not blank.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        instructions: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            instructions: instructions.into(),
            path: None,
            metadata: Map::new(),
        }
    }

    /// Adds a metadata entry (what other front-matter keys become for file skills).
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Reads a `SKILL.md` file.
    ///
    /// # Errors
    ///
    /// [`SkillError::Io`] when the file cannot be read (or is not UTF-8),
    /// [`SkillError::InvalidFile`] when its content is not a skill; both name the file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, SkillError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SkillError::Io {
            path: path.to_path_buf(),
            source: Arc::new(source),
        })?;
        let parsed = parse_skill_file(&text).map_err(|message| SkillError::InvalidFile {
            path: path.to_path_buf(),
            message,
        })?;
        Ok(Self {
            path: Some(path.to_path_buf()),
            ..parsed
        })
    }

    /// The name the model loads the skill by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the skill is for, as listed in the catalogue.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The instructions (for file skills: the markdown after the front matter, trimmed).
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// The `SKILL.md` file the skill was read from (`None` for skills defined in code).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Front-matter keys other than `name` and `description`, as JSON values.
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }
}

/// Why skills could not be loaded. Every variant about a file names it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A `SKILL.md` file is not a valid skill.
    #[error("invalid skill file {}: {message}", path.display())]
    InvalidFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A skill defined in code is not valid.
    #[error("invalid skill '{name}': {message}")]
    InvalidSkill {
        /// The skill's name.
        name: String,
        /// What is wrong with it.
        message: String,
    },
    /// Two skills have the same name.
    #[error("duplicate skill name '{name}'{}", locations(first.as_deref(), second.as_deref()))]
    DuplicateName {
        /// The name.
        name: String,
        /// Where the first skill came from (`None`: defined in code).
        first: Option<PathBuf>,
        /// Where the second skill came from (`None`: defined in code).
        second: Option<PathBuf>,
    },
}

fn locations(first: Option<&Path>, second: Option<&Path>) -> String {
    let place =
        |path: Option<&Path>| path.map_or_else(|| "code".to_owned(), |p| p.display().to_string());
    if first.is_none() && second.is_none() {
        String::new()
    } else {
        format!(" in {} and {}", place(first), place(second))
    }
}

/// Appends the skill catalogue to the system message of every call and serves the full
/// instructions through a `load_skill` tool.
///
/// Priority 85; handles PreCall only. The catalogue (see [`catalogue`](Self::catalogue)) is
/// appended with `append_system_content`, so it is part of this call's system message and
/// never of the agent's memory; a call with no skills appends nothing.
///
/// A cheap `Clone` handle: give one clone to the agent and keep another to make the tool.
///
/// ```
/// use agentscope::hooks::{Skill, SkillHook};
/// use agentscope::{Hook, Toolkit};
///
/// let skills = SkillHook::new(vec![
///     Skill::new("haiku", "Answer in haiku form.", "Write three lines of 5, 7 and 5 syllables."),
/// ])?;
/// assert_eq!(skills.priority(), 85);
/// let toolkit = Toolkit::new().tool(skills.load_skill_tool());
/// assert_eq!(toolkit.names(), ["load_skill"]);
/// assert!(skills.catalogue().unwrap().ends_with("- haiku: Answer in haiku form."));
/// # Ok::<(), agentscope::hooks::SkillError>(())
/// ```
#[derive(Clone)]
pub struct SkillHook {
    skills: Arc<[Skill]>,
    catalogue: Option<SharedString>,
}

impl SkillHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order).
    pub const NAME: &'static str = "skills";
    /// The hook's priority.
    pub const PRIORITY: i32 = 85;

    /// A hook over `skills` (defined in code or read with [`Skill::from_file`]), listed in
    /// the given order.
    ///
    /// # Errors
    ///
    /// [`SkillError::InvalidSkill`] for a blank or multi-line name or a blank description,
    /// [`SkillError::DuplicateName`] when two skills share a name.
    pub fn new(skills: Vec<Skill>) -> Result<Self, SkillError> {
        for skill in &skills {
            if let Err(message) = check_name_and_description(&skill.name, &skill.description) {
                return Err(match &skill.path {
                    Some(path) => SkillError::InvalidFile {
                        path: path.clone(),
                        message,
                    },
                    None => SkillError::InvalidSkill {
                        name: skill.name.clone(),
                        message,
                    },
                });
            }
        }
        for (i, skill) in skills.iter().enumerate() {
            if let Some(first) = skills[..i].iter().find(|s| s.name == skill.name) {
                return Err(SkillError::DuplicateName {
                    name: skill.name.clone(),
                    first: first.path.clone(),
                    second: skill.path.clone(),
                });
            }
        }
        Ok(Self::build(skills.into(), DEFAULT_SKILLS_HEADER.into()))
    }

    /// Loads every immediate subfolder of `dir` that holds a `SKILL.md` file (other entries
    /// are ignored), in file-name order.
    ///
    /// # Errors
    ///
    /// The first problem met: an unreadable directory or file ([`SkillError::Io`]), a file
    /// that is not a valid skill ([`SkillError::InvalidFile`]: missing or unclosed front
    /// matter, invalid YAML with its line, a missing, empty or non-string `name` or
    /// `description`, no instructions) or two skills with the same name
    /// ([`SkillError::DuplicateName`], naming both files).
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, SkillError> {
        let dir = dir.as_ref();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SkillError::Io {
                path,
                source: Arc::new(source),
            }
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let folder = entry.map_err(io(dir))?.path();
            let file = folder.join(SKILL_FILE);
            if folder.is_dir() && file.is_file() {
                files.push(file);
            }
        }
        files.sort();
        let skills = files
            .iter()
            .map(Skill::from_file)
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(skills)
    }

    fn build(skills: Arc<[Skill]>, header: SharedString) -> Self {
        let catalogue = (!skills.is_empty()).then(|| {
            let mut text = header.to_string();
            text.push('\n');
            for skill in skills.iter() {
                let description: Vec<&str> = skill.description.split_whitespace().collect();
                text.push_str(&format!("\n- {}: {}", skill.name, description.join(" ")));
            }
            SharedString::from(text)
        });
        Self { skills, catalogue }
    }

    /// Replaces the text before the list of skills (default [`DEFAULT_SKILLS_HEADER`]). It
    /// should tell the model to call `load_skill` with a skill's name.
    #[must_use]
    pub fn with_header(self, header: impl Into<SharedString>) -> Self {
        Self::build(self.skills, header.into())
    }

    /// The skills, in catalogue order.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill called `name`.
    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }

    /// The text appended to the system message: the header, a blank line, then one line
    /// `- name: description` per skill (the description's whitespace collapsed to single
    /// spaces). `None` when there are no skills (nothing is appended).
    pub fn catalogue(&self) -> Option<&str> {
        self.catalogue.as_deref()
    }

    /// The `load_skill` tool over these skills; add it to the agent's toolkit.
    pub fn load_skill_tool(&self) -> LoadSkillTool {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        LoadSkillTool {
            skills: Arc::clone(&self.skills),
            description: format!(
                "Loads the full instructions of a skill by its name. Available skills: {}.",
                list_or_none(&names)
            ),
        }
    }
}

impl fmt::Debug for SkillHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        f.debug_struct("SkillHook")
            .field("skills", &names)
            .finish_non_exhaustive()
    }
}

impl Hook for SkillHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        if let (HookEvent::PreCall(event), Some(catalogue)) = (event, &self.catalogue)
            && !event.is_observation()
        {
            event.append_system_content(catalogue.clone());
        }
        Ok(())
    }

    builtin_hook_meta!(PreCall);
}

/// The `load_skill` tool: arguments `{"name": string}`, result the skill's instructions.
///
/// An unknown name gives an error result listing the available skills. Make one with
/// [`SkillHook::load_skill_tool`].
///
/// ```
/// use agentscope::hooks::{Skill, SkillHook};
/// use agentscope::{Tool, ToolContext, ToolOutput, ToolUseBlock};
/// use serde_json::json;
///
/// let skills = SkillHook::new(vec![Skill::new("haiku", "Answer in haiku form.", "5, 7, 5.")])?;
/// let tool = skills.load_skill_tool();
/// let ctx = ToolContext::new(ToolUseBlock::new("c1", "load_skill", json!({"name": "haiku"})));
/// let output = futures::executor::block_on(tool.call(json!({"name": "haiku"}), ctx)).unwrap();
/// assert_eq!(output, ToolOutput::text("5, 7, 5."));
/// # Ok::<(), agentscope::hooks::SkillError>(())
/// ```
#[derive(Clone)]
pub struct LoadSkillTool {
    skills: Arc<[Skill]>,
    description: String,
}

impl fmt::Debug for LoadSkillTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadSkillTool").finish_non_exhaustive()
    }
}

impl Tool for LoadSkillTool {
    fn name(&self) -> &str {
        LOAD_SKILL_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name of the skill to load."}
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = input
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match self.skills.iter().find(|skill| skill.name == name) {
            Some(skill) => Ok(ToolOutput::text(skill.instructions.clone())),
            None => {
                let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
                Err(ToolError::invalid_arguments(format!(
                    "unknown skill '{name}'. Available skills: {}.",
                    list_or_none(&names)
                )))
            }
        }
    }
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "(none)".to_owned()
    } else {
        names.join(", ")
    }
}

fn check_name_and_description(name: &str, description: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("`name` is empty".to_owned());
    }
    if name.contains(['\n', '\r']) {
        return Err("`name` must be a single line".to_owned());
    }
    if name.trim() != name {
        return Err("`name` has leading or trailing whitespace".to_owned());
    }
    if description.trim().is_empty() {
        return Err("`description` is empty".to_owned());
    }
    Ok(())
}

/// Parses a `SKILL.md` text; the error is the message for [`SkillError::InvalidFile`].
fn parse_skill_file(text: &str) -> Result<Skill, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split_front_matter(text)?;
    let docs = YamlLoader::load_from_str(front).map_err(|e| {
        // The YAML starts on the file's second line; columns are reported from 1.
        format!(
            "invalid YAML in the front matter at line {}, column {}: {}",
            e.marker().line() + 1,
            e.marker().col() + 1,
            readable_yaml_error(e.info())
        )
    })?;
    let mapping = match docs.as_slice() {
        [] => yaml_rust2::yaml::Hash::new(),
        [Yaml::Hash(mapping)] => mapping.clone(),
        [Yaml::Null] => yaml_rust2::yaml::Hash::new(),
        [_] => return Err("the front matter must be a YAML mapping of keys to values".to_owned()),
        _ => return Err("the front matter must be a single YAML document".to_owned()),
    };
    let mut name = None;
    let mut description = None;
    let mut metadata = Map::new();
    for (key, value) in mapping {
        let key = yaml_key(&key)?;
        match key.as_str() {
            "name" => name = Some(yaml_string("name", value)?),
            "description" => description = Some(yaml_string("description", value)?),
            _ => {
                let value = yaml_to_json(value)?;
                metadata.insert(key, value);
            }
        }
    }
    let name = name.ok_or("missing `name` in the front matter")?;
    let name = name.trim().to_owned();
    let description = description.ok_or("missing `description` in the front matter")?;
    let description = description.trim().to_owned();
    check_name_and_description(&name, &description)?;
    let instructions = body.trim();
    if instructions.is_empty() {
        return Err("no instructions after the front matter".to_owned());
    }
    Ok(Skill {
        name,
        description,
        instructions: instructions.to_owned(),
        path: None,
        metadata,
    })
}

/// The parser's message, with its debug-formatted duplicate key (`String("name"): duplicated
/// key in mapping`) made readable.
fn readable_yaml_error(info: &str) -> String {
    let key = info
        .strip_suffix(": duplicated key in mapping")
        .and_then(|key| key.strip_prefix("String(\""))
        .and_then(|key| key.strip_suffix("\")"));
    match key {
        Some(key) => format!("duplicate key `{key}`"),
        None => info.to_owned(),
    }
}

/// Splits `---\n<yaml>---\n<body>` into the YAML and the body.
fn split_front_matter(text: &str) -> Result<(&str, &str), String> {
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => {
            return Err("missing YAML front matter: the file must start with a line `---`".into());
        }
    }
    let start = text.find('\n').map_or(text.len(), |i| i + 1);
    let mut offset = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err("the YAML front matter is not closed: no line `---` after the opening one".into())
}

fn yaml_key(key: &Yaml) -> Result<String, String> {
    match key {
        Yaml::String(s) | Yaml::Real(s) => Ok(s.clone()),
        Yaml::Integer(i) => Ok(i.to_string()),
        Yaml::Boolean(b) => Ok(b.to_string()),
        Yaml::Null => Ok("null".to_owned()),
        _ => Err("the front matter has a mapping key that is not a scalar".to_owned()),
    }
}

fn yaml_string(key: &str, value: Yaml) -> Result<String, String> {
    match value {
        Yaml::String(s) => Ok(s),
        Yaml::Null => Err(format!("`{key}` is empty")),
        _ => Err(format!("`{key}` must be a string")),
    }
}

fn yaml_to_json(value: Yaml) -> Result<Value, String> {
    Ok(match value {
        Yaml::Real(s) => s
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or(Value::String(s), Value::Number),
        Yaml::Integer(i) => Value::from(i),
        Yaml::String(s) => Value::String(s),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(items) => Value::Array(
            items
                .into_iter()
                .map(yaml_to_json)
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(mapping) => {
            let mut object = Map::new();
            for (key, value) in mapping {
                object.insert(yaml_key(&key)?, yaml_to_json(value)?);
            }
            Value::Object(object)
        }
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn parses_front_matter_body_and_metadata() {
        let text = "---\nname: pdf\ndescription: >\n  Fill in\n  PDF forms.\nlicense: MIT\nallowed-tools: [read, write]\nmetadata:\n  version: 1.5\n---\n\n# PDF\nStep 1.\n";
        let skill = parse_skill_file(text).unwrap();
        assert_eq!(skill.name(), "pdf");
        assert_eq!(skill.description(), "Fill in PDF forms.");
        assert_eq!(skill.instructions(), "# PDF\nStep 1.");
        assert_eq!(
            Value::Object(skill.metadata().clone()),
            json!({"license": "MIT", "allowed-tools": ["read", "write"], "metadata": {"version": 1.5}})
        );
    }

    #[test]
    fn accepts_crlf_bom_and_quoted_strings() {
        let text = "\u{feff}---\r\nname: \"a: b\"\r\ndescription: 'it''s'\r\n---\r\nbody\r\n";
        let skill = parse_skill_file(text).unwrap();
        assert_eq!(skill.name(), "a: b");
        assert_eq!(skill.description(), "it's");
        assert_eq!(skill.instructions(), "body");
    }

    #[test]
    fn reports_what_is_wrong() {
        let cases = [
            (
                "name: a\n",
                "missing YAML front matter: the file must start with a line `---`",
            ),
            (
                "",
                "missing YAML front matter: the file must start with a line `---`",
            ),
            (
                "---\nname: a\n",
                "the YAML front matter is not closed: no line `---` after the opening one",
            ),
            ("---\n---\nbody", "missing `name` in the front matter"),
            (
                "---\nname: a\n---\nbody",
                "missing `description` in the front matter",
            ),
            (
                "---\nname: ''\ndescription: d\n---\nbody",
                "`name` is empty",
            ),
            ("---\nname:\ndescription: d\n---\nbody", "`name` is empty"),
            (
                "---\nname: [a]\ndescription: d\n---\nbody",
                "`name` must be a string",
            ),
            (
                "---\nname: a\ndescription: 12\n---\nbody",
                "`description` must be a string",
            ),
            (
                "---\nname: a\ndescription: d\n---\n  \n",
                "no instructions after the front matter",
            ),
            (
                "---\n- a\n---\nbody",
                "the front matter must be a YAML mapping of keys to values",
            ),
            (
                "---\nname: |\n  a\n  b\ndescription: d\n---\nbody",
                "`name` must be a single line",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_skill_file(text).unwrap_err(), expected, "{text:?}");
        }
    }

    #[test]
    fn yaml_errors_carry_the_file_line() {
        let err = parse_skill_file("---\nname: a\ndescription: [d\n---\nbody").unwrap_err();
        assert!(
            err.starts_with("invalid YAML in the front matter at line "),
            "{err}"
        );
        let err = parse_skill_file("---\nname: a\nname: b\ndescription: d\n---\nbody").unwrap_err();
        assert_eq!(
            err,
            "invalid YAML in the front matter at line 3, column 7: duplicate key `name`"
        );
    }

    #[test]
    fn catalogue_collapses_whitespace_and_keeps_order() {
        let hook = SkillHook::new(vec![
            Skill::new("b", "second\n  skill", "x"),
            Skill::new("a", "first", "y"),
        ])
        .unwrap()
        .with_header("H");
        assert_eq!(hook.catalogue(), Some("H\n\n- b: second skill\n- a: first"));
        assert_eq!(SkillHook::new(Vec::new()).unwrap().catalogue(), None);
    }

    #[test]
    fn in_code_skills_are_checked() {
        let err =
            SkillHook::new(vec![Skill::new("a", "d", "x"), Skill::new("a", "e", "y")]).unwrap_err();
        assert_eq!(err.to_string(), "duplicate skill name 'a'");
        let err = SkillHook::new(vec![Skill::new("a", " ", "x")]).unwrap_err();
        assert_eq!(err.to_string(), "invalid skill 'a': `description` is empty");
    }
}
