//! Errors of building agents and toolkits.

/// A toolkit could not accept a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolkitError {
    /// Two tools have the same name.
    #[error("duplicate tool name '{name}'")]
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// A tool's name is empty.
    #[error("a tool has an empty name")]
    EmptyName,
    /// A tool's parameters are not a valid JSON schema for an arguments object.
    #[error("tool '{tool}' has an invalid parameter schema: {message}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What is wrong.
        message: String,
    },
}

/// [`ReActAgentBuilder::build`](crate::ReActAgentBuilder::build) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No model was given.
    #[error("a model is required: call .model(...) on the builder")]
    MissingModel,
    /// The toolkit rejected a tool.
    #[error("invalid toolkit: {0}")]
    Toolkit(#[from] ToolkitError),
    /// A setting is out of range.
    #[error("invalid agent configuration: {message}")]
    InvalidConfig {
        /// What is wrong.
        message: String,
    },
}
