//! [`McpTool`]: one tool of an MCP server as an agentscope [`Tool`].

use std::fmt;
use std::sync::Arc;

use agentscope::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{Map, Value};

use crate::client::{CallError, McpClient};

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

/// One tool of an MCP server, for a [`Toolkit`](agentscope::Toolkit); get them from
/// [`McpClient::tools`].
///
/// Its name is the server's (after the client's prefix), its description and parameter
/// schema are the server's, unchanged (a tool without a description has an empty one).
/// A call:
///
/// - sends `tools/call` with the arguments (the toolkit validated them against the
///   server's schema first; `null` is sent as `{}`);
/// - turns each progress notification into a progress chunk (`ctx.emit`, so an
///   `ActingChunk` event and a streamed tool-result chunk), in the server's order, with the
///   text `progress <progress>[/<total>][: <message>]`;
/// - on interruption of the agent call, sends `notifications/cancelled` (reason `"the
///   agent call was interrupted"`) and stops; when its future is dropped (a time limit, a
///   dropped call or stream) it sends it too (reason `"the tool call was abandoned by the
///   client"`);
/// - returns the result mapped as [`McpToolResult`](crate::McpToolResult) describes:
///   `isError` results and every failure become error results the model reads.
///
/// ```no_run
/// use agentscope_mcp::{McpClient, McpServerConfig};
/// use agentscope::Tool;
/// # async fn demo() -> Result<(), agentscope_mcp::McpError> {
/// let client = McpClient::connect(McpServerConfig::stdio("my-mcp-server").prefix("my_")).await?;
/// for tool in client.tools() {
///     println!("{} (the server's {}): {}", tool.name(), tool.remote_name(), tool.description());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpTool {
    client: McpClient,
    def: Arc<ToolDef>,
}

impl McpTool {
    pub(crate) fn new(client: McpClient, def: Arc<ToolDef>) -> Self {
        Self { client, def }
    }

    /// The server's own name for the tool (without the prefix).
    pub fn remote_name(&self) -> &str {
        &self.def.remote_name
    }

    /// The client the tool calls through.
    pub fn client(&self) -> &McpClient {
        &self.client
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.def.name
    }

    fn description(&self) -> &str {
        &self.def.description
    }

    fn parameters(&self) -> Value {
        self.def.parameters.clone()
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => {
                return Err(ToolError::invalid_arguments(
                    "the arguments must be a JSON object",
                ));
            }
        };
        match self
            .client
            .call_with_context(&self.def.remote_name, arguments, &ctx)
            .await
        {
            Ok(result) => result.into_tool_output(),
            Err(CallError::Cancelled) => Err(ToolError::Cancelled),
            Err(CallError::Mcp(error)) => Err(error.into_tool_error()),
        }
    }
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.def.name)
            .field("remote_name", &self.def.remote_name)
            .field("server", &self.client.name())
            .finish()
    }
}
