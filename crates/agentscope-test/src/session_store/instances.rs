//! Several instances of a service on one shared store: the worker processes a store crate's
//! tests start ([`worker`]), and the scenarios every leasing store runs with them
//! ([`scenarios`]): turns alternating between processes, racing calls, a holder killed with
//! SIGKILL, interrupts across instances, a dropped call giving its lease back.
//!
//! A store crate keeps one test binary (`tests/instances`) with a `worker` module holding
//! the ignored entry test, and calls the scenarios from its tests:
//!
//! ```no_run
//! # use agentscope::session::{AgentState, SessionStore};
//! use agentscope_test::session_store::instances::worker::{self, Settings, WorkerEntry};
//!
//! // In `tests/instances/worker.rs`:
//! const ENTRY: WorkerEntry = WorkerEntry {
//!     test: "worker::run",
//!     env: "MY_STORE_WORKER",
//! };
//!
//! // `#[test] #[ignore = "started by the instance tests in child processes"] fn run()`,
//! // with `open` connecting the store to `settings.url` with `settings.lease_ttl_ms`:
//! fn run<S: SessionStore + 'static>(open: fn(Settings) -> S) {
//!     worker::serve_stdin(ENTRY, move |settings: Settings| async move { open(settings) });
//! }
//! ```
//!
//! Everything here panics when a step fails: it is test support.
#![allow(clippy::expect_used, clippy::panic)] // scenarios: a step that fails fails the test

pub mod scenarios;
pub mod worker;

use std::time::{Duration, Instant};

use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT};
use agentscope::prelude::*;
use agentscope::session::{AgentState, SessionStore};

/// What a message says: its text, or for a tool call `call <name>`, for a result
/// `result <text>`.
///
/// ```
/// use agentscope::Msg;
/// use agentscope_test::session_store::instances::said;
///
/// assert_eq!(said(&Msg::user("hi")), "hi");
/// ```
pub fn said(msg: &Msg) -> String {
    if let Some(call) = msg.tool_uses().first() {
        return format!("call {}", call.name);
    }
    if let Some(result) = msg.tool_results().first() {
        return format!("result {}", result.text_output());
    }
    msg.text()
}

/// What each of `messages` says ([`said`]).
///
/// ```
/// use agentscope::Msg;
/// use agentscope_test::session_store::instances::all_said;
///
/// assert_eq!(all_said(&[Msg::user("q"), Msg::assistant("a")]), ["q", "a"]);
/// ```
pub fn all_said(messages: &[Msg]) -> Vec<String> {
    messages.iter().map(said).collect()
}

/// Loads `session` of `store`, which must be stored.
///
/// # Panics
///
/// When the store fails or the session is not stored.
pub async fn stored<S: SessionStore + ?Sized>(store: &S, session: &str) -> AgentState {
    store
        .load(session)
        .await
        .expect("the store loads")
        .expect("the session is stored")
}

/// Waits until session `session` of `store` records a running tool (the engine saves that
/// before the tool starts).
///
/// # Panics
///
/// After 10 s without one, or when the store fails.
pub async fn wait_running<S: SessionStore + ?Sized>(store: &S, session: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let running = store
            .load(session)
            .await
            .expect("the store loads")
            .is_some_and(|state| !state.running_tools.is_empty());
        if running {
            return;
        }
        assert!(Instant::now() < deadline, "no tool started on {session}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Checks that a call on `session` asked with `q1` ended as an interrupt ends it: the
/// interrupt reply, and the stored conversation with the tool call's "interrupted" result
/// and no tool left running.
///
/// # Panics
///
/// When it did not.
pub async fn assert_interrupted<S: SessionStore + ?Sized>(
    outcome: worker::Outcome,
    store: &S,
    session: &str,
) {
    assert_eq!(
        outcome,
        worker::Outcome::Ok {
            reply: INTERRUPT_REPLY.into(),
            model_input: vec!["q1".into()],
        }
    );
    let stored = stored(store, session).await;
    assert_eq!(
        all_said(&stored.messages),
        [
            "q1",
            "call wait",
            &format!("result {INTERRUPTED_RESULT}"),
            INTERRUPT_REPLY
        ]
    );
    assert!(stored.running_tools.is_empty());
}
