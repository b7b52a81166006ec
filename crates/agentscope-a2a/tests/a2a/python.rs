//! The server driven by the official Python SDK (`a2a-sdk`, pinned in
//! `tests/python/requirements.txt`) as the client: a streamed send, a get with history, a
//! blocking send in the same context, a list, and a cancel of a running task.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agentscope::prelude::*;
use agentscope_test::components::available;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::support::{Paced, serve};

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
async fn the_python_sdk_sends_streams_gets_lists_and_cancels() {
    let Some(python) = available(python()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = Paced(ScriptedModel::new([
        ScriptedResponse::chunks([ScriptedChunk::text("Hel"), ScriptedChunk::text("lo")]),
        ScriptedResponse::text("Again."),
        ScriptedResponse::text("too late").with_delay(Duration::from_secs(30)),
    ]));
    let server = serve(&model, Toolkit::new(), dir.path()).await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client.py");
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(&python)
            .arg(&script)
            .arg(&server.url)
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
        })
    );
}
