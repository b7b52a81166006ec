//! The settings of a [`ContextWindowHook`](super::ContextWindowHook), as its `with_*`
//! methods set them, and which token counter they give for a model.

use std::sync::Arc;

use super::hash::word_hash;
use super::stash::ToolResultLimit;
use super::summary::Summarizer;
use super::tokens::{TokenCounter, default_counter};
use super::window::ContextWindows;

/// How much of the window a forced compaction aims for by default (see
/// [`ContextWindowHook::with_forced_target`](super::ContextWindowHook::with_forced_target)).
pub const DEFAULT_FORCED_TARGET: f32 = 0.5;

/// The hook's settings; clones of a hook share them until one of them is changed.
#[derive(Clone)]
pub(super) struct Config {
    pub(super) windows: ContextWindows,
    pub(super) counter: Option<Arc<dyn TokenCounter>>,
    pub(super) max_messages: Option<usize>,
    pub(super) max_input_tokens: Option<usize>,
    pub(super) tool_results: Option<ToolResultLimit>,
    pub(super) summarizer: Option<Summarizer>,
    pub(super) hard_limit: bool,
    pub(super) forced_target: f32,
    pub(super) reports: bool,
}

impl Default for Config {
    /// The built-in windows, the model's default counter, and only the hard limit on.
    fn default() -> Self {
        Config {
            windows: ContextWindows::new(),
            counter: None,
            max_messages: None,
            max_input_tokens: None,
            tool_results: None,
            summarizer: None,
            hard_limit: true,
            forced_target: DEFAULT_FORCED_TARGET,
            reports: false,
        }
    }
}

impl Config {
    /// The counter for `model`, and the key its counts are cached under (0 for the counter
    /// the hook was given, a hash of the model's name for the model's default counter).
    pub(super) fn counter_for(&self, model: &str) -> (Arc<dyn TokenCounter>, u64) {
        match &self.counter {
            Some(counter) => (Arc::clone(counter), 0),
            None => (default_counter(model), word_hash(model.as_bytes()) | 1),
        }
    }
}
