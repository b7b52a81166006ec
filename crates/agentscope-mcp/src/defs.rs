//! [`ToolDef`]: a tool as an MCP server declared it, named as the model sees it.

use serde_json::Value;

/// A tool as the server declared it.
#[derive(Debug, PartialEq)]
pub(crate) struct ToolDef {
    /// The name the model sees: the prefix, then the server's name.
    pub(crate) name: String,
    /// The server's name for it.
    pub(crate) remote_name: String,
    pub(crate) description: String,
    pub(crate) parameters: Value,
}

impl ToolDef {
    pub(crate) fn from_mcp(prefix: &str, tool: rmcp::model::Tool) -> Self {
        Self {
            name: format!("{prefix}{}", tool.name),
            remote_name: tool.name.into_owned(),
            description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
            parameters: Value::Object((*tool.input_schema).clone()),
        }
    }
}
