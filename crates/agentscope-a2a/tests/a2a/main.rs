//! The A2A server over real HTTP on 127.0.0.1, driven by the official SDK's client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agui;
mod approvals;
mod expiry;
mod fake;
mod http;
mod in_doubt;
mod instances;
mod killed;
mod payer;
mod processes;
mod python;
mod remote;
mod remote_bounds;
mod remote_crash;
mod remote_questions;
mod remote_secrets;
mod served;
mod support;

use std::time::Duration;

use a2a::{
    GetTaskRequest, ListTasksRequest, SendMessageConfiguration, SendMessageResponse,
    SubscribeToTaskRequest, Task,
};
use agentscope::interrupt::INTERRUPT_REPLY;
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_test::messages::turns;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

use http::json_of;
use support::{
    Paced, Watched, cancel, card, client, describe, get, line, request, serve, serve_on, state,
    texts,
};

fn no_tools() -> Toolkit {
    Toolkit::new()
}

fn adder() -> Toolkit {
    Toolkit::new().tool(tool_fn(
        "add",
        "Adds two numbers.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        |input: serde_json::Value, _ctx| async move {
            let sum = input["a"].as_f64().unwrap_or(0.0) + input["b"].as_f64().unwrap_or(0.0);
            Ok::<_, ToolError>(sum.to_string())
        },
    ))
}

fn task_of(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("a message, not a task: {message:?}"),
    }
}

fn history(task: &Task) -> Vec<String> {
    task.history.iter().flatten().map(line).collect()
}

fn artifacts(task: &Task) -> Vec<(String, String)> {
    task.artifacts
        .iter()
        .flatten()
        .map(|a| (a.artifact_id.clone(), texts(&a.parts)))
        .collect()
}

#[tokio::test]
async fn the_card_names_the_agent_its_tools_streaming_and_both_interfaces() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&ScriptedModel::new([]), adder(), dir.path()).await;
    let raw: serde_json::Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", server.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let url = &server.url;
    assert_eq!(
        raw,
        json!({
            "name": "assistant",
            "description": "Answers questions.",
            "version": "2.1.0",
            "supportedInterfaces": [
                {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            ],
            "capabilities": {"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
            "defaultInputModes": ["text/plain", "application/json"],
            "defaultOutputModes": ["text/plain", "application/json"],
            "skills": [
                {"id": "add", "name": "add", "description": "Adds two numbers.", "tags": ["tool"]},
            ],
        })
    );
    // The SDK's resolver reads the same card.
    assert_eq!(serde_json::to_value(card(&server).await).unwrap(), raw);
}

#[tokio::test]
async fn an_agent_without_tools_has_one_skill_named_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&ScriptedModel::new([]), no_tools(), dir.path()).await;
    let skills = serde_json::to_value(card(&server).await.skills).unwrap();
    assert_eq!(
        skills,
        json!([{"id": "assistant", "name": "assistant", "description": "Answers questions.", "tags": ["chat"]}])
    );
}

#[tokio::test]
async fn send_message_answers_with_the_finished_task_and_get_task_returns_it_with_history() {
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let dir = tempfile::tempdir().unwrap();
        let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
        let server = serve(&model, no_tools(), dir.path()).await;
        let client = client(&server, binding).await;
        let task = task_of(client.send_message(&request("Hi", "c1")).await.unwrap());
        assert_eq!(task.context_id, "c1", "{binding}");
        assert_eq!(state(&task.status.state), "completed", "{binding}");
        assert_eq!(
            task.status.message.as_ref().map(line).as_deref(),
            Some("agent: Hello!"),
            "{binding}"
        );
        assert_eq!(
            artifacts(&task),
            [("reply".to_owned(), "Hello!".to_owned())],
            "{binding}"
        );
        assert_eq!(history(&task), ["user: Hi", "agent: Hello!"], "{binding}");

        let got = client.get_task(&get(&task.id)).await.unwrap();
        assert_eq!(got, task, "{binding}");
        let last = client
            .get_task(&GetTaskRequest {
                id: task.id.clone(),
                history_length: Some(1),
                tenant: None,
            })
            .await
            .unwrap();
        assert_eq!(history(&last), ["agent: Hello!"], "{binding}");
        assert_eq!(model.request_count(), 1, "{binding}");
    }
}

#[tokio::test]
async fn a_streamed_reply_is_the_task_then_its_deltas_then_the_reply_artifact_then_completed() {
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let dir = tempfile::tempdir().unwrap();
        let model = Paced(ScriptedModel::new([ScriptedResponse::chunks([
            ScriptedChunk::text("Hel"),
            ScriptedChunk::text("lo"),
        ])]));
        let server = serve(&model, no_tools(), dir.path()).await;
        let client = client(&server, binding).await;
        let events: Vec<_> = client
            .send_streaming_message(&request("Hi", "c1"))
            .await
            .unwrap()
            .map(|event| event.unwrap())
            .collect()
            .await;
        assert_eq!(
            events.iter().map(describe).collect::<Vec<_>>(),
            [
                "task working",
                "status working text_delta Hel",
                "status working text_delta lo",
                "artifact reply append=None last=Some(true) Hello",
                "status completed - Hello",
            ],
            "{binding}"
        );
        let a2a::StreamResponse::Task(first) = &events[0] else {
            unreachable!()
        };
        assert_eq!(history(first), ["user: Hi"], "{binding}");
        let stored = client.get_task(&get(&first.id)).await.unwrap();
        assert_eq!(state(&stored.status.state), "completed", "{binding}");
        assert_eq!(history(&stored), ["user: Hi", "agent: Hello"], "{binding}");
        assert_eq!(
            artifacts(&stored),
            [("reply".to_owned(), "Hello".to_owned())],
            "{binding}"
        );
    }
}

#[tokio::test]
async fn tool_calls_and_their_results_stream_as_working_updates() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "add", json!({"a": 2, "b": 3})),
        ScriptedResponse::text("5"),
    ]);
    let server = serve(&model, adder(), dir.path()).await;
    let client = client(&server, "JSONRPC").await;
    let events: Vec<_> = client
        .send_streaming_message(&request("2+3?", "c1"))
        .await
        .unwrap()
        .map(|event| describe(&event.unwrap()))
        .collect()
        .await;
    // Data parts travel as protobuf `Struct`s, whose numbers are doubles: 2 arrives as 2.0.
    assert_eq!(
        events,
        [
            "task working",
            r#"status working tool_call {"toolCall":{"id":"c1","input":{"a":2.0,"b":3.0},"name":"add"}}"#,
            r#"status working tool_result {"toolResult":{"id":"c1","isError":false,"name":"add","output":"5"}}"#,
            "status working text_delta 5",
            "artifact reply append=None last=Some(true) 5",
            "status completed - 5",
        ]
    );
}

#[tokio::test]
async fn a_second_message_in_a_context_continues_its_session_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let first_model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let first = {
        let server = serve(&first_model, no_tools(), dir.path()).await;
        let client = client(&server, "JSONRPC").await;
        task_of(client.send_message(&request("Hi", "c1")).await.unwrap())
    };
    // A new server on the same store: nothing of the first one runs any more.
    let model = ScriptedModel::new([ScriptedResponse::text("Still here.")]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let client = client(&server, "JSONRPC").await;
    let second = task_of(
        client
            .send_message(&request("And now?", "c1"))
            .await
            .unwrap(),
    );
    assert_ne!(second.id, first.id);
    assert_eq!(history(&second), ["user: And now?", "agent: Still here."]);
    let seen = turns(&model.requests()[0].messages);
    assert_eq!(
        seen,
        [
            (Role::User, "Hi".to_owned()),
            (Role::Assistant, "Hello!".to_owned()),
            (Role::User, "And now?".to_owned()),
        ]
    );
    // Both tasks are stored, newest first, and the first is still readable.
    let listed = client
        .list_tasks(&ListTasksRequest {
            context_id: Some("c1".to_owned()),
            status: None,
            page_size: None,
            page_token: None,
            history_length: None,
            status_timestamp_after: None,
            include_artifacts: None,
            tenant: None,
        })
        .await
        .unwrap();
    assert_eq!(
        listed
            .tasks
            .iter()
            .map(|t| t.id.as_str())
            .collect::<Vec<_>>(),
        [second.id.as_str(), first.id.as_str()]
    );
    assert_eq!(listed.total_size, 2);
    let again = client.get_task(&get(&first.id)).await.unwrap();
    assert_eq!(again, first);
}

#[tokio::test]
async fn cancel_task_interrupts_the_running_call() {
    let dir = tempfile::tempdir().unwrap();
    let model =
        ScriptedModel::new(
            [ScriptedResponse::text("too late").with_delay(Duration::from_secs(30))],
        );
    let server = serve(&model, no_tools(), dir.path()).await;
    let client = client(&server, "JSONRPC").await;
    let mut events = client
        .send_streaming_message(&request("Take your time", "c1"))
        .await
        .unwrap();
    let first = events.next().await.unwrap().unwrap();
    let a2a::StreamResponse::Task(task) = &first else {
        panic!("the first event is not the task: {first:?}")
    };
    // The model is answering (for 30 s) when the cancel comes.
    tokio::time::timeout(Duration::from_secs(10), async {
        while model.request_count() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let canceled = tokio::time::timeout(
        Duration::from_secs(10),
        client.cancel_task(&cancel(&task.id)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(state(&canceled.status.state), "canceled");
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(10), events.collect::<Vec<_>>())
        .await
        .unwrap()
        .into_iter()
        .map(|event| describe(&event.unwrap()))
        .collect();
    // The task ends with the interrupted call's reply, stored with the conversation.
    assert_eq!(rest, [format!("status canceled - {INTERRUPT_REPLY}")]);
    // The call itself was interrupted (not left to run out its 30 s): it stored the user's
    // message and the interrupted reply in the context's session.
    let store = JsonFileSessionStore::new(dir.path());
    let stored = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let state = store.load("assistant.c1").await.unwrap();
            if let Some(state) = state.filter(|s| s.messages.len() == 2) {
                break state;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(
        stored.messages.iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["Take your time", INTERRUPT_REPLY]
    );
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn a_request_without_a2a_version_1_is_refused_and_one_with_it_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&ScriptedModel::new([]), no_tools(), dir.path()).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-404"}});
    let http = reqwest::Client::new();
    let post = |version: Option<&'static str>| {
        let mut request = http.post(&server.url).json(&body);
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        async move {
            let response: serde_json::Value = request.send().await.unwrap().json().await.unwrap();
            response["error"]["code"].clone()
        }
    };
    // Without the header a server of 1.0 takes the request as 0.3, which it does not speak.
    assert_eq!(post(None).await, json!(-32009));
    assert_eq!(post(Some("0.3")).await, json!(-32009));
    assert_eq!(post(Some("1.0")).await, json!(-32001));
}

#[tokio::test]
async fn a_context_id_that_cannot_name_a_session_rejects_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("unused")]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let client = client(&server, "JSONRPC").await;
    let task = task_of(client.send_message(&request("Hi", "../etc")).await.unwrap());
    assert_eq!(state(&task.status.state), "rejected");
    assert_eq!(
        task.status.message.as_ref().map(line).as_deref(),
        Some(
            "agent: the context id cannot name a session (\"assistant.../etc\"): it contains \
             '/'; allowed are ASCII letters, digits, '-', '_' and '.'"
        )
    );
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn a_long_streamed_reply_reaches_the_client_whole() {
    let dir = tempfile::tempdir().unwrap();
    let chunks: Vec<_> = (0..100)
        .map(|i| ScriptedChunk::text(format!("{i} ")))
        .collect();
    let model = ScriptedModel::new([ScriptedResponse::chunks(chunks)]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let client = client(&server, "JSONRPC").await;
    let events: Vec<_> = client
        .send_streaming_message(&request("Count", "c1"))
        .await
        .unwrap()
        .collect()
        .await;
    let events: Vec<_> = events.into_iter().map(|e| e.unwrap()).collect();
    let expected: String = (0..100).map(|i| format!("{i} ")).collect();
    // The deltas the model had ready at once travel merged, well within the SDK's buffer of
    // 32 events per subscriber (100 events, one per delta, overran it).
    assert_eq!(
        events.iter().map(describe).collect::<Vec<_>>(),
        [
            "task working".to_owned(),
            format!("status working text_delta {}", expected.trim_end()),
            format!("artifact reply append=None last=Some(true) {expected}"),
            format!("status completed - {}", expected.trim_end()),
        ]
    );
}

#[tokio::test]
async fn a_second_client_subscribes_to_a_running_task_and_follows_it_live() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::text("Done at last.").with_delay(Duration::from_millis(500))
    ]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let first = client(&server, "JSONRPC").await;
    let mut events = first
        .send_streaming_message(&request("Work", "c1"))
        .await
        .unwrap();
    let a2a::StreamResponse::Task(task) = events.next().await.unwrap().unwrap() else {
        panic!("the first event is not the task")
    };
    let second = client(&server, "HTTP+JSON").await;
    let followed: Vec<_> = second
        .subscribe_to_task(&SubscribeToTaskRequest {
            id: task.id.clone(),
            tenant: None,
        })
        .await
        .unwrap()
        .map(|event| describe(&event.unwrap()))
        .collect()
        .await;
    assert_eq!(
        followed,
        [
            "task working",
            "status working text_delta Done at last.",
            "artifact reply append=None last=Some(true) Done at last.",
            "status completed - Done at last.",
        ]
    );
    // The first client saw the same events after the task.
    let rest: Vec<_> = events
        .map(|event| describe(&event.unwrap()))
        .collect()
        .await;
    assert_eq!(rest, followed[1..]);
}

#[tokio::test]
async fn send_message_returning_immediately_answers_with_the_working_task() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::text("Later.").with_delay(Duration::from_millis(300))
    ]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let client = client(&server, "JSONRPC").await;
    let mut req = request("Go", "c1");
    req.configuration = Some(SendMessageConfiguration {
        accepted_output_modes: None,
        task_push_notification_config: None,
        history_length: None,
        return_immediately: Some(true),
    });
    let task = task_of(client.send_message(&req).await.unwrap());
    assert_eq!(state(&task.status.state), "working");
    assert_eq!(history(&task), ["user: Go"]);
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let got = client.get_task(&get(&task.id)).await.unwrap();
            if got.status.state != a2a::TaskState::Working {
                break got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(state(&done.status.state), "completed");
    assert_eq!(history(&done), ["user: Go", "agent: Later."]);
}

#[tokio::test]
async fn with_a_bearer_token_the_methods_need_it_and_the_card_declares_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let server = support::serve_with(&model, no_tools(), dir.path(), None, Some("s3cret")).await;
    let card = card(&server).await;
    assert_eq!(
        serde_json::to_value((&card.security_schemes, &card.security_requirements)).unwrap(),
        json!([
            {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            [{"bearer": []}]
        ])
    );

    // Without the token, or with another one: 401, nothing runs, nothing of it echoed.
    let http = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "Hi"}]}
    }});
    for authorization in [None, Some("Bearer wrong"), Some("s3cret")] {
        let mut request = http
            .post(&server.url)
            .header("A2A-Version", "1.0")
            .json(&body);
        if let Some(authorization) = authorization {
            request = request.header("Authorization", authorization);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{authorization:?}");
        assert_eq!(
            response.headers()["www-authenticate"],
            "Bearer",
            "{authorization:?}"
        );
        assert_eq!(
            response.json::<serde_json::Value>().await.unwrap(),
            json!({"code": "unauthorized",
                   "message": "a valid bearer token is required (Authorization: Bearer <token>)"})
        );
    }
    assert_eq!(model.request_count(), 0);

    // The SDK's client with the token in an interceptor is served.
    let (client, _) = a2a_client::A2AClientFactory::builder()
        .with_interceptor(std::sync::Arc::new(
            a2a_client::auth::AuthInterceptor::bearer("s3cret"),
        ))
        .build()
        .create_from_card_with_interface(&card)
        .await
        .unwrap();
    let task = task_of(client.send_message(&request("Hi", "c1")).await.unwrap());
    assert_eq!(history(&task), ["user: Hi", "agent: Hello!"]);
}

#[tokio::test]
async fn tool_progress_streams_between_the_call_and_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "index", json!({})),
        ScriptedResponse::text("Indexed."),
    ]);
    let toolkit = Toolkit::new().tool(tool_fn(
        "index",
        "Indexes the files.",
        json!({"type": "object"}),
        |_input: serde_json::Value, ctx| async move {
            ctx.emit("1 of 2 files").await;
            ctx.emit("2 of 2 files").await;
            Ok::<_, ToolError>("indexed 2 files".to_owned())
        },
    ));
    let server = serve(&model, toolkit, dir.path()).await;
    let client = client(&server, "JSONRPC").await;
    let events: Vec<_> = client
        .send_streaming_message(&request("Index", "c1"))
        .await
        .unwrap()
        .map(|event| describe(&event.unwrap()))
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "task working",
            r#"status working tool_call {"toolCall":{"id":"c1","input":{},"name":"index"}}"#,
            r#"status working tool_progress {"toolResult":{"id":"c1","isError":false,"name":"index","output":"1 of 2 files"}}"#,
            r#"status working tool_progress {"toolResult":{"id":"c1","isError":false,"name":"index","output":"2 of 2 files"}}"#,
            r#"status working tool_result {"toolResult":{"id":"c1","isError":false,"name":"index","output":"indexed 2 files"}}"#,
            "status working text_delta Indexed.",
            "artifact reply append=None last=Some(true) Indexed.",
            "status completed - Indexed.",
        ]
    );
}

#[tokio::test]
async fn the_same_message_sent_again_is_answered_with_its_task_and_not_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let client = client(&server, "JSONRPC").await;
    let message = request("Hi", "c1");
    let first = task_of(client.send_message(&message).await.unwrap());
    assert_eq!(state(&first.status.state), "completed");
    // A client that lost the answer sends the same message again (same messageId): it gets
    // the task the message started, as it stands, and nothing runs again.
    let again = task_of(client.send_message(&message).await.unwrap());
    assert_eq!(again, first);
    assert_eq!(model.request_count(), 1);
    let stored = JsonFileSessionStore::new(dir.path())
        .load("assistant.c1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.messages.iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["Hi", "Hello!"]
    );
}

#[tokio::test]
async fn http_json_refuses_a_request_without_a2a_version_1_as_json_rpc_does() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let body =
        json!({"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "Hi"}]}});
    let http = reqwest::Client::new();
    for version in [None, Some("0.3"), Some("99.0")] {
        let mut request = http
            .post(format!("{}/message:send", server.url))
            .json(&body);
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 400, "{version:?}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
        let error: serde_json::Value = response.json().await.unwrap();
        let asked = version.unwrap_or("0.3");
        assert_eq!(
            error,
            json!({"error": {
                "code": 400,
                "status": "FAILED_PRECONDITION",
                "message": format!("version not supported: {asked}"),
                "details": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "VERSION_NOT_SUPPORTED",
                    "domain": "a2a-protocol.org",
                }],
            }}),
            "{version:?}"
        );
    }
    let tasks = http
        .get(format!("{}/tasks", server.url))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(tasks.status(), 200);
    assert_eq!(model.request_count(), 0);
    let served = http
        .post(format!("{}/message:send", server.url))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn a_send_without_a_message_is_refused_before_any_task_exists() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("unused")]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let http = reqwest::Client::new();
    let message = "the request needs a message with at least one part";
    for method in ["SendMessage", "SendStreamingMessage"] {
        for params in [
            json!({}),
            json!({"message": {"role": "ROLE_USER", "messageId": "m1", "parts": []}}),
        ] {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            let request = http.post(&server.url).header("A2A-Version", "1.0");
            let response = json_of(request.json(&body)).await;
            assert_eq!(
                response["error"]["code"],
                json!(-32602),
                "{method} {params}"
            );
            assert_eq!(
                response["error"]["message"],
                json!(message),
                "{method} {params}"
            );
        }
    }
    let response = http
        .post(format!("{}/message:send", server.url))
        .header("A2A-Version", "1.0")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let error: serde_json::Value = response.json().await.unwrap();
    assert_eq!(error["error"]["message"], json!(message));
    let client = client(&server, "JSONRPC").await;
    let listed = client
        .list_tasks(&ListTasksRequest {
            context_id: None,
            status: None,
            page_size: None,
            page_token: None,
            history_length: None,
            status_timestamp_after: None,
            include_artifacts: None,
            tenant: None,
        })
        .await
        .unwrap();
    assert_eq!(listed.tasks, []);
    assert_eq!(model.request_count(), 0);
}

/// A factory that sets a durability mode (a session setting) builds the server, and each
/// turn runs under it: `build()` makes the card's agent bound to the store, as every turn's
/// agent is, instead of without a session (which the mode refuses).
#[tokio::test]
async fn an_agent_with_a_durability_mode_is_served_and_its_turns_are_stored() {
    use agentscope::session::Durability;
    for durability in [Durability::Step, Durability::Async, Durability::Exit] {
        let dir = tempfile::tempdir().unwrap();
        let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/a2a", listener.local_addr().unwrap());
        let served = model.clone();
        let a2a = agentscope_a2a::A2a::builder()
            .agent(move || {
                ReActAgent::builder()
                    .name("assistant")
                    .model(served.clone())
                    .durability(durability)
            })
            .url(&url)
            .store(JsonFileSessionStore::new(dir.path()))
            .build()
            .unwrap();
        let server = support::spawn(
            listener,
            url,
            axum::Router::new().nest("/a2a", a2a.router()),
        );
        let client = client(&server, "JSONRPC").await;
        let task = task_of(client.send_message(&request("Hi", "c1")).await.unwrap());
        assert_eq!(state(&task.status.state), "completed", "{durability:?}");
        assert_eq!(
            history(&task),
            ["user: Hi", "agent: Hello!"],
            "{durability:?}"
        );
        let stored = JsonFileSessionStore::new(dir.path())
            .load("assistant.c1")
            .await
            .unwrap()
            .unwrap();
        let texts: Vec<String> = stored.messages.iter().map(Msg::text).collect();
        assert_eq!(texts, ["Hi", "Hello!"], "{durability:?}");
        // Nothing was stored for the card's agent.
        assert!(
            JsonFileSessionStore::new(dir.path())
                .load("a2a-card")
                .await
                .unwrap()
                .is_none()
        );
    }
}

/// The frames of a raw JSON-RPC `SendStreamingMessage` in context `context`, the body sent
/// with its length or (`chunked`) without, which leaves the request to the SDK's binding;
/// the values that differ per task (ids, times) replaced by what they are.
async fn raw_stream(url: &str, context: &str, chunked: bool) -> Vec<String> {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 7,
        "method": "SendStreamingMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": format!("{context}-m"),
            "contextId": context, "parts": [{"text": "2+3?"}]}}}))
    .unwrap();
    let body = if chunked {
        reqwest::Body::wrap_stream(futures::stream::iter([Ok::<_, std::io::Error>(body)]))
    } else {
        reqwest::Body::from(body)
    };
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "{context}"
    );
    let text = response.text().await.unwrap();
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let (id, data) = frame.split_once("\ndata: ").unwrap();
            let mut data: serde_json::Value = serde_json::from_str(data).unwrap();
            mask(&mut data);
            format!("{id} {data}").replace(context, "<context>")
        })
        .collect()
}

/// Replaces each id made per task and each time with its key's name.
fn mask(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if ["id", "taskId", "messageId", "timestamp"].contains(&key.as_str())
                    && value.is_string()
                {
                    *value = json!(format!("<{key}>"));
                } else {
                    mask(value);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

#[tokio::test]
async fn a_raw_json_rpc_stream_is_the_same_whichever_path_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "add", json!({"a": 2, "b": 3})),
        ScriptedResponse::chunks([ScriptedChunk::text("It is "), ScriptedChunk::text("5.")]),
        ScriptedResponse::tool_call("c2", "add", json!({"a": 2, "b": 3})),
        ScriptedResponse::chunks([ScriptedChunk::text("It is "), ScriptedChunk::text("5.")]),
    ]);
    let server = serve(&Paced(model), adder(), dir.path()).await;
    // With its length: this crate's path (src/stream.rs); without: the SDK's binding.
    let direct = raw_stream(&server.url, "c-direct", false).await;
    let sdk = raw_stream(&server.url, "c-sdk", true).await;
    let task = r#"{"id":7,"jsonrpc":"2.0","result":{"task":{"contextId":"<context>","history":[{"contextId":"<context>","messageId":"<messageId>","parts":[{"text":"2+3?"}],"role":"ROLE_USER"}],"id":"<id>","status":{"state":"TASK_STATE_WORKING","timestamp":"<timestamp>"}}}}"#;
    let working = |kind: &str, part: &str| {
        format!(
            r#"{{"id":7,"jsonrpc":"2.0","result":{{"statusUpdate":{{"contextId":"<context>","metadata":{{"agentscope.kind":"{kind}"}},"status":{{"message":{{"contextId":"<context>","messageId":"<messageId>","parts":[{part}],"role":"ROLE_AGENT","taskId":"<taskId>"}},"state":"TASK_STATE_WORKING","timestamp":"<timestamp>"}},"taskId":"<taskId>"}}}}}}"#
        )
    };
    let expected = [
        format!("id: 1 {task}"),
        format!(
            "id: 2 {}",
            working(
                "tool_call",
                r#"{"data":{"toolCall":{"id":"<id>","input":{"a":2.0,"b":3.0},"name":"add"}}}"#
            )
        ),
        format!(
            "id: 3 {}",
            working(
                "tool_result",
                r#"{"data":{"toolResult":{"id":"<id>","isError":false,"name":"add","output":"5"}}}"#
            )
        ),
        format!("id: 4 {}", working("text_delta", r#"{"text":"It is "}"#)),
        format!("id: 5 {}", working("text_delta", r#"{"text":"5."}"#)),
        r#"id: 6 {"id":7,"jsonrpc":"2.0","result":{"artifactUpdate":{"artifact":{"artifactId":"reply","name":"reply","parts":[{"text":"It is 5."}]},"contextId":"<context>","lastChunk":true,"taskId":"<taskId>"}}}"#.to_owned(),
        r#"id: 7 {"id":7,"jsonrpc":"2.0","result":{"statusUpdate":{"contextId":"<context>","status":{"message":{"contextId":"<context>","messageId":"<messageId>","parts":[{"text":"It is 5."}],"role":"ROLE_AGENT","taskId":"<taskId>"},"state":"TASK_STATE_COMPLETED","timestamp":"<timestamp>"},"taskId":"<taskId>"}}}"#.to_owned(),
    ];
    assert_eq!(direct, expected);
    assert_eq!(sdk, expected);
}

#[tokio::test]
async fn a_streamed_task_sends_its_head_and_first_event_in_one_write() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("One"), ScriptedResponse::text("Two")]);
    let server = serve(&model, no_tools(), dir.path()).await;
    let address = server.address();
    let mut tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    // Two tasks on one kept-alive connection: on the second, a client delays its
    // acknowledgements, and a head sent alone would hold the first event back 40 ms.
    for (i, reply) in ["One", "Two"].into_iter().enumerate() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": format!("m-{i}"),
                "contextId": format!("c-{i}"), "parts": [{"text": "Hi"}]}}})
        .to_string();
        let request = format!(
            "POST /a2a HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             A2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut buf = vec![0; 1 << 16];
        let n = tcp.read(&mut buf).await.unwrap();
        let mut received = String::from_utf8_lossy(&buf[..n]).into_owned();
        // The first read holds the head and the task, the stream's first event.
        let (head, first) = received.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(head.contains("content-type: text/event-stream"), "{head}");
        assert!(
            first.contains("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":"),
            "task {i}: the first read holds no event: {received:?}"
        );
        // The rest, to the end of the chunked body: the reply, then completed.
        while !received.ends_with("\r\n0\r\n\r\n") {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "{received}");
            received.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        assert_eq!(received.matches("\ndata: ").count(), 4, "{received}");
        assert!(
            received.contains(&format!(
                r#""parts":[{{"text":"{reply}"}}],"role":"ROLE_AGENT","#
            )) && received.contains(r#""state":"TASK_STATE_COMPLETED""#),
            "{received}"
        );
    }
}

#[tokio::test]
async fn a_turn_that_cannot_start_at_once_gets_its_head_first_then_its_events() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    // Loads of the sessions of context `c-slow` wait for `gate`: a turn there cannot start
    // until it opens.
    let held = std::sync::Arc::clone(&gate);
    let store = Watched {
        files: JsonFileSessionStore::new(dir.path()),
        before_load: Box::new(move |session| {
            let (gate, slow) = (std::sync::Arc::clone(&held), session.ends_with(".c-slow"));
            Box::pin(async move {
                if slow {
                    let _open = gate.acquire().await.unwrap();
                }
            })
        }),
    };
    let model = ScriptedModel::new([ScriptedResponse::text("Late")]);
    let server = serve_on(&model, no_tools(), store, None, None).await;
    let address = server.address();
    let mut tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m-slow",
            "contextId": "c-slow", "parts": [{"text": "Hi"}]}}})
    .to_string();
    let request = format!(
        "POST /a2a HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         A2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let sent = std::time::Instant::now();
    tcp.write_all(request.as_bytes()).await.unwrap();
    // The turn waits on the store: after a second, the head comes alone.
    let mut buf = vec![0; 1 << 16];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .expect("no head while the turn cannot start")
        .unwrap();
    let waited = sent.elapsed();
    let mut received = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(received.starts_with("HTTP/1.1 200 OK\r\n"), "{received}");
    assert!(received.ends_with("\r\n\r\n"), "{received:?}");
    assert!(!received.contains("data:"), "{received}");
    assert!(
        waited >= Duration::from_millis(950) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    // The store answers: the task streams as always.
    gate.add_permits(1_000);
    while !received.ends_with("\r\n0\r\n\r\n") {
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(n > 0, "{received}");
        received.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert_eq!(received.matches("\ndata: ").count(), 4, "{received}");
    assert!(received.contains("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":"));
    assert!(
        received.contains(r#""parts":[{"text":"Late"}],"role":"ROLE_AGENT","#)
            && received.contains(r#""state":"TASK_STATE_COMPLETED""#),
        "{received}"
    );
}
