//! A2A tasks as views of served runs: a task is a [`Run`] of its context's session (the
//! serving core keeps it there, written with the conversation), rendered with the messages
//! of the conversation; its id names its context, so any instance finds it with one load.

use a2a::{Artifact, Message, Part, Role as A2aRole, Task, TaskState, TaskStatus};
use agentscope::{Msg, Role, ToolUseBlock};
use agentscope_serving::{Run, RunEvent, RunState, run_part};
use serde_json::Value;

use crate::approvals::Question;
use crate::convert;

/// The id of the artifact that holds a task's reply.
pub(crate) const REPLY_ARTIFACT_ID: &str = "reply";
/// The protocol name of A2A runs in a session's runs.
pub(crate) const PROTOCOL: &str = "a2a";
/// The metadata key of a user message given to the agent: the task it started.
pub(crate) const TASK_KEY: &str = "a2a_task_id";
/// The metadata key of a user message holding its A2A form, when its parts do not all
/// come back from the message's content (data parts, which the model reads as JSON text).
pub(crate) const MESSAGE_KEY: &str = "a2a_message";
/// Between a task id's context and its own part.
const SEPARATOR: char = '~';

/// A new task id in `context`: `<context>~<32 hex digits>` (random), so a task's context,
/// and the session holding it, is read from its id. A context id has no `~` (it names a
/// session).
pub(crate) fn new_task_id(context: &str) -> String {
    format!("{context}{SEPARATOR}{}", uuid::Uuid::new_v4().simple())
}

/// The context of task `id`, when `id` is a task id of this server.
pub(crate) fn context_of(id: &str) -> Option<&str> {
    let (context, own) = id.rsplit_once(SEPARATOR)?;
    let well_formed =
        !context.is_empty() && own.len() == 32 && own.bytes().all(|b| b.is_ascii_hexdigit());
    well_formed.then_some(context)
}

/// Task `run` of context `context` (session `session`), as A2A shows it: its history (the
/// messages it received, the questions it asked, and the message that ended its turn), its
/// status, and its reply as the `reply` artifact.
pub(crate) fn render(run: &Run, messages: &[Msg], context: &str, session: &str) -> Task {
    let part = run_part(run, messages);
    let find = |id: &str| messages.iter().rev().find(|msg| msg.id == id);
    let mut history = Vec::new();
    let mut asked = 0;
    let mut question = None;
    for event in &run.events {
        match event {
            RunEvent::Received { id, data } => {
                let message = match data {
                    Some(data) => serde_json::from_value::<Message>(data.clone()).ok(),
                    None => find(id).map(|msg| user_message(msg, &run.id, context)),
                };
                history.extend(message);
            }
            RunEvent::Asked {
                approvals,
                in_doubt,
                problem,
            } => {
                asked += 1;
                let calls = |ids: &[String]| -> Vec<ToolUseBlock> {
                    ids.iter()
                        .filter_map(|id| {
                            messages
                                .iter()
                                .rev()
                                .flat_map(Msg::tool_uses)
                                .find(|call| call.id == id.as_str())
                                .cloned()
                        })
                        .collect()
                };
                let parts = Question {
                    approvals: calls(approvals),
                    in_doubt: calls(in_doubt),
                    session: session.to_owned(),
                }
                .question(problem.as_deref());
                let message = agent_text(
                    &format!("{}-asked-{asked}", run.id),
                    &run.id,
                    context,
                    parts,
                );
                history.push(message.clone());
                question = Some(message);
            }
            _ => {}
        }
    }
    let mut artifacts = None;
    let (state, message) = match &run.state {
        RunState::Working => (TaskState::Working, None),
        RunState::InputRequired => (TaskState::InputRequired, question),
        RunState::Completed { reply } => {
            let reply =
                find(reply).or_else(|| part.iter().rev().find(|msg| msg.role == Role::Assistant));
            let message = reply.map(|reply| {
                let parts = reply_parts(reply);
                artifacts = Some(vec![reply_artifact(parts.clone())]);
                convert::agent_message(reply, parts, &run.id, context)
            });
            (TaskState::Completed, message)
        }
        RunState::Canceled { reply } => {
            let message = match reply.as_deref().and_then(find) {
                Some(reply) => convert::agent_message(reply, reply_parts(reply), &run.id, context),
                None => agent_text(
                    &format!("{}-canceled", run.id),
                    &run.id,
                    context,
                    vec![Part::text("The task was canceled.")],
                ),
            };
            (TaskState::Canceled, Some(message))
        }
        RunState::Failed { reason, .. } => (
            TaskState::Failed,
            Some(agent_text(
                &format!("{}-failed", run.id),
                &run.id,
                context,
                vec![Part::text(reason.as_str())],
            )),
        ),
        RunState::Rejected { reason } => (
            TaskState::Rejected,
            Some(agent_text(
                &format!("{}-rejected", run.id),
                &run.id,
                context,
                vec![Part::text(reason.as_str())],
            )),
        ),
        _ => (TaskState::Unspecified, None),
    };
    // The message that ends a turn joins the history once (a question is there already).
    if let Some(message) = &message
        && state != TaskState::InputRequired
        && !history.iter().any(|m| m.message_id == message.message_id)
    {
        history.push(message.clone());
    }
    Task {
        id: run.id.clone(),
        context_id: context.to_owned(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some(run.updated),
        },
        artifacts,
        history: Some(history),
        metadata: None,
    }
}

/// The parts of a reply (one empty text part for a reply with none).
pub(crate) fn reply_parts(reply: &Msg) -> Vec<Part> {
    let mut parts = convert::parts(reply);
    if parts.is_empty() {
        parts.push(Part::text(""));
    }
    parts
}

/// The `reply` artifact holding `parts`.
pub(crate) fn reply_artifact(parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: REPLY_ARTIFACT_ID.to_owned(),
        name: Some("reply".to_owned()),
        description: None,
        parts,
        metadata: None,
        extensions: None,
    }
}

/// A user message of the conversation as the task received it: its A2A form when it was
/// kept (a message with data parts), else its content (text and images).
fn user_message(msg: &Msg, task: &str, context: &str) -> Message {
    if let Some(kept) = msg
        .metadata
        .get(MESSAGE_KEY)
        .and_then(|value| serde_json::from_value::<Message>(value.clone()).ok())
    {
        return kept;
    }
    let parts = msg
        .content
        .iter()
        .filter_map(|block| match block {
            agentscope::ContentBlock::Text(text) => Some(Part::text(text.text.as_str())),
            agentscope::ContentBlock::Image(image) => Some(Part::url(image.url.clone())),
            _ => None,
        })
        .collect();
    Message {
        message_id: msg.id.to_string(),
        context_id: Some(context.to_owned()),
        task_id: Some(task.to_owned()),
        role: A2aRole::User,
        parts,
        metadata: None,
        extensions: None,
        reference_task_ids: None,
    }
}

/// An agent message of a task made of `parts`, with id `id`.
pub(crate) fn agent_text(id: &str, task: &str, context: &str, parts: Vec<Part>) -> Message {
    Message {
        message_id: id.to_owned(),
        context_id: Some(context.to_owned()),
        task_id: Some(task.to_owned()),
        role: A2aRole::Agent,
        parts,
        metadata: None,
        extensions: None,
        reference_task_ids: None,
    }
}

/// A received message in its A2A form, for a run's record (messages the conversation does
/// not keep: answers, messages not given to the agent).
pub(crate) fn received(message: &Message) -> RunEvent {
    RunEvent::Received {
        id: message.message_id.clone(),
        data: serde_json::to_value(message).ok().filter(|v| !v.is_null()),
    }
}

/// Whether `message` has parts the model's text does not give back as they were (data
/// parts): its A2A form is kept with the user message.
pub(crate) fn keeps_its_form(message: &Message) -> bool {
    message
        .parts
        .iter()
        .any(|part| !matches!(part.content, a2a::PartContent::Text(_)) && !is_image_url(part))
}

fn is_image_url(part: &Part) -> bool {
    matches!(part.content, a2a::PartContent::Url(_))
        && part
            .media_type
            .as_deref()
            .is_some_and(|media| media.starts_with("image/"))
}

/// Cuts `task`'s history to its last `length` messages (0: none), as a request asks.
pub(crate) fn limit_history(task: &mut Task, length: Option<i32>) {
    let Some(length) = length else {
        return;
    };
    let keep = usize::try_from(length).unwrap_or(0);
    if let Some(history) = task.history.as_mut()
        && history.len() > keep
    {
        history.drain(..history.len() - keep);
    }
}

/// The value of a data part holding `value`, as the SDK carries it.
pub(crate) fn data_value(message: &Message, key: &str) -> Option<Value> {
    message.parts.iter().find_map(|part| match &part.content {
        a2a::PartContent::Data(value) => value.get(key).cloned(),
        _ => None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_names_its_context() {
        let id = new_task_id("ctx.one-2");
        assert_eq!(context_of(&id), Some("ctx.one-2"));
        assert_eq!(context_of("ctx~abc"), None);
        assert_eq!(context_of("~0123456789abcdef0123456789abcdef"), None);
        assert_eq!(context_of("no-separator"), None);
        assert_ne!(new_task_id("c"), new_task_id("c"));
    }
}
