//! The tool seam: [`Tool`] (what the model can call), [`BoxedTool`], [`ToolKind`] and
//! [`ToolOutput`]; what a running tool gets ([`ToolContext`]: its call, progress, cancellation)
//! lives in `context.rs`, the progress channel in `progress.rs`, live tool lists
//! ([`ToolSource`]) in `source.rs`.

mod context;
mod in_doubt;
mod progress;
mod source;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

pub use context::ToolContext;
pub use in_doubt::InDoubt;
pub use progress::{ProgressReceiver, ProgressSender, ToolProgress, progress_channel};
pub use source::ToolSource;

use crate::block::ContentBlock;
use crate::error::ToolError;
use crate::model::ToolSchema;

/// Something the model can call.
///
/// `parameters` is the JSON schema of the arguments object; the engine validates arguments
/// against it before calling, so `call` only sees arguments that fit (invalid ones go back to
/// the model as an error result).
///
/// ```
/// use agentscope_core::{Tool, ToolContext, ToolError, ToolOutput};
/// use serde_json::{json, Value};
///
/// struct Clock;
///
/// impl Tool for Clock {
///     fn name(&self) -> &str { "clock" }
///     fn description(&self) -> &str { "Returns the current UTC time." }
///     fn parameters(&self) -> Value { json!({"type": "object", "properties": {}}) }
///
///     async fn call(&self, _input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text("2026-11-30T10:00:00Z"))
///     }
/// }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls the tool by (unique within a toolkit).
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments object (read once, at registration).
    fn parameters(&self) -> Value;

    /// Runs the tool. Emit progress and observe cancellation through `ctx`.
    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;

    /// How hooks should treat the tool's calls (read once, at registration); plain tools are
    /// [`ToolKind::Action`], the default. Hooks read it for a call's tool with
    /// [`CallInfo::tool_kind`](crate::CallInfo::tool_kind).
    fn kind(&self) -> ToolKind {
        ToolKind::Action
    }

    /// What a resumed session does with a call of this tool that is in doubt: it started,
    /// but its result was never stored (the process was killed, the call dropped mid-tool).
    /// Read once, at registration. `None` (the default) leaves it to the agent: what a hook
    /// chose at PreCall (the `ToolApprovalHook` stops for the calls it guards), else
    /// [`InDoubt::Tell`]. See [`InDoubt`]. A call whose result was stored never runs again.
    fn in_doubt(&self) -> Option<InDoubt> {
        None
    }
}

/// How hooks should treat a tool's calls: a mark the tool declares ([`Tool::kind`]), so
/// built-in hooks never need to know other built-ins' tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ToolKind {
    /// A tool that acts: its calls are subject to approval policies and the like.
    #[default]
    Action,
    /// A tool whose call carries the agent's answer and runs nothing of consequence (the
    /// `generate_response` tool of a structured-output call): approval hooks never hold it.
    Answer,
}

impl<T: Tool> Tool for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn parameters(&self) -> Value {
        (**self).parameters()
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        (**self).call(input, ctx)
    }

    fn kind(&self) -> ToolKind {
        (**self).kind()
    }

    fn in_doubt(&self) -> Option<InDoubt> {
        (**self).in_doubt()
    }
}

trait DynTool: Send + Sync + 'static {
    fn call_boxed(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;
}

impl<T: Tool> DynTool for T {
    fn call_boxed(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.call(input, ctx))
    }
}

/// A type-erased, cheaply clonable [`Tool`] with its schema read once.
#[derive(Clone)]
pub struct BoxedTool {
    tool: Arc<dyn DynTool>,
    schema: Arc<ToolSchema>,
    kind: ToolKind,
    in_doubt: Option<InDoubt>,
}

impl BoxedTool {
    /// Erases `tool`, reading its name, description and parameters once.
    pub fn new<T: Tool>(tool: T) -> Self {
        if let Some(boxed) = (&tool as &dyn std::any::Any).downcast_ref::<BoxedTool>() {
            return boxed.clone();
        }
        let schema = ToolSchema::new(tool.name(), tool.description(), tool.parameters());
        let kind = tool.kind();
        let in_doubt = tool.in_doubt();
        Self {
            tool: Arc::new(tool),
            schema: Arc::new(schema),
            kind,
            in_doubt,
        }
    }

    /// The tool's schema as the model sees it.
    pub fn schema(&self) -> &ToolSchema {
        &self.schema
    }
}

impl fmt::Debug for BoxedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BoxedTool").field(&self.schema.name).finish()
    }
}

impl Tool for BoxedTool {
    fn name(&self) -> &str {
        &self.schema.name
    }

    fn description(&self) -> &str {
        &self.schema.description
    }

    fn parameters(&self) -> Value {
        (*self.schema.parameters).clone()
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        self.tool.call_boxed(input, ctx)
    }

    fn kind(&self) -> ToolKind {
        self.kind
    }

    fn in_doubt(&self) -> Option<InDoubt> {
        self.in_doubt
    }
}

/// What a tool returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolOutput {
    /// The result content the model sees.
    Content(Vec<ContentBlock>),
    /// The tool handed the call to an external executor: the agent call returns with
    /// `GenerateReason::ToolSuspended` and the tool call stays pending until the caller
    /// resumes with its result.
    Suspended,
}

impl ToolOutput {
    /// A text result.
    pub fn text(text: impl Into<crate::SharedString>) -> Self {
        ToolOutput::Content(vec![ContentBlock::text(text)])
    }

    /// A result holding `value` as JSON text.
    pub fn json(value: &Value) -> Self {
        ToolOutput::text(value.to_string())
    }

    /// A suspended call (see [`ToolOutput::Suspended`]).
    pub fn suspended() -> Self {
        ToolOutput::Suspended
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput::text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        ToolOutput::text(text)
    }
}

impl From<Vec<ContentBlock>> for ToolOutput {
    fn from(blocks: Vec<ContentBlock>) -> Self {
        ToolOutput::Content(blocks)
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        match value {
            Value::String(text) => ToolOutput::text(text),
            other => ToolOutput::json(&other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::ToolUseBlock;
    use futures::StreamExt;
    use futures::executor::block_on;
    use serde_json::json;

    struct Upper;

    impl Tool for Upper {
        fn name(&self) -> &str {
            "upper"
        }
        fn description(&self) -> &str {
            "Uppercases text"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {"text": {"type": "string"}}})
        }
        async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
            ctx.emit("working").await;
            let text = input["text"].as_str().unwrap_or_default();
            Ok(ToolOutput::text(text.to_uppercase()))
        }
    }

    #[test]
    fn boxed_tool_reads_schema_once_and_calls() {
        let tool = BoxedTool::new(Upper);
        assert_eq!(tool.schema().name, "upper");
        let again = BoxedTool::new(tool.clone());
        assert!(Arc::ptr_eq(&tool.tool, &again.tool));
        let ctx = ToolContext::new(ToolUseBlock::new("c", "upper", json!({})));
        let out = block_on(tool.call(json!({"text": "hi"}), ctx)).unwrap();
        assert_eq!(out, ToolOutput::text("HI"));
    }

    #[test]
    fn progress_reaches_the_receiver_with_index() {
        let (tx, mut rx) = progress_channel(4);
        let ctx = ToolContext::new(ToolUseBlock::new("c", "upper", json!({})))
            .with_progress(tx.with_index(3));
        block_on(Upper.call(json!({"text": "x"}), ctx)).unwrap();
        let progress = block_on(rx.next()).unwrap();
        assert_eq!(progress.index, 3);
        assert_eq!(progress.chunk, ContentBlock::text("working"));
    }
}
