//! [`RemoteAgentTool`]: a remote agent as a tool, whose questions suspend the call.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use agentscope::multi_agent::AgentTool;
use agentscope::{
    AgentError, CallInput, ContentBlock, ErrorSource, Event, EventType, GenerateReason, Msg, Role,
    StreamOptions, Tool, ToolContext, ToolError, ToolOutput,
};
use serde_json::Value;

use super::agent::RemoteAgent;
use super::error::RemoteError;

/// A remote A2A agent as a tool: the model calls it with `{"task": "..."}`, the remote
/// agent works on the task, and its answer is the tool's result.
///
/// - **Progress.** The remote agent's streamed text, tool calls and tool results become the
///   tool's progress (`ActingChunk` events, `ToolResult` chunks in the local stream), one
///   chunk per content block, as `AgentTool` forwards
///   an agent's.
/// - **Questions.** When the remote task ends asking for input (`input-required`), the
///   question is the tool's progress and the tool call is suspended
///   ([`ToolOutput::Suspended`]): the local call ends with
///   `GenerateReason::ToolSuspended`, the call pending in memory. Give the answer with
///   [`answer`](Self::answer), then resume the local agent (`agent.call(())`): the tool runs
///   again for the same call and sends the answer on the same remote task. Resumed without
///   an answer, it asks again. The question is also
///   [`agent().pending_question()`](RemoteAgent::pending_question).
/// - **Interrupts.** Interrupting the local call cancels the remote task; the tool returns
///   [`ToolError::Cancelled`].
/// - **Errors.** A remote failure (unreachable, the task failed or was rejected) is an
///   error result for the model ([`ToolError::Failed`]), not a failure of the local call.
///
/// The tool holds one remote conversation (its agent's context): each call continues it.
/// Give each local agent its own tool.
///
/// ```no_run
/// use agentscope::prelude::*;
/// use agentscope_a2a::RemoteAgent;
///
/// # async fn run(model: impl Model) -> Result<(), Box<dyn std::error::Error>> {
/// let remote = RemoteAgent::connect("https://agents.example.com/a2a").await?;
/// let tool = remote.into_tool().with_name("ask_calculator");
/// let agent = ReActAgent::builder()
///     .name("assistant")
///     .model(model)
///     .toolkit(Toolkit::new().tool(tool))
///     .build()?;
/// let reply = agent.call("What is 6*7? Ask the calculator.").await?;
/// # let _ = reply;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RemoteAgentTool {
    agent: RemoteAgent,
    name: String,
    description: String,
    /// The suspended call waiting for the remote agent's question to be answered.
    waiting: Arc<Mutex<Option<Waiting>>>,
}

struct Waiting {
    call_id: String,
    answer: Option<Vec<Msg>>,
}

/// `name` as a tool name providers accept: letters, digits, `_` and `-`, at most 64.
fn tool_name(name: &str) -> String {
    let name: String = name
        .trim()
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "remote_agent".to_owned()
    } else {
        name
    }
}

// The constructor stands here, beside the tool, so that imports run one way: this
// module uses the agent, the agent's module does not use the tool.
impl RemoteAgent {
    /// The agent as a tool (see [`RemoteAgentTool`]).
    ///
    /// ```no_run
    /// use agentscope::prelude::*;
    ///
    /// # async fn run(remote: agentscope_a2a::RemoteAgent) {
    /// let toolkit = Toolkit::new().tool(remote.into_tool().with_name("ask_ops"));
    /// # let _ = toolkit;
    /// # }
    /// ```
    pub fn into_tool(self) -> RemoteAgentTool {
        RemoteAgentTool::new(self)
    }
}

impl RemoteAgentTool {
    /// The agent as a tool, named after it (other characters than letters, digits, `_`
    /// and `-` become `_`), described by its card.
    ///
    /// ```no_run
    /// use agentscope_a2a::{RemoteAgent, RemoteAgentTool};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let remote = RemoteAgent::connect("http://127.0.0.1:4000/a2a").await?;
    /// let tool = RemoteAgentTool::new(remote)
    ///     .with_name("ask_calculator")
    ///     .with_description("Asks the calculator agent an arithmetic question.");
    /// assert_eq!(tool.agent().name(), "calculator");
    /// # Ok(()) }
    /// ```
    pub fn new(agent: RemoteAgent) -> Self {
        let name = tool_name(agent.name());
        let about = agent.description().trim();
        let description = format!(
            "Gives a task to the remote agent '{}'{} and returns its answer. Describe the task \
             completely: the agent sees only this message and its earlier tasks.",
            agent.name(),
            if about.is_empty() {
                String::new()
            } else {
                format!(" ({about})")
            }
        );
        Self {
            agent,
            name,
            description,
            waiting: Arc::new(Mutex::new(None)),
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

    /// The remote agent.
    pub fn agent(&self) -> &RemoteAgent {
        &self.agent
    }

    /// Answers the remote agent's question that suspended the tool call `call_id`; the
    /// answer is sent when the local agent resumes the call. Text goes as text parts, a
    /// [`RemoteAgent::data_message`] as a data part.
    ///
    /// # Errors
    ///
    /// [`RemoteError::NotWaiting`] when the call `call_id` is not suspended by a question.
    ///
    /// ```no_run
    /// use agentscope::prelude::*;
    /// use agentscope_a2a::{RemoteAgent, RemoteAgentTool};
    /// use serde_json::json;
    ///
    /// # async fn run(lead: ReActAgent, tool: RemoteAgentTool) -> Result<(), Box<dyn std::error::Error>> {
    /// let stopped = lead.call("Clean up.").await?;
    /// if stopped.generate_reason() == Some(GenerateReason::ToolSuspended) {
    ///     let call = &stopped.tool_uses()[0];
    ///     let approve = json!({"decisions": [{"toolCallId": "c1", "approved": true}]});
    ///     tool.answer(&call.id, RemoteAgent::data_message(approve))?;
    ///     let done = lead.call(()).await?; // the tool sends the answer on the remote task
    ///     println!("{}", done.text());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn answer(&self, call_id: &str, answer: impl Into<CallInput>) -> Result<(), RemoteError> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.as_mut() {
            Some(waiting) if waiting.call_id == call_id => {
                waiting.answer = Some(answer.into().into_messages());
                Ok(())
            }
            _ => Err(RemoteError::NotWaiting {
                call_id: call_id.to_owned(),
            }),
        }
    }

    /// Shows the question as progress and suspends the call `call_id`.
    async fn ask(&self, ctx: &ToolContext, question: &Msg) -> ToolOutput {
        for block in question.content.iter().filter(|block| shown(block)) {
            ctx.emit(block.clone()).await;
        }
        *self.waiting.lock().unwrap_or_else(PoisonError::into_inner) = Some(Waiting {
            call_id: ctx.tool_use().id.to_string(),
            answer: None,
        });
        ToolOutput::Suspended
    }

    /// The answer given for the call `call_id`, taken.
    fn take_answer(&self, call_id: &str) -> Option<Vec<Msg>> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.as_ref() {
            Some(w) if w.call_id == call_id && w.answer.is_some() => {
                waiting.take().and_then(|w| w.answer)
            }
            _ => None,
        }
    }
}

/// The blocks of a reply worth showing: text and images.
fn shown(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Text(_) | ContentBlock::Image(_))
}

impl Tool for RemoteAgentTool {
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
        let call_id = ctx.tool_use().id.to_string();
        let sent = match self.agent.pending_question() {
            // The remote task waits: the answer given for this call, else the question again.
            Some(question) => match self.take_answer(&call_id) {
                Some(answer) => answer,
                None => return Ok(self.ask(&ctx, &question).await),
            },
            // Named by the call's idempotency key: a retry of the call (after a crash,
            // `InDoubt::RunAgain`) sends the same message, which the remote agent does not
            // run again.
            None => vec![
                Msg::builder()
                    .id(ctx.idempotency_key())
                    .name("user")
                    .role(Role::User)
                    .text(task)
                    .build(),
            ],
        };
        let options = StreamOptions::default().event_types([
            EventType::Reasoning,
            EventType::ToolResult,
            EventType::AgentResult,
        ]);
        // A final reasoning message is the remote agent's tool calls (its text came as
        // chunks) or the reply (the result).
        let forward = |event: &Event, block: &ContentBlock| {
            let calls_only = event.event_type == EventType::Reasoning && event.is_last;
            !calls_only || matches!(block, ContentBlock::ToolUse(_))
        };
        let relayed = AgentTool::relay(&self.agent, sent.into(), options, &ctx, forward).await;
        let reply = match relayed {
            Ok(Some(reply)) => reply,
            Ok(None) | Err(AgentError::Interrupted) => return Err(ToolError::Cancelled),
            Err(error) => {
                return Err(ToolError::Failed {
                    message: error.to_string(),
                    source: Some(ErrorSource::new(error)),
                });
            }
        };
        if reply.generate_reason() == Some(GenerateReason::Interrupted) {
            return Err(ToolError::Cancelled);
        }
        if self.agent.pending_question().is_some() {
            return Ok(self.ask(&ctx, &reply).await);
        }
        Ok(ToolOutput::Content(
            reply
                .content
                .iter()
                .filter(|block| shown(block))
                .cloned()
                .collect(),
        ))
    }
}

impl fmt::Debug for RemoteAgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteAgentTool")
            .field("name", &self.name)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_keep_what_providers_accept() {
        assert_eq!(tool_name("Echo Agent (v2)"), "Echo_Agent__v2_");
        assert_eq!(tool_name("calculator"), "calculator");
        assert_eq!(tool_name("  "), "remote_agent");
        assert_eq!(tool_name(&"x".repeat(80)).len(), 64);
    }
}
