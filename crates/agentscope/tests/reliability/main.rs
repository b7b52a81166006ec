//! Reliability: bad input at the edges, fault injection, cancellation by drop and
//! interrupt, and concurrency (small and at scale), each checked against the invariants
//! of docs/reliability.md. One test binary (one module per area) so that the suite links a
//! few binaries instead of one per file. The soak test stays in its own binary
//! (`tests/soak.rs`): it installs a counting global allocator and a panic hook and
//! measures the memory of the whole process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod cancellation;
mod concurrency;
mod faults;
mod reliability_concurrency;
