//! The server driven by the official Python SDK (`a2a-sdk`, pinned in
//! `tests/python/requirements.txt`) as the client: a streamed send, a get with history, a
//! blocking send in the same context, a list, a cancel of a running task, a subscribe
//! again after a dropped stream, and an input-required round trip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agentscope::prelude::*;
use agentscope_test::components::available;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::approvals::{SHAPE, deleter};
use crate::support::{Paced, serve, serve_with};

/// The Python of `tests/python/.venv` with the SDK installed: as found, or made with
/// `python3 -m venv` and `pip install -r requirements.txt`.
fn python() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let python = dir.join(".venv/bin/python");
    let has_sdk = |python: &Path| {
        Command::new(python)
            .args(["-c", "import a2a.client"])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    if has_sdk(&python) {
        return Ok(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv", ".venv"])
        .current_dir(&dir)
        .status()
        .is_ok_and(|status| status.success())
        && Command::new(dir.join(".venv/bin/pip"))
            .args(["install", "-q", "-r", "requirements.txt"])
            .current_dir(&dir)
            .status()
            .is_ok_and(|status| status.success());
    match made && has_sdk(&python) {
        true => Ok(python),
        false => Err(format!(
            "the Python A2A SDK is not installed in {} (`python3 -m venv .venv` and \
             `.venv/bin/pip install -r requirements.txt` there failed, or python3 is missing)",
            dir.display()
        )),
    }
}

#[tokio::test]
async fn the_python_sdk_sends_streams_gets_lists_cancels_resubscribes_and_approves() {
    let Some(python) = available(python()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = Paced(ScriptedModel::new([
        ScriptedResponse::chunks([ScriptedChunk::text("Hel"), ScriptedChunk::text("lo")]),
        ScriptedResponse::text("Again."),
        ScriptedResponse::text("too late").with_delay(Duration::from_secs(30)),
        ScriptedResponse::chunks([ScriptedChunk::text("Still "), ScriptedChunk::text("here.")])
            .with_delay(Duration::from_millis(500)),
    ]));
    let server = serve(&model, Toolkit::new(), dir.path()).await;
    let approvals_dir = tempfile::tempdir().unwrap();
    let approving = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete", json!({"path": "/tmp/x"})),
        ScriptedResponse::text("Deleted."),
    ]);
    let (toolkit, runs) = deleter();
    let policy = ApprovalPolicy::tools(["delete"]);
    let approval = serve_with(
        &approving,
        toolkit,
        approvals_dir.path(),
        Some(policy),
        None,
    )
    .await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client.py");
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(&python)
            .arg(&script)
            .arg(&server.url)
            .arg(&approval.url)
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python client failed:\n{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let question =
        format!(r#"Approval needed for: delete({{"path":"/tmp/x"}}) [c1]. Answer with {SHAPE}."#);
    assert_eq!(
        report,
        json!({
            "stream": [
                "task TASK_STATE_WORKING",
                "status TASK_STATE_WORKING text_delta Hel",
                "status TASK_STATE_WORKING text_delta lo",
                "artifact reply last=True Hello",
                "status TASK_STATE_COMPLETED - Hello",
            ],
            "get": {
                "state": "TASK_STATE_COMPLETED",
                "history": ["user: Hi", "agent: Hello"],
                "artifacts": ["reply: Hello"],
            },
            "send": {
                "state": "TASK_STATE_COMPLETED",
                "history": ["user: Again?", "agent: Again."],
            },
            "list": [false, true],
            "cancel": {"returned": "TASK_STATE_CANCELED", "rest": ["status TASK_STATE_CANCELED -"]},
            // The stream is dropped after the task; a subscribe from the same client follows
            // the running task live (its deltas came after the re-subscribe) to its end.
            "resubscribe": {
                "dropped_after": "task TASK_STATE_WORKING",
                "followed": [
                    "task TASK_STATE_WORKING",
                    "status TASK_STATE_WORKING text_delta Still",
                    "status TASK_STATE_WORKING text_delta here.",
                    "artifact reply last=True Still here.",
                    "status TASK_STATE_COMPLETED - Still here.",
                ],
                "state": "TASK_STATE_COMPLETED",
                "history": ["user: Keep going", "agent: Still here."],
            },
            "approval": {
                "asked": [
                    "task TASK_STATE_WORKING",
                    "status TASK_STATE_WORKING tool_call <data>",
                    format!("status TASK_STATE_INPUT_REQUIRED - {question}|<data>"),
                ],
                "pending": [r#"{"pendingToolCalls":[{"id":"c1","input":{"path":"/tmp/x"},"name":"delete"}]}"#],
                "resumed": [
                    "task TASK_STATE_WORKING",
                    "status TASK_STATE_WORKING tool_result <data>",
                    "status TASK_STATE_WORKING text_delta Deleted.",
                    "artifact reply last=True Deleted.",
                    "status TASK_STATE_COMPLETED - Deleted.",
                ],
                "same_task": true,
                "state": "TASK_STATE_COMPLETED",
                "history": [
                    "user: Delete /tmp/x",
                    format!("agent: {question}|<data>"),
                    "user: <data>",
                    "agent: Deleted.",
                ],
            },
        })
    );
    // The approved call ran once, with its arguments; the model was asked twice (the call,
    // then the reply after its result).
    assert_eq!(*runs.lock().unwrap(), [json!({"path": "/tmp/x"})]);
    assert_eq!(approving.request_count(), 2);
}
