//! The web chat page in a real browser (headless Chromium driven by `playwright-core`,
//! pinned in `tests/browser/package-lock.json`).
//!
//! The server runs in-process on 127.0.0.1 (the router nested under `/ui`, as an application
//! mounts it) with a scripted model and a `delete_files` tool that needs approval;
//! `node tests/browser/chat.test.mjs <url>` loads the page, asks
//! "What is 6*7?" and waits for the streamed answer, asks to delete the old log files, clicks
//! Approve on the approval request and waits for the tool result and the final answer, then
//! reloads the page and checks the same conversation is shown again. It prints one JSON line
//! of what the page showed; this test asserts the exact texts, and that the tool ran once.
//!
//! Needs Node.js 20+, the system Chromium (`chromium` on `PATH`, Debian package `chromium`;
//! `CHROMIUM` overrides) and the packages of `tests/browser` (the test runs `npm ci` there
//! itself when npm is present). Under CI (`AGENTSCOPE_CI`, set by `.ci/run`, which installs
//! all three) a missing one fails the test; elsewhere the test is ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentscope::ToolError;
use agentscope::prelude::*;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};
use support::components::{chromium, node, node_packages, run_node};
use support::serve::guarded_assistant;

const BROWSER_DIR: &str = "tests/browser";

const QUESTION: &str = "What is 6*7?";
const ANSWER_CHUNKS: [&str; 3] = ["6 × 7 ", "= ", "42."];
const DELETE_REQUEST: &str = "Please delete the old log files.";
const THINKING: &str = "Deleting files needs the user's approval.";
const PREAMBLE_CHUNKS: [&str; 2] = ["I will delete ", "the old log files."];
const TOOL_RESULT: &str = "deleted 3 files matching /var/log/app/*.log";
const PROGRESS: &str = "deleting /var/log/app/*.log";
const FINAL_ANSWER: &str = "Done: 3 old log files deleted.";

/// The model's answers, in the order the page asks for them.
fn script() -> Vec<ScriptedResponse> {
    vec![
        // 1. The question: a text answer streamed in chunks.
        ScriptedResponse::chunks(ANSWER_CHUNKS.map(ScriptedChunk::text)),
        // 2. The deletion: thinking, a short text, then a guarded tool call (the run stops).
        ScriptedResponse::chunks([
            ScriptedChunk::thinking(THINKING),
            ScriptedChunk::text(PREAMBLE_CHUNKS[0]),
            ScriptedChunk::text(PREAMBLE_CHUNKS[1]),
            ScriptedChunk::tool_call(
                "call-delete",
                "delete_files",
                json!({"pattern": "/var/log/app/*.log"}),
            ),
        ]),
        // 3. After the approval: the final answer.
        ScriptedResponse::text(FINAL_ANSWER),
    ]
}

fn delete_files(runs: Arc<AtomicUsize>) -> impl Tool {
    tool_fn(
        "delete_files",
        "Deletes the files matching a glob pattern.",
        json!({"type": "object", "properties": {"pattern": {"type": "string"}},
               "required": ["pattern"]}),
        move |input: Value, ctx: ToolContext| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let pattern = input["pattern"].as_str().unwrap_or_default().to_owned();
                ctx.emit(format!("deleting {pattern}")).await;
                Ok::<_, ToolError>(format!("deleted 3 files matching {pattern}"))
            }
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(all(has_node, has_chromium)),
    ignore = "Node.js, npm or Chromium not installed: .ci/run installs them"
)]
async fn the_web_chat_streams_asks_for_approval_and_restores_the_thread_in_a_real_browser() {
    let (Some(_), Some(_), Some(chromium)) = (node(), node_packages(BROWSER_DIR), chromium())
    else {
        return;
    };

    // The server: one agent, a scripted model, a tool that needs approval, JSON sessions.
    let model = ScriptedModel::new(script());
    let deletions = Arc::new(AtomicUsize::new(0));
    let sessions = tempfile::tempdir().unwrap();
    let spec_model = model.clone();
    let spec_deletions = deletions.clone();
    let agui = guarded_assistant(sessions.path(), move || {
        ReActAgent::builder()
            .name("assistant")
            .sys_prompt("You are a careful operations assistant.")
            .model(spec_model.clone())
            .toolkit(Toolkit::new().tool(delete_files(spec_deletions.clone())))
    })
    .build()
    .unwrap();
    // Mounted under a prefix, as an application embeds it: the page is served at `/ui` and
    // must find its assets and the API relative to that.
    let app = axum::Router::new().nest("/ui", agui.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/ui", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(agui.shutdown_signal(async {
                let _ = stopped.await;
            }))
            .into_future(),
    );

    // The browser.
    let stdout = run_node(
        &format!("{BROWSER_DIR}/chat.test.mjs"),
        &url,
        &[("CHROMIUM_PATH", chromium.as_path())],
    )
    .await;
    let seen: Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no JSON report from the browser test:\n{stdout}"));

    println!("the page showed: {seen}");

    // 1. The streamed answer, one DOM append per text delta.
    assert_eq!(seen["ok"], json!(true), "{seen:#}");
    assert_eq!(seen["agent"], json!("assistant"));
    assert!(
        seen["threadId"].as_str().is_some_and(|id| id.len() == 36),
        "a UUID thread id in the URL: {}",
        seen["threadId"]
    );
    assert_eq!(seen["answer"], json!(ANSWER_CHUNKS.concat()));
    assert_eq!(seen["answerDeltas"], json!(ANSWER_CHUNKS.len()), "{seen:#}");

    // 2. The approval request, then the tool's progress, its result and the final answer.
    assert_eq!(
        seen["approval"],
        json!({
            "interrupts": 1,
            "tool": "delete_files",
            "arguments": {"pattern": "/var/log/app/*.log"},
            "sendDisabledWhileAsking": true,
        })
    );
    assert_eq!(seen["progress"], json!([PROGRESS]), "{seen:#}");
    assert_eq!(seen["toolResult"], json!(TOOL_RESULT));
    assert_eq!(seen["finalAnswer"], json!(FINAL_ANSWER));

    // 3. The whole conversation, in order, each message once (the snapshot at the end of a
    // run does not duplicate what was streamed), and the same after a reload.
    assert_eq!(
        seen["transcript"],
        json!([
            {"user": QUESTION},
            {"assistant": ANSWER_CHUNKS.concat()},
            {"user": DELETE_REQUEST},
            {"reasoning": THINKING},
            {"assistant": PREAMBLE_CHUNKS.concat()},
            {"toolCall": "delete_files", "arguments": {"pattern": "/var/log/app/*.log"},
             "result": TOOL_RESULT},
            {"assistant": FINAL_ANSWER},
        ]),
        "{seen:#}"
    );
    assert_eq!(seen["reloadedTranscriptMatches"], json!(true));

    // The agent side: the approved tool ran exactly once; every scripted answer was used.
    assert_eq!(deletions.load(Ordering::SeqCst), 1, "delete_files runs");
    assert_eq!(model.remaining(), 0, "unused scripted answers");
    assert_eq!(model.request_count(), 3);

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .expect("the server did not shut down")
        .unwrap()
        .unwrap();
}
