//! [`McpError`]: everything that can go wrong between the client and an MCP server.

use agentscope_core::ToolError;

/// Something went wrong between an [`McpClient`](crate::McpClient) and its server.
///
/// Messages name the server and never hold a configured secret (header values, the bearer
/// token, environment values, a URL's query string or password): they are scrubbed before
/// the error is made.
///
/// A tool call that fails this way reaches the model as an error result
/// (`"Error: Tool execution failed: <message>"`), and the agent goes on.
///
/// ```
/// use agentscope_mcp::McpError;
///
/// let error = McpError::Disconnected {
///     server: "files".into(),
///     message: "the MCP server 'files' closed the connection".into(),
/// };
/// assert!(error.is_disconnected());
/// assert_eq!(error.server(), Some("files"));
/// assert_eq!(error.to_string(), "the MCP server 'files' closed the connection");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration cannot be used (reported by `connect`, the first problem met).
    #[error("invalid MCP server configuration: {message}")]
    InvalidConfig {
        /// What is wrong.
        message: String,
    },
    /// The server's process could not be started, or the connection could not be set up
    /// (HTTP error, handshake failure, time limit).
    #[error("{message}")]
    Connect {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The connection was lost (the process exited, the HTTP server went away) or could
    /// not be restored by the reconnect policy.
    #[error("{message}")]
    Disconnected {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The server answered a request with a JSON-RPC error (an unknown tool, invalid
    /// arguments, an internal error), or with something this client does not support.
    #[error("{message}")]
    Server {
        /// The server's name.
        server: String,
        /// The JSON-RPC error code, when the server sent one.
        code: Option<i32>,
        /// The server's message, prefixed with the server's name.
        message: String,
    },
    /// The client was closed with [`McpClient::close`](crate::McpClient::close).
    #[error("the MCP client for '{server}' was closed")]
    Closed {
        /// The server's name.
        server: String,
    },
}

impl McpError {
    /// The name of the server the error is about (`None` for a configuration error).
    pub fn server(&self) -> Option<&str> {
        match self {
            McpError::InvalidConfig { .. } => None,
            McpError::Connect { server, .. }
            | McpError::Disconnected { server, .. }
            | McpError::Server { server, .. }
            | McpError::Closed { server } => Some(server),
        }
    }

    /// Whether the connection was lost or could not be restored.
    pub fn is_disconnected(&self) -> bool {
        matches!(self, McpError::Disconnected { .. })
    }

    /// Whether connecting failed.
    pub fn is_connect(&self) -> bool {
        matches!(self, McpError::Connect { .. })
    }

    /// The error a tool call reports to the engine: a server's "invalid params" (JSON-RPC
    /// `-32602`) is an argument error (the model reads "Parameter validation failed"),
    /// everything else a tool failure.
    pub(crate) fn into_tool_error(self) -> ToolError {
        match self {
            McpError::Server {
                code: Some(INVALID_PARAMS),
                message,
                ..
            } => ToolError::invalid_arguments(message),
            other => ToolError::msg(other),
        }
    }
}

/// JSON-RPC's "invalid params" code.
pub(crate) const INVALID_PARAMS: i32 = -32602;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_params_become_argument_errors() {
        let error = McpError::Server {
            server: "s".into(),
            code: Some(INVALID_PARAMS),
            message: "the MCP server 's' rejected the arguments: a is required".into(),
        };
        assert!(matches!(
            error.into_tool_error(),
            ToolError::InvalidArguments { message }
                if message == "the MCP server 's' rejected the arguments: a is required"
        ));
        let other = McpError::Server {
            server: "s".into(),
            code: Some(-32603),
            message: "boom".into(),
        };
        assert!(matches!(
            other.into_tool_error(),
            ToolError::Failed { message, source: None } if message == "boom"
        ));
    }
}
