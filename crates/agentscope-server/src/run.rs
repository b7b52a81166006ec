//! One run: `POST /agents/{agent}` with a `RunAgentInput`, answered with the run's events
//! as server-sent events.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

use agentscope::hooks::ToolApprovalHook;
use agentscope::{
    AgentError, CallInput, ContentBlock, GenerateReason, ImageBlock, Msg, Refusal, Role,
    StreamOptions,
};
use agentscope_serving::{Decision, RunEvent, RunState, StartError, Turn, failure};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::error::{ApiError, shorten};
use crate::mapping::{Mapper, to_messages};
use crate::protocol::{AgUiEvent, Outcome, RunAgentInput};
use crate::state::{Inner, internal, session_of};
use crate::timeline::Timeline;
use crate::{interrupts, resume};

/// The handler of `POST /agents/{agent}`.
pub(crate) async fn run(
    State(inner): State<Arc<Inner>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    if inner.draining() {
        return Err(shutting_down());
    }
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                "the request body is larger than the server accepts",
            )
        } else {
            ApiError::bad_request("invalid_body", rejection.body_text())
        }
    })?;
    let input: RunAgentInput = serde_json::from_slice(&body).map_err(|err| {
        ApiError::bad_request(
            "invalid_input",
            format!("the body is not an AG-UI RunAgentInput: {err}"),
        )
    })?;
    let served = inner.served(&agent)?;
    let session = session_of(&agent, &input.thread_id)?;
    // The user messages the run brings, checked before anything is loaded.
    let mut new: Vec<Msg> = Vec::new();
    for message in &input.messages {
        if message.role == "user" {
            new.push(user_message(&message.id, message.content.as_ref())?);
        }
    }
    let span = tracing::info_span!(
        "agui_run",
        gen_ai.agent.name = %agent,
        ag_ui.thread.id = %input.thread_id,
        ag_ui.run.id = %input.run_id,
        otel.kind = tracing::field::Empty,
    );
    agentscope::propagation::continue_trace(&span, |name| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    });
    let timeline = Timeline::start();
    let slot: Arc<Mutex<Option<ApiError>>> = Arc::default();
    let refused = Arc::clone(&slot);
    let decide = {
        let (input, timeline) = (input.clone(), timeline.clone());
        move |decision: &mut Decision<'_, '_>| match call_input(&input, new, decision, &timeline) {
            Ok(call) => Ok(call),
            Err(error) => {
                let reason = error.to_string();
                *refused.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
                Err(Refusal::new(reason))
            }
        }
    };
    let mut turn = match served.start(
        &session,
        &input.run_id,
        PROTOCOL,
        Vec::new(),
        StreamOptions::default(),
        decide,
    ) {
        Ok(turn) => turn,
        Err(StartError::Busy) => return Err(thread_busy()),
        Err(StartError::ShuttingDown) => return Err(shutting_down()),
        Err(error) => return Err(internal("agent_build", "The agent cannot be built", &error)),
    };
    turn.agent.add_hook(timeline.hook(turn.approvals.clone()));
    match turn.admitted().instrument(span.clone()).await {
        Ok(()) => {}
        Err(AgentError::Busy) => return Err(thread_busy()),
        Err(AgentError::Refused { .. }) => {
            let error = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            return Err(error.unwrap_or_else(|| {
                ApiError::internal(
                    "unreadable_state",
                    "the thread's stored state cannot be read by this server",
                )
            }));
        }
        Err(error) => {
            return Err(
                span.in_scope(|| internal("session_store", "The thread cannot be loaded", &error))
            );
        }
    }
    span.in_scope(|| tracing::info!(resume = !input.resume.is_empty(), "run started"));
    let run = Run {
        session,
        thread_id: input.thread_id,
        run_id: input.run_id,
        inner: Arc::clone(&inner),
        turn: Some(turn),
        mapper: Mapper::default(),
        timeline,
        started: false,
        flushed: false,
    };
    let events = futures::stream::unfold(run, move |run| {
        let span = span.clone();
        async move { run.next_batch().instrument(span).await }
    })
    .flat_map(futures::stream::iter)
    .map(|event| Ok::<_, Infallible>(sse_event(&event)));
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The protocol name of AG-UI runs in a session's runs.
const PROTOCOL: &str = "agui";

fn thread_busy() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "thread_busy",
        "a run is already active on this thread; wait for it to finish",
    )
}

fn shutting_down() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "shutting_down",
        "the server is shutting down; retry on another instance",
    )
}

fn sse_event(event: &AgUiEvent) -> SseEvent {
    match serde_json::to_string(event) {
        Ok(json) => SseEvent::default().data(json),
        // Not reachable for these types (strings, numbers and JSON values only).
        Err(_) => SseEvent::default()
            .data(r#"{"type":"RUN_ERROR","message":"unserialisable event","code":"internal"}"#),
    }
}

/// What the agent is called with, decided holding the thread's session (no other call runs
/// on it, so a call recorded as running is in doubt): the answers of `resume` applied (the
/// stopped call resumes), nothing (a run without new messages continues the thread's
/// pending work), or the user messages the thread has not stored yet; else why the run is
/// refused.
fn call_input(
    input: &RunAgentInput,
    mut new: Vec<Msg>,
    decision: &mut Decision<'_, '_>,
    timeline: &Timeline,
) -> Result<CallInput, ApiError> {
    let known: HashSet<String> = decision
        .admission
        .messages()
        .iter()
        .map(|msg| msg.id.to_string())
        .collect();
    new.retain(|msg| !known.contains(msg.id.as_str()));
    if let Some(call) = settled_input(input, &new, decision, timeline)? {
        if !input.resume.is_empty() {
            // The answers are not part of the conversation: the run keeps them.
            decision.receive(RunEvent::Received {
                id: format!("{}.resume", input.run_id),
                data: serde_json::to_value(&input.resume).ok(),
            });
        }
        return Ok(call);
    }
    for msg in &new {
        decision.receive(RunEvent::Received {
            id: msg.id.to_string(),
            data: None,
        });
    }
    if new.is_empty() {
        return Ok(CallInput::from(()));
    }
    if let Some(last) = new.last_mut() {
        for context in &input.context {
            last.content.push(ContentBlock::text(format!(
                "[context] {}: {}",
                context.description, context.value
            )));
        }
    }
    Ok(CallInput::from(new))
}
/// The input decided by what the thread awaits (no call holds it): the answers of
/// `resume`, a refusal while interrupts or calls are pending, or nothing to continue it;
/// `None` when the run's new messages are the input.
fn settled_input(
    input: &RunAgentInput,
    new: &[Msg],
    decision: &Decision<'_, '_>,
    timeline: &Timeline,
) -> Result<Option<CallInput>, ApiError> {
    let awaiting = &decision.awaiting;
    let approvals = decision.approvals.as_ref();
    if !input.resume.is_empty() {
        if approvals.is_none() && !awaiting.has_questions() {
            return Err(ApiError::bad_request(
                "nothing_to_resume",
                "this agent asks for no approvals and no tool call is in doubt, so there is \
                 no interrupt to answer",
            ));
        }
        if !new.is_empty() {
            return Err(ApiError::bad_request(
                "invalid_input",
                "a run that answers interrupts cannot also bring new user messages",
            ));
        }
        return resume::check(&input.resume, awaiting)?
            .apply(approvals, timeline)
            .map(Some);
    }
    // A run without new messages on a thread with calls in doubt (and nothing awaiting
    // approval) resumes them: each is handled as its policy says, and a call whose policy is
    // to stop ends the run with its interrupt again.
    let only_in_doubt = awaiting.approvals.is_empty() && !awaiting.in_doubt.is_empty();
    if awaiting.has_questions() && !(new.is_empty() && only_in_doubt) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "interrupts_pending",
            format!(
                "the thread awaits answers to its interrupts ({}): answer them with `resume` \
                 first",
                awaiting.question_ids().join(", ")
            ),
        ));
    }
    if !new.is_empty() {
        if !awaiting.ready.is_empty() {
            let ids: Vec<&str> = awaiting.ready.iter().map(|call| call.id.as_str()).collect();
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "calls_pending",
                format!(
                    "tool calls of the thread have not run yet ({}): continue the thread with \
                     a run that brings no new message first",
                    ids.join(", ")
                ),
            ));
        }
        return Ok(None);
    }
    if awaiting.in_doubt.is_empty() && awaiting.ready.is_empty() && !awaiting.unanswered {
        return Err(ApiError::bad_request(
            "no_new_message",
            "the run brings no new user message (every message id is already in the thread) \
             and the thread has nothing to continue",
        ));
    }
    Ok(Some(CallInput::from(())))
}

/// A user message from AG-UI content: a string, or text and image parts.
fn user_message(id: &str, content: Option<&Value>) -> Result<Msg, ApiError> {
    let mut blocks = Vec::new();
    match content {
        Some(Value::String(text)) => blocks.push(ContentBlock::text(text.clone())),
        Some(Value::Array(parts)) => {
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = part.get("text").and_then(Value::as_str).unwrap_or("");
                        blocks.push(ContentBlock::text(text));
                    }
                    Some("image") => blocks.push(ContentBlock::Image(ImageBlock {
                        url: image_url(part).ok_or_else(|| {
                            ApiError::bad_request(
                                "invalid_input",
                                format!(
                                    "message {:?}: an image part without a url or data source",
                                    shorten(id)
                                ),
                            )
                        })?,
                    })),
                    other => {
                        return Err(ApiError::bad_request(
                            "unsupported_content",
                            format!(
                                "message {:?}: content parts of type {:?} are not supported (text and image are)",
                                shorten(id),
                                other.unwrap_or("(none)")
                            ),
                        ));
                    }
                }
            }
        }
        _ => {
            return Err(ApiError::bad_request(
                "invalid_input",
                format!("user message {:?} has no content", shorten(id)),
            ));
        }
    }
    Ok(Msg::builder()
        .id(id)
        .role(Role::User)
        .blocks(blocks)
        .build())
}

fn image_url(part: &Value) -> Option<String> {
    let source = part.get("source")?;
    let value = source.get("value")?.as_str()?;
    match source.get("type")?.as_str()? {
        "url" => Some(value.to_owned()),
        "data" => {
            let mime = source.get("mimeType")?.as_str()?;
            Some(format!("data:{mime};base64,{value}"))
        }
        _ => None,
    }
}

/// A run's stream: the agent's events mapped, framed by `RUN_STARTED` and
/// `RUN_FINISHED` / `RUN_ERROR`.
struct Run {
    /// The thread's session id (the scope of its calls' idempotency keys).
    session: String,
    thread_id: String,
    run_id: String,
    inner: Arc<Inner>,
    /// The run's call (its agent, approval hook and events); `None` once it has ended. The
    /// thread stays busy on this instance while it lives.
    turn: Option<Turn>,
    mapper: Mapper,
    /// The steps and decisions of the run, sent before it ends.
    timeline: Timeline,
    started: bool,
    /// Whether the run gave the connection its turn to send `RUN_STARTED`.
    flushed: bool,
}

impl Run {
    async fn next_batch(mut self) -> Option<(Vec<AgUiEvent>, Self)> {
        if !self.started {
            self.started = true;
            let started = AgUiEvent::RunStarted {
                thread_id: self.thread_id.clone(),
                run_id: self.run_id.clone(),
                protocol_version: crate::protocol::PROTOCOL_VERSION,
            };
            return Some((vec![started], self));
        }
        if !self.flushed {
            // Once, before the agent's first step: the body is not ready for a moment, so
            // the HTTP connection sends `RUN_STARTED` now. Without it the event waits in the
            // connection's buffer for the whole first burst of work (the thread loaded and
            // saved, a step or two, a tool run) until the model first makes the call wait,
            // which under load is most of a client's time to its first event.
            self.flushed = true;
            yield_once().await;
        }
        let turn = self.turn.as_mut()?;
        let inner = &self.inner;
        // A shutdown interrupts running calls; one that had not begun yet when it did is
        // interrupted here, as soon as it has begun (after this poll).
        let item = std::future::poll_fn(|cx| {
            let poll = turn.poll_next_unpin(cx);
            if poll.is_pending() && inner.draining() {
                turn.agent.interrupt();
            }
            poll
        })
        .await;
        let mut out = Vec::new();
        match item {
            Some(Ok(event)) if event.event_type == agentscope::EventType::AgentResult => {
                self.finish(&event.message, &mut out).await;
                self.turn = None;
            }
            Some(Ok(event)) => self.mapper.map(&event, &mut out),
            Some(Err(error)) => {
                self.mapper.close_all(&mut out);
                self.push_timeline(&mut out);
                out.push(self.run_error(&error));
                self.turn = None;
            }
            None => {
                // Only reached if the stream ended without its result (not expected).
                self.turn = None;
                self.mapper.close_all(&mut out);
                self.push_timeline(&mut out);
                out.push(AgUiEvent::RunError {
                    message: "the run ended without a reply".into(),
                    code: "internal".into(),
                });
            }
        }
        Some((out, self))
    }

    /// `CUSTOM "timeline"`: the run's steps and decisions (see [`crate::timeline`]); none
    /// for a run that refused its call before any step (a busy agent).
    fn push_timeline(&self, out: &mut Vec<AgUiEvent>) {
        if let Some(value) = self.timeline.finish() {
            out.push(AgUiEvent::Custom {
                name: "timeline",
                value,
            });
        }
    }

    /// `RUN_ERROR` for a call that failed: what the run's record says (a generic reason
    /// with the correlation id the details were logged under), never the error's text.
    fn run_error(&self, error: &AgentError) -> AgUiEvent {
        let reason = match self.turn.as_ref().and_then(|turn| turn.hook.ended()) {
            Some(RunState::Failed { reason, .. }) => reason,
            _ => failure("The agent failed", error).message,
        };
        AgUiEvent::RunError {
            message: reason,
            code: error_code(error).to_owned(),
        }
    }

    async fn finish(&mut self, reply: &Msg, out: &mut Vec<AgUiEvent>) {
        self.mapper.close_all(out);
        let Some(turn) = self.turn.as_ref() else {
            return;
        };
        out.push(AgUiEvent::MessagesSnapshot {
            messages: to_messages(&turn.agent.memory().messages()),
        });
        // Calls that await approval (the hook stopped the call), then calls in doubt whose
        // policy stopped the call (its reply lists them).
        let mut interrupts: Vec<_> = turn
            .approvals
            .as_ref()
            .map(ToolApprovalHook::pending)
            .unwrap_or_default()
            .iter()
            .map(interrupts::approval)
            .collect();
        if reply.generate_reason() == Some(GenerateReason::ToolInDoubt) {
            interrupts.extend(
                reply
                    .tool_uses()
                    .into_iter()
                    .map(|call| interrupts::in_doubt(call, &self.session)),
            );
        }
        let outcome = if !interrupts.is_empty() {
            Outcome::Interrupt { interrupts }
        } else if reply.generate_reason() == Some(GenerateReason::Interrupted) {
            Outcome::Cancelled
        } else {
            Outcome::Success
        };
        tracing::info!(outcome = outcome_name(&outcome), "run finished");
        // A result only for a completed call: an interrupted or paused one produced none.
        let result = (outcome == Outcome::Success).then(|| {
            json!({
                "messageId": reply.id,
                "text": reply.text(),
                "generateReason": reply.generate_reason(),
            })
        });
        self.push_timeline(out);
        out.push(AgUiEvent::RunFinished {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            result,
            outcome,
        });
    }
}

/// Not ready once (waking itself at once), then ready: lets the task's other work run, as
/// `tokio::task::yield_now` does, without tying the run to tokio.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
}

fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Success => "success",
        Outcome::Interrupt { .. } => "interrupt",
        Outcome::Cancelled => "cancelled",
    }
}

/// A short machine-readable code for a failed call.
fn error_code(error: &AgentError) -> &'static str {
    match error {
        AgentError::Model(_) => "model_error",
        AgentError::Busy => "busy",
        _ => "agent_error",
    }
}
