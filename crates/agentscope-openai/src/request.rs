//! Maps a [`ModelRequest`] to a chat-completions request body.
//!
//! The body and its messages are `#[derive(Serialize)]` types; small fixed-shape fragments
//! (a tool schema, a tool call, content parts, the tool choice, the response format) are
//! written as `json!` literals, which show their wire shape most directly. The body goes
//! through a [`Value`] on the way out so the `extra` options can be merged into its top
//! level last, replacing any field of the same name (a flattened map would send the key
//! twice).

use agentscope_core::{
    ContentBlock, ModelRequest, Msg, ResponseFormat, Role, ToolChoice, ToolSchema, ToolUseBlock,
};
use agentscope_http::lenient::{f32_number, merge_extra};
use serde::Serialize;
use serde_json::{Value, json};

/// The body of a streamed chat-completions request, `extra` options aside.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

/// One chat-completions message.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum Message<'a> {
    System {
        content: String,
    },
    User {
        /// A string, or content parts when the message holds images.
        content: Value,
    },
    Assistant {
        /// `null` when the message only calls tools.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Value>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

/// Builds the JSON body of a streamed chat-completions request.
pub(crate) fn build_body(
    model: &str,
    request: &ModelRequest,
    include_usage: bool,
) -> serde_json::Result<Value> {
    let options = &request.options;
    // Tool choice and parallel calls only mean something next to tools; OpenAI rejects them
    // without (and the engine's summary step sends no tools).
    let has_tools = !request.tools.is_empty();
    // A specific tool is forced portably: only that tool, and "required". OpenAI reads the
    // same from `{"type": "function", ...}`, but servers such as llama.cpp ignore that form.
    let forced = match &options.tool_choice {
        ToolChoice::Specific(name) => request.tools.iter().find(|schema| &schema.name == name),
        _ => None,
    };
    let tools = match forced {
        Some(schema) => vec![tool(schema)],
        None => request.tools.iter().map(tool).collect(),
    };
    let tool_choice = match forced {
        Some(_) => Value::from("required"),
        None => tool_choice(&options.tool_choice),
    };
    let body = Body {
        model,
        messages: messages(&request.messages),
        tools,
        stream: true,
        stream_options: include_usage.then(|| json!({"include_usage": true})),
        temperature: options.temperature.map(f32_number),
        top_p: options.top_p.map(f32_number),
        max_tokens: options.max_tokens,
        stop: &options.stop,
        seed: options.seed,
        tool_choice: has_tools.then_some(tool_choice),
        parallel_tool_calls: options.parallel_tool_calls.filter(|_| has_tools),
        response_format: options.response_format.as_ref().map(response_format),
    };
    let mut body = serde_json::to_value(body)?;
    merge_extra(&mut body, &options.extra);
    Ok(body)
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Specific(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

fn response_format(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::Text => json!({"type": "text"}),
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": strict},
        }),
        // A format added to core later: its serde shape is the best guess.
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

fn tool(schema: &ToolSchema) -> Value {
    let parameters = if schema.parameters.is_null() {
        json!({"type": "object", "properties": {}})
    } else {
        Value::clone(&schema.parameters)
    };
    json!({
        "type": "function",
        "function": {
            "name": schema.name,
            "description": schema.description,
            "parameters": parameters,
        }
    })
}

/// Maps the conversation to chat-completions messages, in order.
///
/// Tool results (in `Tool` messages, or anywhere else) become one `tool` message each;
/// thinking blocks (signed or redacted: Anthropic's) are never sent back.
pub(crate) fn messages(messages: &[Msg]) -> Vec<Message<'_>> {
    let mut out = Vec::with_capacity(messages.len());
    for msg in messages {
        match msg.role {
            Role::Assistant => {
                out.extend(assistant_message(msg));
                tool_results(msg, &mut out);
            }
            Role::System => {
                tool_results(msg, &mut out);
                out.push(Message::System {
                    content: msg.text(),
                });
            }
            Role::User => {
                tool_results(msg, &mut out);
                if let Some(content) = user_content(msg) {
                    out.push(Message::User { content });
                }
            }
            Role::Tool => tool_results(msg, &mut out),
        }
    }
    out
}

fn tool_results<'a>(msg: &'a Msg, out: &mut Vec<Message<'a>>) {
    for result in msg.tool_results() {
        out.push(Message::Tool {
            tool_call_id: &result.id,
            content: result.text_output(),
        });
    }
}

/// The content of a user message: a string, or content parts when it holds images.
/// `None` when the message holds nothing to send (only tool results).
fn user_content(msg: &Msg) -> Option<Value> {
    let has_image = msg
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Image(_)));
    if has_image {
        let parts: Vec<Value> = msg
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(json!({"type": "text", "text": text.text})),
                ContentBlock::Image(image) => {
                    Some(json!({"type": "image_url", "image_url": {"url": image.url}}))
                }
                _ => None,
            })
            .collect();
        return Some(parts.into());
    }
    let has_text = msg
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Text(_)));
    if !has_text && !msg.tool_results().is_empty() {
        return None;
    }
    Some(msg.text().into())
}

fn assistant_message(msg: &Msg) -> Option<Message<'_>> {
    let text = msg.text();
    let tool_calls: Vec<Value> = msg.tool_uses().into_iter().map(tool_call).collect();
    let has_text = msg
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Text(_)));
    if tool_calls.is_empty() && !has_text && !msg.tool_results().is_empty() {
        return None;
    }
    // Next to tool calls, no text is `null` rather than `""`.
    let content = (tool_calls.is_empty() || !text.is_empty()).then_some(text);
    Some(Message::Assistant {
        content,
        tool_calls,
    })
}

fn tool_call(tool_use: &ToolUseBlock) -> Value {
    let arguments = match (&tool_use.raw_input, &*tool_use.input) {
        (Some(raw), _) => raw.clone(),
        (None, Value::Null) => "{}".to_owned(),
        (None, input) => input.to_string(),
    };
    json!({
        "id": tool_use.id,
        "type": "function",
        "function": {"name": tool_use.name, "arguments": arguments},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::{GenerateOptions, ImageBlock, ToolResultBlock};

    #[test]
    fn tool_only_messages_and_odd_placements() {
        let msgs = vec![
            Msg::builder()
                .role(Role::User)
                .block(ToolResultBlock::text("c1", "calc", "42"))
                .build(),
            Msg::builder()
                .role(Role::Assistant)
                .block(ContentBlock::thinking("only thinking"))
                .build(),
            Msg::builder()
                .role(Role::User)
                .text("look")
                .block(ContentBlock::Image(ImageBlock {
                    url: "data:image/png;base64,AAAA".into(),
                }))
                .build(),
        ];
        assert_eq!(
            serde_json::to_value(messages(&msgs)).unwrap(),
            json!([
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
                {"role": "assistant", "content": ""},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                ]}
            ])
        );
    }

    /// Thinking of either kind is Anthropic's to send back: an assistant turn that held
    /// Anthropic's thinking (a fallback from Anthropic to OpenAI) goes without it.
    #[test]
    fn thinking_and_redacted_thinking_are_never_sent() {
        let msgs = vec![
            Msg::builder()
                .role(Role::Assistant)
                .block(ContentBlock::Thinking(agentscope_core::ThinkingBlock {
                    thinking: "Use the tool.".into(),
                    signature: Some("EqQBsig".into()),
                }))
                .block(ContentBlock::RedactedThinking(
                    agentscope_core::RedactedThinkingBlock {
                        data: "EmwKAhgB".into(),
                    },
                ))
                .text("Checking.")
                .block(ToolUseBlock::new("c1", "calc", json!({"x": 1})))
                .build(),
        ];
        assert_eq!(
            serde_json::to_value(messages(&msgs)).unwrap(),
            json!([
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": "{\"x\":1}"}}
                ]}
            ])
        );
    }

    #[test]
    fn raw_and_null_arguments() {
        let raw = ToolUseBlock {
            id: "c".into(),
            name: "f".into(),
            input: Value::Null.into(),
            raw_input: Some("{\"a\":".into()),
        };
        assert_eq!(tool_call(&raw)["function"]["arguments"], "{\"a\":");
        let null = ToolUseBlock::new("c", "f", Value::Null);
        assert_eq!(tool_call(&null)["function"]["arguments"], "{}");
    }

    #[test]
    fn tool_options_are_dropped_without_tools_and_extra_wins() {
        let request = ModelRequest::new(
            vec![Msg::user("hi")],
            Default::default(),
            GenerateOptions::default()
                .tool_choice(ToolChoice::Required)
                .parallel_tool_calls(false)
                .max_tokens(5)
                .extra("max_tokens", Value::Null)
                .extra("top_k", 20),
        );
        assert_eq!(
            build_body("m", &request, false).unwrap(),
            json!({
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
                "max_tokens": null,
                "top_k": 20
            })
        );
    }
}
