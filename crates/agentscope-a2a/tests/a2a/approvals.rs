//! Approvals as `input-required`: a stop for approval ends the task asking, the next
//! message on the task decides, and the stopped call resumes.

use std::sync::{Arc, Mutex};

use a2a::{Part, StreamResponse};
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{answer, client, describe, get, line, request, serve_with, state};
use crate::{history, task_of};

pub(crate) const SHAPE: &str = r#"a data part {"decisions": [{"toolCallId": "...", "approved": true|false, "arguments"?: {...}, "reason"?: "..."}]}, one entry per pending call"#;

/// A `delete` tool that records the arguments of each run.
pub(crate) fn deleter() -> (Toolkit, Arc<Mutex<Vec<Value>>>) {
    let runs = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&runs);
    let toolkit = Toolkit::new().tool(tool_fn(
        "delete",
        "Deletes a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        move |input: Value, _ctx| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push(input);
                Ok::<_, ToolError>("deleted".to_owned())
            }
        },
    ));
    (toolkit, runs)
}

fn question(path: &str, problem: Option<&str>) -> String {
    let prefix = problem.map(|p| format!("{p} ")).unwrap_or_default();
    format!(
        "{prefix}Approval needed for: delete({{\"path\":\"{path}\"}}) [c1]. Answer with {SHAPE}.|\
         {{\"pendingToolCalls\":[{{\"id\":\"c1\",\"input\":{{\"path\":\"{path}\"}},\"name\":\"delete\"}}]}}"
    )
}

#[tokio::test]
async fn a_call_that_needs_approval_ends_the_task_asking_and_an_approval_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete", json!({"path": "/tmp/x"})),
        ScriptedResponse::text("Deleted."),
    ]);
    let (toolkit, runs) = deleter();
    let policy = ApprovalPolicy::tools(["delete"]);
    let server = serve_with(&model, toolkit, dir.path(), Some(policy), None).await;
    let client = client(&server, "JSONRPC").await;

    let events: Vec<_> = client
        .send_streaming_message(&request("Delete /tmp/x", "c1"))
        .await
        .unwrap()
        .map(|event| event.unwrap())
        .collect()
        .await;
    // The stream ends after `input-required`.
    assert_eq!(
        events.iter().map(describe).collect::<Vec<_>>(),
        [
            "task working".to_owned(),
            r#"status working tool_call {"toolCall":{"id":"c1","input":{"path":"/tmp/x"},"name":"delete"}}"#.to_owned(),
            format!("status input-required - {}", question("/tmp/x", None)),
        ]
    );
    assert!(runs.lock().unwrap().is_empty());
    let StreamResponse::Task(task) = &events[0] else {
        unreachable!()
    };

    let decision = Part::data(json!({"decisions": [{"toolCallId": "c1", "approved": true}]}));
    let resumed: Vec<_> = client
        .send_streaming_message(&answer(task, vec![decision]))
        .await
        .unwrap()
        .map(|event| describe(&event.unwrap()))
        .collect()
        .await;
    assert_eq!(
        resumed,
        [
            "task working",
            r#"status working tool_result {"toolResult":{"id":"c1","isError":false,"name":"delete","output":"deleted"}}"#,
            "status working text_delta Deleted.",
            "artifact reply append=None last=Some(true) Deleted.",
            "status completed - Deleted.",
        ]
    );
    assert_eq!(*runs.lock().unwrap(), [json!({"path": "/tmp/x"})]);
    let stored = client.get_task(&get(&task.id)).await.unwrap();
    assert_eq!(
        history(&stored),
        [
            "user: Delete /tmp/x".to_owned(),
            format!("agent: {}", question("/tmp/x", None)),
            r#"user: {"decisions":[{"approved":true,"toolCallId":"c1"}]}"#.to_owned(),
            "agent: Deleted.".to_owned(),
        ]
    );
}

#[tokio::test]
async fn a_task_awaiting_decisions_asks_again_until_it_gets_them_and_a_rejection_reaches_the_model()
{
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete", json!({"path": "/tmp/y"})),
        ScriptedResponse::text("Kept it."),
    ]);
    let (toolkit, runs) = deleter();
    let policy = ApprovalPolicy::tools(["delete"]);
    let server = serve_with(&model, toolkit, dir.path(), Some(policy), None).await;
    let client = client(&server, "HTTP+JSON").await;

    let task = task_of(
        client
            .send_message(&request("Delete /tmp/y", "c1"))
            .await
            .unwrap(),
    );
    assert_eq!(state(&task.status.state), "input-required");
    assert_eq!(
        task.status.message.as_ref().map(line),
        Some(format!("agent: {}", question("/tmp/y", None)))
    );

    // Another task in the context is refused while the context awaits the decisions.
    let other = task_of(client.send_message(&request("Hello?", "c1")).await.unwrap());
    assert_eq!(state(&other.status.state), "rejected");
    assert_eq!(
        other.status.message.as_ref().map(line),
        Some(format!(
            "agent: The context awaits answers about tool calls (c1) on task {}: answer them \
             there; this message was not given to the agent.",
            task.id
        ))
    );

    // A message without decisions, then decisions that are not complete: asked again.
    let plain = task_of(
        client
            .send_message(&answer(&task, vec![Part::text("yes")]))
            .await
            .unwrap(),
    );
    assert_eq!(state(&plain.status.state), "input-required");
    assert_eq!(
        plain.status.message.as_ref().map(line),
        Some(format!(
            "agent: {}",
            question("/tmp/y", Some("The message carries no decisions."))
        ))
    );
    let wrong = Part::data(json!({"decisions": [{"toolCallId": "c1", "approved": "sure"}]}));
    let wrong = task_of(
        client
            .send_message(&answer(&task, vec![wrong]))
            .await
            .unwrap(),
    );
    assert_eq!(state(&wrong.status.state), "input-required");
    assert_eq!(
        wrong.status.message.as_ref().map(line),
        Some(format!(
            "agent: {}",
            question("/tmp/y", Some("Decision 0 has no boolean `approved`."))
        ))
    );
    assert_eq!(model.request_count(), 1);

    let reject = Part::data(
        json!({"decisions": [{"toolCallId": "c1", "approved": false, "reason": "keep it"}]}),
    );
    let done = task_of(
        client
            .send_message(&answer(&task, vec![reject]))
            .await
            .unwrap(),
    );
    assert_eq!(state(&done.status.state), "completed");
    assert_eq!(
        done.status.message.as_ref().map(line).as_deref(),
        Some("agent: Kept it.")
    );
    assert!(runs.lock().unwrap().is_empty());
    let last = model.last_request().unwrap();
    let result = last.messages.last().unwrap();
    assert_eq!(result.role, Role::Tool);
    assert_eq!(
        result.tool_results()[0].text_output(),
        "Rejected by the user: keep it"
    );
}

#[tokio::test]
async fn subscribing_to_a_task_that_awaits_decisions_gives_the_task_and_closes() {
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let dir = tempfile::tempdir().unwrap();
        let model = ScriptedModel::new([ScriptedResponse::tool_call(
            "c1",
            "delete",
            json!({"path": "/tmp/z"}),
        )]);
        let (toolkit, runs) = deleter();
        let policy = ApprovalPolicy::tools(["delete"]);
        let server = serve_with(&model, toolkit, dir.path(), Some(policy), None).await;
        let client = client(&server, binding).await;
        let task = task_of(
            client
                .send_message(&request("Delete /tmp/z", "c1"))
                .await
                .unwrap(),
        );
        assert_eq!(state(&task.status.state), "input-required", "{binding}");
        // No call runs the task (it waits for a person), yet it exists: the SDK alone
        // answered TaskNotFoundError here.
        let events: Vec<_> = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            client
                .subscribe_to_task(&a2a::SubscribeToTaskRequest {
                    id: task.id.clone(),
                    tenant: None,
                })
                .await
                .unwrap()
                .map(|event| event.unwrap())
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
        assert_eq!(
            events.iter().map(describe).collect::<Vec<_>>(),
            ["task input-required"],
            "{binding}"
        );
        let StreamResponse::Task(got) = &events[0] else {
            unreachable!()
        };
        assert_eq!(got, &task, "{binding}");
        assert!(runs.lock().unwrap().is_empty());
    }
}

#[tokio::test]
async fn edited_arguments_keep_their_integers() {
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let dir = tempfile::tempdir().unwrap();
        let model = ScriptedModel::new([
            ScriptedResponse::tool_call("c1", "delete", json!({"path": "/tmp/e"})),
            ScriptedResponse::text("Deleted."),
        ]);
        let (toolkit, runs) = deleter();
        let policy = ApprovalPolicy::tools(["delete"]);
        let server = serve_with(&model, toolkit, dir.path(), Some(policy), None).await;
        let client = client(&server, binding).await;
        let task = task_of(
            client
                .send_message(&request("Delete /tmp/e", "c1"))
                .await
                .unwrap(),
        );
        assert_eq!(state(&task.status.state), "input-required", "{binding}");
        let edit = Part::data(json!({"decisions": [{"toolCallId": "c1", "approved": true,
            "arguments": {"path": "/tmp/e", "keep": 2, "ratio": 0.5, "nested": [{"n": -3}]}}]}));
        let done = task_of(
            client
                .send_message(&answer(&task, vec![edit]))
                .await
                .unwrap(),
        );
        assert_eq!(state(&done.status.state), "completed", "{binding}");
        // Data parts travel as protobuf Structs (numbers are doubles): 2 arrived as 2.0,
        // which a tool reading an integer refuses. Integral numbers are integers again.
        let runs = runs.lock().unwrap();
        assert_eq!(runs.len(), 1, "{binding}");
        assert_eq!(
            serde_json::to_string(&runs[0]).unwrap(),
            r#"{"keep":2,"nested":[{"n":-3}],"path":"/tmp/e","ratio":0.5}"#,
            "{binding}"
        );
    }
}
