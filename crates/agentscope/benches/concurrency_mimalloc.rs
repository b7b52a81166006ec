//! `concurrency_mimalloc`: the `concurrency` bench (see `concurrency/body.rs`) with mimalloc
//! as the global allocator, as an application may choose it (the library does not: the
//! allocator is the application's choice). Run:
//! `cargo bench -p agentscope --bench concurrency_mimalloc`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The allocator, as the summary names it.
const ALLOCATOR: &str = "mimalloc";

#[path = "concurrency/body.rs"]
mod body;

criterion::criterion_main!(body::benches);
