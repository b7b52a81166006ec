//! One task turn: what a message does to its context (decided by the serving core's rules
//! under the session's lease: [`decide`]), and the call's events as A2A updates
//! ([`Mapper`]).

use std::collections::HashMap;

use a2a::{
    A2AError, Message, Part, PartContent, StreamResponse, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use agentscope::hooks::ToolApprovalHook;
use agentscope::{CallInput, ContentBlock, Event, EventType, Msg, ToolUseBlock};
use agentscope_serving::{Decision, Run, RunEvent, RunState};
use serde_json::Value;

use crate::approvals::{Answer, Question};
use crate::convert;
use crate::task::{self, MESSAGE_KEY, PROTOCOL, TASK_KEY};

/// One message sent to the agent.
pub(crate) struct Request {
    /// The message as received.
    pub(crate) message: Message,
    /// The message as the agent would read it, or why it cannot read it.
    pub(crate) msg: Result<Msg, String>,
    /// The task: the one the request named, or a new one.
    pub(crate) task: String,
    /// Whether the request named the task.
    pub(crate) existing: bool,
    pub(crate) context: String,
}

/// What a turn that was not run answers.
#[derive(Debug)]
pub(crate) enum NotRun {
    /// A task, as it stands (the message's original task, a task asking again, a task
    /// rejected).
    Task(Box<a2a::Task>),
    /// An error of the request.
    Error(A2AError),
}

/// Why a task's first message was not given to the agent: calls in doubt must be answered
/// first.
pub(crate) const NOT_GIVEN: &str = "This message was not given to the agent: the calls below \
     must be answered on this task first; send it again after.";

/// Decides what `request` does to its context, holding the context's session: `Ok` with
/// the call's input when the agent runs (the run is recorded `working`, having received the
/// message), or what the request is answered without running anything (its effects, a
/// rejected task or a task asking again, recorded in `decision.runs`):
///
/// - a message the context already received (a client sending it again, to this instance
///   or another) is answered with the task it started, as it stands: nothing runs again,
///   and that task is not changed;
/// - a request naming a task that does not exist, or that ended, is an error;
/// - while calls await answers, a message answering them on the task that asks (or, when
///   no task asks, on any task) resumes the stopped call; a message without usable answers
///   on the task that asks makes it ask again, saying what was wrong; any other message is
///   rejected, naming the task that asks; when no task asks (the calls are in doubt after a
///   crash, the task that asked was canceled or is no longer kept), the message's task asks
///   about them, and the message is not given to the agent;
/// - otherwise the message is given to the agent.
pub(crate) fn decide(
    request: Request,
    decision: &mut Decision<'_, '_>,
) -> Result<(CallInput, Box<a2a::Task>), NotRun> {
    let Request {
        message,
        msg,
        task,
        existing,
        context,
    } = request;
    let session = decision.session.to_owned();
    let messages = decision.admission.messages().to_vec();
    let render = |run: &Run| task::render(run, &messages, &context, &session);
    if let Some(original) = decision.runs.by_message(&message.message_id) {
        return Err(NotRun::Task(Box::new(render(original))));
    }
    if messages.iter().any(|m| m.id == message.message_id.as_str()) {
        return Err(NotRun::Error(A2AError::invalid_params(format!(
            "message {:?} was already received in this context; the task it started is no \
             longer kept",
            message.message_id
        ))));
    }
    let msg = match msg {
        Ok(msg) => msg,
        Err(reason) => {
            return Err(reject(decision, existing, &task, &message, reason, &render));
        }
    };
    if existing {
        match decision.runs.get(&task) {
            None => return Err(NotRun::Error(A2AError::task_not_found(&task))),
            Some(run) if run.state.is_terminal() => {
                return Err(NotRun::Error(A2AError::unsupported_operation(format!(
                    "task {task} has already reached a terminal state"
                ))));
            }
            Some(_) => {}
        }
    }
    let question = Question {
        approvals: decision.awaiting.approvals.clone(),
        in_doubt: decision.awaiting.in_doubt.clone(),
        session: session.clone(),
    };
    if !question.is_empty() {
        let asking = decision.runs.asking(PROTOCOL).map(|run| run.id.clone());
        let is_asker = asking.as_deref() == Some(task.as_str());
        let answers = question.answers(&message);
        let problem = match answers {
            Ok(Some(answers)) if is_asker || asking.is_none() => {
                match apply(decision.approvals.as_ref(), answers) {
                    Ok(input) => {
                        let view = Box::new(starting(decision, &task, &context, &message, &render));
                        decision.receive(task::received(&message));
                        return Ok((input, view));
                    }
                    Err(problem) => problem,
                }
            }
            Ok(Some(_)) => String::new(),
            Ok(None) => "The message carries no decisions.".to_owned(),
            Err(problem) => problem,
        };
        if is_asker {
            // The task that asks asks again, saying what was wrong with the answer.
            let Some(asker) = decision.runs.get_mut(&task) else {
                return Err(NotRun::Error(A2AError::task_not_found(&task)));
            };
            asker.events.push(task::received(&message));
            asker.events.push(RunEvent::Asked {
                approvals: ids(&question.approvals),
                in_doubt: ids(&question.in_doubt),
                problem: Some(problem),
            });
            asker.set_state(RunState::InputRequired);
            return Err(NotRun::Task(Box::new(render(asker))));
        }
        if let Some(asker) = asking {
            let reason = format!(
                "The context awaits answers about tool calls ({}) on task {asker}: answer them \
                 there; this message was not given to the agent.",
                question
                    .calls()
                    .map(|call| call.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Err(reject(decision, existing, &task, &message, reason, &render));
        }
        // Calls no task asks about (the process running them died, the task that asked was
        // canceled or is no longer kept): this task asks.
        let problem = if problem.is_empty() || answers_absent(&message) {
            NOT_GIVEN.to_owned()
        } else {
            problem
        };
        let mut run = Run::new(
            &task,
            PROTOCOL,
            messages.last().map(|m| m.id.to_string()),
            vec![
                task::received(&message),
                RunEvent::Asked {
                    approvals: ids(&question.approvals),
                    in_doubt: ids(&question.in_doubt),
                    problem: Some(problem),
                },
            ],
        );
        run.set_state(RunState::InputRequired);
        let answer = render(&run);
        decision.runs.put(run);
        return Err(NotRun::Task(Box::new(answer)));
    }
    let mut msg = msg;
    msg.metadata
        .insert(TASK_KEY.to_owned(), Value::from(task.as_str()));
    if task::keeps_its_form(&message)
        && let Ok(form) = serde_json::to_value(&message)
    {
        msg.metadata.insert(MESSAGE_KEY.to_owned(), form);
    }
    let view = Box::new(starting(decision, &task, &context, &message, &render));
    decision.receive(RunEvent::Received {
        id: message.message_id.clone(),
        data: None,
    });
    Ok((CallInput::from(msg), view))
}

/// The task as its call starts: what it was (for a task answering its question), with the
/// message received, working.
fn starting(
    decision: &Decision<'_, '_>,
    task: &str,
    context: &str,
    message: &Message,
    render: &impl Fn(&Run) -> a2a::Task,
) -> a2a::Task {
    let mut view = match decision.runs.get(task) {
        Some(run) => render(run),
        None => a2a::Task {
            id: task.to_owned(),
            context_id: context.to_owned(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: Some(Vec::new()),
            metadata: None,
        },
    };
    view.history
        .get_or_insert_with(Vec::new)
        .push(message.clone());
    view.status = TaskStatus {
        state: TaskState::Working,
        message: None,
        timestamp: Some(chrono::Utc::now()),
    };
    view
}

/// Whether `message` carries no `decisions` data part.
fn answers_absent(message: &Message) -> bool {
    task::data_value(message, "decisions").is_none()
}

fn ids(calls: &[ToolUseBlock]) -> Vec<String> {
    calls.iter().map(|call| call.id.to_string()).collect()
}

/// Rejects `task`: a new task is recorded `rejected` (and answered so); a task that exists
/// (asking about other calls than the context awaits now) is left as it is, and the request
/// is refused.
fn reject(
    decision: &mut Decision<'_, '_>,
    existing: bool,
    task: &str,
    message: &Message,
    reason: String,
    render: &impl Fn(&Run) -> a2a::Task,
) -> NotRun {
    if existing {
        return NotRun::Error(A2AError::invalid_params(reason));
    }
    let mut run = Run::new(task, PROTOCOL, None, vec![task::received(message)]);
    run.set_state(RunState::Rejected { reason });
    let answer = render(&run);
    decision.runs.put(run);
    NotRun::Task(Box::new(answer))
}

/// The decisions given to the approval hook; the call's input resolving the calls in doubt.
fn apply(
    approvals: Option<&ToolApprovalHook>,
    answers: Vec<(ToolUseBlock, Answer)>,
) -> Result<CallInput, String> {
    let mut input = CallInput::default();
    for (call, answer) in answers {
        match answer {
            Answer::Decision(decision) => {
                // Calls await approval only with an approval hook.
                if let Some(approvals) = approvals {
                    approvals
                        .decide(&call.id, decision)
                        .map_err(|err| format!("{err}."))?;
                }
            }
            Answer::InDoubt(resolution) => input = input.resolve(&call, resolution),
        }
    }
    Ok(input)
}

/// The metadata key saying what a `working` update carries.
const KIND: &str = "agentscope.kind";
/// The `agentscope.kind` of a streamed piece of text.
const TEXT_DELTA: &str = "text_delta";

/// Maps a call's events to A2A `working` updates: text deltas (pieces the model had ready at
/// once merged), tool calls, tool progress and results, told apart by `agentscope.kind`.
pub(crate) struct Mapper {
    task: String,
    context: String,
    /// Updates mapped and not taken yet.
    pub(crate) queue: Vec<StreamResponse>,
}

impl Mapper {
    pub(crate) fn new(task: &str, context: &str) -> Self {
        Self {
            task: task.to_owned(),
            context: context.to_owned(),
            queue: Vec::new(),
        }
    }

    /// Maps `event` (a progress event; the call's result is the turn's end) into the queue.
    pub(crate) fn map(&mut self, event: &Event) {
        let msg = &event.message;
        match (event.event_type, event.is_last) {
            (EventType::Reasoning, false) => {
                let parts = msg
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text(text) if !text.text.is_empty() => {
                            Some(Part::text(text.text.as_str()))
                        }
                        _ => None,
                    })
                    .collect();
                self.progress(msg, parts, TEXT_DELTA);
            }
            (EventType::Reasoning, true) => {
                let calls = convert::parts(msg)
                    .into_iter()
                    .filter(|part| matches!(&part.content, PartContent::Data(_)))
                    .collect();
                self.progress(msg, calls, "tool_call");
            }
            (EventType::ToolResult, false) => {
                self.progress(msg, convert::parts(msg), "tool_progress")
            }
            (EventType::ToolResult, true) => self.progress(msg, convert::parts(msg), "tool_result"),
            _ => {}
        }
    }

    /// A progress update: a `working` status whose message carries `parts`. A text delta
    /// right after a text delta of the same message joins it.
    fn progress(&mut self, msg: &Msg, parts: Vec<Part>, kind: &str) {
        if parts.is_empty() {
            return;
        }
        if kind == TEXT_DELTA
            && let Some(text) = self
                .queue
                .last_mut()
                .and_then(|last| queued_delta(last, msg))
        {
            for part in &parts {
                if let Some(more) = part.as_text() {
                    text.push_str(more);
                }
            }
            return;
        }
        let message = convert::agent_message(msg, parts, &self.task, &self.context);
        self.queue.push(status_update(
            &self.task,
            &self.context,
            TaskState::Working,
            Some(message),
            Some(kind),
        ));
    }
}

/// The text of `update` when it is a queued text delta of `msg` (to append to).
fn queued_delta<'a>(update: &'a mut StreamResponse, msg: &Msg) -> Option<&'a mut String> {
    let StreamResponse::StatusUpdate(update) = update else {
        return None;
    };
    let is_delta = update
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.get(KIND))
        .is_some_and(|kind| kind == TEXT_DELTA);
    let message = update.status.message.as_mut()?;
    if !is_delta || message.message_id != msg.id.as_str() {
        return None;
    }
    match message.parts.last_mut().map(|part| &mut part.content) {
        Some(PartContent::Text(text)) => Some(text),
        _ => None,
    }
}

/// The updates that end a turn, from the task as stored once its call ended: the reply
/// artifact (a completed task), then the status.
pub(crate) fn ending(task: &a2a::Task) -> Vec<StreamResponse> {
    let mut updates = Vec::with_capacity(2);
    if task.status.state == TaskState::Completed {
        for artifact in task.artifacts.iter().flatten() {
            updates.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact: artifact.clone(),
                append: None,
                last_chunk: Some(true),
                metadata: None,
            }));
        }
    }
    updates.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: None,
    }));
    updates
}

/// A status update; `kind` says what a `working` update carries (`text_delta`,
/// `tool_call`, `tool_progress`, `tool_result`), in the metadata under `agentscope.kind`.
pub(crate) fn status_update(
    task_id: &str,
    context_id: &str,
    state: TaskState,
    message: Option<Message>,
    kind: Option<&str>,
) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some(chrono::Utc::now()),
        },
        metadata: kind.map(|kind| HashMap::from([(KIND.to_owned(), Value::from(kind))])),
    })
}

/// Whether a subscription ends after `update`: a terminal state, or a question (1.0 has no
/// `final` flag; the stream closes when the task waits for its client).
pub(crate) fn ends_stream(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}
