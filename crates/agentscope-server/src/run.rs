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
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::awaiting::{self, Awaiting};
use crate::error::{ApiError, shorten};
use crate::mapping::{Mapper, to_messages};
use crate::protocol::{AgUiEvent, Outcome, RunAgentInput};
use crate::state::{Inner, RunGuard, session_of};
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
    // Calls recorded as running are in doubt, and an unanswered end awaits a run, unless a
    // call (on another instance: this one holds the thread for this run) holds its lease.
    let held = awaiting::may_be_running(stored.as_ref()) && inner.leased(&session).await?;
    let awaiting = Awaiting::of(stored.as_ref(), approvals.as_ref(), held);
    let stored_messages = stored.map(|state| state.messages).unwrap_or_default();
    let timeline = Timeline::start();
    let call_input = call_input(
        &input,
        &stored_messages,
        &awaiting,
        approvals.as_ref(),
        &timeline,
    )?;
    agent_handle.add_hook(timeline.hook(approvals.clone()));

    let span = tracing::info_span!(
        "agui_run",
        agent = %agent,
        thread_id = %input.thread_id,
        run_id = %input.run_id,
        otel.kind = tracing::field::Empty,
    );
    agentscope::propagation::continue_trace(&span, |name| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    });
    span.in_scope(|| tracing::info!(resume = !input.resume.is_empty(), "run started"));
    let stream = agent_handle.stream(call_input, StreamOptions::default());
    let run = Run {
        session,
        thread_id: input.thread_id,
        run_id: input.run_id,
        agent: agent_handle,
        inner: Arc::clone(&inner),
        approvals,
        stream: Some(stream),
        mapper: Mapper::default(),
        timeline,
        _guard: guard,
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

fn sse_event(event: &AgUiEvent) -> SseEvent {
    match serde_json::to_string(event) {
        Ok(json) => SseEvent::default().data(json),
        // Not reachable for these types (strings, numbers and JSON values only).
        Err(_) => SseEvent::default()
            .data(r#"{"type":"RUN_ERROR","message":"unserialisable event","code":"internal"}"#),
    }
}

/// What the agent is called with, given what the thread awaits: the answers of `resume`
/// applied (the stopped call resumes), nothing (a run without new messages continues the
/// thread's pending work), or the user messages the thread has not stored yet.
fn call_input(
    input: &RunAgentInput,
    stored: &[Msg],
    awaiting: &Awaiting,
    approvals: Option<&ToolApprovalHook>,
    timeline: &Timeline,
) -> Result<CallInput, ApiError> {
    let known: HashSet<&str> = stored.iter().map(|msg| msg.id.as_str()).collect();
    let mut new: Vec<Msg> = Vec::new();
    for message in &input.messages {
        if message.role != "user" || known.contains(message.id.as_str()) {
            continue;
        }
        new.push(user_message(&message.id, message.content.as_ref())?);
    }
    if !awaiting.held {
        if let Some(input) = settled_input(input, &new, awaiting, approvals, timeline)? {
            return Ok(input);
        }
    } else if !input.resume.is_empty() {
        // Another instance runs the thread (its tool calls are running, not in doubt): there
        // is nothing to answer. Other runs go on to the agent, whose session lease refuses
        // them before anything is read or stored.
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "thread_busy",
            "a run is active on this thread on another instance (its tool calls are running, \
             not in doubt); wait for it to finish",
        ));
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
    awaiting: &Awaiting,
    approvals: Option<&ToolApprovalHook>,
    timeline: &Timeline,
) -> Result<Option<CallInput>, ApiError> {
    if !input.resume.is_empty() {
        if approvals.is_none() && !awaiting.has_interrupts() {
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
    if awaiting.has_interrupts() && !(new.is_empty() && only_in_doubt) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "interrupts_pending",
            format!(
                "the thread awaits answers to its interrupts ({}): answer them with `resume` \
                 first",
                awaiting.interrupt_ids().join(", ")
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
    agent: agentscope::ReActAgent,
    inner: Arc<Inner>,
    approvals: Option<ToolApprovalHook>,
    /// `None` once the run has ended.
    stream: Option<AgentStream>,
    mapper: Mapper,
    /// The steps and decisions of the run, sent before it ends.
    timeline: Timeline,
    /// The thread stays busy while this lives; dropped with the stream.
    _guard: RunGuard,
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
                self.push_timeline(&mut out);
                out.push(AgUiEvent::RunError {
                    message: error.to_string(),
                    code: error_code(&error).to_owned(),
                });
            }
            None => {
                // Only reached if the stream ended without its result (not expected).
                self.stream = None;
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

    async fn finish(&mut self, reply: &Msg, out: &mut Vec<AgUiEvent>) {
        self.mapper.close_all(out);
        out.push(AgUiEvent::MessagesSnapshot {
            messages: to_messages(&self.agent.memory().messages()),
        });
        // Calls that await approval (the hook stopped the call), then calls in doubt whose
        // policy stopped the call (its reply lists them).
        let mut interrupts: Vec<_> = self
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
