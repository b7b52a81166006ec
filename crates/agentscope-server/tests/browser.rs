//! The web chat page in a real browser (headless Chromium driven by `playwright-core`,
//! pinned in `tests/browser/package-lock.json`).
//!
//! The server runs in-process on 127.0.0.1 (the router nested under `/ui`, as an application
//! mounts it) with a scripted model and a `delete_files` tool that needs approval;
//! `node tests/browser/chat.test.mjs <url>` loads the page, asks
//! "What is 6*7?" and waits for the streamed answer, asks to delete the old log files, clicks
//! Approve on the approval request and waits for the tool result and the final answer, then
//! opens the timeline of each run (bars of its steps with tokens, marks of the approval and
//! the stop), then reloads the page and checks the same conversation is shown again. Last it
//! asks to pay an invoice, approves, and clicks Stop while `pay` runs (it never returns the
//! first time): the page shows the call in doubt with Mark done, Retry and Fail; it clicks Mark done, types
//! the result and waits for the agent's answer. It prints one JSON line of what the page
//! showed; this test asserts the exact texts, that each tool ran once, and what the model
//! read.
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
use agentscope::hooks::ApprovalPolicy;
use agentscope::prelude::*;
use agentscope::session::JsonFileSessionStore;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse, tools};
use serde_json::{Value, json};
use support::components::{chromium, node, node_packages, run_node};

const BROWSER_DIR: &str = "tests/browser";

const QUESTION: &str = "What is 6*7?";
const ANSWER_CHUNKS: [&str; 3] = ["6 × 7 ", "= ", "42."];
const DELETE_REQUEST: &str = "Please delete the old log files.";
const THINKING: &str = "Deleting files needs the user's approval.";
const PREAMBLE_CHUNKS: [&str; 2] = ["I will delete ", "the old log files."];
const TOOL_RESULT: &str = "deleted 3 files matching /var/log/app/*.log";
const PROGRESS: &str = "deleting /var/log/app/*.log";
const FINAL_ANSWER: &str = "Done: 3 old log files deleted.";
const PAY_REQUEST: &str = "Pay invoice 7.";
const PAY_PROGRESS: &str = "paying invoice 7";
const CHECKED_RESULT: &str = "Paid invoice 7: receipt 42 (checked at the bank).";
const IN_DOUBT_ANSWER: &str = "Invoice 7 is paid (receipt 42).";

/// The model's answers, in the order the page asks for them.
fn script() -> Vec<ScriptedResponse> {
    vec![
        // 1. The question: a text answer streamed in chunks.
        ScriptedResponse::chunks(ANSWER_CHUNKS.map(ScriptedChunk::text)).with_usage(21, 7),
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
        ])
        .with_usage(64, 25),
        // 3. After the approval: the final answer.
        ScriptedResponse::text(FINAL_ANSWER).with_usage(98, 9),
        // 4. The payment: a guarded `pay` call (approved, then stopped while it runs).
        ScriptedResponse::tool_call("call-pay", "pay", json!({"invoice": 7})),
        // 5. After the call in doubt is marked done: the answer.
        ScriptedResponse::text(IN_DOUBT_ANSWER),
    ]
}

/// `pay`: counts its runs; the first reports progress and never returns (the page stops
/// its run meanwhile).
fn pay(runs: Arc<AtomicUsize>) -> impl Tool {
    tools::pay(move |invoice, ctx| {
        let runs = runs.clone();
        async move {
            if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                ctx.emit(PAY_PROGRESS).await;
                std::future::pending::<()>().await;
            }
            format!("paid invoice {invoice}")
        }
    })
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

    // The server: one agent, a scripted model, two tools that need approval, JSON sessions.
    let model = ScriptedModel::new(script());
    let deletions = Arc::new(AtomicUsize::new(0));
    let payments = Arc::new(AtomicUsize::new(0));
    let sessions = tempfile::tempdir().unwrap();
    let (spec_model, spec_deletions, spec_payments) =
        (model.clone(), deletions.clone(), payments.clone());
    let spec = AgentSpec::new(move || {
        ReActAgent::builder()
            .name("assistant")
            .sys_prompt("You are a careful operations assistant.")
            .model(spec_model.clone())
            .toolkit(
                Toolkit::new()
                    .tool(delete_files(spec_deletions.clone()))
                    .tool(pay(spec_payments.clone())),
            )
    })
    .approval(ApprovalPolicy::tools(["delete_files", "pay"]));
    let agui = AgUi::builder()
        .agent("assistant", spec)
        .store(JsonFileSessionStore::new(sessions.path()))
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

    // The timelines of the three runs, opened on the page: the bars of their model and tool
    // steps in time order, with tokens, and the marks of the decisions.
    let drawn = |bars: Value, marks: Value| {
        json!({"open": true, "bars": bars, "barsDrawn": true, "barsInTimeOrder": true,
               "durations": true, "marks": marks})
    };
    assert_eq!(
        seen["timelines"],
        json!([
            drawn(
                json!([{"kind": "reasoning", "label": "reasoning 1",
                        "tokens": "21 in / 7 out tokens"}]),
                json!([]),
            ),
            drawn(
                json!([{"kind": "reasoning", "label": "reasoning 1",
                        "tokens": "64 in / 25 out tokens"}]),
                json!([
                    {"kind": "approval.asked", "text": "approval asked: delete_files"},
                    {"kind": "stop_agent", "text": "stop_agent by tool_approval (after reasoning)"},
                ]),
            ),
            drawn(
                json!([
                    {"kind": "tool", "label": "delete_files", "tokens": null},
                    {"kind": "reasoning", "label": "reasoning 1",
                     "tokens": "98 in / 9 out tokens"},
                ]),
                json!([{"kind": "approval.approved", "text": "approved: delete_files"}]),
            ),
        ]),
        "{seen:#}"
    );

    // 4. The call stopped while it ran: in doubt, its card, then the result typed under Mark
    // done, and the answer.
    let thread_id = seen["threadId"].as_str().unwrap();
    let key = ToolContext::new(ToolUseBlock::new("call-pay", "pay", json!({"invoice": 7})))
        .with_scope(AgUi::session_id("assistant", thread_id))
        .idempotency_key();
    assert_eq!(
        seen["inDoubt"],
        json!({
            "progressBeforeStop": PAY_PROGRESS,
            "interrupts": 1,
            "reason": "tool_in_doubt",
            "tool": "pay",
            "arguments": {"invoice": 7},
            "idempotencyKey": key,
            "buttons": ["Mark done", "Retry", "Fail"],
            "sendDisabledWhileAsking": true,
            "toolResult": CHECKED_RESULT,
            "finalAnswer": IN_DOUBT_ANSWER,
            "interruptsAfter": 0,
            "interruptsAfterReload": 0,
        }),
        "{seen:#}"
    );

    // The agent side: each approved tool ran exactly once (`pay` was not run again: the
    // model read the result typed on the page); every scripted answer was used.
    assert_eq!(deletions.load(Ordering::SeqCst), 1, "delete_files runs");
    assert_eq!(payments.load(Ordering::SeqCst), 1, "pay runs");
    assert_eq!(model.remaining(), 0, "unused scripted answers");
    assert_eq!(model.request_count(), 5);
    assert_eq!(
        model.requests()[3].messages.last().unwrap().text(),
        PAY_REQUEST
    );
    let read = model.requests()[4].messages.last().unwrap().tool_results()[0].clone();
    assert_eq!(
        (read.id.as_str(), read.text_output().as_str(), read.is_error),
        ("call-pay", CHECKED_RESULT, false)
    );

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .expect("the server did not shut down")
        .unwrap()
        .unwrap();
}
