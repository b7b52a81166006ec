//! The built-in hooks: structured output, pending tool recovery, tool approval, skills,
//! knowledge (RAG), long-term memory, tracing and the JSONL trace. One test binary (one
//! module per hook) so that the suite links a few binaries instead of one per file.
//!
//! `rag`, `long_term_memory` and `tracing_hook` capture `tracing` output with thread-local
//! subscribers (`set_default`, `with_default`; never a global one). `tracing` caches each
//! callsite's interest process-wide, and while only one subscriber is registered it computes
//! that interest from the default of whichever thread reaches the callsite first: a thread
//! without a subscriber would cache "never" and blind a capture running on another thread.
//! So the callsites these modules observe (the knowledge and long-term memory warnings, the
//! tracing hook's spans and events) must be reached only from those modules: no other module
//! here uses `GenericRAGHook`, a long-term memory hook or `TracingHook`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod jsonl_trace;
#[cfg(feature = "rag")]
mod long_term_memory;
mod pending_tool_recovery;
#[cfg(feature = "rag")]
mod rag;
#[cfg(feature = "skills")]
mod skills;
#[cfg(feature = "schema")]
mod structured_output;
mod tool_approval;
mod tracing_hook;
