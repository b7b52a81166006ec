//! Maps a [`ModelRequest`] to a Messages API request body.
//!
//! The body is a `#[derive(Serialize)]` type; content blocks, tools and the tool choice are
//! written as `json!` literals, which show their wire shape most directly. The body goes
//! through a [`Value`] on the way out so that prompt-cache marks can be added and the
//! `extra` options merged into its top level last, replacing any field of the same name.
//!
//! Anthropic's conversation rules shape the mapping:
//!
//! - there is no `system` role: the leading system messages become the top-level `system`
//!   blocks, and a system message later in the conversation (the engine injects hints that
//!   way) becomes text in the user turn it sits next to;
//! - turns must alternate between `user` and `assistant`: consecutive messages that map to
//!   the same role are merged into one turn;
//! - tool results are content blocks of a user turn and come first in it;
//! - empty text blocks and empty turns are rejected, so none are sent;
//! - thinking is sent back only with its signature (Anthropic rejects unsigned thinking);
//!   redacted thinking is sent back as it came.

use std::sync::Once;

use agentscope_core::{
    ContentBlock, ImageBlock, ModelRequest, Msg, Role, ToolChoice, ToolResultBlock, ToolSchema,
    ToolUseBlock,
};
use agentscope_http::lenient::{f32_number, merge_extra};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The protocol settings of a model, applied to every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `max_tokens` when the request sets none.
    pub(crate) max_tokens: u32,
    /// The extended-thinking budget, when thinking is on.
    pub(crate) thinking_budget: Option<u32>,
    /// Whether to mark prompt-cache breakpoints.
    pub(crate) prompt_caching: bool,
}

/// The body of a streamed Messages request, `extra` options aside.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Value>,
    messages: Vec<Turn>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<Value>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    stream: bool,
}

/// Which side of the conversation a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Side {
    User,
    Assistant,
}

/// One Messages API turn.
#[derive(Debug, Serialize)]
struct Turn {
    role: Side,
    content: Vec<Value>,
}

/// A turn being assembled: tool results are kept apart so they can go first.
#[derive(Debug)]
struct Pending {
    side: Side,
    results: Vec<Value>,
    blocks: Vec<Value>,
}

/// Builds the JSON body of a streamed Messages request.
pub(crate) fn build_body(
    model: &str,
    request: &ModelRequest,
    settings: &Settings,
) -> serde_json::Result<Value> {
    let options = &request.options;
    if options.seed.is_some() {
        static SEED: Once = Once::new();
        SEED.call_once(|| {
            tracing::debug!("the Messages API has no seed: GenerateOptions::seed is not sent");
        });
    }
    if options.response_format.is_some() {
        static FORMAT: Once = Once::new();
        FORMAT.call_once(|| {
            tracing::debug!(
                "the Messages API has no response_format: GenerateOptions::response_format is \
                 not sent"
            );
        });
    }
    let (system, messages) = conversation(&request.messages);
    // A tool choice only means something next to tools (the engine's summary step sends
    // none).
    let has_tools = !request.tools.is_empty();
    let body = Body {
        model,
        max_tokens: options.max_tokens.unwrap_or(settings.max_tokens),
        system,
        messages,
        tools: request.tools.iter().map(tool).collect(),
        tool_choice: has_tools
            .then(|| tool_choice(&options.tool_choice, options.parallel_tool_calls)),
        thinking: settings
            .thinking_budget
            .map(|budget| json!({"type": "enabled", "budget_tokens": budget})),
        temperature: options.temperature.map(f32_number),
        top_p: options.top_p.map(f32_number),
        stop_sequences: &options.stop,
        stream: true,
    };
    let mut body = serde_json::to_value(body)?;
    if let (Value::Object(fields), true) = (&mut body, settings.prompt_caching) {
        mark_cache_breakpoints(fields);
    }
    merge_extra(&mut body, &options.extra);
    Ok(body)
}

fn tool_choice(choice: &ToolChoice, parallel_tool_calls: Option<bool>) -> Value {
    let mut value = match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Specific(name) => json!({"type": "tool", "name": name}),
        // `none` takes no other field.
        ToolChoice::None => return json!({"type": "none"}),
    };
    if parallel_tool_calls == Some(false) {
        value["disable_parallel_tool_use"] = Value::Bool(true);
    }
    value
}

fn tool(schema: &ToolSchema) -> Value {
    let input_schema = if schema.parameters.is_null() {
        json!({"type": "object", "properties": {}})
    } else {
        Value::clone(&schema.parameters)
    };
    json!({
        "name": schema.name,
        "description": schema.description,
        "input_schema": input_schema,
    })
}

/// `cache_control: ephemeral` on the last system block, the last tool and the last
/// cacheable block of the last turn (thinking blocks cannot carry one).
fn mark_cache_breakpoints(body: &mut Map<String, Value>) {
    let ephemeral = || json!({"type": "ephemeral"});
    for key in ["system", "tools"] {
        if let Some(Value::Object(last)) = body
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .and_then(|items| items.last_mut())
        {
            last.insert("cache_control".to_owned(), ephemeral());
        }
    }
    let last_block = body
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|turns| turns.last_mut())
        .and_then(|turn| turn.get_mut("content"))
        .and_then(Value::as_array_mut)
        .and_then(|blocks| {
            blocks.iter_mut().rev().find(|block| {
                !matches!(
                    block.get("type").and_then(Value::as_str),
                    Some("thinking" | "redacted_thinking")
                )
            })
        });
    if let Some(Value::Object(block)) = last_block {
        block.insert("cache_control".to_owned(), ephemeral());
    }
}

/// Maps the conversation to the top-level `system` blocks and the alternating turns.
fn conversation(messages: &[Msg]) -> (Vec<Value>, Vec<Turn>) {
    let mut system = Vec::new();
    let mut turns: Vec<Pending> = Vec::new();
    let mut leading = true;
    for msg in messages {
        let results: Vec<Value> = msg.tool_results().into_iter().map(tool_result).collect();
        match msg.role {
            Role::System if leading => {
                system.extend(text_blocks(msg));
                push(&mut turns, Side::User, results, Vec::new());
            }
            // A hint in the middle of the conversation: text of the adjacent user turn.
            Role::System => push(&mut turns, Side::User, results, text_blocks(msg)),
            Role::User | Role::Tool => {
                leading = false;
                push(&mut turns, Side::User, results, user_blocks(msg));
            }
            Role::Assistant => {
                leading = false;
                push(
                    &mut turns,
                    Side::Assistant,
                    Vec::new(),
                    assistant_blocks(msg),
                );
                // Results belong to a user turn, after the calls.
                push(&mut turns, Side::User, results, Vec::new());
            }
        }
    }
    let turns = turns
        .into_iter()
        .map(|pending| {
            let mut content = pending.results;
            content.extend(pending.blocks);
            Turn {
                role: pending.side,
                content,
            }
        })
        .collect();
    (system, turns)
}

/// Adds blocks to the last turn when it is on the same side, otherwise starts a turn.
/// Nothing to add, nothing done (Anthropic rejects empty turns).
fn push(turns: &mut Vec<Pending>, side: Side, results: Vec<Value>, blocks: Vec<Value>) {
    if results.is_empty() && blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some(last) if last.side == side => {
            last.results.extend(results);
            last.blocks.extend(blocks);
        }
        _ => turns.push(Pending {
            side,
            results,
            blocks,
        }),
    }
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// The non-empty text blocks of a message.
fn text_blocks(msg: &Msg) -> Vec<Value> {
    msg.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => text_block(&text.text),
            _ => None,
        })
        .collect()
}

/// Text and images, in order (tool results are taken apart; anything else has no place in
/// a user turn).
fn user_blocks(msg: &Msg) -> Vec<Value> {
    msg.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => text_block(&text.text),
            ContentBlock::Image(image) => image_block(image),
            _ => None,
        })
        .collect()
}

/// Signed thinking, redacted thinking (its data unchanged), text and tool calls, in the
/// message's order. Unsigned thinking is dropped (Anthropic rejects it), and so are images
/// (not allowed in assistant turns).
fn assistant_blocks(msg: &Msg) -> Vec<Value> {
    msg.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking(thinking) => {
                let signature = thinking
                    .signature
                    .as_ref()
                    .filter(|signature| !signature.is_empty())?;
                Some(json!({
                    "type": "thinking",
                    "thinking": thinking.thinking,
                    "signature": signature,
                }))
            }
            ContentBlock::RedactedThinking(redacted) => (!redacted.data.is_empty()).then(|| {
                json!({
                    "type": "redacted_thinking",
                    "data": redacted.data,
                })
            }),
            ContentBlock::Text(text) => text_block(&text.text),
            ContentBlock::ToolUse(tool_use) => Some(tool_use_block(tool_use)),
            _ => None,
        })
        .collect()
}

/// A tool call; its `input` must be an object, `{}` when the arguments did not parse.
fn tool_use_block(tool_use: &ToolUseBlock) -> Value {
    let input = if tool_use.input.is_object() {
        (*tool_use.input).clone()
    } else {
        tool_use
            .raw_input
            .as_deref()
            .and_then(|raw| serde_json::from_str::<Value>(raw).ok())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}))
    };
    json!({
        "type": "tool_use",
        "id": tool_use.id,
        "name": tool_use.name,
        "input": input,
    })
}

/// A tool result: its text and images as content, `is_error` only when it failed.
fn tool_result(result: &ToolResultBlock) -> Value {
    let content: Vec<Value> = result
        .output
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => text_block(&text.text),
            ContentBlock::Image(image) => image_block(image),
            _ => None,
        })
        .collect();
    let mut value = json!({"type": "tool_result", "tool_use_id": result.id});
    if !content.is_empty() {
        value["content"] = Value::Array(content);
    }
    if result.is_error {
        value["is_error"] = Value::Bool(true);
    }
    value
}

/// An image: a base64 `data:` URL as a `base64` source, any other URL as a `url` source.
/// A `data:` URL that is not base64 cannot be sent and is dropped.
fn image_block(image: &ImageBlock) -> Option<Value> {
    let url = image.url.trim();
    let is_data = url
        .get(..5)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("data:"));
    if !is_data {
        return Some(json!({"type": "image", "source": {"type": "url", "url": url}}));
    }
    let Some((media_type, data)) = base64_data_url(url) else {
        tracing::warn!("an image data: URL that is not base64 cannot be sent; it is dropped");
        return None;
    };
    Some(json!({
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": data},
    }))
}

/// The media type and data of `data:<media type>;base64,<data>`.
fn base64_data_url(url: &str) -> Option<(String, &str)> {
    let (meta, data) = url.get(5..)?.split_once(',')?;
    let mut params = meta.split(';');
    let media_type = params.next()?.trim().to_ascii_lowercase();
    let is_base64 = params.any(|param| param.trim().eq_ignore_ascii_case("base64"));
    (is_base64 && !media_type.is_empty()).then_some((media_type, data.trim()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agentscope_core::{GenerateOptions, ResponseFormat, ThinkingBlock};

    const SETTINGS: Settings = Settings {
        max_tokens: 4096,
        thinking_budget: None,
        prompt_caching: false,
    };

    fn request(messages: Vec<Msg>) -> ModelRequest {
        ModelRequest::new(messages, Default::default(), Default::default())
    }

    fn body(request: &ModelRequest) -> Value {
        build_body("claude-test", request, &SETTINGS).unwrap()
    }

    fn signed(thinking: &str, signature: Option<&str>) -> ContentBlock {
        ContentBlock::Thinking(ThinkingBlock {
            thinking: thinking.into(),
            signature: signature.map(Into::into),
        })
    }

    fn weather_tool() -> ToolSchema {
        ToolSchema::new(
            "get_weather",
            "The weather in a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )
    }

    /// A tool loop: system prompt, question, an answer with signed thinking, text and two
    /// calls, their results, a hint the engine injects, and the next question.
    fn tool_loop() -> Vec<Msg> {
        vec![
            Msg::system("You are terse."),
            Msg::system("Answer in English."),
            Msg::user("Weather in Paris and Rome?"),
            Msg::builder()
                .role(Role::Assistant)
                .name("assistant")
                .block(signed("Two cities, two calls.", Some("EqQBCkgIARAB")))
                .text("Checking both.")
                .block(ToolUseBlock::new(
                    "toolu_01",
                    "get_weather",
                    json!({"city": "Paris"}),
                ))
                .block(ToolUseBlock {
                    id: "toolu_02".into(),
                    name: "get_weather".into(),
                    input: Value::Null.into(),
                    raw_input: Some("{\"city\": \"Ro".into()),
                })
                .build(),
            Msg::tool_result(ToolResultBlock::text("toolu_01", "get_weather", "18 °C")),
            Msg::tool_result(ToolResultBlock::error(
                "toolu_02",
                "get_weather",
                "invalid arguments: EOF while parsing",
            )),
            Msg::system("Hint: one call failed; retry it."),
            Msg::user("Thanks."),
        ]
    }

    #[test]
    fn a_tool_loop_maps_to_alternating_turns_with_results_first() {
        assert_eq!(
            body(&request(tool_loop())),
            json!({
                "model": "claude-test",
                "max_tokens": 4096,
                "stream": true,
                "system": [
                    {"type": "text", "text": "You are terse."},
                    {"type": "text", "text": "Answer in English."}
                ],
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "Weather in Paris and Rome?"}
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "Two cities, two calls.", "signature": "EqQBCkgIARAB"},
                        {"type": "text", "text": "Checking both."},
                        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
                        {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_01",
                         "content": [{"type": "text", "text": "18 °C"}]},
                        {"type": "tool_result", "tool_use_id": "toolu_02",
                         "content": [{"type": "text", "text": "invalid arguments: EOF while parsing"}],
                         "is_error": true},
                        {"type": "text", "text": "Hint: one call failed; retry it."},
                        {"type": "text", "text": "Thanks."}
                    ]}
                ]
            })
        );
    }

    #[test]
    fn a_hint_before_tool_results_still_puts_the_results_first() {
        let messages = vec![
            Msg::user("Go."),
            Msg::builder()
                .role(Role::Assistant)
                .block(ToolUseBlock::new("t1", "f", json!({})))
                .build(),
            Msg::system("Hint."),
            Msg::tool_result(ToolResultBlock::text("t1", "f", "done")),
        ];
        assert_eq!(
            body(&request(messages))["messages"][2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "done"}]},
                {"type": "text", "text": "Hint."}
            ]})
        );
    }

    #[test]
    fn unsigned_thinking_empty_text_and_empty_turns_are_not_sent() {
        let messages = vec![
            Msg::user("a"),
            Msg::builder()
                .role(Role::Assistant)
                .block(signed("not signed", None))
                .block(signed("empty signature", Some("")))
                .text("")
                .build(),
            Msg::user("b"),
            Msg::assistant("c"),
            Msg::assistant("d"),
        ];
        assert_eq!(
            body(&request(messages))["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "a"}, {"type": "text", "text": "b"}
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "c"}, {"type": "text", "text": "d"}
                ]}
            ])
        );
    }

    #[test]
    fn images_are_base64_or_url_sources() {
        let messages = vec![
            Msg::builder()
                .role(Role::User)
                .text("What is in these?")
                .block(ContentBlock::Image(ImageBlock {
                    url: "data:image/png;base64,iVBORw0KGgo=".into(),
                }))
                .block(ContentBlock::Image(ImageBlock {
                    url: "https://example.com/cat.jpg".into(),
                }))
                .block(ContentBlock::Image(ImageBlock {
                    url: "data:image/svg+xml,%3Csvg%3E".into(),
                }))
                .build(),
            Msg::tool_result(ToolResultBlock {
                id: "t".into(),
                name: "shot".into(),
                output: vec![ContentBlock::Image(ImageBlock {
                    url: "DATA:Image/JPEG;base64,/9j/4AAQ".into(),
                })],
                is_error: false,
            }),
        ];
        assert_eq!(
            body(&request(messages))["messages"],
            json!([{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}}
                ]},
                {"type": "text", "text": "What is in these?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
            ]}])
        );
    }

    #[test]
    fn tool_results_with_no_output_have_no_content() {
        assert_eq!(
            tool_result(&ToolResultBlock {
                id: "t".into(),
                name: "f".into(),
                output: Vec::new(),
                is_error: false,
            }),
            json!({"type": "tool_result", "tool_use_id": "t"})
        );
    }

    #[test]
    fn tools_and_every_tool_choice() {
        let with = |choice: ToolChoice, parallel: Option<bool>| {
            let mut options = GenerateOptions::default().tool_choice(choice);
            options.parallel_tool_calls = parallel;
            let request = ModelRequest::new(
                vec![Msg::user("hi")],
                vec![
                    weather_tool(),
                    ToolSchema::new("now", "The time", Value::Null),
                ]
                .into(),
                options,
            );
            body(&request)
        };
        let body = with(ToolChoice::Auto, None);
        assert_eq!(
            body["tools"],
            json!([
                {"name": "get_weather", "description": "The weather in a city", "input_schema":
                    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
                {"name": "now", "description": "The time", "input_schema":
                    {"type": "object", "properties": {}}}
            ])
        );
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
        assert_eq!(
            with(ToolChoice::Required, None)["tool_choice"],
            json!({"type": "any"})
        );
        assert_eq!(
            with(ToolChoice::Specific("now".into()), None)["tool_choice"],
            json!({"type": "tool", "name": "now"})
        );
        assert_eq!(
            with(ToolChoice::None, None)["tool_choice"],
            json!({"type": "none"})
        );
        assert_eq!(
            with(ToolChoice::Auto, Some(false))["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        assert_eq!(
            with(ToolChoice::Required, Some(false))["tool_choice"],
            json!({"type": "any", "disable_parallel_tool_use": true})
        );
        assert_eq!(
            with(ToolChoice::Specific("now".into()), Some(false))["tool_choice"],
            json!({"type": "tool", "name": "now", "disable_parallel_tool_use": true})
        );
        assert_eq!(
            with(ToolChoice::None, Some(false))["tool_choice"],
            json!({"type": "none"})
        );
        assert_eq!(
            with(ToolChoice::Auto, Some(true))["tool_choice"],
            json!({"type": "auto"})
        );
    }

    #[test]
    fn tool_options_are_dropped_without_tools() {
        let request = ModelRequest::new(
            vec![Msg::user("hi")],
            Default::default(),
            GenerateOptions::default()
                .tool_choice(ToolChoice::Required)
                .parallel_tool_calls(false),
        );
        assert_eq!(
            body(&request),
            json!({
                "model": "claude-test",
                "max_tokens": 4096,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "stream": true
            })
        );
    }

    #[test]
    fn options_are_mapped_and_seed_and_response_format_are_not_sent() {
        let request = ModelRequest::new(
            vec![Msg::user("hi")],
            Default::default(),
            GenerateOptions::default()
                .temperature(0.2)
                .top_p(0.95)
                .max_tokens(512)
                .stop("END")
                .stop("\n\nHuman:")
                .seed(7)
                .response_format(ResponseFormat::JsonObject),
        );
        assert_eq!(
            body(&request),
            json!({
                "model": "claude-test",
                "max_tokens": 512,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "temperature": 0.2,
                "top_p": 0.95,
                "stop_sequences": ["END", "\n\nHuman:"],
                "stream": true
            })
        );
    }

    #[test]
    fn thinking_is_enabled_with_its_budget_and_extra_overrides_anything() {
        let settings = Settings {
            max_tokens: 16000,
            thinking_budget: Some(10000),
            prompt_caching: false,
        };
        let plain = build_body("m", &request(vec![Msg::user("hi")]), &settings).unwrap();
        assert_eq!(
            plain["thinking"],
            json!({"type": "enabled", "budget_tokens": 10000})
        );
        assert_eq!(plain["max_tokens"], 16000);
        let request = ModelRequest::new(
            vec![Msg::user("hi")],
            Default::default(),
            GenerateOptions::default()
                .max_tokens(5)
                .extra("max_tokens", 64000)
                .extra("thinking", json!({"type": "disabled"}))
                .extra("top_k", 20)
                .extra("metadata", json!({"user_id": "u-1"})),
        );
        assert_eq!(
            build_body("m", &request, &settings).unwrap(),
            json!({
                "model": "m",
                "max_tokens": 64000,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "thinking": {"type": "disabled"},
                "top_k": 20,
                "metadata": {"user_id": "u-1"},
                "stream": true
            })
        );
    }

    #[test]
    fn prompt_caching_marks_the_last_system_block_tool_and_block_of_the_last_turn() {
        let settings = Settings {
            prompt_caching: true,
            ..SETTINGS
        };
        let request = ModelRequest::new(
            tool_loop(),
            vec![
                weather_tool(),
                ToolSchema::new("now", "The time", Value::Null),
            ]
            .into(),
            GenerateOptions::default(),
        );
        let body = build_body("m", &request, &settings).unwrap();
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            body["system"],
            json!([
                {"type": "text", "text": "You are terse."},
                {"type": "text", "text": "Answer in English.", "cache_control": ephemeral}
            ])
        );
        assert_eq!(body["tools"][0].get("cache_control"), None);
        assert_eq!(body["tools"][1]["cache_control"], ephemeral);
        let turns = body["messages"].as_array().unwrap();
        let last = turns[2]["content"].as_array().unwrap();
        assert_eq!(
            last[3],
            json!({"type": "text", "text": "Thanks.", "cache_control": ephemeral})
        );
        // Exactly three breakpoints (Anthropic allows four).
        assert_eq!(body.to_string().matches("cache_control").count(), 3);

        // An assistant turn that ends with thinking (a prefill): the block before it.
        let request = request_with_last(
            Msg::builder()
                .role(Role::Assistant)
                .text("Sure.")
                .block(signed("t", Some("s")))
                .build(),
        );
        let body = build_body("m", &request, &settings).unwrap();
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "text", "text": "Sure.", "cache_control": ephemeral},
                {"type": "thinking", "thinking": "t", "signature": "s"}
            ])
        );
        // Without a system prompt or tools there is nothing else to mark.
        assert_eq!(body.get("system"), None);
        assert_eq!(body.get("tools"), None);
    }

    fn request_with_last(last: Msg) -> ModelRequest {
        request(vec![Msg::user("hi"), last])
    }

    #[test]
    fn tool_inputs_are_always_objects() {
        let raw_object = ToolUseBlock {
            id: "a".into(),
            name: "f".into(),
            input: Value::Null.into(),
            raw_input: Some("{\"x\": 1}".into()),
        };
        assert_eq!(tool_use_block(&raw_object)["input"], json!({"x": 1}));
        let not_object = ToolUseBlock::new("a", "f", json!([1, 2]));
        assert_eq!(tool_use_block(&not_object)["input"], json!({}));
        let null = ToolUseBlock::new("a", "f", Value::Null);
        assert_eq!(tool_use_block(&null)["input"], json!({}));
    }

    #[test]
    fn data_urls() {
        assert_eq!(
            base64_data_url("data:image/webp;base64,UklGR"),
            Some(("image/webp".to_owned(), "UklGR"))
        );
        assert_eq!(base64_data_url("data:;base64,AAAA"), None);
        assert_eq!(base64_data_url("data:image/png,AAAA"), None);
        assert_eq!(base64_data_url("data:image/png;base64"), None);
    }
}
