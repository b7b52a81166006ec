//! Support shared by the integration tests: the invariant checker of `docs/reliability.md`,
//! deterministic fixtures, assertions on how a call failed, text and row forms of messages to
//! compare memories exactly, compact forms of what a recording hook saw, small hooks, the
//! redaction hook of the hooks guide, and a collector of `tracing` warnings. Each test binary
//! uses part of it.
#![allow(dead_code)]

pub(crate) mod describe;
pub(crate) mod failures;
pub(crate) mod fixtures;
pub(crate) mod hooks;
pub(crate) mod invariants;
pub(crate) mod recorded;
pub(crate) mod redaction;
pub(crate) mod rows;
pub(crate) mod warnings;
