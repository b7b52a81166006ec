//! What one run did, read from the agent's own stream events: its tool calls, its answer,
//! its usage and latency ([`RunMetrics`]), and a transcript a person reads.

use std::time::{Duration, Instant};

use agentscope::{ChatUsage, Event, EventType, Msg};
use serde::{Deserialize, Serialize};

use crate::matcher::one_line;
use crate::trajectory::ToolCall;

/// What one run cost and how long it took, from the agent's stream events (and, for the
/// judge, from the judge's own calls, counted apart).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunMetrics {
    /// The agent's model calls: reasoning steps and summaries, over all turns.
    pub model_calls: u32,
    /// The tool calls the model asked for.
    pub tool_calls: u32,
    /// The agent's token usage, summed over its model calls (`None`: the model reported
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
    /// From the first turn's start to the last turn's reply.
    #[serde(rename = "wall_ms", with = "millis")]
    pub wall: Duration,
    /// The time spent in model calls: for each, from the step's start (the turn's start,
    /// or the end of the step before) to the complete message.
    #[serde(rename = "model_ms", with = "millis")]
    pub model_time: Duration,
    /// From the first turn's start to the model's first streamed chunk.
    #[serde(
        rename = "first_chunk_ms",
        with = "optional_millis",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub first_chunk: Option<Duration>,
    /// The judge's model calls for this run.
    #[serde(default)]
    pub judge_calls: u32,
    /// The judge's token usage for this run (`None`: no judge call, or none reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_usage: Option<ChatUsage>,
}

/// Durations as milliseconds (a float, microsecond precision kept).
pub(crate) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(value: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(round_ms(*value))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Ok(from_ms(ms))
    }

    pub(crate) fn round_ms(value: Duration) -> f64 {
        (value.as_secs_f64() * 1_000_000.0).round() / 1000.0
    }

    pub(crate) fn from_ms(ms: f64) -> Duration {
        Duration::try_from_secs_f64(ms / 1000.0).unwrap_or_default()
    }
}

/// [`millis`] for an optional duration.
pub(crate) mod optional_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        value: &Option<Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => s.serialize_f64(super::millis::round_ms(*value)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.map(super::millis::from_ms))
    }
}

/// Adds `more` to `total` (`None` stays `None` only when both are).
pub(crate) fn add_usage(total: &mut Option<ChatUsage>, more: Option<ChatUsage>) {
    if let Some(more) = more {
        total.get_or_insert_with(ChatUsage::default).add(&more);
    }
}

/// The usage the engine stored on a model's message (`metadata["usage"]`).
fn message_usage(message: &Msg) -> Option<ChatUsage> {
    message
        .metadata
        .get("usage")
        .and_then(|value| ChatUsage::deserialize(value).ok())
}

/// The longest transcript line, in characters.
const LINE: usize = 400;

/// One step of a run, kept as the stream gave it (messages are cheap clones: their content
/// is shared) and written out only for a run that fails.
enum Step {
    User(String),
    Assistant(Msg),
    Summary(Msg),
    Results(Msg),
    Hint(Msg),
    Reply(Msg),
}

/// Follows one run's stream events.
pub(crate) struct Observer {
    started: Instant,
    /// When the current model step started.
    step: Instant,
    pub(crate) metrics: RunMetrics,
    pub(crate) calls: Vec<ToolCall>,
    /// What happened, written out only for a run that fails.
    pub(crate) transcript: Transcript,
    /// The last turn's reply.
    pub(crate) reply: Option<Msg>,
    /// Turns started.
    turns: usize,
}

impl Observer {
    pub(crate) fn new() -> Self {
        let now = Instant::now();
        Self {
            started: now,
            step: now,
            metrics: RunMetrics::default(),
            calls: Vec::new(),
            transcript: Transcript(Vec::new()),
            reply: None,
            turns: 0,
        }
    }

    /// A turn starts with these user messages.
    pub(crate) fn turn(&mut self, messages: &[String]) {
        self.transcript
            .0
            .extend(messages.iter().map(|text| Step::User(text.clone())));
        self.step = Instant::now();
        if self.turns == 0 {
            // Times are counted from the first turn (not from making the agent).
            self.started = self.step;
        }
        self.turns += 1;
    }

    pub(crate) fn event(&mut self, event: &Event) {
        let message = &event.message;
        match (event.event_type, event.is_last) {
            (EventType::Reasoning, false) if self.metrics.first_chunk.is_none() => {
                self.metrics.first_chunk = Some(self.started.elapsed());
            }
            (EventType::Reasoning, true) => {
                self.model_call(message);
                for call in message.tool_uses() {
                    self.calls.push(ToolCall::new(
                        call.id.as_str(),
                        call.name.as_str(),
                        (*call.input).clone(),
                    ));
                    self.metrics.tool_calls += 1;
                }
                self.transcript.0.push(Step::Assistant(message.clone()));
            }
            (EventType::Summary, true) => {
                self.model_call(message);
                self.transcript.0.push(Step::Summary(message.clone()));
            }
            (EventType::ToolResult, true) => {
                for result in message.tool_results() {
                    if let Some(call) = self.calls.iter_mut().rev().find(|c| c.id == result.id) {
                        call.result = Some(result.text_output());
                        call.is_error = result.is_error;
                    }
                }
                self.transcript.0.push(Step::Results(message.clone()));
                self.step = Instant::now();
            }
            (EventType::Hint, _) => {
                self.transcript.0.push(Step::Hint(message.clone()));
                self.step = Instant::now();
            }
            (EventType::AgentResult, _) => {
                self.transcript.0.push(Step::Reply(message.clone()));
                self.reply = Some(message.clone());
            }
            _ => {}
        }
    }

    fn model_call(&mut self, message: &Msg) {
        let now = Instant::now();
        self.metrics.model_calls += 1;
        self.metrics.model_time += now - self.step;
        add_usage(&mut self.metrics.usage, message_usage(message));
        self.step = now;
    }

    /// The run ended (or failed): its wall time.
    pub(crate) fn finish(&mut self) {
        self.metrics.wall = self.started.elapsed();
    }
}

/// A run's steps.
pub(crate) struct Transcript(Vec<Step>);

impl Transcript {
    /// What happened, one line per step: `user: ...`, `assistant: ...`,
    /// `assistant calls calculator({...})`, `calculator returned 42`, `hint: ...`,
    /// `summary: ...`, and `reply: ...` when the reply is not the last model message's text.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut last_text = String::new();
        for step in &self.0 {
            match step {
                Step::User(text) => lines.push(format!("user: {}", one_line(text, LINE))),
                Step::Assistant(message) => {
                    let text = message.text();
                    if !text.trim().is_empty() {
                        lines.push(format!("assistant: {}", one_line(text.trim(), LINE)));
                    }
                    for call in message.tool_uses() {
                        let call = ToolCall::new(
                            call.id.as_str(),
                            call.name.as_str(),
                            (*call.input).clone(),
                        );
                        lines.push(format!("assistant calls {call}"));
                    }
                    last_text = text;
                }
                Step::Summary(message) => {
                    last_text = message.text();
                    lines.push(format!("summary: {}", one_line(last_text.trim(), LINE)));
                }
                Step::Results(message) => {
                    for result in message.tool_results() {
                        let text = one_line(&result.text_output(), LINE);
                        lines.push(if result.is_error {
                            format!("{} failed: {text}", result.name)
                        } else {
                            format!("{} returned {text}", result.name)
                        });
                    }
                }
                Step::Hint(message) => {
                    lines.push(format!("hint: {}", one_line(&message.text(), LINE)));
                }
                Step::Reply(message) => {
                    let text = message.text();
                    if text != last_text {
                        lines.push(format!("reply: {}", one_line(&text, LINE)));
                    }
                }
            }
        }
        lines
    }
}
