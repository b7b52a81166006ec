//! [`JsonlTraceHook`]: one JSON line per hook event, to a file or any writer, readable back
//! with [`read_trace`] as [`TraceRecord`]s for replay and inspection.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 900 ([`JsonlTraceHook::PRIORITY`]) | every event except the chunk events; ReasoningChunk, ActingChunk and SummaryChunk too with [`with_chunks(true)`](JsonlTraceHook::with_chunks) | nothing: it only reads events |
//!
//! The line format, the priority and failure handling are documented on [`JsonlTraceHook`].

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use agentscope_core::{
    ErrorSource, GenerateOptions, Hook, HookError, HookEvent, HookEventType, HookEventTypes, Msg,
    ToolResultBlock, ToolUseBlock,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::engine::spans::error_type;

/// Writes one JSON line per hook event to a file or any writer.
///
/// Priority 900 ([`JsonlTraceHook::PRIORITY`]); handles every event kind except the chunk
/// events, which [`with_chunks(true)`](Self::with_chunks) adds; changes nothing. Cloning is
/// cheap and clones share the writer, so one trace can collect the events of several agents
/// (each line names its agent).
///
/// # Line format
///
/// Each line is one JSON object, newline-terminated: the event's creation time, its agent,
/// its kind, then the kind's fields ([`TraceEvent`] lists them):
///
/// ```json
/// {"ts":"2026-11-30T10:00:00.123456Z","agent":{"name":"assistant","id":"6f1c…"},"event":"PreActing","tool_use":{"id":"c1","name":"calculator","input":{"expression":"6*7"}},"skip_result":null}
/// ```
///
/// Messages and content blocks use their serde shape (see [`Msg`]); the error of an `Error`
/// line is its display text plus its kind (`error_type`, the `error.type` names of
/// [`TracingHook`](super::TracingHook)). To keep the file linear in the conversation's
/// length, chunk lines hold the delta only (not the accumulated message) and PreCall holds the
/// length of the history, not the history (earlier lines have it). PreReasoning and
/// PreSummary hold the complete model input (messages, system message, options): that is
/// what makes a trace replayable.
///
/// # Priority
///
/// At priority 900 the hook runs after the other built-in hooks and after user hooks of the
/// default priority (100), so each line shows the event as those hooks left it: the input a
/// PreCall hook rewrote, the system message skills and RAG appended, the tool result a
/// PostActing hook replaced, the stop and goto requests. Hooks with a priority above 900
/// may still change the event after it was written.
///
/// # Failures
///
/// Writing never fails a call: an I/O error is logged with `tracing` (a warning for the first
/// failure in a row, then at debug level) and the hook returns `Ok(())`, even for the
/// chained Pre*/Post* events. Each line is written with one `write_all` and then flushed, so
/// the trace is complete up to the last event even if the process dies; the write is
/// synchronous, so give a slow sink a writer that hands lines to another thread.
///
/// ```
/// use std::io::Cursor;
/// use std::sync::{Arc, Mutex};
///
/// use agentscope::hooks::{JsonlTraceHook, TraceEvent, read_trace};
/// use agentscope::prelude::*;
/// use agentscope_test::{ScriptedModel, ScriptedResponse};
///
/// /// A writer the test can read back.
/// #[derive(Clone, Default)]
/// struct Shared(Arc<Mutex<Vec<u8>>>);
///
/// impl std::io::Write for Shared {
///     fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
///         self.0.lock().unwrap().extend_from_slice(buf);
///         Ok(buf.len())
///     }
///     fn flush(&mut self) -> std::io::Result<()> {
///         Ok(())
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let out = Shared::default();
/// let agent = ReActAgent::builder()
///     .model(ScriptedModel::new([ScriptedResponse::text("Hi!")]))
///     .hook(JsonlTraceHook::new(out.clone()))
///     .build()?;
/// agent.call("Hello").await?;
///
/// let bytes = out.0.lock().unwrap().clone();
/// let records = read_trace(Cursor::new(bytes))?;
/// let kinds: Vec<_> = records.iter().map(|r| r.event_type().as_str()).collect();
/// assert_eq!(kinds, ["PreCall", "PreReasoning", "PostReasoning", "PostCall"]);
/// match &records[3].event {
///     TraceEvent::PostCall { final_message } => assert_eq!(final_message.text(), "Hi!"),
///     other => panic!("unexpected {other:?}"),
/// }
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
#[must_use]
pub struct JsonlTraceHook {
    sink: Arc<Mutex<Sink>>,
    chunks: bool,
}

struct Sink {
    writer: Box<dyn Write + Send>,
    /// Whether the last write failed (later failures are logged quietly).
    failing: bool,
}

impl JsonlTraceHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order).
    pub const NAME: &'static str = "jsonl_trace";
    /// The hook's priority.
    pub const PRIORITY: i32 = 900;

    /// Writes the trace to `writer`.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        Self {
            sink: Arc::new(Mutex::new(Sink {
                writer: Box::new(writer),
                failing: false,
            })),
            chunks: false,
        }
    }

    /// Appends the trace to the file at `path`, creating it when it does not exist.
    ///
    /// ```no_run
    /// use agentscope::hooks::JsonlTraceHook;
    ///
    /// let hook = JsonlTraceHook::to_file("agent-trace.jsonl")?.with_chunks(true);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When the file cannot be opened for appending.
    pub fn to_file(path: impl AsRef<Path>) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self::new(file))
    }

    /// Also records the chunk events (ReasoningChunk, ActingChunk, SummaryChunk); default off.
    /// Set it before registering the hook: interests are read once, at registration.
    pub fn with_chunks(mut self, chunks: bool) -> Self {
        self.chunks = chunks;
        self
    }

    fn write(&self, event: &HookEvent) {
        let record = TraceRecord::from(event);
        let mut line = match serde_json::to_vec(&record) {
            Ok(line) => line,
            Err(error) => {
                tracing::warn!(event = %event.event_type(), %error, "jsonl_trace: could not serialise an event");
                return;
            }
        };
        line.push(b'\n');
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        let written = sink
            .writer
            .write_all(&line)
            .and_then(|()| sink.writer.flush());
        match written {
            Ok(()) => sink.failing = false,
            Err(error) => {
                if sink.failing {
                    tracing::debug!(event = %event.event_type(), %error, "jsonl_trace: could not write a trace line");
                } else {
                    tracing::warn!(event = %event.event_type(), %error, "jsonl_trace: could not write a trace line (the call goes on; repeats are logged at debug level)");
                }
                sink.failing = true;
            }
        }
    }
}

impl fmt::Debug for JsonlTraceHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonlTraceHook")
            .field("chunks", &self.chunks)
            .finish_non_exhaustive()
    }
}

impl Hook for JsonlTraceHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        self.write(event);
        Ok(())
    }

    builtin_hook_meta!(|hook| if hook.chunks {
        HookEventTypes::ALL
    } else {
        HookEventType::ALL
            .into_iter()
            .filter(|kind| !HookEventTypes::CHUNKS.contains(*kind))
            .collect()
    });
}

/// One line of a JSONL trace: when, which agent, and what happened.
///
/// Built from a [`HookEvent`] with `TraceRecord::from(&event)`, written by
/// [`JsonlTraceHook`], read back by [`read_trace`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TraceRecord {
    /// When the event was created (RFC 3339 in JSON).
    pub ts: DateTime<Utc>,
    /// The agent the event belongs to.
    pub agent: TraceAgent,
    /// The event kind (the JSON `"event"` field) and its data.
    #[serde(flatten)]
    pub event: TraceEvent,
}

impl TraceRecord {
    /// The kind of the event this line records.
    pub fn event_type(&self) -> HookEventType {
        self.event.event_type()
    }
}

impl From<&HookEvent> for TraceRecord {
    fn from(event: &HookEvent) -> Self {
        let agent = event.agent();
        Self {
            ts: event.timestamp(),
            agent: TraceAgent {
                name: agent.name().to_owned(),
                id: agent.id().to_owned(),
            },
            event: TraceEvent::from(event),
        }
    }
}

/// The agent of a [`TraceRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TraceAgent {
    /// The agent's name.
    pub name: String,
    /// The agent's id.
    pub id: String,
}

/// The data of a [`TraceRecord`]: one variant per [`HookEventType`], named like it (the
/// JSON `"event"` field), holding the event's values as the hooks before the trace left
/// them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event")]
#[non_exhaustive]
pub enum TraceEvent {
    /// See [`PreCallEvent`](crate::PreCallEvent).
    PreCall {
        /// The new messages of the call.
        input_messages: Vec<Msg>,
        /// The system message (the call's base).
        system_message: Option<Msg>,
        /// How many messages memory held before the call.
        history_len: usize,
    },
    /// See [`PostCallEvent`](crate::PostCallEvent).
    PostCall {
        /// What the caller gets.
        final_message: Msg,
    },
    /// See [`PreReasoningEvent`](crate::PreReasoningEvent).
    PreReasoning {
        /// The model's name.
        model_name: String,
        /// The iteration, from 0.
        iteration: usize,
        /// The system message of this model call.
        system_message: Option<Msg>,
        /// The messages after the system message.
        input_messages: Vec<Msg>,
        /// The generation options.
        generate_options: GenerateOptions,
    },
    /// See [`PostReasoningEvent`](crate::PostReasoningEvent).
    PostReasoning {
        /// The model's name.
        model_name: String,
        /// The iteration, from 0.
        iteration: usize,
        /// The model's message.
        reasoning_message: Msg,
        /// Whether a hook requested a stop.
        stop_requested: bool,
        /// The goto messages, when a hook requested a goto.
        goto_messages: Option<Vec<Msg>>,
    },
    /// See [`ReasoningChunkEvent`](crate::ReasoningChunkEvent).
    ReasoningChunk {
        /// The model's name.
        model_name: String,
        /// What the chunk added.
        chunk: Msg,
    },
    /// See [`PreActingEvent`](crate::PreActingEvent).
    PreActing {
        /// The tool call about to run.
        tool_use: ToolUseBlock,
        /// The result a hook supplied instead of running the tool.
        skip_result: Option<ToolResultBlock>,
    },
    /// See [`PostActingEvent`](crate::PostActingEvent).
    PostActing {
        /// The tool call that ran.
        tool_use: ToolUseBlock,
        /// Its result.
        tool_result: ToolResultBlock,
        /// Whether a hook requested a stop.
        stop_requested: bool,
    },
    /// See [`ActingChunkEvent`](crate::ActingChunkEvent).
    ActingChunk {
        /// The progress chunk (with the id and name of its tool call).
        chunk: ToolResultBlock,
    },
    /// See [`PreSummaryEvent`](crate::PreSummaryEvent).
    PreSummary {
        /// The system message of the summary call.
        system_message: Option<Msg>,
        /// The messages after the system message (memory plus the summary hint).
        input_messages: Vec<Msg>,
        /// The generation options.
        generate_options: GenerateOptions,
        /// The agent's iteration limit.
        max_iterations: usize,
        /// How many iterations ran.
        current_iteration: usize,
    },
    /// See [`PostSummaryEvent`](crate::PostSummaryEvent).
    PostSummary {
        /// The summary.
        summary_message: Msg,
    },
    /// See [`SummaryChunkEvent`](crate::SummaryChunkEvent).
    SummaryChunk {
        /// What the chunk added.
        chunk: Msg,
    },
    /// See [`ErrorEvent`](crate::ErrorEvent).
    Error {
        /// The error's display text.
        error: String,
        /// The error's kind (e.g. `"model_error"`, `"hook_error"`, `"429"`).
        error_type: String,
    },
}

impl TraceEvent {
    /// The kind of event this is.
    pub fn event_type(&self) -> HookEventType {
        match self {
            TraceEvent::PreCall { .. } => HookEventType::PreCall,
            TraceEvent::PostCall { .. } => HookEventType::PostCall,
            TraceEvent::PreReasoning { .. } => HookEventType::PreReasoning,
            TraceEvent::PostReasoning { .. } => HookEventType::PostReasoning,
            TraceEvent::ReasoningChunk { .. } => HookEventType::ReasoningChunk,
            TraceEvent::PreActing { .. } => HookEventType::PreActing,
            TraceEvent::PostActing { .. } => HookEventType::PostActing,
            TraceEvent::ActingChunk { .. } => HookEventType::ActingChunk,
            TraceEvent::PreSummary { .. } => HookEventType::PreSummary,
            TraceEvent::PostSummary { .. } => HookEventType::PostSummary,
            TraceEvent::SummaryChunk { .. } => HookEventType::SummaryChunk,
            TraceEvent::Error { .. } => HookEventType::Error,
        }
    }
}

impl From<&HookEvent> for TraceEvent {
    fn from(event: &HookEvent) -> Self {
        match event {
            HookEvent::PreCall(e) => TraceEvent::PreCall {
                input_messages: e.input_messages().to_vec(),
                system_message: e.system_message().cloned(),
                history_len: e.history().len(),
            },
            HookEvent::PostCall(e) => TraceEvent::PostCall {
                final_message: e.final_message().clone(),
            },
            HookEvent::PreReasoning(e) => TraceEvent::PreReasoning {
                model_name: e.model_name().to_owned(),
                iteration: e.iteration(),
                system_message: e.system_message().cloned(),
                input_messages: e.input_messages().to_vec(),
                generate_options: e.generate_options().clone(),
            },
            HookEvent::PostReasoning(e) => TraceEvent::PostReasoning {
                model_name: e.model_name().to_owned(),
                iteration: e.iteration(),
                reasoning_message: e.reasoning_message().clone(),
                stop_requested: e.is_stop_requested(),
                goto_messages: e.goto_messages().map(<[Msg]>::to_vec),
            },
            HookEvent::ReasoningChunk(e) => TraceEvent::ReasoningChunk {
                model_name: e.model_name().to_owned(),
                chunk: e.incremental_chunk().clone(),
            },
            HookEvent::PreActing(e) => TraceEvent::PreActing {
                tool_use: e.tool_use().clone(),
                skip_result: e.skip_result().cloned(),
            },
            HookEvent::PostActing(e) => TraceEvent::PostActing {
                tool_use: e.tool_use().clone(),
                tool_result: e.tool_result().clone(),
                stop_requested: e.is_stop_requested(),
            },
            HookEvent::ActingChunk(e) => TraceEvent::ActingChunk {
                chunk: e.chunk().clone(),
            },
            HookEvent::PreSummary(e) => TraceEvent::PreSummary {
                system_message: e.system_message().cloned(),
                input_messages: e.input_messages().to_vec(),
                generate_options: e.generate_options().clone(),
                max_iterations: e.max_iterations(),
                current_iteration: e.current_iteration(),
            },
            HookEvent::PostSummary(e) => TraceEvent::PostSummary {
                summary_message: e.summary_message().clone(),
            },
            HookEvent::SummaryChunk(e) => TraceEvent::SummaryChunk {
                chunk: e.incremental_chunk().clone(),
            },
            HookEvent::Error(e) => TraceEvent::Error {
                error: e.error().to_string(),
                error_type: error_type(e.error()).into_owned(),
            },
        }
    }
}

/// Reads a JSONL trace back, one [`TraceRecord`] per non-blank line.
///
/// ```
/// use agentscope::hooks::read_trace;
///
/// let trace = r#"{"ts":"2026-11-30T10:00:00Z","agent":{"name":"a","id":"1"},"event":"Error","error":"model error: boom","error_type":"model_error"}"#;
/// let records = read_trace(trace.as_bytes())?;
/// assert_eq!(records[0].agent.name, "a");
/// assert_eq!(records[0].event_type().as_str(), "Error");
/// # Ok::<_, agentscope::hooks::TraceReadError>(())
/// ```
///
/// # Errors
///
/// [`TraceReadError`] naming the line that could not be read or parsed (a line cut short by
/// a crash while it was being written, for example).
pub fn read_trace(reader: impl BufRead) -> Result<Vec<TraceRecord>, TraceReadError> {
    let mut records = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line_number = index + 1;
        let line = line.map_err(|source| TraceReadError::Io {
            line: line_number,
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(&line).map_err(|error| TraceReadError::Parse {
            line: line_number,
            source: ErrorSource::new(error),
        })?;
        records.push(record);
    }
    Ok(records)
}

/// Why [`read_trace`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceReadError {
    /// Reading failed.
    #[error("could not read trace line {line}: {source}")]
    Io {
        /// The line number, from 1.
        line: usize,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A line is not a trace record.
    #[error("trace line {line} is not a valid record: {source}")]
    Parse {
        /// The line number, from 1.
        line: usize,
        /// The JSON error.
        #[source]
        source: ErrorSource,
    },
}

impl TraceReadError {
    /// The number (from 1) of the line that failed.
    pub fn line(&self) -> usize {
        match self {
            TraceReadError::Io { line, .. } | TraceReadError::Parse { line, .. } => *line,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::engine::{CallContext, TypedEvent, events};
    use agentscope_core::{AgentError, AgentInfo, CallInfo};
    use serde_json::{Value, json};

    fn agent() -> Arc<CallInfo> {
        let call = CallContext::new(Arc::new(AgentInfo::new("assistant", "id-1")));
        Arc::clone(call.info())
    }

    fn round_trip(event: HookEvent) -> (Value, TraceRecord) {
        let record = TraceRecord::from(&event);
        let line = serde_json::to_string(&record).unwrap();
        assert!(!line.contains('\n'));
        let parsed: TraceRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed, record);
        assert_eq!(parsed.event_type(), event.event_type());
        (serde_json::from_str(&line).unwrap(), parsed)
    }

    #[test]
    fn records_round_trip_with_the_documented_shape() {
        let (json, _) = round_trip(
            events::pre_call(
                &agent(),
                vec![Msg::user("q")],
                vec![Msg::user("old")],
                Some(Msg::system("sys")),
            )
            .into_event(),
        );
        let line = serde_json::to_string(&TraceRecord::from(&TypedEvent::into_event(
            events::pre_call(&agent(), vec![], vec![], None),
        )))
        .unwrap();
        assert!(line.starts_with(r#"{"ts":""#), "{line}");
        assert!(
            line.ends_with(
                r#"","agent":{"name":"assistant","id":"id-1"},"event":"PreCall","input_messages":[],"system_message":null,"history_len":0}"#
            ),
            "{line}"
        );
        assert_eq!(json["agent"], json!({"name": "assistant", "id": "id-1"}));
        assert_eq!(json["event"], "PreCall");
        assert_eq!(json["history_len"], 1);
        assert!(
            DateTime::parse_from_rfc3339(json["ts"].as_str().unwrap()).is_ok(),
            "{json}"
        );

        let options = GenerateOptions::default().temperature(0.5).max_tokens(10);
        let (json, _) = round_trip(
            events::pre_reasoning(&agent(), vec![Msg::user("q")], None, "m", options, 2)
                .into_event(),
        );
        assert_eq!(json["generate_options"]["temperature"], 0.5);
        assert_eq!(json["iteration"], 2);

        let mut post = events::post_reasoning(&agent(), Msg::assistant("a"), "m", 0);
        post.goto_reasoning(vec![Msg::user("again")]).unwrap();
        let (json, _) = round_trip(post.into_event());
        assert_eq!(json["goto_messages"][0]["content"][0]["text"], "again");
        assert_eq!(json["stop_requested"], false);

        let call = ToolUseBlock::new("c1", "calc", json!({"x": 1}));
        let mut pre = events::pre_acting(&agent(), call.clone());
        pre.skip_with(ToolResultBlock::text("", "", "cached"));
        let (json, _) = round_trip(pre.into_event());
        assert_eq!(json["skip_result"]["id"], "c1");

        let (json, _) = round_trip(
            events::post_acting(&agent(), call, ToolResultBlock::error("c1", "calc", "bad"))
                .into_event(),
        );
        assert_eq!(json["tool_result"]["is_error"], true);

        let (json, _) = round_trip(
            events::error(
                &agent(),
                AgentError::GotoLimitExceeded {
                    max: 3,
                    hook: "checker".into(),
                },
            )
            .into_event(),
        );
        assert_eq!(
            json["error"],
            "goto_reasoning was requested more than 3 times in one call (the last request by hook 'checker')"
        );
        assert_eq!(json["error_type"], "goto_limit_exceeded");
    }

    #[test]
    fn read_trace_skips_blank_lines_and_names_bad_ones() {
        let line = serde_json::to_string(&TraceRecord::from(&TypedEvent::into_event(
            events::error(&agent(), AgentError::invalid_input("x")),
        )))
        .unwrap();
        let text = format!("{line}\n\n{line}\n");
        assert_eq!(read_trace(text.as_bytes()).unwrap().len(), 2);

        let cut = &line[..line.len() / 2];
        let err = read_trace(format!("{line}\n{cut}").as_bytes()).unwrap_err();
        assert_eq!(err.line(), 2);
        assert!(
            err.to_string()
                .starts_with("trace line 2 is not a valid record")
        );
    }

    #[test]
    fn interests_exclude_chunks_unless_asked() {
        let hook = JsonlTraceHook::new(io::sink());
        assert!(!hook.interests().contains(HookEventType::ReasoningChunk));
        assert!(hook.interests().contains(HookEventType::Error));
        assert_eq!(hook.interests().iter().count(), 9);
        assert_eq!(hook.with_chunks(true).interests(), HookEventTypes::ALL);
    }
}
