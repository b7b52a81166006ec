//! Support shared by the reliability tests (`faults`, `cancellation`,
//! `reliability_concurrency`, `chain_props`, `bad_input`, `soak`): the invariant checker of
//! `docs/reliability.md` and a few deterministic fixtures. Each test binary uses part of it.
#![allow(dead_code)]

pub(crate) mod fixtures;
pub(crate) mod invariants;
