//! [`McpTool`]: one tool of an MCP server as an agentscope [`Tool`].

use std::fmt;
use std::sync::Arc;

use agentscope_core::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{Map, Value};

use agentscope_core::{BoxedTool, ToolSource};

use crate::client::{CallError, McpClient};
use crate::defs::ToolDef;

/// One tool of an MCP server, for an agent's toolkit; get them from
/// [`McpClient::tools`].
///
/// Its name is the server's (after the client's prefix), its description and parameter
/// schema are the server's, unchanged (a tool without a description has an empty one).
/// A call:
///
/// - sends `tools/call` with the arguments (the toolkit validated them against the
///   server's schema first; `null` is sent as `{}`), and in its `params._meta` the call's
///   [idempotency key](crate::IDEMPOTENCY_KEY_META) and, when an OpenTelemetry propagator is
///   installed (`agentscope-otel` does it), the W3C trace context of the tool's
///   `execute_tool` span (`traceparent`, `tracestate`), as OpenTelemetry's MCP conventions
///   say, so the server's spans join the agent's trace;
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

/// The server's tools as agentscope tools.
impl McpClient {
    /// The server's tools, as last listed.
    pub fn tools(&self) -> Vec<McpTool> {
        self.defs()
            .iter()
            .map(|def| McpTool::new(self.clone(), Arc::clone(def)))
            .collect()
    }
}

/// The server's tools as a live source for a toolkit (`Toolkit::source`): each agent call starts with the
/// tools as last listed; the generation is [`tools_generation`](McpClient::tools_generation).
///
/// ```no_run
/// use agentscope::prelude::*;
/// use agentscope_mcp::{McpClient, McpServerConfig};
/// # async fn demo(model: impl Model) -> Result<(), Box<dyn std::error::Error>> {
/// let client = McpClient::connect(McpServerConfig::stdio("my-server").prefix("my_")).await?;
/// let agent = ReActAgent::builder()
///     .model(model)
///     .toolkit(Toolkit::new().source(client.clone()))
///     .build()?;
/// # let _ = agent;
/// # Ok(())
/// # }
/// ```
impl ToolSource for McpClient {
    fn name(&self) -> &str {
        McpClient::name(self)
    }

    fn generation(&self) -> u64 {
        self.tools_generation()
    }

    fn tools(&self) -> Vec<BoxedTool> {
        self.defs()
            .iter()
            .map(|def| BoxedTool::new(McpTool::new(self.clone(), Arc::clone(def))))
            .collect()
    }
}
