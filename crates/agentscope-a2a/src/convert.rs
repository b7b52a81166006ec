//! Messages across the boundary: an A2A [`Message`] in, agentscope [`Msg`]s out as A2A
//! messages and parts.

use a2a::{A2AError, Message, Part, PartContent, Role as A2aRole};
use agentscope::{ContentBlock, ImageBlock, Msg, Role};
use serde_json::{Value, json};

/// The largest integer a double holds exactly (2^53).
const EXACT_DOUBLE: f64 = 9_007_199_254_740_992.0;

/// `value` with each integral number as an integer: data parts travel as protobuf
/// `Struct`s, whose numbers are doubles, so a client's `2` arrives as `2.0`, which a tool
/// reading an integer refuses. JSON does not tell `2` from `2.0`; beyond 2^53 a double is
/// not exact and stays as it is.
pub(crate) fn integral_numbers(value: Value) -> Value {
    match value {
        Value::Number(number) => match number.as_f64() {
            Some(x) if number.is_f64() && x.fract() == 0.0 && x.abs() <= EXACT_DOUBLE => {
                // In range and integral: the casts are exact.
                #[allow(clippy::cast_possible_truncation)]
                let integer = x as i64;
                Value::from(integer)
            }
            _ => Value::Number(number),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(integral_numbers).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key, integral_numbers(value)))
                .collect(),
        ),
        other => other,
    }
}

/// The user message of a turn: text parts as text, data parts as their JSON text (integral
/// numbers as integers, see [`integral_numbers`]), and URL
/// parts of an image type as images. Raw bytes and other files are refused, with the
/// part's position (never its content).
pub(crate) fn user_msg(message: &Message) -> Result<Msg, A2AError> {
    if message.role == A2aRole::Agent {
        return Err(A2AError::invalid_params(
            "the message of a request must have the role ROLE_USER",
        ));
    }
    let mut blocks = Vec::with_capacity(message.parts.len());
    for (index, part) in message.parts.iter().enumerate() {
        match &part.content {
            PartContent::Text(text) => blocks.push(ContentBlock::text(text.clone())),
            PartContent::Data(value) => {
                blocks.push(ContentBlock::text(
                    integral_numbers(value.clone()).to_string(),
                ));
            }
            PartContent::Url(url) if is_image(part) => {
                blocks.push(ContentBlock::Image(ImageBlock { url: url.clone() }));
            }
            PartContent::Url(_) | PartContent::Raw(_) => {
                return Err(A2AError::invalid_params(format!(
                    "part {index}: only text, data and image URL parts are accepted"
                )));
            }
        }
    }
    if blocks.is_empty() {
        return Err(A2AError::invalid_params("the message has no parts"));
    }
    Ok(Msg::builder()
        .id(message.message_id.as_str())
        .role(Role::User)
        .blocks(blocks)
        .build())
}

fn is_image(part: &Part) -> bool {
    part.media_type
        .as_deref()
        .is_some_and(|media_type| media_type.starts_with("image/"))
}

/// The parts of an agent's message: its text as one text part, each image as a URL part,
/// each tool call and tool result as a data part (`{"toolCall": ..}`, `{"toolResult": ..}`).
/// Thinking is not sent.
pub(crate) fn parts(msg: &Msg) -> Vec<Part> {
    let mut parts = Vec::new();
    let text = msg.text();
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
    for block in &msg.content {
        match block {
            ContentBlock::Image(image) => parts.push(Part::url(image.url.clone())),
            ContentBlock::ToolUse(call) => parts.push(Part::data(json!({"toolCall": {
                "id": call.id.as_str(),
                "name": call.name.as_str(),
                "input": call.input,
            }}))),
            ContentBlock::ToolResult(result) => parts.push(Part::data(json!({"toolResult": {
                "id": result.id.as_str(),
                "name": result.name.as_str(),
                "output": result.text_output(),
                "isError": result.is_error,
            }}))),
            _ => {}
        }
    }
    parts
}

/// An agent message of a task, with the agent's message id.
pub(crate) fn agent_message(
    msg: &Msg,
    parts: Vec<Part>,
    task_id: &str,
    context_id: &str,
) -> Message {
    // Built whole: `Message::new` would make a random id only to have it replaced.
    Message {
        message_id: msg.id.to_string(),
        context_id: Some(context_id.to_owned()),
        task_id: Some(task_id.to_owned()),
        role: A2aRole::Agent,
        parts,
        metadata: None,
        extensions: None,
        reference_task_ids: None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentscope::{ToolResultBlock, ToolUseBlock};

    #[test]
    fn a_user_message_becomes_a_msg_with_its_id() {
        let mut message = Message::new(
            A2aRole::User,
            vec![
                Part::text("Describe"),
                Part::data(json!({"n": 1})),
                Part::url("https://example.com/a.png").with_media_type("image/png"),
            ],
        );
        message.message_id = "m-1".into();
        let msg = user_msg(&message).unwrap();
        assert_eq!(msg.id.as_str(), "m-1");
        assert_eq!(msg.role, Role::User);
        assert_eq!(
            msg.content,
            vec![
                ContentBlock::text("Describe"),
                ContentBlock::text("{\"n\":1}"),
                ContentBlock::Image(ImageBlock {
                    url: "https://example.com/a.png".into()
                }),
            ]
        );
    }

    #[test]
    fn integral_doubles_become_integers_and_others_stay() {
        let value = json!({"a": 2.0, "b": [-3.0, 0.5], "c": {"d": 1e300, "e": 7}, "f": "2.0"});
        assert_eq!(
            serde_json::to_string(&integral_numbers(value)).unwrap(),
            r#"{"a":2,"b":[-3,0.5],"c":{"d":1e+300,"e":7},"f":"2.0"}"#
        );
    }

    #[test]
    fn raw_parts_and_agent_roles_are_refused() {
        let raw = Message::new(A2aRole::User, vec![Part::text("a"), Part::raw(vec![1, 2])]);
        assert_eq!(
            user_msg(&raw).unwrap_err().message,
            "part 1: only text, data and image URL parts are accepted"
        );
        let agent = Message::new(A2aRole::Agent, vec![Part::text("a")]);
        assert_eq!(
            user_msg(&agent).unwrap_err().message,
            "the message of a request must have the role ROLE_USER"
        );
    }

    #[test]
    fn tool_calls_and_results_become_data_parts() {
        let call = ToolUseBlock::new("c1", "add", json!({"a": 1}));
        let msg = Msg::new(
            Role::Assistant,
            "assistant",
            vec![ContentBlock::text("Adding."), call.into()],
        );
        assert_eq!(
            parts(&msg),
            vec![
                Part::text("Adding."),
                Part::data(json!({"toolCall": {"id": "c1", "name": "add", "input": {"a": 1}}})),
            ]
        );
        let result = Msg::tool_result(ToolResultBlock::text("c1", "add", "2"));
        assert_eq!(
            parts(&result),
            vec![Part::data(
                json!({"toolResult": {"id": "c1", "name": "add", "output": "2", "isError": false}})
            )]
        );
    }
}
