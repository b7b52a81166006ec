//! Durable sessions: agents bound to the JSON file store (`agents`), what a call saves at
//! each step (`steps`), when the durability modes write them (`durability`), the store's lease between agents of one process (`leases`) and
//! between processes (`processes`, which start copies of this binary as workers: the
//! ignored test `worker::run`), and the JSON file store against the shared `SessionStore`
//! conformance suite (`json_file_conformance`), and a store written as a third-party author
//! writes one, against the same suite (`third_party_store`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod admission;
mod agents;
mod call_ids;
mod durability;
mod hook_versions;
mod in_doubt;
mod json_file_conformance;
mod leases;
mod processes;
mod steps;
mod store;
mod third_party_store;
mod worker;
