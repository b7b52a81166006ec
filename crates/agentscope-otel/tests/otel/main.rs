//! The exported span trees, checked against golden files (`tests/golden/*.json`), with the
//! SDK's in-memory exporter: no backend needed. Ids, times and call ids are normalised.
//! `UPDATE_GOLDEN=1` rewrites the files. `phoenix.rs` exports the same scenarios to a real
//! Arize Phoenix and reads them back.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod decisions;
mod golden;
mod phoenix;
