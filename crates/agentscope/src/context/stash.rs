//! Large tool results: [`ToolResultLimit`] (when a result is cut to a preview),
//! [`ToolResultStash`] (where the full text stays) and [`RetrieveStashedTool`] (how the model
//! reads it back).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentscope_core::{
    ContentBlock, Msg, SharedString, Tool, ToolContext, ToolError, ToolOutput, ToolResultBlock,
};
use serde_json::{Value, json};

/// The name of the tool that reads stashed tool results ([`RetrieveStashedTool`]).
pub const RETRIEVE_STASHED_TOOL: &str = "retrieve_stashed";

/// How many characters one [`RetrieveStashedTool`] call returns when the model does not say.
pub const DEFAULT_PAGE_CHARS: usize = 8_000;

/// When a tool result is too large to send whole, and how much of it the model sees.
///
/// A result whose text is longer than `max_chars` characters is sent as its first
/// `preview_chars` characters followed by a note naming its stash id (the tool call's id) and
/// the [`RetrieveStashedTool`] that reads the rest; its other blocks (images) are kept.
/// Results of the retrieval tool itself are never cut (the model asked for that text, in
/// pages of at most [`DEFAULT_PAGE_CHARS`] by default).
///
/// ```
/// use agentscope::context::ToolResultLimit;
///
/// let limit = ToolResultLimit::default();
/// assert_eq!((limit.max_chars(), limit.preview_chars()), (8_000, 1_000));
/// let tight = ToolResultLimit::new(2_000, 5_000); // the preview is never above the limit
/// assert_eq!((tight.max_chars(), tight.preview_chars()), (2_000, 2_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolResultLimit {
    max_chars: usize,
    preview_chars: usize,
}

impl ToolResultLimit {
    /// Results longer than `max_chars` characters are cut to their first `preview_chars`
    /// (at most `max_chars`).
    pub const fn new(max_chars: usize, preview_chars: usize) -> Self {
        let preview_chars = if preview_chars > max_chars {
            max_chars
        } else {
            preview_chars
        };
        Self {
            max_chars,
            preview_chars,
        }
    }

    /// The longest result sent whole, in characters.
    pub const fn max_chars(&self) -> usize {
        self.max_chars
    }

    /// How many characters of a longer result the preview shows.
    pub const fn preview_chars(&self) -> usize {
        self.preview_chars
    }
}

impl Default for ToolResultLimit {
    /// 8,000 characters (about 2,000 tokens), previews of 1,000.
    fn default() -> Self {
        Self::new(8_000, 1_000)
    }
}

/// A tool result's full text, kept in a [`ToolResultStash`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StashedResult {
    /// The stash id: the id of the tool call the result answers.
    pub id: SharedString,
    /// The tool's name.
    pub tool: SharedString,
    /// The result's full text (its text blocks joined by `"\n"`), shared with the message.
    pub text: SharedString,
    /// How many characters `text` has.
    pub chars: usize,
}

/// The full text of the tool results a [`ContextWindowHook`](super::ContextWindowHook) cut
/// to a preview, by stash id (the tool call's id). A cheap `Clone` handle: the hook and its
/// [`RetrieveStashedTool`] share one.
///
/// # What survives a restart
///
/// The stash holds no text of its own: an entry shares the text of the tool result in the
/// agent's memory, which the hook never changes (it edits only what is sent to the model).
/// The hook fills the stash from the conversation at every call (PreCall, from the memory
/// of a resumed or reloaded session) and every model call (PreReasoning), so after a session
/// is loaded in another process the model can read every result it saw a preview of, and the
/// session state holds each text once, in its messages. Without a session the stash lives as
/// long as the process.
///
/// Use one stash (one hook) per agent, unless tool call ids are unique across agents (they
/// are with real providers): entries are keyed by call id.
///
/// ```
/// use agentscope::context::ToolResultStash;
///
/// let stash = ToolResultStash::new();
/// stash.insert("call_7", "fetch_page", "0123456789");
/// assert_eq!(stash.get("call_7").unwrap().chars, 10);
/// assert_eq!(stash.read("call_7", 2, 3).unwrap(), "234\n[Characters 2..5 of 10 of the stashed result \"call_7\". Call retrieve_stashed with {\"id\": \"call_7\", \"offset\": 5} to read on.]");
/// assert_eq!(stash.read("call_7", 5, 100).unwrap(), "56789\n[Characters 5..10 of 10 of the stashed result \"call_7\": the end.]");
/// assert!(stash.read("nope", 0, 10).is_err());
/// ```
#[derive(Clone, Default)]
pub struct ToolResultStash {
    entries: Arc<Mutex<HashMap<SharedString, Entry>>>,
}

#[derive(Clone)]
struct Entry {
    result: StashedResult,
    /// The preview made for this entry, and the limit it was made for.
    preview: Option<(ToolResultLimit, SharedString)>,
}

impl ToolResultStash {
    /// An empty stash.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stashes `text` as the result of call `id` of `tool` (replacing an entry with the same
    /// id).
    pub fn insert(
        &self,
        id: impl Into<SharedString>,
        tool: impl Into<SharedString>,
        text: impl Into<SharedString>,
    ) {
        let (id, text) = (id.into(), text.into());
        let result = StashedResult {
            id: id.clone(),
            tool: tool.into(),
            chars: char_count(&text),
            text,
        };
        self.lock().insert(
            id,
            Entry {
                result,
                preview: None,
            },
        );
    }

    /// The entry with stash id `id`.
    pub fn get(&self, id: &str) -> Option<StashedResult> {
        self.lock().get(id).map(|entry| entry.result.clone())
    }

    /// The stash ids, sorted.
    pub fn ids(&self) -> Vec<SharedString> {
        let mut ids: Vec<SharedString> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    /// How many results are stashed.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is stashed.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Characters `offset..offset + length` of the stashed result `id` (at most to its end),
    /// followed by a line saying which part this is and how to read on: what the retrieval
    /// tool returns.
    ///
    /// # Errors
    ///
    /// A message for the model when there is no such entry or `offset` is past its end.
    pub fn read(&self, id: &str, offset: usize, length: usize) -> Result<String, String> {
        let Some(result) = self.get(id) else {
            let ids = self.ids();
            let known: Vec<&str> = ids.iter().map(SharedString::as_str).collect();
            return Err(format!(
                "no stashed result with id \"{id}\" (stashed: [{}])",
                known.join(", ")
            ));
        };
        let total = result.chars;
        if offset >= total && total > 0 {
            return Err(format!(
                "offset {offset} is past the end of the stashed result \"{id}\" ({total} characters)"
            ));
        }
        let end = offset.saturating_add(length.max(1)).min(total);
        let text = result.text.as_str();
        let from = byte_at(text, offset);
        let to = byte_at(text, end);
        let slice = text.get(from..to).unwrap_or_default();
        let note = if end < total {
            format!(
                "[Characters {offset}..{end} of {total} of the stashed result \"{id}\". Call {RETRIEVE_STASHED_TOOL} with {{\"id\": \"{id}\", \"offset\": {end}}} to read on.]"
            )
        } else {
            format!(
                "[Characters {offset}..{end} of {total} of the stashed result \"{id}\": the end.]"
            )
        };
        Ok(format!("{slice}\n{note}"))
    }

    /// The tool that reads this stash, to register on the agent's toolkit.
    pub fn retrieve_tool(&self) -> RetrieveStashedTool {
        RetrieveStashedTool {
            stash: self.clone(),
        }
    }

    /// The preview of `result` if it is over `limit`, stashing its full text (or finding it
    /// stashed). `None` when it is sent whole.
    pub(crate) fn preview(
        &self,
        result: &ToolResultBlock,
        limit: ToolResultLimit,
    ) -> Option<(SharedString, usize)> {
        if result.name == RETRIEVE_STASHED_TOOL {
            return None;
        }
        let bytes: usize = result
            .output
            .iter()
            .filter_map(ContentBlock::as_text)
            .map(str::len)
            .sum();
        // A text has at most as many characters as bytes.
        if bytes <= limit.max_chars {
            return None;
        }
        let mut entries = self.lock();
        let fresh = entries
            .get(result.id.as_str())
            .is_none_or(|entry| entry.result.text.len() != joined_len(result));
        if fresh {
            let text = joined_text(result);
            let chars = char_count(&text);
            if chars <= limit.max_chars {
                return None;
            }
            entries.insert(
                result.id.clone(),
                Entry {
                    result: StashedResult {
                        id: result.id.clone(),
                        tool: result.name.clone(),
                        text,
                        chars,
                    },
                    preview: None,
                },
            );
        }
        let entry = entries.get_mut(result.id.as_str())?;
        if entry.result.chars <= limit.max_chars {
            return None;
        }
        let total = entry.result.chars;
        match &entry.preview {
            Some((made_for, preview)) if *made_for == limit => Some((preview.clone(), total)),
            _ => {
                let preview = make_preview(&entry.result, limit.preview_chars);
                entry.preview = Some((limit, preview.clone()));
                Some((preview, total))
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SharedString, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for ToolResultStash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolResultStash")
            .field("ids", &self.ids())
            .finish()
    }
}

/// A tool result [`truncate_message`] cut: its call id, its tool, its length in characters.
pub(crate) type CutResult = (SharedString, SharedString, usize);

/// What a result's tool message looks like with each over-limit result cut to its preview:
/// `None` when nothing is over the limit. Returns the message and the results cut.
pub(crate) fn truncate_message(
    message: &Msg,
    stash: &ToolResultStash,
    limit: ToolResultLimit,
) -> Option<(Msg, Vec<CutResult>)> {
    if !message.has_tool_results() {
        return None;
    }
    let mut cut = Vec::new();
    let mut blocks: Vec<ContentBlock> = Vec::with_capacity(message.content.len());
    for block in message.content.iter() {
        match block {
            ContentBlock::ToolResult(result) => match stash.preview(result, limit) {
                Some((preview, chars)) => {
                    cut.push((result.id.clone(), result.name.clone(), chars));
                    let mut output = vec![ContentBlock::text(preview)];
                    output.extend(
                        result
                            .output
                            .iter()
                            .filter(|block| block.as_text().is_none())
                            .cloned(),
                    );
                    blocks.push(ContentBlock::ToolResult(ToolResultBlock {
                        output,
                        ..result.clone()
                    }));
                }
                None => blocks.push(block.clone()),
            },
            other => blocks.push(other.clone()),
        }
    }
    if cut.is_empty() {
        return None;
    }
    let mut message = message.clone();
    message.content = blocks.into();
    Some((message, cut))
}

/// Stashes every over-limit result of `messages` that is not stashed yet.
pub(crate) fn stash_all(messages: &[Msg], stash: &ToolResultStash, limit: ToolResultLimit) {
    for message in messages.iter().filter(|message| message.has_tool_results()) {
        for result in message.tool_results() {
            let _ = stash.preview(result, limit);
        }
    }
}

fn make_preview(result: &StashedResult, preview_chars: usize) -> SharedString {
    let text = result.text.as_str();
    let head = text.get(..byte_at(text, preview_chars)).unwrap_or_default();
    let id = &result.id;
    format!(
        "{head}\n[Truncated: the first {preview_chars} of {total} characters are shown. The full result is stashed as \"{id}\": call {RETRIEVE_STASHED_TOOL} with {{\"id\": \"{id}\", \"offset\": {preview_chars}}} to read on.]",
        total = result.chars,
    )
    .into()
}

/// The result's text blocks joined by `"\n"`; a single block is shared, not copied.
fn joined_text(result: &ToolResultBlock) -> SharedString {
    let mut texts = result.output.iter().filter_map(|block| match block {
        ContentBlock::Text(text) => Some(&text.text),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (Some(only), None) => only.clone(),
        _ => result.text_output().into(),
    }
}

/// The length in bytes of [`joined_text`], without joining.
fn joined_len(result: &ToolResultBlock) -> usize {
    let (count, bytes) = result
        .output
        .iter()
        .filter_map(ContentBlock::as_text)
        .fold((0, 0), |(count, bytes), text| {
            (count + 1, bytes + text.len())
        });
    bytes + usize::saturating_sub(count, 1)
}

fn char_count(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// The byte offset of character `chars` of `text` (its length when shorter).
fn byte_at(text: &str, chars: usize) -> usize {
    if text.is_ascii() {
        return chars.min(text.len());
    }
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(at, _)| at)
}

/// The `retrieve_stashed` tool: reads a tool result that a
/// [`ContextWindowHook`](super::ContextWindowHook) cut to a preview. Arguments `{"id":
/// string, "offset": integer (default 0), "length": integer (default 8,000)}`, in characters;
/// the result is that part of the text and a line saying how to read on. An unknown id or an
/// offset past the end is an error result. Make one with
/// [`ContextWindowHook::retrieve_tool`](super::ContextWindowHook::retrieve_tool) (or
/// [`ToolResultStash::retrieve_tool`]) and register it on the agent's toolkit.
///
/// ```
/// use agentscope::context::ToolResultStash;
/// use agentscope::{Tool, ToolContext, ToolOutput, ToolUseBlock};
/// use serde_json::json;
///
/// let stash = ToolResultStash::new();
/// stash.insert("c1", "fetch", "hello world");
/// let tool = stash.retrieve_tool();
/// let args = json!({"id": "c1", "offset": 6});
/// let ctx = ToolContext::new(ToolUseBlock::new("c2", "retrieve_stashed", args.clone()));
/// let output = futures::executor::block_on(tool.call(args, ctx)).unwrap();
/// assert_eq!(
///     output,
///     ToolOutput::text("world\n[Characters 6..11 of 11 of the stashed result \"c1\": the end.]")
/// );
/// ```
#[derive(Debug, Clone)]
pub struct RetrieveStashedTool {
    stash: ToolResultStash,
}

impl Tool for RetrieveStashedTool {
    fn name(&self) -> &str {
        RETRIEVE_STASHED_TOOL
    }

    fn description(&self) -> &str {
        "Reads a tool result that was too long to show whole. Its preview names the stash id \
         and the offset to continue from; each call returns up to `length` characters from \
         `offset`."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The stash id named in the preview."},
                "offset": {
                    "type": "integer", "minimum": 0,
                    "description": "The first character to read (default 0)."
                },
                "length": {
                    "type": "integer", "minimum": 1,
                    "description": format!("How many characters to read (default {DEFAULT_PAGE_CHARS}).")
                }
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let id = input["id"].as_str().unwrap_or_default();
        let number = |key: &str, default: usize| {
            input[key]
                .as_u64()
                .map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        let offset = number("offset", 0);
        let length = number("length", DEFAULT_PAGE_CHARS);
        self.stash
            .read(id, offset, length)
            .map(ToolOutput::text)
            .map_err(ToolError::msg)
    }

    fn in_doubt(&self) -> Option<agentscope_core::InDoubt> {
        // A read of the stash: running it again changes nothing.
        Some(agentscope_core::InDoubt::RunAgain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_made_once_and_name_the_stash() {
        let stash = ToolResultStash::new();
        let limit = ToolResultLimit::new(10, 4);
        let small = ToolResultBlock::text("c0", "t", "0123456789");
        assert_eq!(stash.preview(&small, limit), None);
        let big = ToolResultBlock::text("c1", "t", "0123456789A");
        let (preview, chars) = stash.preview(&big, limit).unwrap();
        assert_eq!(chars, 11);
        assert_eq!(
            preview,
            "0123\n[Truncated: the first 4 of 11 characters are shown. The full result is stashed as \"c1\": call retrieve_stashed with {\"id\": \"c1\", \"offset\": 4} to read on.]"
        );
        assert_eq!(stash.ids(), ["c1"]);
        let again = stash.preview(&big, limit).unwrap().0;
        assert!(std::ptr::eq(again.as_str(), preview.as_str()));
        // Multi-byte text is cut at characters, never inside one.
        let wide = ToolResultBlock::text("c2", "t", "ééééééééééé");
        let (preview, chars) = stash.preview(&wide, limit).unwrap();
        assert_eq!(chars, 11);
        assert!(preview.starts_with("éééé\n"));
        assert_eq!(
            stash.read("c2", 9, 5).unwrap().split('\n').next(),
            Some("éé")
        );
    }

    #[test]
    fn retrieval_results_and_multi_block_results() {
        let stash = ToolResultStash::new();
        let limit = ToolResultLimit::new(5, 2);
        let own = ToolResultBlock::text("r1", RETRIEVE_STASHED_TOOL, "0123456789");
        assert_eq!(stash.preview(&own, limit), None);
        let two = ToolResultBlock {
            output: vec![ContentBlock::text("abc"), ContentBlock::text("def")],
            ..ToolResultBlock::text("c1", "t", "")
        };
        let (_, chars) = stash.preview(&two, limit).unwrap();
        assert_eq!(chars, 7);
        assert_eq!(stash.get("c1").unwrap().text, "abc\ndef");
        let msg = Msg::tool_result(two);
        let (cut, info) = truncate_message(&msg, &stash, limit).unwrap();
        assert_eq!(info, [("c1".into(), "t".into(), 7)]);
        assert_eq!(cut.id, msg.id);
        assert!(
            cut.tool_results()[0]
                .text_output()
                .starts_with("ab\n[Truncated")
        );
        assert!(truncate_message(&Msg::user("x"), &stash, limit).is_none());
    }

    #[test]
    fn reading_past_the_end_fails() {
        let stash = ToolResultStash::new();
        stash.insert("c1", "t", "abc");
        assert_eq!(
            stash.read("c1", 3, 1).unwrap_err(),
            "offset 3 is past the end of the stashed result \"c1\" (3 characters)"
        );
        assert_eq!(
            stash.read("zz", 0, 1).unwrap_err(),
            "no stashed result with id \"zz\" (stashed: [c1])"
        );
    }
}
