//! Durable sessions: agents bound to the JSON file store (`agents`), and the JSON file store
//! against the shared `SessionStore` conformance suite (`json_file_conformance`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod agents;
mod json_file_conformance;
mod steps;
