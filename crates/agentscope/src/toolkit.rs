//! [`Toolkit`]: the tools an agent may call, and the closure adapters [`tool_fn`] and
//! [`typed_tool_fn`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentscope_core::{
    BoxedTool, CancellationToken, InDoubt, Tool, ToolContext, ToolError, ToolOutput,
    ToolResultBlock, ToolSchema, ToolSource, ToolUseBlock,
};
use futures::FutureExt;
use serde_json::Value;

use crate::error::ToolkitError;

/// The tools an agent may call.
///
/// Each tool's parameter schema is compiled once, when it is added; every call's arguments
/// are validated against it before the tool runs. A toolkit that was given a bad tool
/// (duplicate name, invalid schema) remembers the first error, and the agent builder
/// returns it.
///
/// Tools of one batch run one after another by default; with [`parallel`](Self::parallel)
/// they run concurrently on the calling task (results stay in call order).
///
/// ```
/// use agentscope::{tool_fn, Toolkit, ToolOutput};
/// use serde_json::json;
///
/// let toolkit = Toolkit::new()
///     .tool(tool_fn(
///         "greet",
///         "Greets someone by name.",
///         json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
///         |input, _ctx| async move {
///             Ok(format!("Hello, {}!", input["name"].as_str().unwrap_or("you")))
///         },
///     ))
///     .parallel(true);
/// assert_eq!(toolkit.names(), ["greet"]);
/// ```
#[derive(Clone, Default)]
pub struct Toolkit {
    tools: Vec<Entry>,
    index: HashMap<String, usize>,
    /// Shared with the call contexts (`CallInfo::tool_schema`); rebuilt when a tool is added.
    schemas: Arc<[ToolSchema]>,
    parallel: bool,
    timeout: Option<Duration>,
    error: Option<ToolkitError>,
    /// Live tool sources, resolved at the start of each call (see [`source`](Self::source)).
    sources: Vec<Arc<dyn ToolSource>>,
    /// The last resolution of the sources; replaced (not shared) when the toolkit changes.
    resolved: Arc<Mutex<Option<Resolved>>>,
}

/// One resolution of a toolkit's sources: the generations it was made at, and the result.
struct Resolved {
    generations: Vec<u64>,
    outcome: Result<Arc<Toolkit>, String>,
}

#[derive(Clone)]
struct Entry {
    tool: BoxedTool,
    validator: Arc<jsonschema::Validator>,
    timeout: Option<Duration>,
}

/// How a tool call ended (before PostActing hooks).
#[derive(Debug, Clone)]
pub(crate) enum ToolRun {
    Done(ToolResultBlock),
    Suspended,
    /// The tool stopped because the call was interrupted (its result is not kept).
    Interrupted,
}

impl Toolkit {
    /// An empty toolkit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. An invalid tool is remembered as the toolkit's error (see
    /// [`error`](Self::error)), which the agent builder reports.
    #[must_use]
    pub fn tool(mut self, tool: impl Tool) -> Self {
        if let Err(err) = self.add_tool(tool) {
            self.error.get_or_insert(err);
        }
        self
    }

    /// Adds several tools, in order, as [`tool`](Self::tool) does: a copy of a list, such as
    /// an MCP server's tools as listed now (use [`source`](Self::source) to follow a list
    /// that changes).
    ///
    /// ```
    /// use agentscope::{tool_fn, Toolkit, ToolOutput};
    /// use serde_json::json;
    ///
    /// let tools = ["a", "b"].map(|name| {
    ///     tool_fn(name, "A tool.", json!({"type": "object"}), |_, _| async { Ok(ToolOutput::text("ok")) })
    /// });
    /// assert_eq!(Toolkit::new().tools(tools).names(), ["a", "b"]);
    /// ```
    #[must_use]
    pub fn tools<T: Tool>(self, tools: impl IntoIterator<Item = T>) -> Self {
        tools.into_iter().fold(self, Self::tool)
    }

    /// Adds a tool with its own time limit (overriding [`timeout`](Self::timeout)).
    #[must_use]
    pub fn tool_with_timeout(mut self, tool: impl Tool, timeout: Duration) -> Self {
        if let Err(err) = self.insert(BoxedTool::new(tool), Some(timeout)) {
            self.error.get_or_insert(err);
        }
        self
    }

    /// Adds a tool, or says why it cannot be added.
    pub fn add_tool(&mut self, tool: impl Tool) -> Result<(), ToolkitError> {
        self.insert(BoxedTool::new(tool), None)
    }

    fn insert(&mut self, tool: BoxedTool, timeout: Option<Duration>) -> Result<(), ToolkitError> {
        let schema = tool.schema().clone();
        if schema.name.trim().is_empty() {
            return Err(ToolkitError::EmptyName);
        }
        if self.index.contains_key(&schema.name) {
            return Err(ToolkitError::DuplicateTool { name: schema.name });
        }
        let invalid = |message: String| ToolkitError::InvalidSchema {
            tool: schema.name.clone(),
            message,
        };
        match schema.parameters.get("type") {
            None => {}
            Some(Value::String(kind)) if kind == "object" => {}
            Some(other) => {
                return Err(invalid(format!(
                    "arguments must be an object schema (\"type\": \"object\"), got \"type\": {other}"
                )));
            }
        }
        if !schema.parameters.is_object() {
            return Err(invalid("the schema must be a JSON object".to_owned()));
        }
        let validator =
            jsonschema::validator_for(&schema.parameters).map_err(|e| invalid(e.to_string()))?;
        self.index.insert(schema.name.clone(), self.tools.len());
        let mut schemas = self.schemas.to_vec();
        schemas.push(schema);
        self.schemas = schemas.into();
        self.tools.push(Entry {
            tool,
            validator: Arc::new(validator),
            timeout,
        });
        self.forget_resolution();
        Ok(())
    }

    /// Adds a live source of tools: at the start of each agent call, the call's tools are
    /// this toolkit's own tools followed by each source's current tools (in the order the
    /// sources were added). A running agent thus sees what a source offers from its next
    /// call on; a call in progress keeps the tools it started with.
    ///
    /// The resolution is cached by the sources' [generations](ToolSource::generation): while
    /// no generation changes, a call costs one `generation()` read per source, and the tools'
    /// schemas are not compiled again. A name offered twice (by a source and the toolkit's
    /// own tools, or by two sources), or a source tool with an invalid schema, fails the
    /// call at its start with [`AgentError::InvalidInput`](agentscope_core::AgentError)
    /// saying which source and tool.
    ///
    /// [`names`](Self::names), [`schemas`](Self::schemas) and [`len`](Self::len) describe the
    /// toolkit's own tools; [`resolve`](Self::resolve) gives the toolkit a call would use now.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use agentscope::{tool_fn, BoxedTool, ToolSource, Toolkit};
    /// use serde_json::json;
    ///
    /// struct Plugins(AtomicU64);
    ///
    /// impl ToolSource for Plugins {
    ///     fn name(&self) -> &str {
    ///         "plugins"
    ///     }
    ///     fn generation(&self) -> u64 {
    ///         self.0.load(Ordering::Acquire)
    ///     }
    ///     fn tools(&self) -> Vec<BoxedTool> {
    ///         vec![BoxedTool::new(tool_fn("ping", "Pings.", json!({"type": "object"}),
    ///             |_input, _ctx| async { Ok("pong") }))]
    ///     }
    /// }
    ///
    /// let toolkit = Toolkit::new().source(Plugins(AtomicU64::new(0)));
    /// assert!(toolkit.names().is_empty()); // its own tools: none
    /// assert_eq!(toolkit.resolve().unwrap().names(), ["ping"]);
    /// ```
    #[must_use]
    pub fn source(mut self, source: impl ToolSource) -> Self {
        self.sources.push(Arc::new(source));
        self.forget_resolution();
        self
    }

    /// Whether the toolkit has live [sources](Self::source).
    ///
    /// ```
    /// use agentscope::Toolkit;
    ///
    /// assert!(!Toolkit::new().has_sources());
    /// ```
    pub fn has_sources(&self) -> bool {
        !self.sources.is_empty()
    }

    /// The toolkit a call starting now would use: this one's own tools followed by each
    /// [source](Self::source)'s current tools (this toolkit itself, cloned, when it has no
    /// sources). Give it to
    /// [`ToolApprovalHook::learn_tools`](crate::hooks::ToolApprovalHook::learn_tools) to
    /// teach the hook the source tools' schemas too.
    ///
    /// # Errors
    ///
    /// [`AgentError::InvalidInput`](agentscope_core::AgentError) when two tools have one
    /// name or a source's tool is invalid (the error a call would fail with).
    ///
    /// ```
    /// use agentscope::{tool_fn, Toolkit};
    /// use serde_json::json;
    ///
    /// let toolkit = Toolkit::new().tool(tool_fn("a", "A.", json!({"type": "object"}),
    ///     |_input, _ctx| async { Ok("a") }));
    /// assert_eq!(toolkit.resolve().unwrap().names(), ["a"]);
    /// ```
    pub fn resolve(&self) -> Result<Toolkit, agentscope_core::AgentError> {
        match self.resolved() {
            Ok(Some(resolved)) => Ok(Toolkit::clone(&resolved)),
            Ok(None) => Ok(self.clone()),
            Err(message) => Err(agentscope_core::AgentError::invalid_input(message)),
        }
    }

    /// The sources resolved: `None` without sources (use `self`), the cached resolution
    /// while every source's generation is unchanged, a new one otherwise.
    pub(crate) fn resolved(&self) -> Result<Option<Arc<Toolkit>>, String> {
        if self.sources.is_empty() {
            return Ok(None);
        }
        let mut slot = self.resolved.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(resolved) = slot.as_ref()
            && resolved.generations.len() == self.sources.len()
            && resolved
                .generations
                .iter()
                .zip(&self.sources)
                .all(|(generation, source)| source.generation() == *generation)
        {
            return resolved.outcome.clone().map(Some);
        }
        // Generations are read before the tools: a change in between only makes the next
        // call resolve again.
        let generations: Vec<u64> = self.sources.iter().map(|s| s.generation()).collect();
        let outcome = self.resolve_sources().map(Arc::new);
        *slot = Some(Resolved {
            generations,
            outcome: outcome.clone(),
        });
        outcome.map(Some)
    }

    /// Builds the toolkit of own tools plus every source's current tools.
    fn resolve_sources(&self) -> Result<Toolkit, String> {
        let mut toolkit = Toolkit {
            tools: self.tools.clone(),
            index: self.index.clone(),
            schemas: Arc::clone(&self.schemas),
            parallel: self.parallel,
            timeout: self.timeout,
            error: self.error.clone(),
            sources: Vec::new(),
            resolved: Arc::default(),
        };
        // Which source each name came from (`None`: the toolkit's own tools).
        let mut origin: HashMap<String, Option<&str>> =
            self.index.keys().map(|name| (name.clone(), None)).collect();
        for source in &self.sources {
            let source_name = source.name();
            for tool in source.tools() {
                let name = tool.name().to_owned();
                if let Some(first) = origin.get(&name) {
                    let first = match first {
                        None => "the toolkit's own tool of that name".to_owned(),
                        Some(other) if *other == source_name => {
                            "another tool of the same source".to_owned()
                        }
                        Some(other) => {
                            format!("the tool of that name from the tool source '{other}'")
                        }
                    };
                    return Err(format!(
                        "the tool source '{source_name}' offers a tool named '{name}', which clashes \
                         with {first}; give the source's tools a distinct prefix"
                    ));
                }
                toolkit.insert(tool, None).map_err(|error| {
                    format!("the tool source '{source_name}' offers an invalid tool: {error}")
                })?;
                origin.insert(name, Some(source_name));
            }
        }
        Ok(toolkit)
    }

    /// Drops the cached resolution (the toolkit changed); clones keep theirs.
    fn forget_resolution(&mut self) {
        if !self.sources.is_empty() {
            self.resolved = Arc::default();
        }
    }

    /// Runs the tools of a batch concurrently (`true`) or one after another (`false`, the
    /// default).
    #[must_use]
    pub fn parallel(mut self, parallel: bool) -> Self {
        self.parallel = parallel;
        self.forget_resolution();
        self
    }

    /// A time limit for every tool call without its own (default: none). A call that runs
    /// longer is dropped and the model gets `"Error: Tool execution failed: tool timed out
    /// after ..."`. Time limits use the tokio timer, so the agent must run inside a tokio
    /// runtime with time enabled (otherwise the call fails with an error result saying so).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self.forget_resolution();
        self
    }

    /// Whether batches run concurrently.
    pub fn is_parallel(&self) -> bool {
        self.parallel
    }

    /// The first error met while adding tools.
    pub fn error(&self) -> Option<&ToolkitError> {
        self.error.as_ref()
    }

    /// The tool names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.schemas.iter().map(|s| s.name.as_str()).collect()
    }

    /// The tools that declared a [`ToolKind`](agentscope_core::ToolKind) other than
    /// `Action`, for the call context.
    pub(crate) fn marked(&self) -> impl Iterator<Item = &BoxedTool> {
        self.tools
            .iter()
            .map(|entry| &entry.tool)
            .filter(|tool| tool.kind() != agentscope_core::ToolKind::Action)
    }

    /// The in-doubt policy the tool named `name` declared
    /// ([`Tool::in_doubt`](agentscope_core::Tool::in_doubt)); `None` for tools that declare
    /// none and for unknown names.
    pub(crate) fn in_doubt(&self, name: &str) -> Option<InDoubt> {
        self.index
            .get(name)
            .and_then(|&index| self.tools[index].tool.in_doubt())
    }

    /// The schemas the model sees, in registration order.
    pub fn schemas(&self) -> &[ToolSchema] {
        &self.schemas
    }

    /// The schemas, shared (for the call context).
    pub(crate) fn shared_schemas(&self) -> Arc<[ToolSchema]> {
        Arc::clone(&self.schemas)
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs one call: resolves the tool, validates the arguments, runs it, and turns every
    /// failure (unknown tool, bad arguments, error, panic) into an error result.
    pub(crate) async fn run(&self, tool_use: &ToolUseBlock, ctx: ToolContext) -> ToolRun {
        let fail = |text: String| {
            ToolRun::Done(ToolResultBlock::error(&tool_use.id, &tool_use.name, text))
        };
        let Some(entry) = self
            .index
            .get(tool_use.name.as_str())
            .map(|&i| &self.tools[i])
        else {
            return fail(format!("Error: Tool not found: {}", tool_use.name));
        };
        if let Some(raw) = &tool_use.raw_input {
            let reason = serde_json::from_str::<Value>(raw)
                .err()
                .map_or_else(String::new, |e| format!(" ({e})"));
            return fail(parameter_error(
                &tool_use.name,
                &format!("the arguments are not valid JSON{reason}: {raw}"),
            ));
        }
        if let Some(problems) = argument_problems(&entry.validator, &tool_use.input) {
            return fail(parameter_error(&tool_use.name, &problems));
        }
        let token = ctx.cancellation_token().cloned();
        let limit = entry.timeout.or(self.timeout);
        let call = entry.tool.call((*tool_use.input).clone(), ctx);
        // The timer is created inside the guarded future: without a tokio runtime its
        // panic becomes an error result, like any other.
        let outcome = AssertUnwindSafe(async move {
            match limit {
                Some(limit) => tokio::time::timeout(limit, call)
                    .await
                    .unwrap_or(Err(ToolError::Timeout(limit))),
                None => call.await,
            }
        })
        .catch_unwind()
        .await;
        match outcome {
            Ok(Err(ToolError::Cancelled))
                if token.as_ref().is_some_and(CancellationToken::is_cancelled) =>
            {
                ToolRun::Interrupted
            }
            Ok(Ok(ToolOutput::Content(output))) => ToolRun::Done(ToolResultBlock {
                id: tool_use.id.clone(),
                name: tool_use.name.clone(),
                output,
                is_error: false,
            }),
            Ok(Ok(ToolOutput::Suspended)) => ToolRun::Suspended,
            Ok(Ok(_)) => fail("Error: Tool execution failed: unsupported tool output".to_owned()),
            Ok(Err(ToolError::InvalidArguments { message })) => {
                fail(parameter_error(&tool_use.name, &message))
            }
            Ok(Err(error)) => fail(format!("Error: Tool execution failed: {error}")),
            Err(payload) => fail(format!(
                "Error: Tool execution failed: {}",
                ToolError::from_panic(&*payload)
            )),
        }
    }
}

/// What is wrong with `input` by `validator`'s schema (each problem with its JSON path,
/// joined by "; "), `None` when it is valid.
pub(crate) fn argument_problems(
    validator: &jsonschema::Validator,
    input: &Value,
) -> Option<String> {
    // The common case allocates nothing: `iter_errors` boxes its iterator even when the
    // input is valid.
    if validator.is_valid(input) {
        return None;
    }
    let problems: Vec<String> = validator
        .iter_errors(input)
        .map(|error| {
            let path = error.instance_path().to_string();
            if path.is_empty() {
                error.to_string()
            } else {
                format!("{path}: {error}")
            }
        })
        .collect();
    (!problems.is_empty()).then(|| problems.join("; "))
}

fn parameter_error(tool: &str, detail: &str) -> String {
    format!("Error: Parameter validation failed for tool '{tool}': {detail}")
}

impl fmt::Debug for Toolkit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolkit")
            .field("tools", &self.names())
            .field(
                "sources",
                &self.sources.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .field("parallel", &self.parallel)
            .field("error", &self.error)
            .finish()
    }
}

/// A tool made from a closure over JSON arguments; build one with [`tool_fn`].
pub struct ToolFn<F> {
    name: String,
    description: String,
    parameters: Value,
    in_doubt: Option<InDoubt>,
    f: F,
}

impl<F> ToolFn<F> {
    /// Declares what a resumed session does with a call of this tool found in doubt (started,
    /// its result never stored: a crash mid-tool); see [`InDoubt`] and [`Tool::in_doubt`].
    ///
    /// ```
    /// use agentscope::{InDoubt, Tool, tool_fn};
    /// use serde_json::json;
    ///
    /// // A read can simply run again.
    /// let lookup = tool_fn("lookup", "Reads an order.", json!({"type": "object"}), |_input, _ctx| async {
    ///     Ok("order 42: shipped")
    /// })
    /// .in_doubt(InDoubt::RunAgain);
    /// assert_eq!(Tool::in_doubt(&lookup), Some(InDoubt::RunAgain));
    /// ```
    #[must_use]
    pub fn in_doubt(mut self, policy: InDoubt) -> Self {
        self.in_doubt = Some(policy);
        self
    }
}

/// Builds a tool from a name, a description, a JSON schema for the arguments and an async
/// closure. The closure returns anything that converts into [`ToolOutput`] (a `String` is a
/// text result).
///
/// See [`Toolkit`] for an example.
pub fn tool_fn<F, Fut, O>(
    name: impl Into<String>,
    description: impl Into<String>,
    parameters: Value,
    f: F,
) -> ToolFn<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: Into<ToolOutput>,
{
    ToolFn {
        name: name.into(),
        description: description.into(),
        parameters,
        in_doubt: None,
        f,
    }
}

impl<F, Fut, O> Tool for ToolFn<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: Into<ToolOutput>,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        let future = (self.f)(input, ctx);
        async move { future.await.map(Into::into) }
    }

    fn in_doubt(&self) -> Option<InDoubt> {
        self.in_doubt
    }
}

impl<F> fmt::Debug for ToolFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolFn")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;
    use serde_json::json;

    fn echo() -> impl Tool {
        tool_fn(
            "echo",
            "echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            |input, _ctx| async move { Ok(input["text"].as_str().unwrap_or_default().to_owned()) },
        )
    }

    fn run(toolkit: &Toolkit, name: &str, input: Value) -> ToolResultBlock {
        let tool_use = ToolUseBlock::new("c1", name, input);
        match block_on(toolkit.run(&tool_use, ToolContext::new(tool_use.clone()))) {
            ToolRun::Done(result) => result,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn duplicate_names_and_bad_schemas_are_rejected() {
        let toolkit = Toolkit::new().tool(echo()).tool(echo());
        assert_eq!(
            toolkit.error(),
            Some(&ToolkitError::DuplicateTool {
                name: "echo".into()
            })
        );
        let bad = tool_fn(
            "bad",
            "bad",
            json!({"type": "object", "properties": {"x": {"type": 12}}}),
            |_, _| async { Ok("x") },
        );
        let err = Toolkit::new().tool(bad).error().cloned().unwrap();
        assert!(
            matches!(err, ToolkitError::InvalidSchema { ref tool, .. } if tool == "bad"),
            "{err}"
        );
        let not_object = tool_fn("arr", "arr", json!({"type": "array"}), |_, _| async {
            Ok("x")
        });
        assert!(Toolkit::new().tool(not_object).error().is_some());
    }

    #[test]
    fn errors_become_results_the_model_sees() {
        let toolkit = Toolkit::new().tool(echo());
        let result = run(&toolkit, "nope", json!({}));
        assert!(result.is_error);
        assert_eq!(result.text_output(), "Error: Tool not found: nope");

        let result = run(&toolkit, "echo", json!({"text": 5}));
        assert!(result.is_error);
        assert!(
            result
                .text_output()
                .starts_with("Error: Parameter validation failed for tool 'echo': /text: 5 is not of type \"string\""),
            "{}",
            result.text_output()
        );

        let result = run(&toolkit, "echo", json!({"text": "hi"}));
        assert!(!result.is_error);
        assert_eq!(result.text_output(), "hi");
    }

    #[test]
    fn invalid_json_arguments_are_reported() {
        let toolkit = Toolkit::new().tool(echo());
        let tool_use = ToolUseBlock {
            raw_input: Some("{\"text\": ".into()),
            ..ToolUseBlock::new("c1", "echo", Value::Null)
        };
        let ToolRun::Done(result) =
            block_on(toolkit.run(&tool_use, ToolContext::new(tool_use.clone())))
        else {
            panic!("suspended")
        };
        assert!(result.text_output().starts_with(
            "Error: Parameter validation failed for tool 'echo': the arguments are not valid JSON ("
        ));
    }

    #[tokio::test]
    async fn slow_tools_time_out_per_toolkit_and_per_tool() {
        let sleepy = |name: &'static str, ms: u64| {
            tool_fn(
                name,
                "sleeps",
                json!({"type": "object"}),
                move |_, _| async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok("woke")
                },
            )
        };
        let toolkit = Toolkit::new()
            .timeout(Duration::from_millis(20))
            .tool(sleepy("slow", 5_000))
            .tool_with_timeout(sleepy("patient", 50), Duration::from_secs(5));
        let call = |name: &str| {
            let tool_use = ToolUseBlock::new("c1", name, json!({}));
            let ctx = ToolContext::new(tool_use.clone());
            let toolkit = toolkit.clone();
            async move {
                match toolkit.run(&tool_use, ctx).await {
                    ToolRun::Done(result) => result,
                    other => panic!("{other:?}"),
                }
            }
        };
        let timed_out = call("slow").await;
        assert!(timed_out.is_error);
        assert_eq!(
            timed_out.text_output(),
            "Error: Tool execution failed: tool timed out after 20ms"
        );
        let patient = call("patient").await;
        assert_eq!(patient.text_output(), "woke");
    }

    #[test]
    fn a_timeout_outside_tokio_is_an_error_result_not_a_crash() {
        let toolkit = Toolkit::new()
            .timeout(Duration::from_millis(20))
            .tool(echo());
        let result = run(&toolkit, "echo", json!({"text": "hi"}));
        assert!(result.is_error);
        assert!(
            result
                .text_output()
                .starts_with("Error: Tool execution failed: tool panicked:"),
            "{}",
            result.text_output()
        );
    }

    #[cfg(feature = "schema")]
    #[test]
    fn typed_tools_get_schema_and_deserialised_args() {
        use crate::typed_tool::typed_tool_fn;
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Args {
            n: u32,
        }
        let toolkit = Toolkit::new().tool(typed_tool_fn(
            "double",
            "doubles",
            |args: Args, _ctx| async move { Ok((args.n * 2).to_string()) },
        ));
        let schema = &toolkit.schemas()[0].parameters;
        assert_eq!(schema["type"], "object");
        assert!(schema.get("$schema").is_none());
        assert_eq!(
            run(&toolkit, "double", json!({"n": 21})).text_output(),
            "42"
        );
        let bad = run(&toolkit, "double", json!({"n": -1}));
        assert!(
            bad.text_output()
                .starts_with("Error: Parameter validation failed for tool 'double'")
        );
    }
}
