//! agentscope-eval, by area: argument matchers (`matchers`), trajectory modes
//! (`trajectory`), answer criteria (`answers`), the case format (`cases`), runs on agents
//! (`runs`), the judge (`judge`), stored sessions as cases (`sessions`), the reports
//! (`reports`) and baseline comparison (`compare`); the OpenTelemetry events are in
//! `tests/otel`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod answers;
mod cases;
mod compare;
mod judge;
mod matchers;
mod reports;
mod runs;
mod sessions;
mod support;
mod trajectory;
