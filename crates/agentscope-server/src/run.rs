//! One run: `POST /agents/{agent}` with a `RunAgentInput`, answered with the run's events
//! as server-sent events.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Arc;

use agentscope::hooks::ToolApprovalHook;
use agentscope::{
    AgentError, AgentStream, CallInput, ContentBlock, GenerateReason, ImageBlock, Msg, Role,
    StreamOptions,
};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::error::{ApiError, shorten};
use crate::mapping::{Mapper, interrupts, to_messages};
use crate::protocol::{AgUiEvent, Outcome, ResumeStatus, RunAgentInput};
use crate::state::{Inner, RunGuard, session_of};

/// The handler of `POST /agents/{agent}`.
pub(crate) async fn run(
    State(inner): State<Arc<Inner>>,
    Path(agent): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    if inner.draining() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry on another instance",
        ));
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
    let spec = inner.spec(&agent)?;
    let session = session_of(&agent, &input.thread_id)?;
    let approvals = spec.approvals();
    let agent_handle = spec.build(&inner.store, &session, approvals.as_ref())?;
    // Busy before anything is read or decided: a second run on the thread changes nothing.
    let guard = inner.start_run(&session, &agent_handle)?;
    let stored = inner.load_state(&session).await?;
    if let (Some(approvals), Some(stored)) = (&approvals, &stored) {
        approvals
            .restore_state(stored)
            .map_err(crate::routes::unreadable_state)?;
        // The tools of the toolkit's live sources too; a source that fails to resolve fails
        // the call at its start, with the error.
        match agent_handle.toolkit().resolve() {
            Ok(toolkit) => approvals.learn_tools(&toolkit),
            Err(_) => approvals.learn_tools(agent_handle.toolkit()),
        }
    }
    let stored_messages = stored.map(|state| state.messages).unwrap_or_default();
    let call_input = call_input(&input, &stored_messages, approvals.as_ref())?;

    let span = tracing::info_span!(
        "agui_run",
        agent = %agent,
        thread_id = %input.thread_id,
        run_id = %input.run_id,
    );
    span.in_scope(|| tracing::info!(resume = !input.resume.is_empty(), "run started"));
    let stream = agent_handle.stream(call_input, StreamOptions::default());
    let run = Run {
        thread_id: input.thread_id,
        run_id: input.run_id,
        agent: agent_handle,
        inner: Arc::clone(&inner),
        approvals,
        stream: Some(stream),
        mapper: Mapper::default(),
        _guard: guard,
        started: false,
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

fn sse_event(event: &AgUiEvent) -> SseEvent {
    match serde_json::to_string(event) {
        Ok(json) => SseEvent::default().data(json),
        // Not reachable for these types (strings, numbers and JSON values only).
        Err(_) => SseEvent::default()
            .data(r#"{"type":"RUN_ERROR","message":"unserialisable event","code":"internal"}"#),
    }
}

/// What the agent is called with: the decisions of `resume` applied (the call resumes),
/// or the user messages the thread has not stored yet.
fn call_input(
    input: &RunAgentInput,
    stored: &[Msg],
    approvals: Option<&ToolApprovalHook>,
) -> Result<CallInput, ApiError> {
    let known: HashSet<&str> = stored.iter().map(|msg| msg.id.as_str()).collect();
    let mut new: Vec<Msg> = Vec::new();
    for message in &input.messages {
        if message.role != "user" || known.contains(message.id.as_str()) {
            continue;
        }
        new.push(user_message(&message.id, message.content.as_ref())?);
    }
    let pending: Vec<String> = approvals
        .map(|approvals| {
            approvals
                .pending()
                .into_iter()
                .map(|call| call.id.to_string())
                .collect()
        })
        .unwrap_or_default();
    if !input.resume.is_empty() {
        let Some(approvals) = approvals else {
            return Err(ApiError::bad_request(
                "nothing_to_resume",
                "this agent asks for no approvals, so there is no interrupt to answer",
            ));
        };
        if !new.is_empty() {
            return Err(ApiError::bad_request(
                "invalid_input",
                "a run that answers interrupts cannot also bring new user messages",
            ));
        }
        apply_resume(input, approvals, &pending)?;
        return Ok(CallInput::from(()));
    }
    if !pending.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "interrupts_pending",
            format!(
                "tool calls await a decision ({}): answer them with `resume` first",
                pending.join(", ")
            ),
        ));
    }
    if new.is_empty() {
        return Err(ApiError::bad_request(
            "no_new_message",
            "the run brings no new user message (every message id is already in the thread)",
        ));
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

/// Applies every answer; every pending interrupt must be answered.
fn apply_resume(
    input: &RunAgentInput,
    approvals: &ToolApprovalHook,
    pending: &[String],
) -> Result<(), ApiError> {
    let answered: HashSet<&str> = input
        .resume
        .iter()
        .map(|entry| entry.interrupt_id.as_str())
        .collect();
    let missing: Vec<&str> = pending
        .iter()
        .map(String::as_str)
        .filter(|id| !answered.contains(id))
        .collect();
    if !missing.is_empty() {
        return Err(ApiError::bad_request(
            "unanswered_interrupts",
            format!(
                "every pending interrupt must be answered; missing: {}",
                missing.join(", ")
            ),
        ));
    }
    for entry in &input.resume {
        if !pending.contains(&entry.interrupt_id) {
            return Err(ApiError::bad_request(
                "unknown_interrupt",
                format!(
                    "no pending interrupt {:?} on this thread",
                    shorten(&entry.interrupt_id)
                ),
            ));
        }
        let payload = entry.payload.as_ref();
        let approved = entry.status == ResumeStatus::Resolved
            && payload
                .and_then(|p| p.get("approved"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
        let id = entry.interrupt_id.clone();
        let decided = if approved {
            match payload.and_then(|p| p.get("arguments")) {
                Some(arguments) => approvals.edit(id, arguments.clone()),
                None => approvals.approve(id),
            }
        } else {
            let reason = payload
                .and_then(|p| p.get("reason"))
                .and_then(Value::as_str)
                .filter(|reason| !reason.trim().is_empty())
                .unwrap_or(match entry.status {
                    ResumeStatus::Cancelled => "cancelled",
                    ResumeStatus::Resolved => "not approved",
                });
            approvals.reject(id, reason)
        };
        decided.map_err(|err| ApiError::bad_request("invalid_decision", err.to_string()))?;
    }
    Ok(())
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
    thread_id: String,
    run_id: String,
    agent: agentscope::ReActAgent,
    inner: Arc<Inner>,
    approvals: Option<ToolApprovalHook>,
    /// `None` once the run has ended.
    stream: Option<AgentStream>,
    mapper: Mapper,
    /// The thread stays busy while this lives; dropped with the stream.
    _guard: RunGuard,
    started: bool,
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
        let stream = self.stream.as_mut()?;
        let (inner, agent) = (&self.inner, &self.agent);
        // A shutdown interrupts running calls; one that had not begun yet when it did is
        // interrupted here, as soon as it has begun (after this poll).
        let item = std::future::poll_fn(|cx| {
            let poll = stream.poll_next_unpin(cx);
            if poll.is_pending() && inner.draining() {
                agent.interrupt();
            }
            poll
        })
        .await;
        let mut out = Vec::new();
        match item {
            Some(Ok(event)) if event.event_type == agentscope::EventType::AgentResult => {
                self.stream = None;
                self.finish(&event.message, &mut out).await;
            }
            Some(Ok(event)) => self.mapper.map(&event, &mut out),
            Some(Err(error)) => {
                self.stream = None;
                tracing::warn!(%error, "run failed");
                out.push(AgUiEvent::RunError {
                    message: error.to_string(),
                    code: error_code(&error).to_owned(),
                });
            }
            None => {
                // Only reached if the stream ended without its result (not expected).
                self.stream = None;
                self.mapper.close_all(&mut out);
                out.push(AgUiEvent::RunError {
                    message: "the run ended without a reply".into(),
                    code: "internal".into(),
                });
            }
        }
        Some((out, self))
    }

    async fn finish(&mut self, reply: &Msg, out: &mut Vec<AgUiEvent>) {
        self.mapper.close_all(out);
        out.push(AgUiEvent::MessagesSnapshot {
            messages: to_messages(&self.agent.memory().messages()),
        });
        let interrupts = self.approvals.as_ref().map(interrupts).unwrap_or_default();
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
        out.push(AgUiEvent::RunFinished {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            result,
            outcome,
        });
    }
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
