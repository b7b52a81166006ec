//! The timeline of a run, for the web chat's picture: its model and tool steps as bars
//! (start, end, tokens) and what hooks decided as marks, sent as one `CUSTOM "timeline"`
//! event just before `RUN_FINISHED` (or `RUN_ERROR`).
//!
//! A hook of the server, registered last on each run's agent (priority `i32::MAX`, so it
//! sees every other hook's decision), records the bars from PreReasoning / PostReasoning,
//! PreSummary / PostSummary and PreActing / PostActing, and the decisions the events carry
//! (`goto_reasoning`, `stop_agent`, `skip_with`, with the deciding hook, and a context
//! compaction with the tokens before and after, from the `CompactionReport` the context hook
//! leaves for later hooks when asked at PreCall); the run adds the
//! approvals it applies when it starts (a resume) and the approvals it asks for when it ends.
//! The marks are named as `TracingHook`'s span events (without `agentscope.`).
//!
//! ```json
//! {"durationMs": 12.5,
//!  "bars": [{"kind": "reasoning", "label": "reasoning 1", "startMs": 0.1, "endMs": 3.2,
//!            "inputTokens": 12, "outputTokens": 5},
//!           {"kind": "tool", "label": "delete_files", "toolCallId": "c1",
//!            "startMs": 3.3, "endMs": 9.8}],
//!  "marks": [{"kind": "approval.approved", "atMs": 0.0, "tool": "delete_files",
//!             "toolCallId": "c1"}]}
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use agentscope::context::{CollectCompactionReports, CompactionReport, ContextWindowHook};
use agentscope::hooks::{ApprovalDecision, ToolApprovalHook};
use agentscope::{
    ChatUsage, Hook, HookError, HookEvent, HookEventType, HookEventTypes, Msg, ToolUseBlock,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// One bar: a model step or a tool call.
#[derive(Debug)]
struct Bar {
    kind: &'static str,
    label: String,
    call_id: Option<String>,
    start: f64,
    end: Option<f64>,
    usage: Option<ChatUsage>,
}

/// One mark: a decision.
#[derive(Debug)]
struct Mark {
    kind: &'static str,
    at: f64,
    hook: Option<String>,
    step: Option<&'static str>,
    tool: Option<(String, String)>,
    /// A compaction's tokens before and after.
    tokens: Option<(usize, usize)>,
}

impl Mark {
    fn new(kind: &'static str, at: f64) -> Self {
        Self {
            kind,
            at,
            hook: None,
            step: None,
            tool: None,
            tokens: None,
        }
    }

    fn tool(mut self, call: &ToolUseBlock) -> Self {
        self.tool = Some((call.name.to_string(), call.id.to_string()));
        self
    }

    fn hook(mut self, hook: &str) -> Self {
        self.hook = Some(hook.to_owned());
        self
    }
}

#[derive(Debug, Default)]
struct Data {
    bars: Vec<Bar>,
    marks: Vec<Mark>,
    reasoning_steps: usize,
}

/// A run's timeline, shared by the run and its hook.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    started: Instant,
    data: Arc<Mutex<Data>>,
}

impl Timeline {
    /// A timeline whose zero is now.
    pub(crate) fn start() -> Self {
        Self {
            started: Instant::now(),
            data: Arc::default(),
        }
    }

    /// Milliseconds since the start, to a tenth.
    fn now(&self) -> f64 {
        (self.started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0
    }

    fn data(&self) -> std::sync::MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The hook that records the steps and decisions of the run's call.
    pub(crate) fn hook(&self, approvals: Option<ToolApprovalHook>) -> TimelineHook {
        TimelineHook {
            timeline: self.clone(),
            approvals,
        }
    }

    /// An approval decision the run applies (a resume).
    pub(crate) fn decided(&self, call: &ToolUseBlock, decision: &ApprovalDecision) {
        let kind = match decision {
            ApprovalDecision::Approve => "approval.approved",
            ApprovalDecision::Edit(_) => "approval.edited",
            ApprovalDecision::Reject(_) => "approval.rejected",
            _ => "approval.decided",
        };
        let at = self.now();
        self.data().marks.push(Mark::new(kind, at).tool(call));
    }

    /// The `CUSTOM "timeline"` value: bars still open end now; `None` when nothing happened.
    pub(crate) fn finish(&self) -> Option<Value> {
        let end = self.now();
        let data = self.data();
        if data.bars.is_empty() && data.marks.is_empty() {
            return None;
        }
        let bars: Vec<Value> = data
            .bars
            .iter()
            .map(|bar| {
                let mut value = json!({
                    "kind": bar.kind,
                    "label": bar.label,
                    "startMs": bar.start,
                    "endMs": bar.end.unwrap_or(end),
                });
                if let Some(id) = &bar.call_id {
                    value["toolCallId"] = json!(id);
                }
                if let Some(usage) = &bar.usage {
                    value["inputTokens"] = json!(usage.input_tokens);
                    value["outputTokens"] = json!(usage.output_tokens);
                }
                value
            })
            .collect();
        let marks: Vec<Value> = data
            .marks
            .iter()
            .map(|mark| {
                let mut value = json!({"kind": mark.kind, "atMs": mark.at});
                if let Some(hook) = &mark.hook {
                    value["hook"] = json!(hook);
                }
                if let Some(step) = mark.step {
                    value["step"] = json!(step);
                }
                if let Some((name, id)) = &mark.tool {
                    value["tool"] = json!(name);
                    value["toolCallId"] = json!(id);
                }
                if let Some((before, after)) = mark.tokens {
                    value["tokensBefore"] = json!(before);
                    value["tokensAfter"] = json!(after);
                }
                value
            })
            .collect();
        Some(json!({"durationMs": end, "bars": bars, "marks": marks}))
    }

    fn open(&self, kind: &'static str, label: String, call_id: Option<String>) {
        let start = self.now();
        self.data().bars.push(Bar {
            kind,
            label,
            call_id,
            start,
            end: None,
            usage: None,
        });
    }

    /// Ends the last open bar of `kind` (and of `call_id`, for tools).
    fn close(&self, kind: &'static str, call_id: Option<&str>, usage: Option<ChatUsage>) {
        let end = self.now();
        let mut data = self.data();
        if let Some(bar) =
            data.bars.iter_mut().rev().find(|bar| {
                bar.kind == kind && bar.end.is_none() && bar.call_id.as_deref() == call_id
            })
        {
            bar.end = Some(end);
            bar.usage = usage;
        }
    }

    fn mark(&self, mark: Mark) {
        self.data().marks.push(mark);
    }
}

/// Records a run's steps and decisions on its [`Timeline`]; registered last.
pub(crate) struct TimelineHook {
    timeline: Timeline,
    /// The run's approval hook: the calls it asks about when it stops the call.
    approvals: Option<ToolApprovalHook>,
}

/// The usage the engine stored in a model message's metadata.
fn usage(message: &Msg) -> Option<ChatUsage> {
    message
        .metadata
        .get("usage")
        .and_then(|value| ChatUsage::deserialize(value).ok())
}

impl Hook for TimelineHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        let timeline = &self.timeline;
        match event {
            // The context hook (if any) leaves what it did for later hooks.
            HookEvent::PreCall(e) => {
                e.extensions_mut().insert(CollectCompactionReports);
            }
            HookEvent::PreReasoning(e) => {
                let compacted = e
                    .extensions()
                    .get::<CompactionReport>()
                    .filter(|report| report.changed())
                    .map(|report| (report.tokens_before, report.tokens_after));
                if let Some(tokens) = compacted {
                    let mut mark = Mark::new("context.compacted", timeline.now())
                        .hook(ContextWindowHook::NAME);
                    mark.tokens = Some(tokens);
                    timeline.mark(mark);
                }
                let step = {
                    let mut data = timeline.data();
                    data.reasoning_steps += 1;
                    data.reasoning_steps
                };
                timeline.open("reasoning", format!("reasoning {step}"), None);
            }
            HookEvent::PostReasoning(e) => {
                timeline.close("reasoning", None, usage(e.reasoning_message()));
                let at = timeline.now();
                if let Some(hook) = e.goto_requested_by() {
                    timeline.mark(Mark::new("goto_reasoning", at).hook(hook));
                }
                if let Some(hook) = e.stop_requested_by() {
                    if hook == ToolApprovalHook::NAME
                        && let Some(approvals) = &self.approvals
                    {
                        for call in approvals.pending() {
                            timeline.mark(Mark::new("approval.asked", at).tool(&call));
                        }
                    }
                    let mut mark = Mark::new("stop_agent", at).hook(hook);
                    mark.step = Some("reasoning");
                    timeline.mark(mark);
                }
            }
            HookEvent::PreSummary(_) => timeline.open("summary", "summary".to_owned(), None),
            HookEvent::PostSummary(e) => {
                timeline.close("summary", None, usage(e.summary_message()));
            }
            HookEvent::PreActing(e) => {
                let call = e.tool_use().clone();
                if let Some(hook) = e.skipped_by() {
                    let at = timeline.now();
                    timeline.mark(Mark::new("tool.skipped", at).hook(hook).tool(&call));
                } else {
                    timeline.open("tool", call.name.to_string(), Some(call.id.to_string()));
                }
            }
            HookEvent::PostActing(e) => {
                timeline.close("tool", Some(e.tool_use().id.as_str()), None);
                if let Some(hook) = e.stop_requested_by() {
                    let at = timeline.now();
                    let mut mark = Mark::new("stop_agent", at).hook(hook);
                    mark.step = Some("acting");
                    timeline.mark(mark);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn priority(&self) -> i32 {
        i32::MAX
    }

    fn interests(&self) -> HookEventTypes {
        HookEventTypes::NONE
            .with(HookEventType::PreCall)
            .with(HookEventType::PreReasoning)
            .with(HookEventType::PostReasoning)
            .with(HookEventType::PreSummary)
            .with(HookEventType::PostSummary)
            .with(HookEventType::PreActing)
            .with(HookEventType::PostActing)
    }

    fn name(&self) -> &str {
        "agui_timeline"
    }
}
