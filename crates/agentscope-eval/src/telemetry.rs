//! The case's span and its `gen_ai.evaluation.result` events, as `tracing` data that
//! `agentscope-otel` exports (nothing is recorded, and nothing costs more than a branch,
//! without a subscriber).
//!
//! - One span per run of a case, `eval_case` (exported as `eval_case {case id}`, kind
//!   INTERNAL), with `agentscope.eval.case.id`, `agentscope.eval.repetition` and
//!   `agentscope.eval.passed`; and, when the run failed, `error.type` and an error status.
//!   The run's agent calls run inside it, so `TracingHook`'s `invoke_agent` spans are its
//!   children.
//! - One `gen_ai.evaluation.result` event per criterion on that span, as the OpenTelemetry
//!   GenAI semantic conventions define the event: `gen_ai.evaluation.name` (the criterion),
//!   `gen_ai.evaluation.score.value` (a double from 0 to 1), `gen_ai.evaluation.score.label`
//!   (`pass` or `fail`), `gen_ai.evaluation.explanation` (the reason), `gen_ai.response.id`
//!   (the evaluated answer's response id, when the model gave one) and `error.type` (when
//!   the criterion could not be evaluated; then no score or label).

use tracing::Span;
use tracing::field::Empty;

use crate::score::CriterionResult;

/// The target of the spans and events.
pub(crate) const TARGET: &str = "agentscope_eval";

/// Opens a run's span (not entered: the run is instrumented with it).
pub(crate) fn case_span(case: &str, repetition: u32) -> Span {
    tracing::info_span!(
        target: TARGET,
        "eval_case",
        otel.name = %format_args!("eval_case {case}"),
        otel.kind = "internal",
        agentscope.eval.case.id = case,
        // An i64: `tracing-opentelemetry` exports unsigned values as strings.
        agentscope.eval.repetition = i64::from(repetition),
        agentscope.eval.passed = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Records a run's outcome on its span.
pub(crate) fn finish(span: &Span, passed: bool, error: Option<(&str, &str)>) {
    span.record("agentscope.eval.passed", passed);
    if let Some((error_type, message)) = error {
        span.record("error.type", error_type);
        span.record("otel.status_code", "ERROR");
        span.record("otel.status_description", message);
    }
}

/// One `gen_ai.evaluation.result` event on `span`.
pub(crate) fn evaluation_result(span: &Span, result: &CriterionResult, response_id: Option<&str>) {
    let (score, label) = match result.error_type {
        Some(_) => (None, None),
        None => (
            Some(result.score),
            Some(if result.passed { "pass" } else { "fail" }),
        ),
    };
    tracing::event!(
        target: TARGET,
        parent: span,
        tracing::Level::INFO,
        gen_ai.evaluation.name = result.name.as_str(),
        gen_ai.evaluation.score.value = score,
        gen_ai.evaluation.score.label = label,
        gen_ai.evaluation.explanation = result.reason.as_str(),
        gen_ai.response.id = response_id,
        error.type = result.error_type.as_deref(),
        "gen_ai.evaluation.result"
    );
}
