//! What the pipeline exports, read with the SDK's in-memory exporters (no backend needed):
//! the span trees of the golden files (`golden`; `UPDATE_GOLDEN=1` rewrites them), hook and
//! model-layer decisions as events (`decisions`), parallel tool spans (`parallel`), token
//! usage (`usage`), opt-in content (`content`) and the metrics (`metrics`); and the golden
//! scenarios exported to a real Arize Phoenix and read back through its API (`phoenix`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod content;
mod decisions;
mod golden;
mod in_memory;
mod metrics;
mod parallel;
mod phoenix;
mod usage;
