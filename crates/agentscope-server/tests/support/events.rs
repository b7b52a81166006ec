//! The AG-UI event types of a run, in order: the exact sequences the tests expect, spelled
//! with the steps runs have in common.

use serde_json::Value;

/// The `type` of each event.
pub(crate) fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// A whole run: `RUN_STARTED`, the events of `steps`, then the snapshot, the timeline
/// (`CUSTOM`, for a run with steps) and `RUN_FINISHED`.
pub(crate) fn run_of(steps: &[&[&'static str]]) -> Vec<&'static str> {
    let mut all = vec!["RUN_STARTED"];
    all.extend(steps.concat());
    all.push("MESSAGES_SNAPSHOT");
    if !steps.is_empty() {
        all.push("CUSTOM");
    }
    all.push("RUN_FINISHED");
    all
}

/// A model step that asks for one tool call, its arguments in one piece.
pub(crate) const TOOL_CALL_STEP: &[&str] = &[
    "STEP_STARTED",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "STEP_FINISHED",
];

/// A tool step that ends with one call's result.
pub(crate) const TOOL_RESULT_STEP: &[&str] = &["STEP_STARTED", "TOOL_CALL_RESULT", "STEP_FINISHED"];

/// A model step that answers with one text message streamed in `deltas` pieces.
pub(crate) fn text_step(deltas: usize) -> Vec<&'static str> {
    let mut step = vec!["STEP_STARTED", "TEXT_MESSAGE_START"];
    step.extend(std::iter::repeat_n("TEXT_MESSAGE_CONTENT", deltas));
    step.extend(["TEXT_MESSAGE_END", "STEP_FINISHED"]);
    step
}
