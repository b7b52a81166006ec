//! The server driven by the official Python SDK (`a2a-sdk`, pinned in
//! `tests/python/requirements.txt`) as the client: a streamed send, a get with history, a
//! blocking send in the same context, a list, a cancel of a running task, a subscribe
//! again after a dropped stream, and an input-required round trip; and the client
//! (`RemoteAgent`) pointed at a server written with that SDK.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agentscope::interrupt::INTERRUPT_REPLY;
use agentscope::prelude::*;
use agentscope_test::components::available;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::json;

use agentscope_a2a::RemoteAgent;

use crate::approvals::{SHAPE, deleter};
use crate::remote::events;
use crate::support::{ByQuestion, Paced, serve, serve_with};

/// The Python of `tests/python/.venv` with the SDK (its client, and its server with
/// starlette and uvicorn) installed: as found, or made with `python3 -m venv` (unless the
/// venv exists) and `pip install -r requirements.txt`.
pub(crate) fn python() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let python = dir.join(".venv/bin/python");
    let has_sdk = |python: &Path| {
        Command::new(python)
            .args([
                "-c",
                "import a2a.client, a2a.server.routes, starlette, sse_starlette, uvicorn",
            ])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    if has_sdk(&python) {
        return Ok(python);
    }
    let made = (python.exists()
        || Command::new("python3")
            .args(["-m", "venv", ".venv"])
            .current_dir(&dir)
            .status()
            .is_ok_and(|status| status.success()))
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
    let script = |response: ScriptedResponse| Paced(ScriptedModel::new([response]));
    let model = ByQuestion(vec![
        (
            "Hi",
            script(ScriptedResponse::chunks([
                ScriptedChunk::text("Hel"),
                ScriptedChunk::text("lo"),
            ])),
        ),
        ("Again?", script(ScriptedResponse::text("Again."))),
        (
            "Take your time",
            script(ScriptedResponse::text("too late").with_delay(Duration::from_secs(30))),
        ),
        (
            "Keep going",
            script(
                ScriptedResponse::chunks([
                    ScriptedChunk::text("Still "),
                    ScriptedChunk::text("here."),
                ])
                .with_delay(Duration::from_millis(500)),
            ),
        ),
    ]);
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
            "cancel": {"returned": "TASK_STATE_CANCELED", "rest": [format!("status TASK_STATE_CANCELED - {INTERRUPT_REPLY}")]},
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

/// A server written with the Python SDK (`tests/python/server.py`, an echo agent that
/// streams two pieces), called by `RemoteAgent`: as an agent, twice in one context, and as
/// a tool inside a local agent.
#[tokio::test]
async fn the_remote_agent_calls_a_server_written_with_the_python_sdk() {
    let Some(python) = available(python()) else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/server.py");
    let _server = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(port.to_string())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}/");
    let card = format!("{base}.well-known/agent-card.json");
    let mut ready = false;
    for _ in 0..300 {
        if reqwest::get(&card)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "the Python server did not serve its card at {card}");

    let remote = RemoteAgent::connect(&base).await.unwrap();
    assert_eq!(remote.name(), "python-echo");
    assert_eq!(remote.description(), "Echoes what it is told, in pieces.");
    assert_eq!(
        events(remote.stream("Hi there", StreamOptions::default())).await,
        [
            "reasoning chunk Echo #1: ",
            "reasoning chunk Hi there",
            "reasoning Echo #1: Hi there",
            "result Echo #1: Hi there",
        ]
    );
    let context = remote.context_id().unwrap();
    // The same context: the server counts its second turn.
    let again = remote.call("Again").await.unwrap();
    assert_eq!(again.text(), "Echo #2: Again");
    assert_eq!(again.metadata["a2a"]["contextId"], json!(context));
    assert_eq!(again.metadata["a2a"]["state"], json!("completed"));

    // As a tool: the pieces are the progress, the artifact the result.
    let local = ReActAgent::builder()
        .name("lead")
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("l1", "python-echo", json!({"task": "ping"})),
            ScriptedResponse::text("It said it back."),
        ]))
        .toolkit(Toolkit::new().tool(RemoteAgent::connect(&base).await.unwrap().into_tool()))
        .build()
        .unwrap();
    let seen: Vec<String> = events(local.stream("Go.", StreamOptions::default()))
        .await
        .into_iter()
        .filter(|line| line.starts_with("tool_result"))
        .collect();
    assert_eq!(
        seen,
        [
            "tool_result chunk python-echo l1 -> Echo #1: ",
            "tool_result chunk python-echo l1 -> ping",
            "tool_result python-echo l1 -> Echo #1: ping",
        ]
    );
}
