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
/// model reads it as JSON text (see [`into_tool_output`](Self::into_tool_output)).
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
    ///   JSON text, unless a text block already holds the same JSON (servers are asked to
    ///   send it both ways, and most do);
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
        if let Some(structured) = self.structured_content {
            let already_there = content.iter().any(|block| {
                block
                    .as_text()
                    .and_then(|text| serde_json::from_str::<Value>(text).ok())
                    .is_some_and(|value| value == structured)
            });
            if !already_there {
                content.push(ContentBlock::text(structured.to_string()));
            }
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
