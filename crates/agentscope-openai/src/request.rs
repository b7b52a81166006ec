//! Maps a [`ModelRequest`] to a chat-completions request body.

use agentscope_core::{
    ContentBlock, GenerateOptions, ModelRequest, Msg, ResponseFormat, Role, ToolChoice, ToolSchema,
    ToolUseBlock,
};
use serde_json::{Map, Value, json};

/// Builds the JSON body of a streamed chat-completions request.
pub(crate) fn build_body(model: &str, request: &ModelRequest, include_usage: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), Value::Array(messages(&request.messages)));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            request.tools.iter().map(tool).collect::<Vec<_>>().into(),
        );
    }
    body.insert("stream".into(), true.into());
    if include_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    options(&mut body, &request.options, !request.tools.is_empty());
    Value::Object(body)
}

fn options(body: &mut Map<String, Value>, options: &GenerateOptions, has_tools: bool) {
    if let Some(value) = options.temperature {
        body.insert("temperature".into(), f32_value(value));
    }
    if let Some(value) = options.top_p {
        body.insert("top_p".into(), f32_value(value));
    }
    if let Some(value) = options.max_tokens {
        body.insert("max_tokens".into(), value.into());
    }
    if !options.stop.is_empty() {
        body.insert("stop".into(), options.stop.clone().into());
    }
    if let Some(value) = options.seed {
        body.insert("seed".into(), value.into());
    }
    // Tool choice and parallel calls only mean something next to tools; OpenAI rejects them
    // without (and the engine's summary step sends no tools).
    if has_tools {
        let choice = match &options.tool_choice {
            ToolChoice::Auto => "auto".into(),
            ToolChoice::None => "none".into(),
            ToolChoice::Required => "required".into(),
            ToolChoice::Specific(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), choice);
        if let Some(value) = options.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), value.into());
        }
    }
    if let Some(format) = &options.response_format {
        body.insert("response_format".into(), response_format(format));
    }
    for (key, value) in &options.extra {
        body.insert(key.clone(), value.clone());
    }
}

/// An `f32` as the JSON number a person would write (`0.2`, not `0.20000000298023224`).
fn f32_value(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
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
/// thinking blocks are never sent back.
pub(crate) fn messages(messages: &[Msg]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for msg in messages {
        match msg.role {
            Role::Assistant => {
                out.extend(assistant_message(msg));
                tool_results(msg, &mut out);
            }
            Role::System => {
                tool_results(msg, &mut out);
                out.push(json!({"role": "system", "content": msg.text()}));
            }
            Role::User => {
                tool_results(msg, &mut out);
                if let Some(content) = user_content(msg) {
                    out.push(json!({"role": "user", "content": content}));
                }
            }
            Role::Tool => tool_results(msg, &mut out),
        }
    }
    out
}

fn tool_results(msg: &Msg, out: &mut Vec<Value>) {
    for result in msg.tool_results() {
        out.push(json!({
            "role": "tool",
            "tool_call_id": result.id,
            "content": result.text_output(),
        }));
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

fn assistant_message(msg: &Msg) -> Option<Value> {
    let text = msg.text();
    let calls: Vec<Value> = msg.tool_uses().into_iter().map(tool_call).collect();
    let has_text = msg
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Text(_)));
    if calls.is_empty() && !has_text && !msg.tool_results().is_empty() {
        return None;
    }
    let mut out = Map::new();
    out.insert("role".into(), "assistant".into());
    if calls.is_empty() {
        out.insert("content".into(), text.into());
    } else {
        let content = if text.is_empty() {
            Value::Null
        } else {
            text.into()
        };
        out.insert("content".into(), content);
        out.insert("tool_calls".into(), calls.into());
    }
    Some(Value::Object(out))
}

fn tool_call(tool_use: &ToolUseBlock) -> Value {
    let arguments = match (&tool_use.raw_input, &tool_use.input) {
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
    use agentscope_core::{ImageBlock, ToolResultBlock};

    #[test]
    fn f32_values_are_written_as_written() {
        assert_eq!(f32_value(0.2).to_string(), "0.2");
        assert_eq!(f32_value(1.0).to_string(), "1.0");
        assert_eq!(f32_value(0.95).to_string(), "0.95");
        assert_eq!(f32_value(f32::NAN), Value::Null);
    }

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
            Value::Array(messages(&msgs)),
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

    #[test]
    fn raw_and_null_arguments() {
        let raw = ToolUseBlock {
            id: "c".into(),
            name: "f".into(),
            input: Value::Null,
            raw_input: Some("{\"a\":".into()),
        };
        assert_eq!(tool_call(&raw)["function"]["arguments"], "{\"a\":");
        let null = ToolUseBlock::new("c", "f", Value::Null);
        assert_eq!(tool_call(&null)["function"]["arguments"], "{}");
    }

    #[test]
    fn tool_options_are_dropped_without_tools_and_extra_wins() {
        let request = ModelRequest {
            messages: vec![Msg::user("hi")],
            tools: Vec::new(),
            options: GenerateOptions::default()
                .tool_choice(ToolChoice::Required)
                .parallel_tool_calls(false)
                .max_tokens(5)
                .extra("max_tokens", Value::Null)
                .extra("top_k", 20),
        };
        assert_eq!(
            build_body("m", &request, false),
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
