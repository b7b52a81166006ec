//! Several instances of a service on one PostgreSQL: the session lease (one call at a time
//! per session across instances, fenced saves, expiry, a holder cut off from the server
//! stopping its call), the cross-instance interrupt (LISTEN/NOTIFY), and the failures a
//! deployment sees: a holder killed with SIGKILL, the server restarted mid-call. The process
//! tests start copies of this binary as instances (`worker::run`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod leases;
mod processes;
mod worker;

use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_postgres::PostgresSessionStore;

use crate::support::PostgresServer;

/// The reply of an interrupted call.
const INTERRUPT_REPLY: &str = "I noticed that you have interrupted me. What can I do for you?";
/// The result given to a tool call an interrupt stopped.
const INTERRUPTED_RESULT: &str = "Error: Tool execution was interrupted.";
/// The result given to a tool call whose process died before its result was stored.
const INTERRUPTED_WHILE_RUNNING: &str = "Error: Tool execution was interrupted while running \
     (the agent stopped before its result was stored), so it was not run again; its effects \
     may or may not have happened.";

/// What a message says: its text, or for a tool call `call <name>`, for a result
/// `result <text>`.
fn said(msg: &Msg) -> String {
    if let Some(call) = msg.tool_uses().first() {
        return format!("call {}", call.name);
    }
    if let Some(result) = msg.tool_results().first() {
        return format!("result {}", result.text_output());
    }
    msg.text()
}

fn all_said(messages: &[Msg]) -> Vec<String> {
    messages.iter().map(said).collect()
}

/// Waits until session `session` records a running tool (the engine saves that before the
/// tool starts); panics after 10 s.
async fn wait_running(store: &PostgresSessionStore, session: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let running = store
            .load(session)
            .await
            .unwrap()
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
async fn assert_interrupted(outcome: worker::Outcome, store: &PostgresSessionStore, session: &str) {
    assert_eq!(
        outcome,
        worker::Outcome::Ok {
            reply: INTERRUPT_REPLY.into(),
            model_input: vec!["q1".into()],
        }
    );
    let stored = store.load(session).await.unwrap().unwrap();
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

/// A store on `server` whose leases live `ttl`.
async fn store_with_lease_ttl(server: &PostgresServer, ttl: Duration) -> PostgresSessionStore {
    PostgresSessionStore::builder(server.url())
        .lease_ttl(ttl)
        .connect()
        .await
        .unwrap()
}
