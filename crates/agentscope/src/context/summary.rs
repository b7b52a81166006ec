//! Summaries of the oldest turns: [`Summarizer`] (the model call and when it happens) and
//! [`SummaryRecord`] (what a summary covers, kept so it is made once).

use std::fmt;

use agentscope_core::{
    BoxedModel, ChatAccumulator, ContentBlock, GenerateOptions, Model, ModelError, ModelRequest,
    Msg, Role, SharedString,
};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

/// The instructions the summary model gets (see [`Summarizer::with_prompt`]).
pub const DEFAULT_SUMMARY_PROMPT: &str = "You compress conversations between a user and an AI \
assistant that uses tools, so that the assistant can continue the conversation from your \
summary instead of the messages. Write a concise summary of the conversation you are given \
(and of the earlier summary, when there is one): the user's goals and requests, decisions \
made, facts and figures learned (from tool results too), names, identifiers, files and URLs \
that may be needed again, and what is still open. Write it as notes for the assistant. Do \
not address the user, do not invent anything.";

/// The utilisation of the model's window at which the oldest turns are summarised: 85%.
pub const DEFAULT_SUMMARY_THRESHOLD: f32 = 0.85;

/// How many of the most recent messages a summary leaves verbatim by default.
pub const DEFAULT_KEEP_RECENT: usize = 10;

/// The name of the message that carries a summary in the model input.
pub const SUMMARY_MESSAGE_NAME: &str = "context_summary";

/// Summarises the oldest turns of a conversation through a model call, for a
/// [`ContextWindowHook`](super::ContextWindowHook): when the input reaches
/// [`threshold`](Self::with_threshold) of the model's window (85% by default), everything
/// before the most recent [`keep_recent`](Self::with_keep_recent) messages (10 by default)
/// is replaced by one summary message. The latest user turn is never summarised, and a tool
/// call is never summarised without its results.
///
/// The model gets [the prompt](DEFAULT_SUMMARY_PROMPT) as its system message and a plain-text
/// transcript of the messages as a user message (tool calls as `name(arguments)`, each tool
/// result cut to [`result_chars`](Self::with_result_chars) characters), with the earlier
/// summary when there is one, so summaries roll forward. A transcript longer than
/// [`chunk_chars`](Self::with_chunk_chars) is summarised in parts, each part's summary
/// feeding the next. Any [`Model`] does: often a smaller, cheaper one than the agent's.
///
/// ```
/// use agentscope::context::Summarizer;
/// use agentscope::Msg;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// # futures::executor::block_on(async {
/// let model = ScriptedModel::new([ScriptedResponse::text("The user asked about Paris.")]);
/// let summarizer = Summarizer::new(model.clone()).with_threshold(0.8).with_keep_recent(4);
/// assert_eq!((summarizer.threshold(), summarizer.keep_recent()), (0.8, 4));
///
/// let summary = summarizer
///     .summarize(None, &[Msg::user("Tell me about Paris."), Msg::assistant("It is in France.")])
///     .await?;
/// assert_eq!(summary, "The user asked about Paris.");
/// let request = &model.requests()[0];
/// assert_eq!(request.messages[1].text(), "Conversation:\nuser: Tell me about Paris.\nassistant: It is in France.");
/// # Ok::<(), agentscope::ModelError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Summarizer {
    model: BoxedModel,
    prompt: SharedString,
    threshold: f32,
    keep_recent: usize,
    chunk_chars: usize,
    result_chars: usize,
    options: GenerateOptions,
}

impl Summarizer {
    /// Summarises with `model`, with the defaults: threshold 85%, the 10 most recent messages
    /// kept, transcripts summarised in parts of 100,000 characters, tool results cut to 2,000
    /// characters in them.
    pub fn new(model: impl Model) -> Self {
        Self {
            model: BoxedModel::new(model),
            prompt: SharedString::from_static(DEFAULT_SUMMARY_PROMPT),
            threshold: DEFAULT_SUMMARY_THRESHOLD,
            keep_recent: DEFAULT_KEEP_RECENT,
            chunk_chars: 100_000,
            result_chars: 2_000,
            options: GenerateOptions::default(),
        }
    }

    /// Summarises when the input reaches this fraction of the model's window (clamped to
    /// 0.05..=1.0; a value that is not a number keeps the default).
    #[must_use]
    pub fn with_threshold(mut self, fraction: f32) -> Self {
        if !fraction.is_nan() {
            self.threshold = fraction.clamp(0.05, 1.0);
        }
        self
    }

    /// Keeps the `messages` most recent messages verbatim (fewer when a tool call and its
    /// results would be split: the cut moves earlier).
    #[must_use]
    pub fn with_keep_recent(mut self, messages: usize) -> Self {
        self.keep_recent = messages;
        self
    }

    /// The summary model's instructions.
    #[must_use]
    pub fn with_prompt(mut self, prompt: impl Into<SharedString>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// Summarises transcripts longer than `chars` characters in parts (at least 1,000).
    #[must_use]
    pub fn with_chunk_chars(mut self, chars: usize) -> Self {
        self.chunk_chars = chars.max(1_000);
        self
    }

    /// Cuts each tool result to `chars` characters in the transcript.
    #[must_use]
    pub fn with_result_chars(mut self, chars: usize) -> Self {
        self.result_chars = chars;
        self
    }

    /// The generation options of the summary call (default: the model's defaults).
    #[must_use]
    pub fn with_options(mut self, options: GenerateOptions) -> Self {
        self.options = options;
        self
    }

    /// The threshold, as a fraction of the window.
    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    /// How many recent messages stay verbatim.
    pub fn keep_recent(&self) -> usize {
        self.keep_recent
    }

    /// The summary model.
    pub fn model(&self) -> &BoxedModel {
        &self.model
    }

    /// Summarises `messages`, continuing the `previous` summary when there is one.
    ///
    /// # Errors
    ///
    /// The model's error, or [`ModelError::Other`] when it answered with no text.
    pub async fn summarize(
        &self,
        previous: Option<&str>,
        messages: &[Msg],
    ) -> Result<String, ModelError> {
        let mut summary = previous.map(str::to_owned);
        for part in self.transcript_parts(messages) {
            summary = Some(self.summarize_part(summary.as_deref(), &part).await?);
        }
        summary.ok_or_else(|| ModelError::msg("there was nothing to summarise"))
    }

    async fn summarize_part(
        &self,
        previous: Option<&str>,
        transcript: &str,
    ) -> Result<String, ModelError> {
        let content = match previous {
            Some(previous) => {
                format!(
                    "Summary of the conversation before:\n{previous}\n\nConversation:\n{transcript}"
                )
            }
            None => format!("Conversation:\n{transcript}"),
        };
        let request = ModelRequest::new(
            vec![Msg::system(self.prompt.clone()), Msg::user(content)],
            Default::default(),
            self.options.clone(),
        );
        let mut stream = self.model.stream(request).await?;
        let mut accumulator = ChatAccumulator::new("summarizer");
        while let Some(chunk) = stream.next().await {
            accumulator.push_owned(chunk?);
        }
        let text = accumulator.finish().text();
        let text = text.trim();
        if text.is_empty() {
            return Err(ModelError::msg("the summary model answered with no text"));
        }
        Ok(text.to_owned())
    }

    /// The transcript of `messages`, in parts of at most `chunk_chars` characters (a longer
    /// message is a part of its own).
    fn transcript_parts(&self, messages: &[Msg]) -> Vec<String> {
        let mut parts = Vec::new();
        let mut part = String::new();
        for message in messages {
            let line = self.render(message);
            if line.is_empty() {
                continue;
            }
            if !part.is_empty() && part.len() + line.len() + 1 > self.chunk_chars {
                parts.push(std::mem::take(&mut part));
            }
            if !part.is_empty() {
                part.push('\n');
            }
            part.push_str(&line);
        }
        if !part.is_empty() {
            parts.push(part);
        }
        parts
    }

    /// One message as transcript lines.
    fn render(&self, message: &Msg) -> String {
        let speaker = match message.role {
            Role::User if message.name == SUMMARY_MESSAGE_NAME => "earlier summary",
            role => role.as_str(),
        };
        let mut lines: Vec<String> = Vec::new();
        for block in message.content.iter() {
            match block {
                ContentBlock::Text(text) if !text.text.trim().is_empty() => {
                    lines.push(format!("{speaker}: {}", text.text));
                }
                ContentBlock::ToolUse(call) => {
                    let arguments = call
                        .raw_input
                        .clone()
                        .unwrap_or_else(|| call.input.to_string());
                    lines.push(format!("{speaker} called {}({arguments})", call.name));
                }
                ContentBlock::ToolResult(result) => {
                    let text = result.text_output();
                    let shown = cut(&text, self.result_chars);
                    let verb = if result.is_error {
                        "failed"
                    } else {
                        "returned"
                    };
                    let more = if shown.len() < text.len() {
                        " [...]"
                    } else {
                        ""
                    };
                    lines.push(format!("{} {verb}: {shown}{more}", result.name));
                }
                ContentBlock::Image(image) => {
                    lines.push(format!("{speaker}: [image {}]", image.url))
                }
                _ => {}
            }
        }
        lines.join("\n")
    }
}

/// The first `chars` characters of `text`.
fn cut(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

impl fmt::Debug for Summarizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Summarizer")
            .field("model", &self.model)
            .field("threshold", &self.threshold)
            .field("keep_recent", &self.keep_recent)
            .field("chunk_chars", &self.chunk_chars)
            .field("result_chars", &self.result_chars)
            .finish_non_exhaustive()
    }
}

/// What a summary covers and says, as the [`ContextWindowHook`](super::ContextWindowHook)
/// keeps it: the summary replaces the conversation's first [`messages`](Self::messages)
/// messages, through the one whose id is [`through`](Self::through), as long as the
/// conversation holds that message. It is kept in the session's
/// [`HookState`](crate::session::HookState) (in memory without a session), so it is made
/// once, not at every step, and a reloaded session sends the same input.
///
/// ```
/// use agentscope::context::SummaryRecord;
///
/// let record = SummaryRecord::new("msg-42", 40, "The user is planning a trip.");
/// assert_eq!(record.message_id(), "summary:msg-42");
/// assert_eq!(
///     serde_json::to_value(&record).unwrap(),
///     serde_json::json!({"through": "msg-42", "messages": 40, "text": "The user is planning a trip."})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SummaryRecord {
    /// The id of the last message the summary covers.
    pub through: String,
    /// How many messages (from the start of the conversation) it covers.
    pub messages: usize,
    /// The summary.
    pub text: String,
}

impl SummaryRecord {
    /// A summary of the first `messages` messages, through the message `through`.
    pub fn new(through: impl Into<String>, messages: usize, text: impl Into<String>) -> Self {
        Self {
            through: through.into(),
            messages,
            text: text.into(),
        }
    }

    /// The id of the message that carries the summary in the model input: `summary:` and
    /// the id of the last message covered (the same in every process, so a reloaded session
    /// sends the same input).
    pub fn message_id(&self) -> String {
        format!("summary:{}", self.through)
    }

    /// The message that replaces the covered messages: a user message named
    /// [`SUMMARY_MESSAGE_NAME`] with the id [`message_id`](Self::message_id) and the time
    /// `timestamp` (that of the last covered message).
    pub(crate) fn message(&self, timestamp: DateTime<Utc>) -> Msg {
        Msg::builder()
            .id(self.message_id())
            .role(Role::User)
            .name(SUMMARY_MESSAGE_NAME)
            .text(format!(
                "[Summary of the {} earlier messages of this conversation]\n{}",
                self.messages, self.text
            ))
            .timestamp(timestamp)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::{ToolResultBlock, ToolUseBlock};
    use agentscope_test::{ScriptedModel, ScriptedResponse};
    use serde_json::json;

    #[test]
    fn transcripts_show_calls_results_and_earlier_summaries() {
        let summarizer = Summarizer::new(ScriptedModel::new([])).with_result_chars(5);
        let call = Msg::builder()
            .role(Role::Assistant)
            .text("Let me look.")
            .block(ToolUseBlock::new("c1", "search", json!({"q": "x"})))
            .build();
        let result = Msg::tool_result(ToolResultBlock::text("c1", "search", "0123456789"));
        let failed = Msg::tool_result(ToolResultBlock::error("c2", "fetch", "boom"));
        let earlier = SummaryRecord::new("m", 3, "old").message(Utc::now());
        let parts = summarizer.transcript_parts(&[earlier, call, result, failed]);
        assert_eq!(
            parts,
            [
                "earlier summary: [Summary of the 3 earlier messages of this conversation]\nold\n\
              assistant: Let me look.\nassistant called search({\"q\":\"x\"})\n\
              search returned: 01234 [...]\nfetch failed: boom"
            ]
        );
    }

    #[test]
    fn long_transcripts_roll_forward_in_parts() {
        let model = ScriptedModel::new([
            ScriptedResponse::text("first"),
            ScriptedResponse::text(" second "),
        ]);
        let summarizer = Summarizer::new(model.clone()).with_chunk_chars(1_000);
        let messages = [Msg::user("a".repeat(700)), Msg::assistant("b".repeat(700))];
        let summary =
            futures::executor::block_on(summarizer.summarize(Some("zero"), &messages)).unwrap();
        assert_eq!(summary, "second");
        let requests = model.requests();
        assert_eq!(requests.len(), 2);
        assert!(
            requests[0].messages[1].text().starts_with(
                "Summary of the conversation before:\nzero\n\nConversation:\nuser: aaa"
            )
        );
        assert!(requests[1].messages[1].text().starts_with(
            "Summary of the conversation before:\nfirst\n\nConversation:\nassistant: bbb"
        ));
        assert_eq!(requests[0].messages[0].text(), DEFAULT_SUMMARY_PROMPT);
    }

    #[test]
    fn an_empty_answer_is_an_error() {
        let summarizer = Summarizer::new(ScriptedModel::new([ScriptedResponse::text("  ")]));
        let error =
            futures::executor::block_on(summarizer.summarize(None, &[Msg::user("x")])).unwrap_err();
        assert_eq!(error.to_string(), "the summary model answered with no text");
        assert_eq!(
            Summarizer::new(ScriptedModel::new([]))
                .with_threshold(7.0)
                .threshold(),
            1.0
        );
    }
}
