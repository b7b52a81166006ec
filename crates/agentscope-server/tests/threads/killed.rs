//! A real server process killed with SIGKILL while an approved `pay` runs, after the payment
//! service took the payment: a new server process on the same store lists the call in doubt
//! and ends the next run with its interrupt; a retry runs `pay` again with the same
//! idempotency key, and the service, which pays once per key, does not pay twice.
//!
//! The servers are copies of this test binary running the ignored test `killed::worker`.

use std::path::{Path, PathBuf};

use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use agentscope_test::ledger::Ledger;
use agentscope_test::process::{SelfProcess, json_settings};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::support::events::{TOOL_RESULT_STEP, run_of, text_step, types};
use crate::support::http::{assert_refused, find, post, thread};
use crate::support::serve::{serve_worker, user};
use crate::{answer, asks_to_pay, in_doubt_interrupt, input, resume};

/// The environment variable carrying a worker's [`Settings`].
const WORKER_ENV: &str = "AGENTSCOPE_AGUI_KILLED_WORKER";

/// What a worker serves.
#[derive(Debug, Serialize, Deserialize)]
struct Settings {
    /// The threads (`threads/`) and the payment service's files (`attempts`, `ledger`).
    dir: PathBuf,
    /// The first server: its model asks to pay, and `pay` never returns once it has paid.
    /// The second: its model answers once the call is resolved, and `pay` returns.
    first: bool,
}

/// A server process: `assistant` with `pay` (approval needed) on the JSON threads in
/// `<dir>/threads`; prints `LISTENING <base url>` and serves until killed.
#[tokio::test]
#[ignore = "a server process of `a_server_killed_mid_tool_...`, which starts it itself"]
async fn worker() {
    let settings: Settings = json_settings(WORKER_ENV);
    let model = if settings.first {
        ScriptedModel::new([asks_to_pay()])
    } else {
        ScriptedModel::new([ScriptedResponse::text("Paid invoice 7.")])
    };
    let (books, hang) = (Ledger::new(&settings.dir), settings.first);
    let agent = move || {
        ReActAgent::builder()
            .model(model.clone())
            .toolkit(Toolkit::new().tool(books.pay_tool(hang)))
    };
    serve_worker(
        agent,
        JsonFileSessionStore::new(settings.dir.join("threads")),
    )
    .await;
}

fn start(dir: &Path, first: bool) -> (SelfProcess, String) {
    let settings = Settings {
        dir: dir.to_owned(),
        first,
    };
    let mut server = SelfProcess::spawn_json("killed::worker", WORKER_ENV, &settings);
    let base = tokio::task::block_in_place(|| server.expect("LISTENING "));
    (server, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_tool_reports_the_call_in_doubt_and_a_retry_pays_once() {
    let dir = tempfile::tempdir().unwrap();
    let books = Ledger::new(dir.path());

    // The first server: ask, approve, and die while `pay` runs, after the service paid.
    let (first, base) = start(dir.path(), true);
    let (status, events) = post(&base, &input("t1", json!([user("u1", "Pay invoice 7.")]))).await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(
        find(&events, "RUN_FINISHED")["outcome"]["interrupts"][0]["reason"],
        "tool_approval"
    );
    let approve = resume("t1", answer("p1", json!({"approved": true})));
    let approving = tokio::spawn(async move {
        // Cut off by the kill: what it got does not matter.
        let sent = reqwest::Client::new()
            .post(format!("{base}/agents/assistant"))
            .json(&approve)
            .send()
            .await;
        if let Ok(response) = sent {
            let _ = response.text().await;
        }
    });
    let key = tokio::task::block_in_place(|| books.kill_once_paid(first));
    approving.await.unwrap();

    // The second server, on the same store: the call is in doubt, with the key `pay` got.
    let (second, base) = start(dir.path(), false);
    let interrupt = in_doubt_interrupt("t1");
    assert_eq!(interrupt["metadata"]["idempotencyKey"], key.as_str());
    let history = thread(&base, "t1").await;
    assert_eq!(history["interrupts"], json!([interrupt]));
    assert_eq!(history["awaits"], "resume");
    let (status, events) = post(&base, &input("t1", json!([]))).await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(types(&events), run_of(&[]));
    assert_eq!(
        find(&events, "RUN_FINISHED")["outcome"],
        json!({"type": "interrupt", "interrupts": [interrupt]})
    );
    assert_refused(
        &base,
        &input("t1", json!([user("u2", "Was it paid?")])),
        409,
        "interrupts_pending",
    )
    .await;
    assert_eq!(
        books.attempts(),
        std::slice::from_ref(&key),
        "nothing ran again by itself"
    );

    // Retry: `pay` runs again with the same key; the service pays once.
    let (status, events) = post(
        &base,
        &resume("t1", answer("p1", json!({"action": "retry"}))),
    )
    .await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(types(&events), run_of(&[TOOL_RESULT_STEP, &text_step(1)]));
    assert_eq!(
        find(&events, "TOOL_CALL_RESULT")["content"],
        format!("paid invoice 7 (receipt {key})")
    );
    assert_eq!(
        find(&events, "RUN_FINISHED")["result"]["text"],
        "Paid invoice 7."
    );
    assert_eq!(books.attempts(), [key.clone(), key.clone()]);
    assert_eq!(books.paid(), [key], "paid once");
    let history = thread(&base, "t1").await;
    assert_eq!(
        (&history["interrupts"], &history["awaits"]),
        (&json!([]), &json!("message"))
    );
    drop(second);
}
