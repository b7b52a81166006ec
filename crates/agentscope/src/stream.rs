//! Streaming an agent call: [`AgentStream`], [`Event`], [`EventType`], [`StreamOptions`].

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use agentscope_core::{AgentError, Msg};
use futures::Stream;
use futures::stream::FusedStream;
use serde::{Deserialize, Serialize};

/// What a streamed [`Event`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// Model output during the loop: chunks (`is_last = false`) and the final reasoning
    /// message after PostReasoning hooks (`is_last = true`).
    Reasoning,
    /// Tool progress chunks (`is_last = false`) and results after PostActing hooks
    /// (`is_last = true`).
    ToolResult,
    /// Messages hooks injected into the conversation with `goto_reasoning` (`is_last = true`).
    Hint,
    /// The summary at the iteration limit: chunks and the final summary.
    Summary,
    /// The reply the caller gets (after PostCall hooks); always the last item.
    AgentResult,
}

impl EventType {
    /// All five types.
    pub const ALL: [EventType; 5] = [
        EventType::Reasoning,
        EventType::ToolResult,
        EventType::Hint,
        EventType::Summary,
        EventType::AgentResult,
    ];
}

/// One item of an [`AgentStream`].
///
/// Serialises as `{"event_type": "reasoning", "message": {...}, "is_last": false}` with the
/// message in the JSON shape of [`Msg`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Event {
    /// What the event is about.
    pub event_type: EventType,
    /// The message: a delta (or the text so far) for chunks, the complete value otherwise.
    pub message: Msg,
    /// Whether this is a complete value rather than a chunk.
    pub is_last: bool,
}

impl Event {
    /// An event of `event_type` carrying `message`, a complete value when `is_last` (a chunk
    /// otherwise): what a custom stream or a remote agent's adapter delivers.
    ///
    /// ```
    /// use agentscope::{Event, EventType, Msg};
    ///
    /// let event = Event::new(EventType::AgentResult, Msg::assistant("done"), true);
    /// assert!(event.is_last);
    /// ```
    pub fn new(event_type: EventType, message: Msg, is_last: bool) -> Self {
        Self {
            event_type,
            message,
            is_last,
        }
    }
}

/// What an [`AgentStream`] delivers.
///
/// ```
/// use agentscope::{EventType, StreamOptions};
///
/// let options = StreamOptions::default()
///     .event_types([EventType::Reasoning, EventType::AgentResult])
///     .incremental(false)
///     .include_reasoning_result(false);
/// assert!(!options.incremental);
/// ```
///
/// Fields are public, so one can also be set on a default
/// (`let mut options = StreamOptions::default(); options.incremental = false;`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOptions {
    /// The event types to deliver (default: all).
    pub event_types: Vec<EventType>,
    /// `true` (default): chunk events carry deltas; `false`: the accumulated message so far.
    pub incremental: bool,
    /// Deliver reasoning chunks (default `true`).
    pub include_reasoning_chunk: bool,
    /// Deliver final reasoning messages (default `true`).
    pub include_reasoning_result: bool,
    /// Deliver tool progress chunks (default `true`).
    pub include_acting_chunk: bool,
    /// Deliver summary chunks (default `true`).
    pub include_summary_chunk: bool,
    /// Deliver the final summary (default `true`).
    pub include_summary_result: bool,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            event_types: EventType::ALL.to_vec(),
            incremental: true,
            include_reasoning_chunk: true,
            include_reasoning_result: true,
            include_acting_chunk: true,
            include_summary_chunk: true,
            include_summary_result: true,
        }
    }
}

impl StreamOptions {
    /// Delivers only these event types.
    #[must_use]
    pub fn event_types(mut self, types: impl IntoIterator<Item = EventType>) -> Self {
        self.event_types = types.into_iter().collect();
        self
    }

    /// Deltas (`true`) or accumulated messages (`false`) in chunk events.
    #[must_use]
    pub fn incremental(mut self, incremental: bool) -> Self {
        self.incremental = incremental;
        self
    }

    /// Whether to deliver reasoning chunks.
    #[must_use]
    pub fn include_reasoning_chunk(mut self, include: bool) -> Self {
        self.include_reasoning_chunk = include;
        self
    }

    /// Whether to deliver final reasoning messages.
    #[must_use]
    pub fn include_reasoning_result(mut self, include: bool) -> Self {
        self.include_reasoning_result = include;
        self
    }

    /// Whether to deliver tool progress chunks.
    #[must_use]
    pub fn include_acting_chunk(mut self, include: bool) -> Self {
        self.include_acting_chunk = include;
        self
    }

    /// Whether to deliver summary chunks.
    #[must_use]
    pub fn include_summary_chunk(mut self, include: bool) -> Self {
        self.include_summary_chunk = include;
        self
    }

    /// Whether to deliver the final summary.
    #[must_use]
    pub fn include_summary_result(mut self, include: bool) -> Self {
        self.include_summary_result = include;
        self
    }

    fn wants(&self, event_type: EventType, is_last: bool) -> bool {
        if !self.event_types.contains(&event_type) {
            return false;
        }
        match (event_type, is_last) {
            (EventType::Reasoning, false) => self.include_reasoning_chunk,
            (EventType::Reasoning, true) => self.include_reasoning_result,
            (EventType::ToolResult, false) => self.include_acting_chunk,
            (EventType::Summary, false) => self.include_summary_chunk,
            (EventType::Summary, true) => self.include_summary_result,
            _ => true,
        }
    }
}

/// How many undelivered events a stream buffers before the engine waits for the consumer.
const BUFFER: usize = 32;

type Queue = Arc<Mutex<VecDeque<Event>>>;

/// The engine's end of a stream: filters events and hands them to the [`AgentStream`].
pub(crate) struct EventSink {
    options: StreamOptions,
    // wants(type, is_last), indexed by [type][is_last], computed once.
    wanted: [[bool; 2]; 5],
    queue: Queue,
}

impl EventSink {
    fn new(options: StreamOptions, queue: Queue) -> Self {
        let mut wanted = [[false; 2]; 5];
        for (i, event_type) in EventType::ALL.into_iter().enumerate() {
            wanted[i] = [
                options.wants(event_type, false),
                options.wants(event_type, true),
            ];
        }
        Self {
            options,
            wanted,
            queue,
        }
    }

    /// Whether the consumer wants events of this type and completeness.
    pub(crate) fn wants(&self, event_type: EventType, is_last: bool) -> bool {
        self.wanted[event_type as usize][usize::from(is_last)]
    }

    /// Whether chunk events carry deltas.
    pub(crate) fn incremental(&self) -> bool {
        self.options.incremental
    }

    /// Queues an event, waiting while the consumer is [`BUFFER`] events behind. The event
    /// is built in the queue (a chunk's is the hottest value of a stream: moving it through
    /// locals costs more than building it).
    pub(crate) async fn send(&self, event_type: EventType, message: Msg, is_last: bool) {
        let mut message = Some(message);
        std::future::poll_fn(|_cx| {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.len() >= BUFFER {
                // No waker is registered: the AgentStream polls the engine again only once
                // its queue is empty, and returns queued items (never Pending) until then.
                return Poll::Pending;
            }
            if let Some(message) = message.take() {
                queue.push_back(Event {
                    event_type,
                    message,
                    is_last,
                });
            }
            Poll::Ready(())
        })
        .await;
    }
}

type Engine = Pin<Box<dyn Future<Output = Result<Msg, AgentError>> + Send>>;

/// The events of one agent call, as a [`Stream`]; created by
/// [`ReActAgent::stream`](crate::ReActAgent::stream).
///
/// Yields the events chosen by [`StreamOptions`] in order, then the `AgentResult` event as
/// the last item; or, when the call fails, the error (after `ErrorEvent` hooks ran) as the
/// last item. After its last item it yields `None` forever.
///
/// The call runs inside the stream, on the consumer's task: nothing happens until it is
/// polled, a slow consumer slows the agent (at most a few dozen events are buffered), and
/// there is no background task.
///
/// # Cancel safety
///
/// Dropping the stream at any point cancels the call at once: the in-flight model stream and
/// tool futures are dropped, the agent is free for a new call immediately, and any tool call
/// stored without a result gets an error result, so memory never holds an orphan tool-use.
/// Hooks see neither PostCall nor Error for a dropped call.
#[must_use = "streams do nothing unless polled"]
pub struct AgentStream {
    engine: Option<Engine>,
    queue: Queue,
    /// Events taken from `queue` in one lock and not yet yielded.
    ready: VecDeque<Event>,
    result: Option<Result<Msg, AgentError>>,
    include_result: bool,
}

impl AgentStream {
    pub(crate) fn new<F>(options: StreamOptions, start: impl FnOnce(EventSink) -> F) -> Self
    where
        F: Future<Output = Result<Msg, AgentError>> + Send + 'static,
    {
        let queue: Queue = Arc::new(Mutex::new(VecDeque::new()));
        let include_result = options.wants(EventType::AgentResult, true);
        let sink = EventSink::new(options, Arc::clone(&queue));
        Self {
            engine: Some(Box::pin(start(sink))),
            queue,
            ready: VecDeque::new(),
            result: None,
            include_result,
        }
    }

    /// The next queued event. The queue is taken whole (one lock for up to [`BUFFER`]
    /// events), its buffer swapped with the empty `ready` one.
    fn pop(&mut self) -> Option<Event> {
        if self.ready.is_empty() {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            std::mem::swap(&mut *queue, &mut self.ready);
        }
        self.ready.pop_front()
    }
}

impl Stream for AgentStream {
    type Item = Result<Event, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(event) = self.pop() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(engine) = self.engine.as_mut() {
                match engine.as_mut().poll(cx) {
                    Poll::Ready(result) => {
                        self.engine = None;
                        self.result = Some(result);
                    }
                    Poll::Pending => {
                        if self
                            .queue
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .is_empty()
                        {
                            return Poll::Pending;
                        }
                    }
                }
                continue;
            }
            return Poll::Ready(match self.result.take() {
                Some(Ok(message)) if self.include_result => Some(Ok(Event {
                    event_type: EventType::AgentResult,
                    message,
                    is_last: true,
                })),
                Some(Ok(_)) | None => None,
                Some(Err(error)) => Some(Err(error)),
            });
        }
    }
}

impl FusedStream for AgentStream {
    fn is_terminated(&self) -> bool {
        self.engine.is_none()
            && self.result.is_none()
            && self.ready.is_empty()
            && self
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty()
    }
}

impl fmt::Debug for AgentStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentStream")
            .field("running", &self.engine.is_some())
            .finish_non_exhaustive()
    }
}
