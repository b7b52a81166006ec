//! `concurrency`: 10,000 and 100,000 concurrent calls against the tokio floor, with the
//! system allocator (see `concurrency/body.rs`; `concurrency_mimalloc` is the same with
//! mimalloc). Run: `cargo bench -p agentscope --bench concurrency`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

/// The allocator, as the summary names it.
const ALLOCATOR: &str = "system allocator";

#[path = "concurrency/body.rs"]
mod body;

criterion::criterion_main!(body::benches);
