//! Messages across the boundary, seen from the client: a local [`Msg`] out as A2A parts,
//! A2A parts and updates in as content blocks and stream events.

use a2a::{Message, Part, PartContent};
use agentscope::{ContentBlock, ImageBlock, Msg, Role, ToolResultBlock, ToolUseBlock};
use serde_json::Value;

use crate::convert::integral_numbers;

/// The metadata key of a message whose text is sent as an A2A data part (its JSON), set by
/// [`RemoteAgent::data_message`](crate::RemoteAgent::data_message).
pub(crate) const DATA_PART_KEY: &str = "a2a_data_part";

/// The parts a local message is sent as: its text blocks as text parts (as data parts for
/// a [data message](crate::RemoteAgent::data_message)), its images as URL parts. Thinking,
/// tool calls and tool results stay local.
pub(crate) fn outgoing(msg: &Msg) -> Vec<Part> {
    let as_data = msg.metadata.get(DATA_PART_KEY) == Some(&Value::Bool(true));
    msg.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) if as_data => {
                match serde_json::from_str::<Value>(&text.text) {
                    Ok(value) => Some(Part::data(value)),
                    Err(_) => Some(Part::text(text.text.as_str())),
                }
            }
            ContentBlock::Text(text) if !text.text.is_empty() => {
                Some(Part::text(text.text.as_str()))
            }
            ContentBlock::Image(image) => {
                let part = Part::url(image.url.clone());
                Some(match image_media_type(&image.url) {
                    Some(media_type) => part.with_media_type(media_type),
                    None => part,
                })
            }
            _ => None,
        })
        .collect()
}

/// The media type of an image URL: a data URL's own, else from the file extension.
fn image_media_type(url: &str) -> Option<String> {
    if let Some(rest) = url.strip_prefix("data:") {
        return rest
            .split([';', ','])
            .next()
            .filter(|media_type| media_type.starts_with("image/"))
            .map(str::to_owned);
    }
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let extension = path.rsplit_once('.').map(|(_, extension)| extension)?;
    let media_type = match extension {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        _ => return None,
    };
    Some(media_type.to_owned())
}

/// An earlier message of the conversation, as context for the remote agent: one text part
/// `"<name>: <text>"` (as it is when it names its speaker already, as a message a hub
/// delivered does). `None` for a message without text.
pub(crate) fn context_part(msg: &Msg) -> Option<Part> {
    let text = msg.text();
    if text.trim().is_empty() {
        return None;
    }
    let speaker = format!("{}: ", msg.name);
    Some(match text.starts_with(&speaker) {
        true => Part::text(text),
        false => Part::text(format!("{speaker}{text}")),
    })
}

/// The content blocks of received parts: text as text, data as its JSON text (integral
/// numbers as integers: data parts travel as protobuf `Struct`s, whose numbers are doubles),
/// URLs of an image type as images, other URLs as their text, raw bytes as a note of their
/// size.
pub(crate) fn blocks(parts: &[Part]) -> Vec<ContentBlock> {
    parts
        .iter()
        .map(|part| match &part.content {
            PartContent::Text(text) => ContentBlock::text(text.as_str()),
            PartContent::Data(value) => {
                ContentBlock::text(integral_numbers(value.clone()).to_string())
            }
            PartContent::Url(url)
                if part
                    .media_type
                    .as_deref()
                    .is_some_and(|media_type| media_type.starts_with("image/")) =>
            {
                ContentBlock::Image(ImageBlock { url: url.clone() })
            }
            PartContent::Url(url) => ContentBlock::text(url.as_str()),
            PartContent::Raw(bytes) => ContentBlock::text(format!(
                "[{} bytes of {}]",
                bytes.len(),
                part.media_type.as_deref().unwrap_or("data")
            )),
        })
        .collect()
}

/// The text parts of a message (a streamed text piece).
pub(crate) fn text_blocks(message: &Message) -> Vec<ContentBlock> {
    message
        .parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::Text(text) if !text.is_empty() => Some(ContentBlock::text(text.as_str())),
            _ => None,
        })
        .collect()
}

/// The tool calls a message carries as `{"toolCall": {"id", "name", "input"}}` data parts,
/// after its text (integral numbers of the inputs as integers).
pub(crate) fn tool_calls(message: &Message) -> Vec<ContentBlock> {
    let mut blocks = text_blocks(message);
    blocks.extend(message.parts.iter().filter_map(|part| {
        let call = data_field(part, "toolCall")?;
        Some(ContentBlock::ToolUse(ToolUseBlock::new(
            call.get("id").and_then(Value::as_str).unwrap_or_default(),
            call.get("name").and_then(Value::as_str).unwrap_or_default(),
            integral_numbers(call.get("input").cloned().unwrap_or(Value::Null)),
        )))
    }));
    blocks
}

/// The tool results a message carries as `{"toolResult": {"id", "name", "output",
/// "isError"}}` data parts; its other parts as content blocks.
pub(crate) fn tool_results(message: &Message) -> Vec<ToolResultBlock> {
    message
        .parts
        .iter()
        .map(|part| match data_field(part, "toolResult") {
            Some(result) => {
                let id = result.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = result
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let output = match result.get("output") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                let mut block = ToolResultBlock::text(id, name, output);
                block.is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
                block
            }
            None => ToolResultBlock {
                id: "".into(),
                name: "".into(),
                output: blocks(std::slice::from_ref(part)),
                is_error: false,
            },
        })
        .collect()
}

fn data_field<'a>(part: &'a Part, field: &str) -> Option<&'a Value> {
    match &part.content {
        PartContent::Data(value) => value.get(field),
        _ => None,
    }
}

/// An assistant message of the agent `name` holding `content`, with the id `id` when given.
pub(crate) fn agent_msg(name: &str, id: Option<&str>, content: Vec<ContentBlock>) -> Msg {
    let mut builder = Msg::builder()
        .role(Role::Assistant)
        .name(name)
        .blocks(content);
    if let Some(id) = id {
        builder = builder.id(id);
    }
    builder.build()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_images_and_data_messages_go_out_as_their_parts() {
        let msg = Msg::builder()
            .role(Role::User)
            .blocks(vec![
                ContentBlock::text("Look:"),
                ContentBlock::Image(ImageBlock {
                    url: "https://example.com/cat.JPG?size=2".into(),
                }),
                ContentBlock::thinking("hidden"),
            ])
            .build();
        assert_eq!(
            outgoing(&msg),
            vec![
                Part::text("Look:"),
                Part::url("https://example.com/cat.JPG?size=2").with_media_type("image/jpeg"),
            ]
        );
        let mut data = Msg::user(json!({"decisions": []}).to_string());
        data.metadata
            .insert(DATA_PART_KEY.to_owned(), Value::Bool(true));
        assert_eq!(outgoing(&data), vec![Part::data(json!({"decisions": []}))]);
        assert_eq!(
            image_media_type("data:image/png;base64,AAAA").as_deref(),
            Some("image/png")
        );
        assert_eq!(image_media_type("https://example.com/file.bin"), None);
    }

    #[test]
    fn received_parts_become_blocks() {
        let parts = [
            Part::text("Hi"),
            Part::data(json!({"a": 1.0, "b": 0.5})),
            Part::url("https://example.com/a.png").with_media_type("image/png"),
            Part::url("https://example.com/report.pdf"),
        ];
        assert_eq!(
            blocks(&parts),
            vec![
                ContentBlock::text("Hi"),
                ContentBlock::text("{\"a\":1,\"b\":0.5}"),
                ContentBlock::Image(ImageBlock {
                    url: "https://example.com/a.png".into()
                }),
                ContentBlock::text("https://example.com/report.pdf"),
            ]
        );
    }

    #[test]
    fn tool_calls_and_results_come_back_as_blocks() {
        let message = Message::new(
            a2a::Role::Agent,
            vec![
                Part::text("Adding."),
                Part::data(json!({"toolCall": {"id": "c1", "name": "add", "input": {"a": 1.0}}})),
            ],
        );
        assert_eq!(
            tool_calls(&message),
            vec![
                ContentBlock::text("Adding."),
                ContentBlock::ToolUse(ToolUseBlock::new("c1", "add", json!({"a": 1}))),
            ]
        );
        let result = Message::new(
            a2a::Role::Agent,
            vec![Part::data(
                json!({"toolResult": {"id": "c1", "name": "add", "output": "2", "isError": true}}),
            )],
        );
        let mut expected = ToolResultBlock::text("c1", "add", "2");
        expected.is_error = true;
        assert_eq!(tool_results(&result), vec![expected]);
    }
}
