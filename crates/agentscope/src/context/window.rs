//! [`ContextWindows`]: how many tokens each model's context window holds.

/// The window assumed for a model no entry matches: 128,000 tokens, what most current chat
/// models offer at least.
pub const DEFAULT_CONTEXT_WINDOW: usize = 128_000;

/// Well-known models' context windows (input and output together), by name prefix.
const BUILT_IN: &[(&str, usize)] = &[
    // OpenAI
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gpt-oss", 131_072),
    // Anthropic
    ("claude", 200_000),
    // Google
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-2", 1_048_576),
    // Meta
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    // Mistral
    ("mistral-large", 131_072),
];

/// The context window of each model, by name: a table of well-known models, your entries
/// (which win), and a default for names nothing matches.
///
/// Names match by prefix, the longest matching entry winning (`"gpt-4o-mini-2024-07-18"`
/// matches `"gpt-4o"`, `"gpt-4-0613"` matches `"gpt-4"`), ignoring case, a provider prefix
/// (`openai/gpt-4o`) and a fine-tune name (`ft:gpt-4o-mini:org::id`). Your entries
/// ([`with`](Self::with)) are looked up first: when one matches, it is used.
///
/// ```
/// use agentscope::context::{ContextWindows, DEFAULT_CONTEXT_WINDOW};
///
/// let windows = ContextWindows::new()
///     .with("my-local-llm", 32_768)
///     .with("gpt-4o", 64_000); // use less than the model offers
/// assert_eq!(windows.window_for("my-local-llm-q4"), 32_768);
/// assert_eq!(windows.window_for("gpt-4o-2024-08-06"), 64_000);
/// assert_eq!(windows.window_for("gpt-4-0613"), 8_192);
/// assert_eq!(windows.window_for("openai/gpt-4.1-mini"), 1_047_576);
/// assert_eq!(windows.window_for("claude-sonnet-4-5"), 200_000);
/// assert_eq!(windows.window_for("something-else"), DEFAULT_CONTEXT_WINDOW);
/// assert_eq!(ContextWindows::new().with_default(8_000).window_for("something-else"), 8_000);
/// assert_eq!(ContextWindows::empty().window_for("gpt-4o"), DEFAULT_CONTEXT_WINDOW);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextWindows {
    entries: Vec<(String, usize)>,
    built_in: bool,
    default: usize,
}

impl ContextWindows {
    /// The built-in table of well-known models (OpenAI, Anthropic, Google, Meta, Mistral) and
    /// [`DEFAULT_CONTEXT_WINDOW`] for the rest.
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
            built_in: true,
            default: DEFAULT_CONTEXT_WINDOW,
        }
    }

    /// No entries: every model gets the default until you add some.
    pub fn empty() -> Self {
        Self {
            built_in: false,
            ..Self::new()
        }
    }

    /// Models whose name starts with `model_prefix` have a window of `tokens` (at least 1).
    #[must_use]
    pub fn with(mut self, model_prefix: impl AsRef<str>, tokens: usize) -> Self {
        let prefix = normalize_model_name(model_prefix.as_ref());
        let tokens = tokens.max(1);
        match self.entries.iter_mut().find(|(known, _)| *known == prefix) {
            Some(entry) => entry.1 = tokens,
            None => self.entries.push((prefix, tokens)),
        }
        self
    }

    /// Models no entry matches have a window of `tokens` (at least 1).
    #[must_use]
    pub fn with_default(mut self, tokens: usize) -> Self {
        self.default = tokens.max(1);
        self
    }

    /// The window for names no entry matches.
    pub fn default_window(&self) -> usize {
        self.default
    }

    /// The context window of the model named `model`, in tokens.
    pub fn window_for(&self, model: &str) -> usize {
        let name = normalize_model_name(model);
        let longest = |entries: &mut dyn Iterator<Item = (&str, usize)>| {
            entries
                .filter(|(prefix, _)| name.starts_with(prefix))
                .max_by_key(|(prefix, _)| prefix.len())
                .map(|(_, tokens)| tokens)
        };
        let mut own = self.entries.iter().map(|(p, t)| (p.as_str(), *t));
        if let Some(tokens) = longest(&mut own) {
            return tokens;
        }
        if self.built_in {
            let mut built_in = BUILT_IN.iter().copied();
            if let Some(tokens) = longest(&mut built_in) {
                return tokens;
            }
        }
        self.default
    }
}

impl Default for ContextWindows {
    fn default() -> Self {
        Self::new()
    }
}

/// A model name as the tables know it: lowercase, without a provider prefix (`openai/`) and
/// with the base model of a fine-tune (`ft:gpt-4o:org::id` is `gpt-4o`).
pub(crate) fn normalize_model_name(model: &str) -> String {
    let model = model.trim();
    let model = match model.strip_prefix("ft:") {
        Some(rest) => rest.split(':').next().unwrap_or(rest),
        None => model,
    };
    let model = model.rsplit('/').next().unwrap_or(model);
    model.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised() {
        assert_eq!(normalize_model_name(" OpenAI/GPT-4o "), "gpt-4o");
        assert_eq!(
            normalize_model_name("ft:gpt-4o-mini:acme::abc"),
            "gpt-4o-mini"
        );
        assert_eq!(
            normalize_model_name("models/gemini-2.0-flash"),
            "gemini-2.0-flash"
        );
    }

    #[test]
    fn the_longest_prefix_wins_and_own_entries_first() {
        let windows = ContextWindows::new();
        assert_eq!(windows.window_for("o1-mini-2024-09-12"), 128_000);
        assert_eq!(windows.window_for("o1-2024-12-17"), 200_000);
        assert_eq!(windows.window_for("gpt-4-32k-0613"), 32_768);
        assert_eq!(windows.window_for("gpt-4o"), 128_000);
        let own = windows.with("gpt", 1_000).with("GPT", 2_000);
        assert_eq!(own.window_for("gpt-4o"), 2_000);
        assert_eq!(own.window_for("claude-3-haiku"), 200_000);
        assert_eq!(ContextWindows::new().with("x", 0).window_for("x"), 1);
    }
}
