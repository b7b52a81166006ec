//! Token counting: the [`TokenCounter`] trait, a real tokenizer ([`TiktokenCounter`], with
//! the `tiktoken` feature), a cheap estimator ([`EstimatedTokens`]), and
//! [`InputTokens`], which prefers the provider's reported usage.

use std::sync::Arc;

use agentscope_core::{ChatUsage, ContentBlock, Msg, Role};

/// What a message costs beyond its content: the role, separators and the message framing of
/// chat formats (OpenAI's is 3 to 4 tokens per message).
pub const DEFAULT_MESSAGE_OVERHEAD: usize = 4;

/// What a tool call or a tool result costs beyond its name and its content (the call id and
/// the framing).
pub const TOOL_BLOCK_OVERHEAD: usize = 3;

/// What an image block is counted as: a low-detail image for OpenAI's models. Real costs
/// depend on the size and the detail the provider uses.
pub const IMAGE_TOKENS: usize = 85;

/// Counts tokens: of a text, of a message (its content plus a per-message overhead), of a
/// conversation.
///
/// Only [`count_text`](Self::count_text) is required. Messages are counted block by block
/// ([`count_blocks`]): text and thinking as their text; a tool call as its name and its JSON
/// arguments (the argument text when it was not valid JSON) plus [`TOOL_BLOCK_OVERHEAD`]; a
/// tool result as its name and its output plus [`TOOL_BLOCK_OVERHEAD`]; an image as
/// [`IMAGE_TOKENS`].
///
/// ```
/// use agentscope::context::{EstimatedTokens, TokenCounter};
/// use agentscope::Msg;
///
/// let counter = EstimatedTokens::new(); // about 4 characters per token
/// assert_eq!(counter.count_text("twelve chars"), 3);
/// // 3 for the text, 4 for the message overhead.
/// assert_eq!(counter.count_message(&Msg::user("twelve chars")), 7);
/// assert_eq!(counter.count_messages(&[Msg::user("twelve chars"), Msg::assistant("ok")]), 7 + 5);
/// ```
///
/// Implement it to plug in another tokenizer:
///
/// ```
/// use agentscope::context::TokenCounter;
///
/// /// One token per whitespace-separated word.
/// struct Words;
///
/// impl TokenCounter for Words {
///     fn count_text(&self, text: &str) -> usize {
///         text.split_whitespace().count()
///     }
///     fn message_overhead(&self) -> usize {
///         1
///     }
/// }
///
/// assert_eq!(Words.count_text("three little words"), 3);
/// ```
pub trait TokenCounter: Send + Sync + 'static {
    /// The tokens of `text`.
    fn count_text(&self, text: &str) -> usize;

    /// The tokens each message costs beyond its content ([`DEFAULT_MESSAGE_OVERHEAD`] unless
    /// overridden).
    fn message_overhead(&self) -> usize {
        DEFAULT_MESSAGE_OVERHEAD
    }

    /// The tokens of one message: its content plus the per-message overhead.
    fn count_message(&self, message: &Msg) -> usize {
        self.message_overhead() + count_blocks(self, &message.content)
    }

    /// The tokens of `messages`: the sum of [`count_message`](Self::count_message).
    fn count_messages(&self, messages: &[Msg]) -> usize {
        messages
            .iter()
            .map(|message| self.count_message(message))
            .sum()
    }
}

impl<C: TokenCounter + ?Sized> TokenCounter for Arc<C> {
    fn count_text(&self, text: &str) -> usize {
        (**self).count_text(text)
    }

    fn message_overhead(&self) -> usize {
        (**self).message_overhead()
    }

    fn count_message(&self, message: &Msg) -> usize {
        (**self).count_message(message)
    }

    fn count_messages(&self, messages: &[Msg]) -> usize {
        (**self).count_messages(messages)
    }
}

/// The tokens of content blocks, as [`TokenCounter::count_message`] counts them (without the
/// per-message overhead).
///
/// ```
/// use agentscope::context::{EstimatedTokens, TOOL_BLOCK_OVERHEAD, count_blocks};
/// use agentscope::{ContentBlock, ToolResultBlock, ToolUseBlock};
/// use serde_json::json;
///
/// let counter = EstimatedTokens::new();
/// let call = ContentBlock::from(ToolUseBlock::new("c1", "calc", json!({"x": 1})));
/// // "calc" (1) + `{"x":1}` (7 characters: 2) + the overhead.
/// assert_eq!(count_blocks(&counter, &[call]), 1 + 2 + TOOL_BLOCK_OVERHEAD);
/// let result = ContentBlock::from(ToolResultBlock::text("c1", "calc", "42"));
/// assert_eq!(count_blocks(&counter, &[result]), 1 + 1 + TOOL_BLOCK_OVERHEAD);
/// ```
pub fn count_blocks<C: TokenCounter + ?Sized>(counter: &C, blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => counter.count_text(&text.text),
            ContentBlock::Thinking(thinking) => counter.count_text(&thinking.thinking),
            ContentBlock::ToolUse(call) => {
                let arguments = match &call.raw_input {
                    Some(raw) => counter.count_text(raw),
                    None if call.input.is_null() => 0,
                    None => counter.count_text(&call.input.to_string()),
                };
                TOOL_BLOCK_OVERHEAD + counter.count_text(&call.name) + arguments
            }
            ContentBlock::ToolResult(result) => {
                TOOL_BLOCK_OVERHEAD
                    + counter.count_text(&result.name)
                    + count_blocks(counter, &result.output)
            }
            ContentBlock::Image(_) => IMAGE_TOKENS,
            // Block kinds added later cost what their JSON costs.
            other => serde_json::to_string(other)
                .map(|json| counter.count_text(&json))
                .unwrap_or_default(),
        })
        .sum()
}

/// A cheap estimate: one token per `chars_per_token` characters (4 by default, rounded up),
/// which is close for English text with OpenAI's tokenizers and needs no vocabulary. The
/// fallback when the `tiktoken` feature is off.
///
/// ```
/// use agentscope::context::{EstimatedTokens, TokenCounter};
///
/// assert_eq!(EstimatedTokens::new().count_text(""), 0);
/// assert_eq!(EstimatedTokens::new().count_text("abcde"), 2);
/// assert_eq!(EstimatedTokens::new().with_chars_per_token(2).count_text("abcde"), 3);
/// assert_eq!(EstimatedTokens::new().with_message_overhead(0).message_overhead(), 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EstimatedTokens {
    chars_per_token: usize,
    message_overhead: usize,
}

impl EstimatedTokens {
    /// Four characters per token, [`DEFAULT_MESSAGE_OVERHEAD`] per message.
    pub const fn new() -> Self {
        Self {
            chars_per_token: 4,
            message_overhead: DEFAULT_MESSAGE_OVERHEAD,
        }
    }

    /// Counts one token per `chars` characters (at least 1).
    #[must_use]
    pub const fn with_chars_per_token(mut self, chars: usize) -> Self {
        self.chars_per_token = if chars == 0 { 1 } else { chars };
        self
    }

    /// Counts `tokens` per message beyond its content.
    #[must_use]
    pub const fn with_message_overhead(mut self, tokens: usize) -> Self {
        self.message_overhead = tokens;
        self
    }
}

impl Default for EstimatedTokens {
    fn default() -> Self {
        Self::new()
    }
}

impl TokenCounter for EstimatedTokens {
    fn count_text(&self, text: &str) -> usize {
        // ASCII text (the common case) has as many characters as bytes.
        let chars = if text.is_ascii() {
            text.len()
        } else {
            text.chars().count()
        };
        chars.div_ceil(self.chars_per_token)
    }

    fn message_overhead(&self) -> usize {
        self.message_overhead
    }
}

#[cfg(feature = "tiktoken")]
pub use self::tiktoken::{Encoding, TiktokenCounter};

#[cfg(feature = "tiktoken")]
mod tiktoken {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::LazyLock;

    use tiktoken_rs::CoreBPE;
    use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

    use super::{DEFAULT_MESSAGE_OVERHEAD, EstimatedTokens, TokenCounter};

    /// An OpenAI BPE vocabulary.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum Encoding {
        /// `o200k_base`: GPT-4o, GPT-4.1, GPT-4.5, GPT-5, the o-series, gpt-oss.
        O200kBase,
        /// `cl100k_base`: GPT-4, GPT-3.5-turbo and OpenAI's embedding models.
        Cl100kBase,
    }

    impl Encoding {
        /// The vocabulary of the model named `model`: `cl100k_base` for GPT-4 (not 4o or
        /// 4.1), GPT-3.5 and older OpenAI models, `o200k_base` for newer OpenAI models and
        /// for names OpenAI does not use (other vendors' tokenizers are closer to the newer
        /// vocabulary). A provider prefix (`openai/gpt-4o`) and a fine-tune name
        /// (`ft:gpt-4o:org::id`) are understood; case does not matter.
        ///
        /// ```
        /// use agentscope::context::Encoding;
        ///
        /// assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
        /// assert_eq!(Encoding::for_model("GPT-4.1"), Encoding::O200kBase);
        /// assert_eq!(Encoding::for_model("o3-mini"), Encoding::O200kBase);
        /// assert_eq!(Encoding::for_model("gpt-5"), Encoding::O200kBase);
        /// assert_eq!(Encoding::for_model("gpt-4-0613"), Encoding::Cl100kBase);
        /// assert_eq!(Encoding::for_model("openai/gpt-3.5-turbo"), Encoding::Cl100kBase);
        /// assert_eq!(Encoding::for_model("claude-sonnet-4-5"), Encoding::O200kBase);
        /// ```
        pub fn for_model(model: &str) -> Self {
            let model = super::super::window::normalize_model_name(model);
            match get_tokenizer(&model) {
                Some(Tokenizer::O200kBase | Tokenizer::O200kHarmony) | None => Self::O200kBase,
                Some(_) => Self::Cl100kBase,
            }
        }

        /// The vocabulary's name: `"o200k_base"` or `"cl100k_base"`.
        pub fn name(self) -> &'static str {
            match self {
                Self::O200kBase => "o200k_base",
                Self::Cl100kBase => "cl100k_base",
            }
        }

        /// The loaded vocabulary: loaded once per process, on first use (parsing one takes
        /// around a hundred milliseconds), then shared. `None` if it failed to load.
        fn bpe(self) -> Option<&'static CoreBPE> {
            static O200K: LazyLock<Option<CoreBPE>> =
                LazyLock::new(|| load(tiktoken_rs::o200k_base));
            static CL100K: LazyLock<Option<CoreBPE>> =
                LazyLock::new(|| load(tiktoken_rs::cl100k_base));
            match self {
                Self::O200kBase => O200K.as_ref(),
                Self::Cl100kBase => CL100K.as_ref(),
            }
        }
    }

    /// Loads a vocabulary shipped inside `tiktoken-rs`; a failure (or a panic of the loader)
    /// leaves it unloaded, and counting falls back to the estimate.
    fn load<E>(make: fn() -> Result<CoreBPE, E>) -> Option<CoreBPE> {
        catch_unwind(make).ok().and_then(Result::ok)
    }

    /// Counts with OpenAI's tokenizers (`tiktoken-rs`, whose vocabularies ship inside the
    /// crate: no download, works offline). Exact for OpenAI models' text; a good
    /// approximation for other vendors' models.
    ///
    /// Each vocabulary is loaded once per process, on first use, and shared by every
    /// counter; the counter itself is a `Copy` value. Should a vocabulary fail to load, or
    /// the tokenizer fail on some text, that text is estimated instead
    /// ([`EstimatedTokens`]).
    ///
    /// ```
    /// use agentscope::context::{Encoding, TiktokenCounter, TokenCounter};
    ///
    /// let counter = TiktokenCounter::for_model("gpt-4o");
    /// assert_eq!(counter.encoding(), Encoding::O200kBase);
    /// assert_eq!(counter.count_text("Hello, world!"), 4);
    /// assert_eq!(TiktokenCounter::new(Encoding::Cl100kBase).count_text("Hello, world!"), 4);
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct TiktokenCounter {
        encoding: Encoding,
        message_overhead: usize,
    }

    impl TiktokenCounter {
        /// A counter with the given vocabulary.
        pub const fn new(encoding: Encoding) -> Self {
            Self {
                encoding,
                message_overhead: DEFAULT_MESSAGE_OVERHEAD,
            }
        }

        /// A counter with the vocabulary of the model named `model`
        /// ([`Encoding::for_model`]).
        pub fn for_model(model: &str) -> Self {
            Self::new(Encoding::for_model(model))
        }

        /// Counts `tokens` per message beyond its content.
        #[must_use]
        pub const fn with_message_overhead(mut self, tokens: usize) -> Self {
            self.message_overhead = tokens;
            self
        }

        /// The vocabulary.
        pub fn encoding(&self) -> Encoding {
            self.encoding
        }
    }

    impl TokenCounter for TiktokenCounter {
        fn count_text(&self, text: &str) -> usize {
            if text.is_empty() {
                return 0;
            }
            let counted = self.encoding.bpe().and_then(|bpe| {
                // The tokenizer's regex engine can give up on pathological input (it then
                // panics): such text is estimated.
                catch_unwind(AssertUnwindSafe(|| bpe.encode_ordinary(text).len())).ok()
            });
            counted.unwrap_or_else(|| EstimatedTokens::new().count_text(text))
        }

        fn message_overhead(&self) -> usize {
            self.message_overhead
        }
    }
}

/// The counter used for the model named `model` when none is configured: a
/// [`TiktokenCounter`] for the model's vocabulary with the `tiktoken` feature (the default),
/// an [`EstimatedTokens`] without it.
///
/// ```
/// use agentscope::context::{TokenCounter, default_counter};
///
/// let counter = default_counter("gpt-4o");
/// assert!(counter.count_text("Hello, world!") > 0);
/// ```
pub fn default_counter(model: &str) -> Arc<dyn TokenCounter> {
    #[cfg(feature = "tiktoken")]
    {
        Arc::new(TiktokenCounter::for_model(model))
    }
    #[cfg(not(feature = "tiktoken"))]
    {
        let _ = model;
        Arc::new(EstimatedTokens::new())
    }
}

/// The usage the provider reported for an assistant message the model produced: the
/// engine's accumulator stores it as `metadata["usage"]` =
/// `{"input_tokens": .., "output_tokens": ..}`. `None` for other messages.
///
/// ```
/// use agentscope::context::reported_usage;
/// use agentscope::{ChatUsage, Msg};
/// use serde_json::json;
///
/// let mut reply = Msg::assistant("Hi!");
/// assert_eq!(reported_usage(&reply), None);
/// reply.metadata.insert("usage".into(), json!({"input_tokens": 120, "output_tokens": 3}));
/// assert_eq!(reported_usage(&reply), Some(ChatUsage::new(120, 3)));
/// ```
pub fn reported_usage(message: &Msg) -> Option<ChatUsage> {
    if message.role != Role::Assistant {
        return None;
    }
    let usage = message.metadata.get("usage")?;
    let input_tokens = usage.get("input_tokens")?.as_u64()?;
    let output_tokens = usage.get("output_tokens")?.as_u64()?;
    // A response that reports nothing (some providers send zeros) is no measurement.
    (input_tokens > 0).then_some(ChatUsage::new(input_tokens, output_tokens))
}

/// The tokens of a model input (the system message and the messages after it), and how they
/// were measured.
///
/// [`count_with_usage`](Self::count_with_usage) prefers the provider's word: when the
/// messages contain an assistant message with [reported usage](reported_usage), the tokens up
/// to and including it are that response's `input_tokens + output_tokens` (what the provider
/// counted for the request that produced it, system message and tool schemas included, plus
/// the reply), and only the messages after it are counted. That holds when the messages
/// before it are the ones that request carried; [`ContextWindowHook`] checks that before it
/// relies on it.
///
/// [`ContextWindowHook`]: super::ContextWindowHook
///
/// ```
/// use agentscope::context::{EstimatedTokens, InputTokens, TokenCounter};
/// use agentscope::Msg;
/// use serde_json::json;
///
/// let counter = EstimatedTokens::new();
/// let mut reply = Msg::assistant("Paris.");
/// reply.metadata.insert("usage".into(), json!({"input_tokens": 1000, "output_tokens": 2}));
/// let messages = [Msg::user("Capital of France?"), reply, Msg::user("And of Italy?")];
/// let system = Msg::system("Be brief.");
///
/// let counted = InputTokens::count(&counter, Some(&system), &messages);
/// assert_eq!(counted.total, counter.count_message(&system) + counter.count_messages(&messages));
/// assert_eq!(counted.anchor, None);
///
/// let measured = InputTokens::count_with_usage(&counter, Some(&system), &messages);
/// assert_eq!(measured.anchor, Some(1));
/// assert_eq!(measured.reported, 1002);
/// assert_eq!(measured.total, 1002 + counter.count_message(&messages[2]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct InputTokens {
    /// The tokens of the whole input.
    pub total: usize,
    /// The part of [`total`](Self::total) taken from the provider's reported usage (0 when
    /// none was used).
    pub reported: usize,
    /// The index, in the messages, of the assistant message whose usage was used.
    pub anchor: Option<usize>,
}

impl InputTokens {
    /// Counts everything with `counter`.
    pub fn count<C: TokenCounter + ?Sized>(
        counter: &C,
        system: Option<&Msg>,
        messages: &[Msg],
    ) -> Self {
        let system = system.map_or(0, |system| counter.count_message(system));
        Self {
            total: system + counter.count_messages(messages),
            reported: 0,
            anchor: None,
        }
    }

    /// Takes the tokens up to the last assistant message with reported usage from that
    /// usage, and counts the rest with `counter` (everything when there is no such message).
    pub fn count_with_usage<C: TokenCounter + ?Sized>(
        counter: &C,
        system: Option<&Msg>,
        messages: &[Msg],
    ) -> Self {
        let anchor = messages
            .iter()
            .enumerate()
            .rev()
            .find_map(|(at, message)| reported_usage(message).map(|usage| (at, usage)));
        match anchor {
            Some((at, usage)) => {
                let reported = usage_tokens(usage);
                Self {
                    total: reported + counter.count_messages(&messages[at + 1..]),
                    reported,
                    anchor: Some(at),
                }
            }
            None => Self::count(counter, system, messages),
        }
    }
}

/// A response's input plus output tokens, saturating on 32-bit targets.
pub(crate) fn usage_tokens(usage: ChatUsage) -> usize {
    usize::try_from(usage.input_tokens.saturating_add(usage.output_tokens)).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::{ToolResultBlock, ToolUseBlock};
    use serde_json::json;

    #[test]
    fn messages_count_every_block_and_the_overhead() {
        let counter = EstimatedTokens::new();
        let msg = Msg::builder()
            .role(Role::Assistant)
            .block(ContentBlock::thinking("abcdefgh")) // 2
            .text("abcd") // 1
            // 3 of framing, "search" 2, `{"q":"rust"}` (12 characters) 3
            .block(ToolUseBlock::new("c1", "search", json!({"q": "rust"})))
            .build();
        assert_eq!(counter.count_message(&msg), 4 + 2 + 1 + 3 + 2 + 3);
        let result = Msg::tool_result(ToolResultBlock::text("c1", "search", "x".repeat(40)));
        assert_eq!(counter.count_message(&result), 4 + 3 + 2 + 10);
        let mut raw = ToolUseBlock::new("c2", "calc", json!(null));
        raw.raw_input = Some("{not json".into());
        assert_eq!(count_blocks(&counter, &[raw.into()]), 3 + 1 + 3);
    }

    #[test]
    fn estimates_count_characters_not_bytes() {
        assert_eq!(EstimatedTokens::new().count_text("éééé"), 1);
        assert_eq!(EstimatedTokens::new().count_text("ééééé"), 2);
    }

    #[test]
    fn usage_needs_an_assistant_message_with_both_numbers() {
        let mut msg = Msg::user("x");
        msg.metadata.insert(
            "usage".into(),
            json!({"input_tokens": 5, "output_tokens": 1}),
        );
        assert_eq!(reported_usage(&msg), None);
        let mut msg = Msg::assistant("x");
        msg.metadata
            .insert("usage".into(), json!({"input_tokens": 5}));
        assert_eq!(reported_usage(&msg), None);
        msg.metadata.insert(
            "usage".into(),
            json!({"input_tokens": 0, "output_tokens": 0}),
        );
        assert_eq!(reported_usage(&msg), None);
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn tiktoken_counts_known_strings() {
        let o200k = TiktokenCounter::new(Encoding::O200kBase);
        let cl100k = TiktokenCounter::new(Encoding::Cl100kBase);
        assert_eq!(o200k.count_text(""), 0);
        assert_eq!(cl100k.count_text("hello world"), 2);
        assert_eq!(o200k.count_text("hello world"), 2);
        // Long runs of whitespace and repeated characters do not break the tokenizer.
        assert!(o200k.count_text(&" ".repeat(100_000)) > 0);
        assert!(o200k.count_text(&"a".repeat(100_000)) > 0);
    }
}
