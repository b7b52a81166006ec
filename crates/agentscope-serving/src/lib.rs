//! The serving core of agentscope-rs: what serving an agent's runs over a protocol means,
//! decided once for every protocol. `agentscope-server` (AG-UI) and `agentscope-a2a` (A2A)
//! adapt it: they keep only their protocol's mapping.
//!
//! - **A served run lives with its session.** A run (an AG-UI run, an A2A task) is a
//!   [`Run`] record in its conversation's session, written by the call that serves it in
//!   the same compare-and-swap saves, under the same lease and fence, as the conversation:
//!   its admission with the call's first save, its end (`completed` with the reply,
//!   `input-required`, `canceled`, `failed`) with its last ([`RunHook`]). A reader never sees
//!   a conversation and a run state that disagree.
//! - **Decided under the lease.** A run's call takes the session's lease first; holding it,
//!   the core reads what the session awaits ([`Awaiting`]: calls awaiting approval, calls in
//!   doubt, work ready to run) and the protocol decides the call's input
//!   ([`Served::start`], [`Decision`]), so no other instance can change the session between
//!   what was read and what runs: a call recorded as running is in doubt only when no call
//!   holds the session, and a message already received is known as such on every instance.
//! - **The orphan rule** ([`settle`]): a run that says `working` while no call serves it is
//!   settled from what the conversation holds, never reported failed when its call finished.
//! - **Bounded**: [`Retention`] prunes a session's runs by age and count; nothing in memory
//!   grows with the runs served but the runs this instance serves now.
//! - **At the edge**: one bearer-token check ([`BearerAuth`]), and one way to tell a peer
//!   about an internal failure ([`failure`]: a generic sentence with a correlation id, the
//!   details in the log).
//!
//! The design, and what it replaced, is in `docs/architecture.md` ("Serving") and
//! `docs/decisions.md`.
#![warn(missing_docs, missing_debug_implementations)]

// One job per module; `use crate::` edges only point down the list (no cycles):
//   served   -> awaiting, held, hook, record, retention, settle, spec
//                                  Served, Turn, Decision: a run's call, admitted under the lease
//   hook     -> failure, record    RunHook: the run's end, written with the call's last save
//   held     -> record             a change to a session's runs under its lease
//   settle   -> awaiting, record   the orphan rule
//   retention -> record            how long runs are kept
//   awaiting                       what a session awaits
//   record                         Run, Runs: a session's served runs
//   spec                           AgentSpec: how a run's agent is made
//   auth                           the bearer token
//   failure                        internal failures as a peer reads them
mod auth;
mod awaiting;
mod failure;
pub mod held;
mod hook;
mod record;
mod retention;
mod served;
mod settle;
mod spec;

pub use auth::BearerAuth;
pub use awaiting::{Awaiting, Awaits, idempotency_key, may_be_running};
pub use failure::{Failure, failure};
pub use hook::RunHook;
pub use record::{Run, RunEvent, RunState, Runs, UnreadableRuns};
pub use retention::Retention;
pub use served::{Decision, ReadError, Served, StartError, Stored, Turn};
pub use settle::{STOPPED, STOPPED_IN_DOUBT, run_part, settle};
pub use spec::AgentSpec;
