//! From the agent's stream ([`Event`]s) and memory ([`Msg`]s) to AG-UI events and messages.
//!
//! | agentscope | AG-UI |
//! |---|---|
//! | a model step (reasoning chunks, then the final reasoning message) | `STEP_STARTED "reasoning N"` ... `STEP_FINISHED` |
//! | thinking | `REASONING_START`, `REASONING_MESSAGE_START` / `_CONTENT` / `_END`, `REASONING_END` |
//! | text | `TEXT_MESSAGE_START` / `_CONTENT` / `_END` (role `assistant`) |
//! | a tool call (id and name, then argument pieces) | `TOOL_CALL_START` / `_ARGS` / `_END` |
//! | a tool step (progress, then results) | `STEP_STARTED "acting N"` ... `STEP_FINISHED` |
//! | tool progress | `ACTIVITY_SNAPSHOT` (`tool_progress`, the progress so far) |
//! | a tool result | `TOOL_CALL_RESULT` (message id `result-<call id>`) |
//! | a hint injected by a hook | `CUSTOM "hint"` |
//! | the summary at the iteration limit | a text message, then `CUSTOM "summary"` |
//! | tool calls awaiting approval, or in doubt | the interrupts of an `interrupt` outcome (id = the call's id; see `interrupts`) |
//!
//! Everything a step opened is closed when the step's final message arrives, and
//! [`Mapper::close_all`] closes whatever a cut-short call left open, so `RUN_FINISHED` never
//! follows an open message, tool call or step (the protocol forbids it).

use std::collections::HashMap;

use agentscope::{ContentBlock, Event, EventType, Msg, Role, SharedString, ToolUseBlock};
use serde_json::{Value, json};

use crate::protocol::{AgUiEvent, FunctionCall, Message, ToolCall};

/// The id of the reasoning message of the model message `id`.
pub(crate) fn reasoning_id(id: &str) -> String {
    format!("{id}-reasoning")
}

/// The id of the tool message carrying the result of the call `call_id`.
pub(crate) fn result_id(call_id: &str) -> String {
    format!("result-{call_id}")
}

/// A tool call's arguments as JSON text: the parsed arguments, or the raw text when they
/// did not parse.
pub(crate) fn arguments_text(call: &ToolUseBlock) -> String {
    match (&*call.input, &call.raw_input) {
        (Value::Null, Some(raw)) => raw.clone(),
        (input, _) => input.to_string(),
    }
}

/// The model step being streamed.
#[derive(Debug)]
struct ModelStep {
    message_id: String,
    step_name: String,
    text_open: bool,
    reasoning_open: bool,
    /// Tool calls started in this step, in order; the last one takes continuations.
    tools: Vec<SharedString>,
}

/// Turns one run's [`Event`]s into AG-UI events, keeping what is open.
#[derive(Debug, Default)]
pub(crate) struct Mapper {
    model: Option<ModelStep>,
    acting: Option<String>,
    reasoning_steps: usize,
    acting_steps: usize,
    /// Progress text so far, per tool call.
    progress: HashMap<String, String>,
}

impl Mapper {
    /// The AG-UI events for one stream event.
    pub(crate) fn map(&mut self, event: &Event, out: &mut Vec<AgUiEvent>) {
        let message = &event.message;
        match (event.event_type, event.is_last) {
            (EventType::Reasoning | EventType::Summary, false) => {
                self.open_model_step(message, event.event_type, out);
                self.model_delta(message, out);
            }
            (EventType::Reasoning | EventType::Summary, true) => {
                self.open_model_step(message, event.event_type, out);
                self.model_final(message, out);
                if event.event_type == EventType::Summary {
                    out.push(AgUiEvent::Custom {
                        name: "summary",
                        value: json!({"messageId": message.id, "text": message.text()}),
                    });
                }
            }
            (EventType::ToolResult, false) => {
                self.open_acting_step(out);
                for chunk in message.tool_results() {
                    let text = self.progress.entry(chunk.id.to_string()).or_default();
                    text.push_str(&chunk.text_output());
                    out.push(AgUiEvent::ActivitySnapshot {
                        message_id: format!("progress-{}", chunk.id),
                        activity_type: "tool_progress",
                        content: json!({"toolCallId": chunk.id, "toolName": chunk.name,
                                        "text": text}),
                    });
                }
            }
            (EventType::ToolResult, true) => {
                self.open_acting_step(out);
                for result in message.tool_results() {
                    out.push(AgUiEvent::ToolCallResult {
                        message_id: result_id(&result.id),
                        tool_call_id: result.id.to_string(),
                        content: result.text_output(),
                        role: "tool",
                    });
                }
            }
            (EventType::Hint, _) => out.push(AgUiEvent::Custom {
                name: "hint",
                value: json!({"messageId": message.id, "text": message.text()}),
            }),
            (EventType::AgentResult, _) => {}
        }
    }

    /// Closes everything still open (a call cut short: interrupted, failed, stopped).
    pub(crate) fn close_all(&mut self, out: &mut Vec<AgUiEvent>) {
        self.close_model_step(out);
        self.close_acting_step(out);
    }

    fn open_model_step(&mut self, message: &Msg, kind: EventType, out: &mut Vec<AgUiEvent>) {
        if self
            .model
            .as_ref()
            .is_some_and(|step| step.message_id == message.id)
        {
            return;
        }
        self.close_model_step(out);
        self.close_acting_step(out);
        let step_name = if kind == EventType::Summary {
            "summary".to_owned()
        } else {
            self.reasoning_steps += 1;
            format!("reasoning {}", self.reasoning_steps)
        };
        out.push(AgUiEvent::StepStarted {
            step_name: step_name.clone(),
        });
        self.model = Some(ModelStep {
            message_id: message.id.to_string(),
            step_name,
            text_open: false,
            reasoning_open: false,
            tools: Vec::new(),
        });
    }

    fn open_acting_step(&mut self, out: &mut Vec<AgUiEvent>) {
        if self.acting.is_some() {
            return;
        }
        self.close_model_step(out);
        self.acting_steps += 1;
        let step_name = format!("acting {}", self.acting_steps);
        out.push(AgUiEvent::StepStarted {
            step_name: step_name.clone(),
        });
        self.acting = Some(step_name);
    }

    fn close_acting_step(&mut self, out: &mut Vec<AgUiEvent>) {
        if let Some(step_name) = self.acting.take() {
            out.push(AgUiEvent::StepFinished { step_name });
        }
    }

    /// A chunk: opens what it starts and appends what it adds.
    fn model_delta(&mut self, message: &Msg, out: &mut Vec<AgUiEvent>) {
        let Some(step) = self.model.as_mut() else {
            return;
        };
        for block in &message.content {
            match block {
                ContentBlock::Thinking(thinking) if !thinking.thinking.is_empty() => {
                    step.thinking(&thinking.thinking, out);
                }
                ContentBlock::Text(text) if !text.text.is_empty() => step.text(&text.text, out),
                ContentBlock::ToolUse(fragment) => step.tool_fragment(fragment, out),
                _ => {}
            }
        }
    }

    /// The final message: emits whatever the chunks did not show (no chunks were streamed,
    /// or a call arrived whole), then closes the step.
    fn model_final(&mut self, message: &Msg, out: &mut Vec<AgUiEvent>) {
        if let Some(step) = self.model.as_mut() {
            for block in &message.content {
                match block {
                    ContentBlock::Thinking(thinking)
                        if !step.reasoning_open && !thinking.thinking.is_empty() =>
                    {
                        step.thinking(&thinking.thinking, out);
                    }
                    ContentBlock::Text(text) if !step.text_open && !text.text.is_empty() => {
                        step.text(&text.text, out);
                    }
                    ContentBlock::ToolUse(call) if !step.tools.contains(&call.id) => {
                        step.start_tool(call, out);
                        out.push(AgUiEvent::ToolCallArgs {
                            tool_call_id: call.id.to_string(),
                            delta: arguments_text(call),
                        });
                    }
                    _ => {}
                }
            }
        }
        self.close_model_step(out);
    }

    fn close_model_step(&mut self, out: &mut Vec<AgUiEvent>) {
        let Some(step) = self.model.take() else {
            return;
        };
        let id = &step.message_id;
        if step.reasoning_open {
            out.push(AgUiEvent::ReasoningMessageEnd {
                message_id: reasoning_id(id),
            });
            out.push(AgUiEvent::ReasoningEnd {
                message_id: reasoning_id(id),
            });
        }
        if step.text_open {
            out.push(AgUiEvent::TextMessageEnd {
                message_id: id.clone(),
            });
        }
        for tool_call_id in step.tools {
            out.push(AgUiEvent::ToolCallEnd {
                tool_call_id: tool_call_id.to_string(),
            });
        }
        out.push(AgUiEvent::StepFinished {
            step_name: step.step_name,
        });
    }
}

impl ModelStep {
    fn thinking(&mut self, delta: &str, out: &mut Vec<AgUiEvent>) {
        let id = reasoning_id(&self.message_id);
        if !self.reasoning_open {
            self.reasoning_open = true;
            out.push(AgUiEvent::ReasoningStart {
                message_id: id.clone(),
            });
            out.push(AgUiEvent::ReasoningMessageStart {
                message_id: id.clone(),
                role: "reasoning",
            });
        }
        out.push(AgUiEvent::ReasoningMessageContent {
            message_id: id,
            delta: delta.to_owned(),
        });
    }

    fn text(&mut self, delta: &str, out: &mut Vec<AgUiEvent>) {
        if !self.text_open {
            self.text_open = true;
            out.push(AgUiEvent::TextMessageStart {
                message_id: self.message_id.clone(),
                role: "assistant",
            });
        }
        out.push(AgUiEvent::TextMessageContent {
            message_id: self.message_id.clone(),
            delta: delta.to_owned(),
        });
    }

    fn start_tool(&mut self, call: &ToolUseBlock, out: &mut Vec<AgUiEvent>) {
        self.tools.push(call.id.clone());
        out.push(AgUiEvent::ToolCallStart {
            tool_call_id: call.id.to_string(),
            tool_call_name: call.name.to_string(),
            parent_message_id: self.message_id.clone(),
        });
    }

    /// A tool-call fragment: a new id starts a call; an empty id continues the last one.
    fn tool_fragment(&mut self, fragment: &ToolUseBlock, out: &mut Vec<AgUiEvent>) {
        let starts = !fragment.id.is_empty() && self.tools.last() != Some(&fragment.id);
        if starts {
            if self.tools.contains(&fragment.id) {
                return; // a repeated start of a call already shown
            }
            self.start_tool(fragment, out);
        }
        let Some(current) = self.tools.last() else {
            return; // a continuation before any start: nothing to attach it to
        };
        let delta = match &fragment.raw_input {
            Some(piece) => piece.clone(),
            None if !fragment.input.is_null() => fragment.input.to_string(),
            None => String::new(),
        };
        if !delta.is_empty() {
            out.push(AgUiEvent::ToolCallArgs {
                tool_call_id: current.to_string(),
                delta,
            });
        }
    }
}

/// The conversation as AG-UI messages: a user message as its text; an assistant message as
/// its reasoning (id `<id>-reasoning`) then its text and tool calls; each tool result as a
/// tool message (id `result-<call id>`). System messages are not part of a thread.
pub(crate) fn to_messages(messages: &[Msg]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    for msg in messages {
        match msg.role {
            Role::User => out.push(Message::User {
                id: msg.id.to_string(),
                content: msg.text(),
            }),
            Role::Assistant => {
                let thinking = msg.thinking();
                if !thinking.is_empty() {
                    out.push(Message::Reasoning {
                        id: reasoning_id(&msg.id),
                        content: thinking,
                    });
                }
                let text = msg.text();
                let calls: Vec<ToolCall> = msg
                    .tool_uses()
                    .into_iter()
                    .map(|call| ToolCall {
                        id: call.id.to_string(),
                        kind: "function",
                        function: FunctionCall {
                            name: call.name.to_string(),
                            arguments: arguments_text(call),
                        },
                    })
                    .collect();
                out.push(Message::Assistant {
                    id: msg.id.to_string(),
                    content: (!text.is_empty()).then_some(text),
                    tool_calls: (!calls.is_empty()).then_some(calls),
                });
            }
            Role::Tool => {
                for result in msg.tool_results() {
                    let content = result.text_output();
                    out.push(Message::Tool {
                        id: result_id(&result.id),
                        error: result.is_error.then(|| content.clone()),
                        content,
                        tool_call_id: result.id.to_string(),
                    });
                }
            }
            Role::System => {}
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentscope::{ThinkingBlock, ToolResultBlock};

    fn event(event_type: EventType, is_last: bool, message: Msg) -> Event {
        Event::new(event_type, message, is_last)
    }

    fn assistant(id: &str, blocks: Vec<ContentBlock>) -> Msg {
        let mut msg = Msg::new(Role::Assistant, "assistant", blocks);
        msg.id = id.into();
        msg
    }

    fn kinds(events: &[AgUiEvent]) -> Vec<&'static str> {
        events.iter().map(AgUiEvent::kind).collect()
    }

    fn fragment(id: &str, name: &str, raw: &str) -> ContentBlock {
        ToolUseBlock {
            id: id.into(),
            name: name.into(),
            input: agentscope::ToolInput::null(),
            raw_input: Some(raw.into()),
        }
        .into()
    }

    #[test]
    fn a_streamed_step_with_thinking_text_and_a_tool_call_then_its_result() {
        let mut mapper = Mapper::default();
        let mut out = Vec::new();
        let thinking = ContentBlock::Thinking(ThinkingBlock {
            thinking: "Multiply.".into(),
            signature: None,
        });
        for chunk in [
            assistant("m1", vec![thinking.clone()]),
            assistant("m1", vec![ContentBlock::text("Let me ")]),
            assistant("m1", vec![ContentBlock::text("compute.")]),
            assistant("m1", vec![fragment("c1", "calculator", "")]),
            assistant("m1", vec![fragment("", "", "{\"expression\":")]),
            assistant("m1", vec![fragment("", "", "\"6*7\"}")]),
        ] {
            mapper.map(&event(EventType::Reasoning, false, chunk), &mut out);
        }
        let call = ToolUseBlock::new("c1", "calculator", json!({"expression": "6*7"}));
        let final_msg = assistant(
            "m1",
            vec![thinking, ContentBlock::text("Let me compute."), call.into()],
        );
        mapper.map(&event(EventType::Reasoning, true, final_msg), &mut out);
        let progress = Msg::tool_result(ToolResultBlock::text("c1", "calculator", "working"));
        mapper.map(&event(EventType::ToolResult, false, progress), &mut out);
        let result = Msg::tool_result(ToolResultBlock::text("c1", "calculator", "42"));
        mapper.map(&event(EventType::ToolResult, true, result), &mut out);
        mapper.close_all(&mut out);
        assert_eq!(
            kinds(&out),
            [
                "STEP_STARTED",
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_CONTENT",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_ARGS",
                "REASONING_MESSAGE_END",
                "REASONING_END",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_END",
                "STEP_FINISHED",
                "STEP_STARTED",
                "ACTIVITY_SNAPSHOT",
                "TOOL_CALL_RESULT",
                "STEP_FINISHED",
            ]
        );
        assert_eq!(
            out[7],
            AgUiEvent::ToolCallStart {
                tool_call_id: "c1".into(),
                tool_call_name: "calculator".into(),
                parent_message_id: "m1".into()
            }
        );
        assert_eq!(
            out[17],
            AgUiEvent::ToolCallResult {
                message_id: "result-c1".into(),
                tool_call_id: "c1".into(),
                content: "42".into(),
                role: "tool"
            }
        );
        assert_eq!(
            (&out[14], &out[15]),
            (
                &AgUiEvent::StepFinished {
                    step_name: "reasoning 1".into()
                },
                &AgUiEvent::StepStarted {
                    step_name: "acting 1".into()
                }
            )
        );
    }

    #[test]
    fn a_final_message_without_chunks_is_shown_whole() {
        let mut mapper = Mapper::default();
        let mut out = Vec::new();
        let call = ToolUseBlock::new("c9", "search", json!({"q": "rust"}));
        let msg = assistant("m2", vec![ContentBlock::text("Searching."), call.into()]);
        mapper.map(&event(EventType::Reasoning, true, msg), &mut out);
        assert_eq!(
            out,
            vec![
                AgUiEvent::StepStarted {
                    step_name: "reasoning 1".into()
                },
                AgUiEvent::TextMessageStart {
                    message_id: "m2".into(),
                    role: "assistant"
                },
                AgUiEvent::TextMessageContent {
                    message_id: "m2".into(),
                    delta: "Searching.".into()
                },
                AgUiEvent::ToolCallStart {
                    tool_call_id: "c9".into(),
                    tool_call_name: "search".into(),
                    parent_message_id: "m2".into()
                },
                AgUiEvent::ToolCallArgs {
                    tool_call_id: "c9".into(),
                    delta: "{\"q\":\"rust\"}".into()
                },
                AgUiEvent::TextMessageEnd {
                    message_id: "m2".into()
                },
                AgUiEvent::ToolCallEnd {
                    tool_call_id: "c9".into()
                },
                AgUiEvent::StepFinished {
                    step_name: "reasoning 1".into()
                },
            ]
        );
    }

    #[test]
    fn a_call_cut_short_is_closed_before_the_run_ends() {
        let mut mapper = Mapper::default();
        let mut out = Vec::new();
        let chunk = assistant("m3", vec![ContentBlock::text("Partial")]);
        mapper.map(&event(EventType::Reasoning, false, chunk), &mut out);
        out.clear();
        mapper.close_all(&mut out);
        assert_eq!(kinds(&out), ["TEXT_MESSAGE_END", "STEP_FINISHED"]);
        out.clear();
        mapper.close_all(&mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn memory_becomes_ag_ui_messages() {
        let user = Msg::user("What is 6*7?");
        let call = ToolUseBlock::new("c1", "calculator", json!({"expression": "6*7"}));
        let asked = assistant(
            "a1",
            vec![
                ContentBlock::Thinking(ThinkingBlock {
                    thinking: "Use the tool.".into(),
                    signature: None,
                }),
                call.into(),
            ],
        );
        let mut failed = ToolResultBlock::text("c1", "calculator", "boom");
        failed.is_error = true;
        let result = Msg::tool_result(failed);
        let answer = assistant("a2", vec![ContentBlock::text("It failed.")]);
        let messages = to_messages(&[user.clone(), asked, result, answer]);
        assert_eq!(
            serde_json::to_value(&messages).unwrap(),
            json!([
                {"role": "user", "id": user.id, "content": "What is 6*7?"},
                {"role": "reasoning", "id": "a1-reasoning", "content": "Use the tool."},
                {"role": "assistant", "id": "a1", "toolCalls": [{"id": "c1", "type": "function",
                    "function": {"name": "calculator", "arguments": "{\"expression\":\"6*7\"}"}}]},
                {"role": "tool", "id": "result-c1", "content": "boom", "toolCallId": "c1",
                 "error": "boom"},
                {"role": "assistant", "id": "a2", "content": "It failed."}
            ])
        );
    }
}
