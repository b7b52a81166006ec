//! The server over real HTTP on 127.0.0.1: exact event sequences, threads that outlive a
//! server, approvals through interrupts and `resume`, busy threads, auth, limits, malformed
//! input, a client that goes away, and shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "server/first_event.rs"]
mod first_event;
mod support;
#[path = "server/timeline.rs"]
mod timeline;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentscope::ModelError;
use agentscope::prelude::*;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};
use support::events::{TOOL_CALL_STEP, TOOL_RESULT_STEP, run_of, text_step, types};
use support::http::{assert_refused, find, json_of, post, post_with, run_until, thread};
use support::serve::{guarded_assistant, serve, user};

/// Added to the run counter when the tool starts: completed runs are `count % STARTED`.
const STARTED: usize = 1 << 20;

fn completed(runs: &AtomicUsize) -> usize {
    runs.load(Ordering::SeqCst) % STARTED
}

fn started(runs: &AtomicUsize) -> usize {
    runs.load(Ordering::SeqCst) / STARTED
}

/// A `delete_files` tool that counts its starts (in the high half) and completed runs, and
/// can be slowed down.
fn delete_files(runs: Arc<AtomicUsize>, delay: Duration) -> impl Tool {
    tool_fn(
        "delete_files",
        "Deletes files matching a glob.",
        json!({"type": "object", "properties": {"glob": {"type": "string"}}, "required": ["glob"]}),
        move |input, _ctx| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(STARTED, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(format!("deleted {}", input["glob"].as_str().unwrap_or("?")))
            }
        },
    )
}

fn agui(model: ScriptedModel, dir: &std::path::Path, runs: Arc<AtomicUsize>) -> AgUi {
    agui_with(model, dir, runs, Duration::ZERO, |builder| builder)
}

fn agui_with(
    model: ScriptedModel,
    dir: &std::path::Path,
    runs: Arc<AtomicUsize>,
    tool_delay: Duration,
    configure: impl FnOnce(agentscope_server::AgUiBuilder) -> agentscope_server::AgUiBuilder,
) -> AgUi {
    configure(guarded_assistant(dir, move || {
        ReActAgent::builder()
            .model(model.clone())
            .toolkit(Toolkit::new().tool(delete_files(Arc::clone(&runs), tool_delay)))
    }))
    .build()
    .unwrap()
}

/// A run on `thread` with the run id `run-<thread>`.
fn input(thread: &str, messages: Value) -> Value {
    support::serve::input(thread, &format!("run-{thread}"), messages)
}

#[tokio::test]
async fn a_streamed_answer_is_framed_by_the_run_and_reloads_from_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::chunks([
        ScriptedChunk::thinking("Greet back."),
        ScriptedChunk::text("Hello"),
        ScriptedChunk::text(", Ada!"),
    ])]);
    let server = serve(agui(model, dir.path(), Arc::default())).await;
    let (status, events) = post(
        &server.base,
        &input("t1", json!([user("u1", "Hi, I am Ada.")])),
    )
    .await;
    assert_eq!(status, 200);
    let step = [
        "STEP_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
    ];
    assert_eq!(types(&events), run_of(&[&step]));
    assert_eq!(
        events[0],
        json!({"type": "RUN_STARTED", "threadId": "t1", "runId": "run-t1", "protocolVersion": "1.0"})
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello, Ada!");
    let reply_id = events[5]["messageId"].as_str().unwrap().to_owned();
    let finished = find(&events, "RUN_FINISHED");
    assert_eq!(finished["outcome"], json!({"type": "success"}));
    assert_eq!(finished["result"]["text"], "Hello, Ada!");
    assert_eq!(finished["result"]["messageId"], reply_id.as_str());
    let expected_messages = json!([
        {"role": "user", "id": "u1", "content": "Hi, I am Ada."},
        {"role": "reasoning", "id": format!("{reply_id}-reasoning"), "content": "Greet back."},
        {"role": "assistant", "id": reply_id, "content": "Hello, Ada!"}
    ]);
    assert_eq!(
        find(&events, "MESSAGES_SNAPSHOT")["messages"],
        expected_messages
    );

    // Another server on the same store (a reload on another instance) shows the thread.
    let other = serve(agui(ScriptedModel::new([]), dir.path(), Arc::default())).await;
    let history = thread(&other.base, "t1").await;
    assert_eq!(
        history,
        json!({"threadId": "t1", "messages": expected_messages, "interrupts": [],
               "awaits": "message", "runs": [{"runId": "run-t1", "state": "completed"}]})
    );
    // The client may send the whole history again: only the new message is input.
    let model = ScriptedModel::new([ScriptedResponse::text("Still here.")]);
    let third = serve(agui(model.clone(), dir.path(), Arc::default())).await;
    let mut all = history["messages"].as_array().unwrap().clone();
    all.push(user("u2", "Are you there?"));
    let (status, _) = post(&third.base, &input("t1", Value::Array(all))).await;
    assert_eq!(status, 200);
    let sent: Vec<String> = model.requests()[0].messages.iter().map(Msg::text).collect();
    assert_eq!(sent, ["Hi, I am Ada.", "Hello, Ada!", "Are you there?"]);
}

#[tokio::test]
async fn an_approval_ends_the_run_with_an_interrupt_and_resume_runs_the_tool_once() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_files", json!({"glob": "*.log"})),
        ScriptedResponse::text("Deleted the logs."),
    ]);
    let server = serve(agui(model, dir.path(), Arc::clone(&runs))).await;
    let (status, events) = post(
        &server.base,
        &input("t2", json!([user("u1", "Delete the logs.")])),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(types(&events), run_of(&[TOOL_CALL_STEP]));
    assert_eq!(events[3]["delta"], "{\"glob\":\"*.log\"}");
    let outcome = &find(&events, "RUN_FINISHED")["outcome"];
    assert_eq!(outcome["type"], "interrupt");
    assert_eq!(outcome["interrupts"][0]["id"], "c1");
    assert_eq!(outcome["interrupts"][0]["toolCallId"], "c1");
    assert_eq!(outcome["interrupts"][0]["reason"], "tool_approval");
    assert_eq!(completed(&runs), 0);

    // A run that brings a message instead of answering is refused, and so is a partial
    // or unknown answer.
    assert_refused(
        &server.base,
        &input("t2", json!([user("u2", "Hello?")])),
        409,
        "interrupts_pending",
    )
    .await;
    let mut wrong = input("t2", json!([]));
    wrong["resume"] =
        json!([{"interruptId": "c9", "status": "resolved", "payload": {"approved": true}}]);
    assert_refused(&server.base, &wrong, 400, "unanswered_interrupts").await;

    let mut resume = input("t2", json!([]));
    resume["resume"] =
        json!([{"interruptId": "c1", "status": "resolved", "payload": {"approved": true}}]);
    let (status, events) = post(&server.base, &resume).await;
    assert_eq!(status, 200);
    assert_eq!(types(&events), run_of(&[TOOL_RESULT_STEP, &text_step(1)]));
    assert_eq!(
        events[2],
        json!({"type": "TOOL_CALL_RESULT", "messageId": "result-c1", "toolCallId": "c1",
               "content": "deleted *.log", "role": "tool"})
    );
    assert_eq!(
        find(&events, "RUN_FINISHED")["outcome"],
        json!({"type": "success"})
    );
    assert_eq!(completed(&runs), 1);
    // Answering again finds nothing to answer, and the tool never runs twice.
    assert_refused(&server.base, &resume, 400, "unknown_interrupt").await;
    assert_eq!(completed(&runs), 1);
}

#[tokio::test]
async fn edit_and_reject_answers() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_files", json!({"glob": "*"})),
        ScriptedResponse::text("Done with the edit."),
        ScriptedResponse::tool_call("c2", "delete_files", json!({"glob": "/"})),
        ScriptedResponse::text("Understood, nothing deleted."),
    ]);
    let server = serve(agui(model.clone(), dir.path(), Arc::clone(&runs))).await;
    post(&server.base, &input("t3", json!([user("u1", "Clean up.")]))).await;
    let mut edit = input("t3", json!([]));
    edit["resume"] = json!([{"interruptId": "c1", "status": "resolved",
                             "payload": {"approved": true, "arguments": {"glob": "*.tmp"}}}]);
    let (_, events) = post(&server.base, &edit).await;
    let result = find(&events, "TOOL_CALL_RESULT")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.starts_with("deleted *.tmp"), "{result}");
    // An edit whose arguments break the tool's schema is refused before anything runs.
    post(
        &server.base,
        &input("t3", json!([user("u2", "And the root?")])),
    )
    .await;
    let mut bad = input("t3", json!([]));
    bad["resume"] = json!([{"interruptId": "c2", "status": "resolved",
                            "payload": {"approved": true, "arguments": {"glob": 7}}}]);
    assert_refused(&server.base, &bad, 400, "invalid_decision").await;
    let mut reject = input("t3", json!([]));
    reject["resume"] = json!([{"interruptId": "c2", "status": "resolved",
                               "payload": {"approved": false, "reason": "never the root"}}]);
    let (_, events) = post(&server.base, &reject).await;
    assert_eq!(
        find(&events, "TOOL_CALL_RESULT")["content"],
        "Rejected by the user: never the root"
    );
    assert_eq!(completed(&runs), 1);
    assert_eq!(
        find(&events, "RUN_FINISHED")["result"]["text"],
        "Understood, nothing deleted."
    );
}

#[tokio::test]
async fn a_failed_call_is_a_run_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::failure(ModelError::Status {
        status: 503,
        message: "overloaded".into(),
        retry_after: None,
    })]);
    let server = serve(agui(model, dir.path(), Arc::default())).await;
    let (status, events) = post(&server.base, &input("t4", json!([user("u1", "Hi")]))).await;
    assert_eq!(status, 200);
    assert_eq!(types(&events), ["RUN_STARTED", "CUSTOM", "RUN_ERROR"]);
    assert_eq!(events[2]["code"], "model_error");
    // What failed and a correlation id, never the model's error text; the thread's run says
    // the same (stored with the conversation).
    let message = events[2]["message"].as_str().unwrap();
    assert!(
        message.starts_with("The agent failed (error id ") && !message.contains("overloaded"),
        "{message}"
    );
    let history = thread(&server.base, "t4").await;
    assert_eq!(
        history["runs"],
        json!([{"runId": "run-t4", "state": "failed"}])
    );
    // The timeline shows the step that failed, ended when the run did, without tokens.
    let timeline = &events[1];
    assert_eq!(timeline["name"], "timeline");
    let bar = &timeline["value"]["bars"][0];
    assert_eq!(
        (&bar["kind"], &bar["label"], bar.get("inputTokens")),
        (&json!("reasoning"), &json!("reasoning 1"), None)
    );
    assert_eq!(timeline["value"]["bars"].as_array().unwrap().len(), 1);
    assert_eq!(timeline["value"]["marks"], json!([]));
    assert!(bar["endMs"].as_f64().unwrap() >= bar["startMs"].as_f64().unwrap());
}

#[tokio::test]
async fn bad_requests_get_json_errors_and_start_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([]);
    let server = serve(agui_with(
        model.clone(),
        dir.path(),
        Arc::default(),
        Duration::ZERO,
        |b| b.bearer_token("s3cret-token").max_body_bytes(2048),
    ))
    .await;
    let body = input("t5", json!([user("u1", "Hi")]));
    let client = reqwest::Client::new();
    let url = format!("{}/agents/assistant", server.base);
    // No token, a wrong token.
    for token in [None, Some("wrong-token!")] {
        let (status, body) = post_with(&server.base, &body, token).await;
        assert_eq!(
            (status, body[0]["error"]["code"].as_str()),
            (401, Some("unauthorized"))
        );
    }
    let listing = client
        .get(format!("{}/agents", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(listing.status(), 401);
    let cases: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (client.post(&url).body("{not json"), 400, "invalid_input"),
        (
            client.post(&url).json(&json!({"threadId": "t"})),
            400,
            "invalid_input",
        ),
        (
            client
                .post(&url)
                .json(&input("../etc", json!([user("u", "x")]))),
            400,
            "invalid_thread_id",
        ),
        (
            client
                .post(format!("{}/agents/nobody", server.base))
                .json(&body),
            404,
            "not_found",
        ),
        (
            client
                .post(&url)
                .json(&input("t5", json!([user("u", &"x".repeat(4096))]))),
            413,
            "too_large",
        ),
        (
            client.post(&url).json(&input(
                "t5",
                json!([{"id": "u", "role": "user",
                "content": [{"type": "audio", "source": {"type": "url", "value": "x"}}]}]),
            )),
            400,
            "unsupported_content",
        ),
        (
            client.post(&url).json(&input("t5", json!([]))),
            400,
            "no_new_message",
        ),
    ];
    for (request, status, code) in cases {
        let response = request.bearer_auth("s3cret-token").send().await.unwrap();
        assert_eq!(response.status().as_u16(), status);
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], code, "{error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    assert_eq!(model.request_count(), 0);
    let listing = json_of(
        client
            .get(format!("{}/agents", server.base))
            .bearer_auth("s3cret-token"),
    )
    .await;
    assert_eq!(listing, json!({"agents": ["assistant"]}));
    // The page is public.
    let page = client.get(&server.base).send().await.unwrap();
    assert_eq!(page.status(), 200);
}

#[tokio::test]
async fn a_busy_thread_is_a_conflict_and_a_client_that_leaves_frees_it() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_files", json!({"glob": "*.log"})),
        ScriptedResponse::text("The logs are still there."),
    ]);
    let server = serve(agui_with(
        model,
        dir.path(),
        Arc::clone(&runs),
        Duration::from_secs(30),
        |b| b,
    ))
    .await;
    post(
        &server.base,
        &input("t6", json!([user("u1", "Delete the logs.")])),
    )
    .await;
    let mut resume = input("t6", json!([]));
    resume["resume"] =
        json!([{"interruptId": "c1", "status": "resolved", "payload": {"approved": true}}]);
    // The tool is running (30 s): the thread is busy.
    let running = run_until(&server.base, &resume, "RUN_STARTED").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while started(&runs) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tool did not start"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.agui.running(), 1);
    assert_refused(
        &server.base,
        &input("t6", json!([user("u2", "Hurry")])),
        409,
        "thread_busy",
    )
    .await;
    // Meanwhile the call recorded as running is running, not in doubt.
    let history = thread(&server.base, "t6").await;
    assert_eq!(
        (&history["interrupts"], &history["awaits"]),
        (&json!([]), &json!("busy"))
    );
    // The client goes away: the run is cancelled and the thread is free again.
    drop(running);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.agui.running() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(completed(&runs), 0, "the dropped tool did not complete");
    // The call was approved and started, and its result was never stored: it is in doubt,
    // and the thread awaits an answer for it (a new message is refused), not a decision.
    let history = thread(&server.base, "t6").await;
    assert_eq!(history["awaits"], "resume");
    let interrupts = history["interrupts"].as_array().unwrap();
    assert_eq!(interrupts.len(), 1, "{interrupts:?}");
    assert_eq!(
        (&interrupts[0]["id"], &interrupts[0]["reason"]),
        (&json!("c1"), &json!("tool_in_doubt"))
    );
    assert_refused(
        &server.base,
        &input("t6", json!([user("u2", "Hurry")])),
        409,
        "interrupts_pending",
    )
    .await;
    // A person checks and fails it: the model reads why, and the tool does not run again.
    let mut fail = input("t6", json!([]));
    fail["resume"] = json!([{"interruptId": "c1", "status": "resolved",
                             "payload": {"action": "fail", "reason": "the disk was gone"}}]);
    let (status, events) = post(&server.base, &fail).await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(
        find(&events, "RUN_FINISHED")["result"]["text"],
        "The logs are still there."
    );
    let history = thread(&server.base, "t6").await;
    let tool_message = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let failed = "Error: the call failed (checked by the user): the disk was gone";
    assert_eq!(
        tool_message,
        json!({"role": "tool", "id": "result-c1", "toolCallId": "c1", "content": failed,
               "error": failed})
    );
    assert_eq!(history["awaits"], "message");
    assert_eq!((started(&runs), completed(&runs)), (1, 0));
}

#[tokio::test]
async fn shutdown_interrupts_running_calls_and_refuses_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let model =
        ScriptedModel::new([
            ScriptedResponse::chunks([ScriptedChunk::text("Thinking it over")])
                .with_delay(Duration::from_secs(30)),
        ]);
    let server = serve(agui(model, dir.path(), Arc::default())).await;
    let body = input("t7", json!([user("u1", "Take your time.")]));
    let base = server.base.clone();
    let run = tokio::spawn(async move { post(&base, &body).await });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.agui.running() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run did not start"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::timeout(Duration::from_secs(10), server.agui.shutdown())
        .await
        .expect("shutdown waits for the interrupted run, not for the model");
    let (status, events) = run.await.unwrap();
    assert_eq!(status, 200);
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "RUN_FINISHED");
    assert_eq!(finished["outcome"], json!({"type": "cancelled"}));
    assert_refused(
        &server.base,
        &input("t8", json!([user("u1", "Hi")])),
        503,
        "shutting_down",
    )
    .await;
}

#[test]
fn a_server_needs_agents_with_usable_names() {
    let model = ScriptedModel::new([]);
    let err = AgUi::builder().build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "no agent configured: call .agent(name, spec)"
    );
    let spec = AgentSpec::new(move || ReActAgent::builder().model(model.clone()));
    let err = AgUi::builder()
        .agent("my agent", spec.clone())
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("\"my agent\""), "{err}");
    let err = AgUi::builder()
        .agent("ok", spec)
        .bearer_token(" ")
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "the bearer token is empty");
}

#[tokio::test]
async fn cors_answers_the_configured_origin_only() {
    use tower_http::cors::CorsLayer;

    let dir = tempfile::tempdir().unwrap();
    let origin = "https://app.example";
    let cors = CorsLayer::new()
        .allow_origin(origin.parse::<axum::http::HeaderValue>().unwrap())
        .allow_methods([axum::http::Method::POST])
        .allow_headers([axum::http::header::CONTENT_TYPE]);
    let server = serve(agui_with(
        ScriptedModel::new([]),
        dir.path(),
        Arc::default(),
        Duration::ZERO,
        |b| b.cors(cors),
    ))
    .await;
    let preflight = |from: &'static str| {
        reqwest::Client::new()
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/agents/assistant", server.base),
            )
            .header("Origin", from)
            .header("Access-Control-Request-Method", "POST")
            .header("Access-Control-Request-Headers", "content-type")
            .send()
    };
    let allowed = preflight(origin).await.unwrap();
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    // Another origin is told the one allowed origin, which its browser refuses to match.
    let other = preflight("https://evil.example").await.unwrap();
    assert_eq!(
        other.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    // Without .cors(..) no CORS header is sent at all.
    let plain = serve(agui(ScriptedModel::new([]), dir.path(), Arc::default())).await;
    let response = reqwest::Client::new()
        .get(format!("{}/agents", plain.base))
        .header("Origin", origin)
        .send()
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
}
