//! [`AgentTool`]: an agent used as a tool by another agent.

use std::fmt;
use std::pin::pin;
use std::sync::Arc;

use agentscope_core::{
    AgentError, ContentBlock, ErrorSource, Msg, Tool, ToolContext, ToolError, ToolOutput,
};
use futures::StreamExt;
use futures::future::{Either, select};
use serde_json::{Value, json};

use crate::CallInput;
use crate::agent_trait::{Agent, shared};
use crate::stream::{Event, EventType, StreamOptions};

/// An agent used as a tool by another agent: the model of the outer agent calls it with
/// `{"task": "..."}`, the inner agent replies to the task (a user message), and its reply is
/// the tool's result.
///
/// # Nesting
///
/// While the inner agent works, its streamed events are the tool's progress: each content
/// block of each forwarded event becomes one progress chunk, so the outer agent's hooks see
/// them as ActingChunk events (and may redact or skip them, see
/// [`ActingChunkEvent`](crate::ActingChunkEvent)) and the outer stream as `ToolResult`
/// events with `is_last = false`, nested under the outer acting step:
///
/// ```text
/// outer stream                                   inner agent
/// Reasoning (is_last)   tool_use ask_researcher
///   ToolResult (chunk)  text "The answer"    ◀── Reasoning chunk "The answer"
///   ToolResult (chunk)  text " is 42."       ◀── Reasoning chunk " is 42."
/// ToolResult (is_last)  "The answer is 42."  ◀── its reply
/// Reasoning (is_last)   the outer answer
/// AgentResult
/// ```
///
/// Which inner events are forwarded is set by [`with_forwarding`](Self::with_forwarding):
/// by default the reasoning and summary deltas, tool progress and results, and hints, but
/// not the final reasoning and summary messages (their text repeats the deltas). The inner
/// `AgentResult` is never forwarded: it is the result. Nothing is forwarded (and the inner
/// call is not streamed) when nobody listens to the outer tool's progress.
///
/// # Cancellation
///
/// Interrupting the outer call interrupts the inner call
/// ([`Agent::interrupt`]), which ends the way every interrupted call ends (its memory ends
/// with the interrupt reply); the tool then returns [`ToolError::Cancelled`]. Dropping the
/// outer call (or the tool's future) drops the inner call, which leaves no orphan tool
/// call in the inner agent's memory (see [`ReActAgent::call`](crate::ReActAgent::call)).
/// Either way the inner agent is not running afterwards. The interrupt reaches whatever
/// call the inner agent runs, so give each outer agent its own inner agent.
///
/// # Errors
///
/// A failing inner call is an error result for the outer model (`"agent 'x' failed: ..."`),
/// not a failure of the outer call; so is a busy inner agent, and a reply that left tool
/// calls pending (a stop for approval, a suspended tool).
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
/// use serde_json::json;
///
/// # futures::executor::block_on(async {
/// let researcher = ReActAgent::builder()
///     .name("researcher")
///     .model(ScriptedModel::new([ScriptedResponse::text("The answer is 42.")]))
///     .build()?;
/// let tool = AgentTool::new(researcher.clone())
///     .with_name("ask_researcher")
///     .with_description("Asks the researcher a question.");
/// let lead = ReActAgent::builder()
///     .name("lead")
///     .model(ScriptedModel::new([
///         ScriptedResponse::tool_call("c1", "ask_researcher", json!({"task": "What is 6*7?"})),
///         ScriptedResponse::text("It is 42."),
///     ]))
///     .toolkit(Toolkit::new().tool(tool))
///     .build()?;
///
/// let reply = lead.call("Find out 6*7.").await?;
/// assert_eq!(reply.text(), "It is 42.");
/// let result = &lead.memory().messages()[2];
/// assert_eq!(result.tool_results()[0].text_output(), "The answer is 42.");
/// assert_eq!(researcher.memory().messages()[0].text(), "What is 6*7?");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct AgentTool {
    agent: Arc<dyn Agent>,
    name: String,
    description: String,
    forwarding: StreamOptions,
}

impl AgentTool {
    /// The agent as a tool, named after the agent (give a name the model's provider
    /// accepts with [`with_name`](Self::with_name)).
    pub fn new(agent: impl Agent) -> Self {
        let agent = shared(agent);
        let name = agent.name().to_owned();
        let description = format!(
            "Gives a task to the agent '{name}' and returns its answer. Describe the task \
             completely: the agent sees only this message."
        );
        Self {
            agent,
            name,
            description,
            forwarding: StreamOptions::default()
                .event_types([
                    EventType::Reasoning,
                    EventType::ToolResult,
                    EventType::Hint,
                    EventType::Summary,
                ])
                .include_reasoning_result(false)
                .include_summary_result(false),
        }
    }

    /// The tool's name (what the model calls).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The tool's description (when the model should use it).
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Which events of the inner call become the tool's progress (its `AgentResult` never
    /// does). `StreamOptions::default().event_types([])` forwards nothing.
    #[must_use]
    pub fn with_forwarding(mut self, options: StreamOptions) -> Self {
        self.forwarding = options;
        self
    }

    /// The inner agent.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// What the inner stream must deliver: the forwarded events and the reply.
    fn inner_options(&self, forward: bool) -> StreamOptions {
        let mut options = if forward {
            self.forwarding.clone()
        } else {
            StreamOptions::default().event_types([])
        };
        if !options.event_types.contains(&EventType::AgentResult) {
            options.event_types.push(EventType::AgentResult);
        }
        options
    }

    /// The arguments every agent used as a tool takes, as a JSON schema: `{"task": string}`
    /// (also for tools of other crates that call an agent, such as a remote one).
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use serde_json::json;
    ///
    /// assert_eq!(AgentTool::task_parameters()["required"], json!(["task"]));
    /// assert_eq!(AgentTool::task_of(&json!({"task": "Find 6*7."})).unwrap(), "Find 6*7.");
    /// assert!(AgentTool::task_of(&json!({"task": 42})).is_err());
    /// ```
    pub fn task_parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "The task for the agent, with everything it needs to know."
                }
            },
            "required": ["task"]
        })
    }

    /// The task of a call's arguments (see [`task_parameters`](Self::task_parameters)).
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] when `task` is missing or not a string.
    pub fn task_of(input: &Value) -> Result<&str, ToolError> {
        input
            .get("task")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::invalid_arguments("'task' must be a string"))
    }

    /// Relays a call of `agent` made for the tool call `ctx` (the body of an agent used as
    /// a tool, also of other crates' tools that call an agent): streams `input` with
    /// `options`, gives the content blocks of each event that `forward` keeps to `ctx` as
    /// the call's progress, and interrupts `agent` when the tool call is cancelled (the
    /// stream is then driven to its end, forwarding nothing). Returns the call's reply (its
    /// `AgentResult` event; `options` must ask for it), `None` when the stream ended
    /// without one.
    ///
    /// # Errors
    ///
    /// [`AgentError::Interrupted`] when the tool call was cancelled; the stream's error
    /// when it failed.
    pub async fn relay(
        agent: &dyn Agent,
        input: CallInput,
        options: StreamOptions,
        ctx: &ToolContext,
        mut forward: impl FnMut(&Event, &ContentBlock) -> bool,
    ) -> Result<Option<Msg>, AgentError> {
        let mut events = agent.stream(input, options);
        let mut interrupted = false;
        let mut reply = None;
        loop {
            let next = if interrupted {
                events.next().await
            } else {
                match select(events.next(), pin!(ctx.cancelled())).await {
                    Either::Left((next, _)) => next,
                    Either::Right(_) => {
                        // The inner call ends as an interrupted call; keep driving it.
                        agent.interrupt();
                        interrupted = true;
                        continue;
                    }
                }
            };
            match next {
                Some(Ok(event)) if event.event_type == EventType::AgentResult => {
                    reply = Some(event.message);
                }
                Some(Ok(event)) => {
                    if !interrupted {
                        for block in event.message.content.iter() {
                            if forward(&event, block) {
                                ctx.emit(block.clone()).await;
                            }
                        }
                    }
                }
                Some(Err(error)) => return Err(error),
                None => break,
            }
        }
        if interrupted {
            return Err(AgentError::Interrupted);
        }
        Ok(reply)
    }

    fn failed(&self, error: impl std::error::Error + Send + Sync + 'static) -> ToolError {
        ToolError::Failed {
            message: format!("agent '{}' failed: {error}", self.agent.name()),
            source: Some(ErrorSource::new(error)),
        }
    }
}

impl Tool for AgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        AgentTool::task_parameters()
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let task = AgentTool::task_of(&input)?;
        if ctx.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let forward = ctx.has_progress_receiver();
        let options = self.inner_options(forward);
        let input = Msg::user(task).into();
        let reply = match Self::relay(&*self.agent, input, options, &ctx, |_, _| true).await {
            Ok(reply) => reply,
            Err(AgentError::Interrupted) => return Err(ToolError::Cancelled),
            Err(error) => return Err(self.failed(error)),
        };
        let Some(reply) = reply else {
            return Err(ToolError::msg(format!(
                "agent '{}' ended without a reply",
                self.agent.name()
            )));
        };
        if reply.has_tool_uses() {
            return Err(ToolError::msg(format!(
                "agent '{}' stopped with tool calls pending; it cannot answer until they are \
                 resumed",
                self.agent.name()
            )));
        }
        let blocks: Vec<ContentBlock> = reply
            .content
            .iter()
            .filter(|block| matches!(block, ContentBlock::Text(_) | ContentBlock::Image(_)))
            .cloned()
            .collect();
        Ok(ToolOutput::Content(blocks))
    }
}

impl fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.name)
            .field("agent", &self.agent.name())
            .finish_non_exhaustive()
    }
}
