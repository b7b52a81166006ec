//! MCP results and progress in our terms: [`McpToolResult`], the content-block mapping and
//! the text of a progress chunk.

use agentscope_core::{ContentBlock, ToolError, ToolOutput};
use rmcp::model::{self, ProgressNotificationParam, ResourceContents};
use serde_json::Value;

/// The result of one MCP tool call, mapped to agentscope's content blocks.
///
/// | MCP content | becomes |
/// |---|---|
/// | `text` | a text block |
/// | `image` | an image block with a `data:<mime>;base64,...` URL |
/// | `resource` holding text | a text block: `[resource: <uri>]`, a newline, the text |
/// | `resource` holding an `image/*` blob | an image block with a `data:` URL |
/// | `resource` holding another blob | a text block: `[binary resource omitted: <uri> (<mime>)]` |
/// | `audio` | a text block: `[audio omitted: <mime>]` |
/// | `resource_link` | a text block: `[resource link: <name> <<uri>> (<mime>): <description>]` (the parts the server gave) |
///
/// Structured content is kept in [`structured_content`](Self::structured_content); the
/// model reads it as JSON text when it adds something to the content blocks (see
/// [`into_tool_output`](Self::into_tool_output)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpToolResult {
    /// The result's content blocks, mapped.
    pub content: Vec<ContentBlock>,
    /// The result's `structuredContent`, as the server sent it.
    pub structured_content: Option<Value>,
    /// The result's `isError`: the tool ran and reports a failure.
    pub is_error: bool,
}

impl McpToolResult {
    pub(crate) fn from_mcp(result: model::CallToolResult) -> Self {
        Self {
            content: result.content.into_iter().map(map_content).collect(),
            structured_content: result.structured_content,
            is_error: result.is_error.unwrap_or(false),
        }
    }

    /// What the model reads, as a tool's outcome:
    ///
    /// - a successful result: its content blocks, then the structured content as compact
    ///   JSON text, unless it only repeats the blocks (servers are asked to send a result
    ///   both ways, and most do). It only repeats them when
    ///   - a text block holds the same JSON value (whatever its spacing), or
    ///   - it is an object with a single field (any name) whose value is the text of one
    ///     of the text blocks, or a list of MCP content blocks that maps to exactly the
    ///     content blocks: what `@modelcontextprotocol/server-filesystem` sends
    ///     (`{"content": "<the file's text>"}` next to the text,
    ///     `{"content": [<the image block>]}` next to the image);
    /// - an error result (`isError`): a [`ToolError`] whose message is the text of its
    ///   blocks joined by newlines, so the model reads `"Error: Tool execution failed:
    ///   <the server's text>"`.
    ///
    /// ```
    /// use agentscope::{ContentBlock, ToolOutput};
    /// use agentscope_mcp::McpToolResult;
    /// use serde_json::json;
    ///
    /// let result = McpToolResult::new(vec![ContentBlock::text("sunny")], Some(json!({"t": 21})), false);
    /// assert_eq!(
    ///     result.into_tool_output().unwrap(),
    ///     ToolOutput::Content(vec![ContentBlock::text("sunny"), ContentBlock::text(r#"{"t":21}"#)])
    /// );
    /// // The same text once more adds nothing: the model reads it once.
    /// let file = McpToolResult::new(vec![ContentBlock::text("hello")], Some(json!({"content": "hello"})), false);
    /// assert_eq!(file.into_tool_output().unwrap(), ToolOutput::Content(vec![ContentBlock::text("hello")]));
    /// ```
    pub fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        if self.is_error {
            let text = self
                .content
                .iter()
                .map(block_text)
                .collect::<Vec<_>>()
                .join("\n");
            let text = if text.trim().is_empty() {
                "the tool reported an error without a message".to_owned()
            } else {
                text
            };
            return Err(ToolError::msg(text));
        }
        let mut content = self.content;
        if let Some(structured) = self.structured_content
            && !only_repeats(&structured, &content)
        {
            content.push(ContentBlock::text(structured.to_string()));
        }
        Ok(ToolOutput::Content(content))
    }

    /// A result made of parts (for tests of code that consumes results).
    pub fn new(
        content: Vec<ContentBlock>,
        structured_content: Option<Value>,
        is_error: bool,
    ) -> Self {
        Self {
            content,
            structured_content,
            is_error,
        }
    }
}

/// Whether `structured` content only repeats `content` (the rules on
/// [`McpToolResult::into_tool_output`]).
fn only_repeats(structured: &Value, content: &[ContentBlock]) -> bool {
    let texts = || content.iter().filter_map(ContentBlock::as_text);
    if texts()
        .any(|text| serde_json::from_str::<Value>(text).is_ok_and(|value| value == *structured))
    {
        return true;
    }
    let Some(fields) = structured.as_object() else {
        return false;
    };
    let mut values = fields.values();
    let (Some(single), None) = (values.next(), values.next()) else {
        return false;
    };
    match single {
        Value::String(wrapped) => texts().any(|text| text == wrapped),
        Value::Array(blocks) if blocks.len() == content.len() => {
            serde_json::from_value::<Vec<model::ContentBlock>>(single.clone()).is_ok_and(|blocks| {
                blocks
                    .into_iter()
                    .map(map_content)
                    .eq(content.iter().cloned())
            })
        }
        _ => false,
    }
}

/// The text of a block, for an error message (images are named, not shown).
fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.to_string(),
        ContentBlock::Image(_) => "[image]".to_owned(),
        _ => String::new(),
    }
}

fn data_url(mime_type: &str, base64: &str) -> String {
    format!("data:{mime_type};base64,{base64}")
}

fn image(url: String) -> ContentBlock {
    ContentBlock::Image(agentscope_core::ImageBlock { url })
}

/// One MCP content block as ours (see the table on [`McpToolResult`]).
pub(crate) fn map_content(block: model::ContentBlock) -> ContentBlock {
    match block {
        model::ContentBlock::Text(text) => ContentBlock::text(text.text),
        model::ContentBlock::Image(img) => image(data_url(&img.mime_type, &img.data)),
        model::ContentBlock::Audio(audio) => {
            ContentBlock::text(format!("[audio omitted: {}]", audio.mime_type))
        }
        model::ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                ContentBlock::text(format!("[resource: {uri}]\n{text}"))
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => match mime_type {
                Some(mime) if mime.starts_with("image/") => image(data_url(&mime, &blob)),
                Some(mime) => {
                    ContentBlock::text(format!("[binary resource omitted: {uri} ({mime})]"))
                }
                None => ContentBlock::text(format!("[binary resource omitted: {uri}]")),
            },
            _ => ContentBlock::text("[unsupported MCP content omitted]"),
        },
        model::ContentBlock::ResourceLink(link) => {
            let mut text = format!("[resource link: {} <{}>", link.name, link.uri);
            if let Some(mime) = &link.mime_type {
                text.push_str(&format!(" ({mime})"));
            }
            if let Some(description) = &link.description {
                text.push_str(&format!(": {description}"));
            }
            text.push(']');
            ContentBlock::text(text)
        }
        _ => ContentBlock::text("[unsupported MCP content omitted]"),
    }
}

/// The text of the progress chunk for one MCP progress notification: `progress 2/5`,
/// `progress 2/5: <message>`, `progress 2` (no total), `progress 2: <message>`. Whole
/// numbers are written without a fraction.
pub(crate) fn progress_text(progress: &ProgressNotificationParam) -> String {
    let mut text = format!("progress {}", number(progress.progress));
    if let Some(total) = progress.total {
        text.push_str(&format!("/{}", number(total)));
    }
    if let Some(message) = &progress.message {
        text.push_str(&format!(": {message}"));
    }
    text
}

fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{NumberOrString, ProgressToken};
    use serde_json::json;

    fn progress(value: f64, total: Option<f64>, message: Option<&str>) -> String {
        let mut param =
            ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(1)), value);
        param.total = total;
        param.message = message.map(str::to_owned);
        progress_text(&param)
    }

    #[test]
    fn progress_texts() {
        assert_eq!(progress(2.0, Some(5.0), None), "progress 2/5");
        assert_eq!(
            progress(2.0, Some(5.0), Some("copying")),
            "progress 2/5: copying"
        );
        assert_eq!(progress(0.5, None, None), "progress 0.5");
        assert_eq!(progress(3.0, None, Some("x")), "progress 3: x");
    }

    #[test]
    fn structured_content_is_added_once() {
        let json = serde_json::json!({"a": 1});
        let with_text = McpToolResult::new(
            vec![ContentBlock::text("{ \"a\": 1 }")],
            Some(json.clone()),
            false,
        );
        assert_eq!(
            with_text.into_tool_output().ok(),
            Some(ToolOutput::Content(vec![ContentBlock::text(
                "{ \"a\": 1 }"
            )]))
        );
        let bare = McpToolResult::new(Vec::new(), Some(json), false);
        assert_eq!(
            bare.into_tool_output().ok(),
            Some(ToolOutput::Content(vec![ContentBlock::text(r#"{"a":1}"#)]))
        );
    }

    /// What the model reads of `content` and `structured`.
    fn read(content: Vec<ContentBlock>, structured: Value) -> Option<ToolOutput> {
        McpToolResult::new(content, Some(structured), false)
            .into_tool_output()
            .ok()
    }

    #[test]
    fn structured_content_that_only_repeats_the_blocks_is_left_out() {
        let text = || vec![ContentBlock::text("hello\nworld")];
        let image = || image("data:image/png;base64,iVBORw0KGgo=".to_owned());
        let only = |blocks: Vec<ContentBlock>| Some(ToolOutput::Content(blocks));
        let with = |mut blocks: Vec<ContentBlock>, json: &str| {
            blocks.push(ContentBlock::text(json));
            Some(ToolOutput::Content(blocks))
        };
        // server-filesystem's text: one field holding a text block's text (any name).
        assert_eq!(
            read(text(), json!({"content": "hello\nworld"})),
            only(text())
        );
        assert_eq!(read(text(), json!({"text": "hello\nworld"})), only(text()));
        // server-filesystem's image: one field holding the very blocks, as MCP sent them.
        let mirrored = json!({"content": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]});
        assert_eq!(read(vec![image()], mirrored.clone()), only(vec![image()]));
        // Anything more is sent: another field, another text, other or more blocks.
        assert_eq!(
            read(text(), json!({"content": "hello\nworld", "ok": true})),
            with(text(), r#"{"content":"hello\nworld","ok":true}"#)
        );
        assert_eq!(
            read(text(), json!({"content": "hello"})),
            with(text(), r#"{"content":"hello"}"#)
        );
        assert_eq!(
            read(vec![image()], json!({"content": "hello\nworld"})),
            with(vec![image()], r#"{"content":"hello\nworld"}"#)
        );
        let mut two = text();
        two.push(image());
        assert_eq!(
            read(two.clone(), mirrored.clone()),
            with(two, &mirrored.to_string())
        );
        let other =
            json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]});
        assert_eq!(
            read(vec![image()], other.clone()),
            with(vec![image()], &other.to_string())
        );
        assert_eq!(read(text(), json!({"n": 1})), with(text(), r#"{"n":1}"#));
        assert_eq!(read(text(), json!({})), with(text(), "{}"));
    }

    #[test]
    fn error_results_become_tool_errors() {
        let result = McpToolResult::new(
            vec![
                ContentBlock::text("no such file"),
                ContentBlock::text("try again"),
            ],
            None,
            true,
        );
        assert!(matches!(
            result.into_tool_output(),
            Err(ToolError::Failed { message, .. }) if message == "no such file\ntry again"
        ));
        let empty = McpToolResult::new(Vec::new(), None, true);
        assert!(matches!(
            empty.into_tool_output(),
            Err(ToolError::Failed { message, .. }) if message == "the tool reported an error without a message"
        ));
    }
}
