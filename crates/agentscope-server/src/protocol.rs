//! The AG-UI 1.0 wire types this server reads and writes, derived from the protocol's own
//! schemas (`@ag-ui/core` 1.0): field names in camelCase, events tagged by `type` in
//! SCREAMING_SNAKE_CASE, optional fields omitted rather than `null` (the official client
//! rejects a `null` where a field is optional).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request to run an agent: the body of `POST /agents/{agent}`.
///
/// Only `threadId`, `runId` and `messages` are required, as in the protocol; unknown fields
/// are ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation: a session of the server's store.
    pub thread_id: String,
    /// This run.
    pub run_id: String,
    /// The conversation as the client knows it; messages whose ids the thread has stored
    /// are not new.
    pub messages: Vec<InputMessage>,
    /// Tools the client offers (frontend tools): not used by this server's agents.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// Ambient information for the run, added to the new user input.
    #[serde(default)]
    pub context: Vec<Context>,
    /// Agent state: not used by this server's agents.
    #[serde(default)]
    pub state: Option<Value>,
    /// Anything else the client forwards: not used by this server's agents.
    #[serde(default)]
    pub forwarded_props: Option<Value>,
    /// Answers to the interrupts the previous run ended with.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
}

/// A message of [`RunAgentInput::messages`], read leniently: only user messages become
/// input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputMessage {
    /// The message id (the client's).
    pub id: String,
    /// `user`, `assistant`, `tool`, `system`, `developer`, `reasoning` or `activity`.
    pub role: String,
    /// A string, or (for user messages) content parts.
    #[serde(default)]
    pub content: Option<Value>,
}

/// A named piece of ambient information.
#[derive(Debug, Clone, Deserialize)]
pub struct Context {
    /// What it is.
    pub description: String,
    /// The information.
    pub value: String,
}

/// An answer to one interrupt.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt answered (this server's interrupt ids are tool call ids).
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: ResumeStatus,
    /// The answer, as the interrupt's `responseSchema` describes it: for
    /// [`tool_approval`](Interrupt::TOOL_APPROVAL) `{"approved": bool, "arguments"?: object,
    /// "reason"?: string}`; for [`tool_in_doubt`](Interrupt::TOOL_IN_DOUBT) `{"action":
    /// "done", "result": string}`, `{"action": "retry"}` or `{"action": "fail", "reason"?:
    /// string}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// Whether an interrupt was answered or dismissed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ResumeStatus {
    /// Answered; the payload says how.
    Resolved,
    /// Dismissed: for an approval, a rejection; for a call in doubt, the model is told that
    /// nobody checked whether it happened.
    Cancelled,
}

/// A conversation message as AG-UI shows it (`MESSAGES_SNAPSHOT`, thread history).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// From the person.
    User {
        /// Message id.
        id: String,
        /// Its text.
        content: String,
    },
    /// From the agent: text and tool calls.
    Assistant {
        /// Message id.
        id: String,
        /// Its text, when it has any.
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Its tool calls, when it made any.
        #[serde(rename = "toolCalls", skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<ToolCall>>,
    },
    /// What a tool returned.
    Tool {
        /// Message id.
        id: String,
        /// The result's text.
        content: String,
        /// The call it answers.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// The result's text again when the tool failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The agent's reasoning (thinking) before a message.
    Reasoning {
        /// Message id.
        id: String,
        /// The reasoning text.
        content: String,
    },
}

/// A tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The tool and its arguments.
    pub function: FunctionCall,
}

/// A tool call's name and arguments (JSON text).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionCall {
    /// The tool.
    pub name: String,
    /// The arguments, as JSON text.
    pub arguments: String,
}

/// Something a run needs from outside before it can continue: a decision on a tool call
/// that needs approval ([`TOOL_APPROVAL`](Self::TOOL_APPROVAL)), or the outcome of a tool
/// call that was running when the agent stopped ([`TOOL_IN_DOUBT`](Self::TOOL_IN_DOUBT)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Interrupt {
    /// The interrupt id: the tool call's id.
    pub id: String,
    /// [`TOOL_APPROVAL`](Self::TOOL_APPROVAL) or [`TOOL_IN_DOUBT`](Self::TOOL_IN_DOUBT).
    pub reason: &'static str,
    /// What is asked, for a person.
    pub message: String,
    /// The call the interrupt is about.
    pub tool_call_id: String,
    /// The JSON schema of the expected resume payload.
    pub response_schema: Value,
    /// For a call in doubt: `{"toolName", "arguments", "idempotencyKey"}`, what a person or
    /// an application needs to find out whether the call happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl Interrupt {
    /// The reason of an interrupt for a tool call that awaits approval.
    pub const TOOL_APPROVAL: &'static str = "tool_approval";
    /// The reason of an interrupt for a tool call in doubt: it was recorded as running and
    /// its result was never stored (the process died, the client went away mid-tool), so it
    /// may or may not have happened.
    pub const TOOL_IN_DOUBT: &'static str = "tool_in_doubt";
}

/// Why a run ended (`RUN_FINISHED.outcome`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Outcome {
    /// The call completed.
    Success,
    /// The call stopped for answers (approvals, calls in doubt): the next run gives them
    /// with `resume`.
    Interrupt {
        /// What is awaited.
        interrupts: Vec<Interrupt>,
    },
    /// The call was interrupted (by `interrupt()` or a server shutdown) and did not fail.
    Cancelled,
}

/// The AG-UI protocol version this server speaks (sent in `RUN_STARTED`).
pub const PROTOCOL_VERSION: &str = "1.0";

/// One event of a run's stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)] // the protocol's own names; see the AG-UI event reference
#[non_exhaustive]
pub enum AgUiEvent {
    #[serde(rename_all = "camelCase")]
    RunStarted {
        thread_id: String,
        run_id: String,
        protocol_version: &'static str,
    },
    #[serde(rename_all = "camelCase")]
    RunFinished {
        thread_id: String,
        run_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        outcome: Outcome,
    },
    #[serde(rename_all = "camelCase")]
    RunError {
        message: String,
        code: String,
    },
    #[serde(rename_all = "camelCase")]
    StepStarted {
        step_name: String,
    },
    #[serde(rename_all = "camelCase")]
    StepFinished {
        step_name: String,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageStart {
        message_id: String,
        role: &'static str,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageContent {
        message_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningStart {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageStart {
        message_id: String,
        role: &'static str,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageContent {
        message_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallStart {
        tool_call_id: String,
        tool_call_name: String,
        parent_message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallArgs {
        tool_call_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallEnd {
        tool_call_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallResult {
        message_id: String,
        tool_call_id: String,
        content: String,
        role: &'static str,
    },
    #[serde(rename_all = "camelCase")]
    ActivitySnapshot {
        message_id: String,
        activity_type: &'static str,
        content: Value,
    },
    MessagesSnapshot {
        messages: Vec<Message>,
    },
    Custom {
        name: &'static str,
        value: Value,
    },
}

impl AgUiEvent {
    /// The event's `type`, as the protocol names it.
    pub fn kind(&self) -> &'static str {
        match self {
            AgUiEvent::RunStarted { .. } => "RUN_STARTED",
            AgUiEvent::RunFinished { .. } => "RUN_FINISHED",
            AgUiEvent::RunError { .. } => "RUN_ERROR",
            AgUiEvent::StepStarted { .. } => "STEP_STARTED",
            AgUiEvent::StepFinished { .. } => "STEP_FINISHED",
            AgUiEvent::TextMessageStart { .. } => "TEXT_MESSAGE_START",
            AgUiEvent::TextMessageContent { .. } => "TEXT_MESSAGE_CONTENT",
            AgUiEvent::TextMessageEnd { .. } => "TEXT_MESSAGE_END",
            AgUiEvent::ReasoningStart { .. } => "REASONING_START",
            AgUiEvent::ReasoningMessageStart { .. } => "REASONING_MESSAGE_START",
            AgUiEvent::ReasoningMessageContent { .. } => "REASONING_MESSAGE_CONTENT",
            AgUiEvent::ReasoningMessageEnd { .. } => "REASONING_MESSAGE_END",
            AgUiEvent::ReasoningEnd { .. } => "REASONING_END",
            AgUiEvent::ToolCallStart { .. } => "TOOL_CALL_START",
            AgUiEvent::ToolCallArgs { .. } => "TOOL_CALL_ARGS",
            AgUiEvent::ToolCallEnd { .. } => "TOOL_CALL_END",
            AgUiEvent::ToolCallResult { .. } => "TOOL_CALL_RESULT",
            AgUiEvent::ActivitySnapshot { .. } => "ACTIVITY_SNAPSHOT",
            AgUiEvent::MessagesSnapshot { .. } => "MESSAGES_SNAPSHOT",
            AgUiEvent::Custom { .. } => "CUSTOM",
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialise_as_the_protocol_names_them() {
        let event = AgUiEvent::ToolCallStart {
            tool_call_id: "c1".into(),
            tool_call_name: "calc".into(),
            parent_message_id: "m1".into(),
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "calc",
                   "parentMessageId": "m1"})
        );
        assert_eq!(event.kind(), "TOOL_CALL_START");
        let finished = AgUiEvent::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: Outcome::Success,
        };
        assert_eq!(
            serde_json::to_value(&finished).unwrap(),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                   "outcome": {"type": "success"}})
        );
        let assistant = Message::Assistant {
            id: "a".into(),
            content: None,
            tool_calls: Some(vec![ToolCall {
                id: "c".into(),
                kind: "function",
                function: FunctionCall {
                    name: "f".into(),
                    arguments: "{}".into(),
                },
            }]),
        };
        assert_eq!(
            serde_json::to_value(&assistant).unwrap(),
            json!({"role": "assistant", "id": "a", "toolCalls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        );
    }

    #[test]
    fn input_reads_the_protocol_fields_and_ignores_the_rest() {
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t", "runId": "r", "protocolVersion": "1.0",
            "messages": [{"id": "u1", "role": "user", "content": "Hi"}],
            "tools": [], "context": [{"description": "tz", "value": "UTC"}],
            "state": {}, "forwardedProps": {},
            "resume": [{"interruptId": "c1", "status": "resolved", "payload": {"approved": true}}]
        }))
        .unwrap();
        assert_eq!(input.thread_id, "t");
        assert_eq!(input.messages[0].content, Some(json!("Hi")));
        assert_eq!(input.context[0].value, "UTC");
        assert_eq!(input.resume[0].status, ResumeStatus::Resolved);
    }
}
