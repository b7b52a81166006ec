//! One call of a remote agent: the call's input sent as one A2A message in the agent's
//! context (on the task that asked, when one did), the updates mapped to stream events,
//! the task's end mapped to the reply or the error. Where the conversation stands is read
//! from the agent's memory: each reply records its context, task and state.

use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use a2a::{
    A2AError, Artifact, Message, Part, PartContent, StreamResponse, TaskState, TaskStatus,
    error_code,
};
use agentscope::{
    AgentError, CancellationToken, ContentBlock, Event, EventType, Msg, Reply, ReplyContext, Role,
};
use futures::StreamExt;
use futures::future::{Either, select};
use serde_json::{Map, Value, json};

use super::client::Connection;
use super::http::Updates;
use super::parts;
use super::question::{self, Asked};

/// The metadata key under which a remote agent's reply records where the conversation
/// stands: `{"contextId", "taskId", "state"}`.
pub(crate) const A2A_KEY: &str = "a2a";

/// How long a cancel of the remote task may take before the interrupted call ends anyway.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an interrupted call waits for the remote task's id, when it has none yet.
const TASK_ID_TIMEOUT: Duration = Duration::from_secs(5);

/// The state names replies record (as the A2A guide writes them).
pub(crate) const COMPLETED: &str = "completed";
pub(crate) const INPUT_REQUIRED: &str = "input-required";
pub(crate) const AUTH_REQUIRED: &str = "auth-required";
/// The state a question's end records when the caller gave it up
/// ([`RemoteAgent::abandon_question`](crate::RemoteAgent::abandon_question)).
pub(crate) const ABANDONED: &str = "abandoned";
/// The state a question's end records when the remote agent no longer knows its task.
const UNKNOWN: &str = "unknown";

/// A note in memory that the question of task `task` is over without an answer (its task
/// ended in `state`, or the caller abandoned it): an assistant message of the agent `name`
/// recording where the conversation stands, so that the next call starts a new task in
/// `context` instead of answering a task that cannot take it.
pub(crate) fn question_ended(name: &str, context: Option<&str>, task: &str, state: &str) -> Msg {
    let text = match state {
        ABANDONED => format!("(The question of the remote task {task} was abandoned.)"),
        UNKNOWN => format!(
            "(The remote task {task} that asked the question is no longer known to the remote \
             agent.)"
        ),
        state => format!(
            "(The remote task {task} that asked the question has ended ({state}): the question \
             is over.)"
        ),
    };
    let mut note = parts::agent_msg(name, None, vec![ContentBlock::text(text)]);
    note.metadata.insert(
        A2A_KEY.to_owned(),
        json!({"contextId": context, "taskId": task, "state": state}),
    );
    note
}

/// Where the conversation with the remote agent stands, read from memory.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Standing {
    /// The remote context of the conversation, once a reply recorded one.
    pub(crate) context_id: Option<String>,
    /// The remote task waiting for an answer: the last reply's, when it asked a question.
    pub(crate) waiting_task: Option<String>,
    /// The index of the agent's last reply in memory.
    pub(crate) last_reply: Option<usize>,
}

/// Where the conversation of the agent `name` stands in `memory`.
pub(crate) fn standing(memory: &[Msg], name: &str) -> Standing {
    let mut standing = Standing::default();
    for (index, msg) in memory.iter().enumerate().rev() {
        if msg.role != Role::Assistant || msg.name.as_str() != name {
            continue;
        }
        let latest = standing.last_reply.is_none();
        if latest {
            standing.last_reply = Some(index);
        }
        let Some(recorded) = msg.metadata.get(A2A_KEY) else {
            continue;
        };
        let field = |key: &str| recorded.get(key).and_then(Value::as_str).map(str::to_owned);
        standing.context_id = field("contextId");
        let state = field("state");
        if latest && matches!(state.as_deref(), Some(INPUT_REQUIRED | AUTH_REQUIRED)) {
            standing.waiting_task = field("taskId");
        }
        break;
    }
    standing
}

/// The running call's own interrupt: an interrupt of a remote agent cancels the remote
/// task before the call ends, rather than dropping the call at once.
#[derive(Debug, Default)]
pub(crate) struct Running(Mutex<Option<CancellationToken>>);

impl Running {
    /// Interrupts the running call; `false` when no call is running.
    pub(crate) fn interrupt(&self) -> bool {
        match &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    fn start(self: &Arc<Self>) -> RunningGuard {
        let token = CancellationToken::new();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
        RunningGuard {
            running: Arc::clone(self),
            token,
        }
    }
}

struct RunningGuard {
    running: Arc<Running>,
    token: CancellationToken,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        *self
            .running
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// The reply of a remote agent's local agent.
pub(crate) struct RemoteReply {
    pub(crate) connection: Arc<Connection>,
    pub(crate) running: Arc<Running>,
}

impl Reply for RemoteReply {
    async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        let name = cx.agent().name().to_owned();
        let memory = cx.memory().messages();
        let standing = standing(&memory, &name);
        // What was said since the agent's last reply (observed messages), then the input.
        let earlier = standing.last_reply.map_or(0, |at| at + 1)
            ..memory.len().saturating_sub(cx.input().len());
        let mut sent: Vec<Part> = memory
            .get(earlier)
            .unwrap_or_default()
            .iter()
            .filter_map(parts::context_part)
            .collect();
        sent.extend(cx.input().iter().flat_map(parts::outgoing));
        if sent.is_empty() {
            return Err(AgentError::invalid_input(
                "nothing to send to the remote agent: the input has no text, data or image",
            ));
        }
        let mut message = Message::new(a2a::Role::User, sent);
        // The input's id is the message's: the same message sent again (a call retried
        // with the same input, a tool call retried with its idempotency key) is known as
        // such by the remote agent, which does not run it again.
        if let Some(last) = cx.input().last() {
            message.message_id = last.id.to_string();
        }
        message.context_id = standing.context_id.clone();
        message.task_id = standing.waiting_task.clone();

        let guard = self.running.start();
        let mut turn = Turn::new(
            Arc::clone(&self.connection),
            name,
            standing.waiting_task,
            standing.context_id,
        );
        {
            let sent = pin!(self.connection.send(message));
            match select(sent, pin!(guard.token.cancelled())).await {
                Either::Left((Ok(updates), _)) => turn.updates = Some(updates),
                Either::Left((Err(error), _)) => return Err(turn.refused(cx, &error).await),
                Either::Right(_) => {
                    turn.cancel().await;
                    return Err(AgentError::Interrupted);
                }
            }
        }
        loop {
            turn.follow(&guard, cx).await?;
            // The remote agent had this message already: its answer is the task the
            // message started, followed from where it is.
            let Some(original) = turn.duplicate_of.take() else {
                break;
            };
            turn.end = None;
            turn.artifacts.clear();
            turn.polling = false;
            match self.connection.resume(&original).await {
                Ok(updates) => turn.updates = Some(updates),
                Err(error) => return Err(turn.unreachable(&error)),
            }
        }
        match turn.end.take() {
            Some(End::Reply(reply)) => {
                cx.say(reply.clone()).await;
                Ok(reply)
            }
            Some(End::Failed(message)) => {
                // The task that asked ended without taking the answer: its question is
                // over, and the next call must not answer it again.
                if let (Some(task), Some(state)) = (&turn.answering, turn.answered_end) {
                    let note = question_ended(&turn.name, turn.context_id.as_deref(), task, state);
                    cx.memory().add(note);
                }
                Err(AgentError::failed(message))
            }
            None => Err(turn.ended_early()),
        }
    }
}

impl Turn {
    fn new(
        connection: Arc<Connection>,
        name: String,
        answering: Option<String>,
        context_id: Option<String>,
    ) -> Self {
        Turn {
            connection,
            name,
            task_id: answering.clone(),
            context_id,
            artifacts: Vec::new(),
            state: TaskState::Submitted,
            end: None,
            updates: None,
            duplicate_of: None,
            answering,
            answered_end: None,
            followed: Vec::new(),
            polling: false,
        }
    }

    /// Reads the remote agent's updates until the task ends or asks, relaying its
    /// progress as stream events. A stream that ends before the task did is followed on
    /// by polling the task, once its id is known.
    async fn follow(
        &mut self,
        guard: &RunningGuard,
        cx: &mut ReplyContext<'_, '_>,
    ) -> Result<(), AgentError> {
        let turn = self;
        while turn.end.is_none() {
            let Some(updates) = turn.updates.as_mut() else {
                return Err(turn.ended_early());
            };
            let next = match select(updates.next(), pin!(guard.token.cancelled())).await {
                Either::Left((next, _)) => next,
                Either::Right(_) => {
                    turn.cancel().await;
                    return Err(AgentError::Interrupted);
                }
            };
            match next {
                Some(Ok(update)) => {
                    for event in turn.apply(update) {
                        cx.emit(event).await;
                    }
                }
                Some(Err(error)) => return Err(turn.unreachable(&error)),
                None => match turn.task_id.clone() {
                    Some(task_id) if !turn.polling => {
                        turn.polling = true;
                        turn.updates = Some(turn.connection.poll(&task_id));
                    }
                    _ => return Err(turn.ended_early()),
                },
            }
        }
        Ok(())
    }

    /// The error of a message the remote agent refused. A message that answered a
    /// question is refused when the task that asked has ended (a server that restarted
    /// and failed it, a duplicate that ended it) or is gone: the task is read to tell, and
    /// then its question is over (a note in memory says so, and the next call starts a
    /// new task). The answer is not sent again on its own: sent as a new task it would
    /// reach the remote agent out of the question it answered.
    async fn refused(&mut self, cx: &mut ReplyContext<'_, '_>, error: &A2AError) -> AgentError {
        // Nothing was started: dropped, the turn leaves the task that asked as it is.
        self.task_id = None;
        let refusal = self.unreachable(error);
        let Some(task) = self.answering.clone() else {
            return refusal;
        };
        let state = match self.connection.get_task(&task).await {
            Ok(found) if found.status.state.is_terminal() => state_name(&found.status.state),
            Err(gone) if gone.code == error_code::TASK_NOT_FOUND => UNKNOWN,
            _ => return refusal,
        };
        cx.memory().add(question_ended(
            &self.name,
            self.context_id.as_deref(),
            &task,
            state,
        ));
        let why = match state {
            UNKNOWN => "is no longer known to it".to_owned(),
            state => format!("has ended ({state})"),
        };
        AgentError::failed(self.connection.scrub(format!(
            "the remote agent '{}' cannot take the answer: its task {task}, which asked the \
             question, {why}, so the answer was not given to it. The question is dropped: the \
             next call starts a new task in the context. ({})",
            self.name, error.message
        )))
    }
}

/// The task a rejection names as the one that received the message before (an
/// agentscope-rs server's `{"duplicateOf": {"messageId", "taskId"}}` data part).
fn duplicate_of(message: Option<&Message>) -> Option<String> {
    message?.parts.iter().find_map(|part| match &part.content {
        PartContent::Data(data) => data["duplicateOf"]["taskId"]
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_owned),
        _ => None,
    })
}

/// How a task ended for the caller.
enum End {
    /// The answer, or the question of a task that waits for input.
    Reply(Msg),
    /// Why the task failed, was rejected or canceled.
    Failed(String),
}

/// One exchange with the remote agent. Dropped before the task ended (the call dropped or
/// interrupted by the local agent), it cancels the task in the background.
struct Turn {
    connection: Arc<Connection>,
    name: String,
    task_id: Option<String>,
    context_id: Option<String>,
    /// The task's artifacts so far, in the order they came.
    artifacts: Vec<Artifact>,
    state: TaskState,
    end: Option<End>,
    /// The remote agent's answer, once it started.
    updates: Option<Updates>,
    /// The task that received the message before, when the remote agent refused it as
    /// sent again.
    duplicate_of: Option<String>,
    /// The task whose question the message answers, if it answers one.
    answering: Option<String>,
    /// The terminal state that task reached in this turn, if it did.
    answered_end: Option<&'static str>,
    /// The tasks followed as the ones that received the message before (each once).
    followed: Vec<String>,
    /// Whether the task is followed by polling (its stream ended before it did).
    polling: bool,
}

impl Drop for Turn {
    fn drop(&mut self) {
        // A task that ended, or asks a question, is left as it is.
        let asks = matches!(
            self.state,
            TaskState::InputRequired | TaskState::AuthRequired
        );
        if self.end.is_some() || self.state.is_terminal() || asks {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut turn = Turn::new(
            Arc::clone(&self.connection),
            std::mem::take(&mut self.name),
            None,
            None,
        );
        turn.task_id = self.task_id.take();
        turn.updates = self.updates.take();
        turn.state = TaskState::Canceled;
        if turn.task_id.is_none() && turn.updates.is_none() {
            return;
        }
        runtime.spawn(async move { turn.cancel().await });
    }
}

/// Cancels the remote task `task_id`, logging (without secrets) when that fails; the task
/// as the remote agent answered.
pub(crate) async fn cancel(connection: &Connection, task_id: &str) -> Option<a2a::Task> {
    match tokio::time::timeout(CANCEL_TIMEOUT, connection.cancel(task_id)).await {
        Ok(Ok(task)) => Some(task),
        Ok(Err(error)) => {
            tracing::warn!(
                agent = connection.name(),
                task = task_id,
                error = %connection.scrub(error.message),
                "the remote task could not be canceled"
            );
            None
        }
        Err(_) => {
            tracing::warn!(
                agent = connection.name(),
                task = task_id,
                "the remote task's cancel did not answer in time"
            );
            None
        }
    }
}

impl Turn {
    /// Cancels the task and waits for the answer. A task whose id has not come yet is
    /// waited for (at most 5 s) on the answer's stream.
    async fn cancel(&mut self) {
        if self.task_id.is_none()
            && let Some(updates) = self.updates.as_mut()
        {
            let known = async {
                while let Some(Ok(update)) = updates.next().await {
                    if let Some(id) = task_id_of(&update) {
                        return Some(id);
                    }
                }
                None
            };
            self.task_id = tokio::time::timeout(TASK_ID_TIMEOUT, known)
                .await
                .ok()
                .flatten();
        }
        // The id stays until the cancel is answered: dropped meanwhile (the local engine
        // drops an interrupted tool at once), the turn cancels in the background.
        if let Some(task_id) = self.task_id.clone() {
            cancel(&self.connection, &task_id).await;
        }
        self.state = TaskState::Canceled;
        self.task_id = None;
        self.updates = None;
    }

    fn ids(&mut self, task_id: &str, context_id: &str) {
        if !task_id.is_empty() {
            self.task_id = Some(task_id.to_owned());
        }
        if !context_id.is_empty() {
            self.context_id = Some(context_id.to_owned());
        }
    }

    /// One update: the stream events it makes, and the end it may bring.
    fn apply(&mut self, update: StreamResponse) -> Vec<Event> {
        match update {
            StreamResponse::Task(task) => {
                self.ids(&task.id, &task.context_id);
                if let Some(artifacts) = task.artifacts {
                    self.artifacts = artifacts;
                }
                self.status(task.status, None)
            }
            StreamResponse::Message(message) => {
                if let Some(context_id) = &message.context_id {
                    self.context_id = Some(context_id.clone());
                }
                self.state = TaskState::Completed;
                let reply = self.reply(parts::blocks(&message.parts), COMPLETED, None);
                self.end = Some(End::Reply(reply));
                Vec::new()
            }
            StreamResponse::StatusUpdate(update) => {
                self.ids(&update.task_id, &update.context_id);
                let kind = update
                    .metadata
                    .as_ref()
                    .and_then(|metadata| metadata.get(KIND))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.status(update.status, kind.as_deref())
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.ids(&update.task_id, &update.context_id);
                let artifact = update.artifact;
                match self
                    .artifacts
                    .iter_mut()
                    .find(|known| known.artifact_id == artifact.artifact_id)
                {
                    Some(known) if update.append == Some(true) => {
                        known.parts.extend(artifact.parts);
                    }
                    Some(known) => *known = artifact,
                    None => self.artifacts.push(artifact),
                }
                Vec::new()
            }
        }
    }

    /// A status: progress while the task works, else its end.
    fn status(&mut self, status: TaskStatus, kind: Option<&str>) -> Vec<Event> {
        self.state = status.state.clone();
        if status.state.is_terminal() && self.task_id.is_some() && self.task_id == self.answering {
            self.answered_end = Some(state_name(&status.state));
        }
        let message = status.message;
        match status.state {
            TaskState::Submitted | TaskState::Working | TaskState::Unspecified => message
                .map(|message| self.progress(&message, kind))
                .unwrap_or_default(),
            TaskState::Completed => {
                let from_artifacts: Vec<Part> = self
                    .artifacts
                    .iter()
                    .flat_map(|artifact| artifact.parts.iter().cloned())
                    .collect();
                let content = if from_artifacts.is_empty() {
                    message
                        .map(|message| parts::blocks(&message.parts))
                        .unwrap_or_default()
                } else {
                    parts::blocks(&from_artifacts)
                };
                self.end = Some(End::Reply(self.reply(content, COMPLETED, None)));
                Vec::new()
            }
            TaskState::InputRequired | TaskState::AuthRequired => {
                let state = match status.state {
                    TaskState::AuthRequired => AUTH_REQUIRED,
                    _ => INPUT_REQUIRED,
                };
                let (asked, rest) = message
                    .map(|message| question::split(&message.parts))
                    .unwrap_or_default();
                let content = parts::blocks(&rest);
                self.end = Some(End::Reply(self.reply(content, state, Some(asked))));
                Vec::new()
            }
            TaskState::Rejected if duplicate_of(message.as_ref()).is_some() => {
                let original = duplicate_of(message.as_ref()).unwrap_or_default();
                // A rejection naming the rejected task itself (or a task already followed)
                // has nothing to follow: following it would read the same rejection again.
                let itself = self.task_id.as_deref() == Some(original.as_str());
                if itself || self.followed.contains(&original) {
                    self.end = Some(End::Failed(format!(
                        "the remote agent '{}' rejected the message as one it had received \
                         already, naming {} ({original}) as the task that received it: \
                         that task has ended",
                        self.name,
                        if itself {
                            "this very task"
                        } else {
                            "a task it named before"
                        }
                    )));
                    return Vec::new();
                }
                self.followed.push(original.clone());
                self.duplicate_of = Some(original);
                self.end = Some(End::Failed(format!(
                    "the remote agent '{}' had the message already",
                    self.name
                )));
                Vec::new()
            }
            TaskState::Failed | TaskState::Rejected | TaskState::Canceled => {
                let verb = match status.state {
                    TaskState::Failed => "failed",
                    TaskState::Rejected => "rejected",
                    _ => "canceled",
                };
                let reason = message
                    .map(|message| {
                        parts::blocks(&message.parts)
                            .iter()
                            .filter_map(|block| block.as_text())
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .filter(|reason| !reason.trim().is_empty())
                    .map(|reason| format!(": {reason}"))
                    .unwrap_or_default();
                self.end = Some(End::Failed(self.connection.scrub(format!(
                    "the remote agent '{}' {verb} the task{reason}",
                    self.name
                ))));
                Vec::new()
            }
        }
    }

    /// A `working` update's message as stream events, by its `agentscope.kind` (what an
    /// agentscope-rs server sends); plain text otherwise.
    fn progress(&self, message: &Message, kind: Option<&str>) -> Vec<Event> {
        let id = Some(message.message_id.as_str()).filter(|id| !id.is_empty());
        let event = Event::new;
        match kind {
            Some("tool_call") => vec![event(
                EventType::Reasoning,
                parts::agent_msg(&self.name, id, parts::tool_calls(message)),
                true,
            )],
            Some(kind @ ("tool_progress" | "tool_result")) => parts::tool_results(message)
                .into_iter()
                .map(|result| {
                    event(
                        EventType::ToolResult,
                        Msg::tool_result(result),
                        kind == "tool_result",
                    )
                })
                .collect(),
            Some("text_delta") => {
                let blocks = parts::text_blocks(message);
                if blocks.is_empty() {
                    return Vec::new();
                }
                vec![event(
                    EventType::Reasoning,
                    parts::agent_msg(&self.name, id, blocks),
                    false,
                )]
            }
            _ => {
                let blocks = parts::blocks(&message.parts);
                if blocks.is_empty() {
                    return Vec::new();
                }
                vec![event(
                    EventType::Reasoning,
                    parts::agent_msg(&self.name, id, blocks),
                    false,
                )]
            }
        }
    }

    /// The reply: `content` from this agent, recording where the conversation stands and,
    /// for a question, the calls it asks about (why the agent stopped says which).
    fn reply(&self, content: Vec<ContentBlock>, state: &str, asked: Option<Asked>) -> Msg {
        let asked = asked.unwrap_or_default();
        let reason = asked.reason();
        let mut recorded = Map::new();
        recorded.insert("contextId".to_owned(), json!(self.context_id));
        recorded.insert("taskId".to_owned(), json!(self.task_id));
        recorded.insert("state".to_owned(), json!(state));
        asked.record(&mut recorded);
        let mut reply = parts::agent_msg(&self.name, None, content).with_generate_reason(reason);
        reply
            .metadata
            .insert(A2A_KEY.to_owned(), Value::Object(recorded));
        reply
    }

    /// The remote agent could not be reached, or answered with an error.
    fn unreachable(&mut self, error: &A2AError) -> AgentError {
        AgentError::failed(self.connection.scrub(format!(
            "calling the remote agent '{}' at {} failed: {}",
            self.name,
            self.connection.shown_url(),
            error.message
        )))
    }

    /// The stream ended before the task did.
    fn ended_early(&self) -> AgentError {
        AgentError::failed(format!(
            "the remote agent '{}' ended its stream before the task finished (last state: {})",
            self.name,
            state_name(&self.state)
        ))
    }
}

/// The task id an update names, if any.
fn task_id_of(update: &StreamResponse) -> Option<String> {
    let id = match update {
        StreamResponse::Task(task) => &task.id,
        StreamResponse::StatusUpdate(update) => &update.task_id,
        StreamResponse::ArtifactUpdate(update) => &update.task_id,
        StreamResponse::Message(message) => message.task_id.as_ref()?,
    };
    (!id.is_empty()).then(|| id.clone())
}

/// The metadata key saying what a `working` update of an agentscope-rs server carries.
const KIND: &str = "agentscope.kind";

fn state_name(state: &TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => COMPLETED,
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => INPUT_REQUIRED,
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => AUTH_REQUIRED,
        TaskState::Unspecified => "unspecified",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn reply(name: &str, recorded: Option<Value>) -> Msg {
        let mut msg = Msg::builder()
            .role(Role::Assistant)
            .name(name)
            .text("...")
            .build();
        if let Some(recorded) = recorded {
            msg.metadata.insert(A2A_KEY.to_owned(), recorded);
        }
        msg
    }

    #[test]
    fn the_last_reply_says_where_the_conversation_stands() {
        assert_eq!(standing(&[Msg::user("hi")], "remote"), Standing::default());
        let asked = json!({"contextId": "ctx", "taskId": "t1", "state": INPUT_REQUIRED});
        let memory = vec![
            Msg::user("hi"),
            reply("remote", Some(asked.clone())),
            reply("someone-else", None),
            Msg::user("yes"),
        ];
        assert_eq!(
            standing(&memory, "remote"),
            Standing {
                context_id: Some("ctx".into()),
                waiting_task: Some("t1".into()),
                last_reply: Some(1),
            }
        );
        // An interrupted reply after the question: the context goes on, the task does not.
        let memory = vec![reply("remote", Some(asked)), reply("remote", None)];
        assert_eq!(
            standing(&memory, "remote"),
            Standing {
                context_id: Some("ctx".into()),
                waiting_task: None,
                last_reply: Some(1),
            }
        );
    }
}
