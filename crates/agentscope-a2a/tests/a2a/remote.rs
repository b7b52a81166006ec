//! Calling remote agents: `RemoteAgent` and `RemoteAgentTool` against our own server on
//! 127.0.0.1 (the SDK's client underneath), as an agent, as a tool inside a local agent,
//! with questions, interrupts, tokens and failures.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a::ListTasksRequest;
use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT};
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope::{ContentBlock, Event, EventType, ImageBlock};
use agentscope_a2a::{RemoteAgent, RemoteError};
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{Paced, client, role, serve, serve_with, state};

/// An event as a short line: its type (`chunk` when not the last), then its blocks.
fn seen(event: &Event) -> String {
    let kind = match event.event_type {
        EventType::Reasoning => "reasoning",
        EventType::ToolResult => "tool_result",
        EventType::Hint => "hint",
        EventType::Summary => "summary",
        EventType::AgentResult => "result",
    };
    let chunk = if event.is_last { "" } else { " chunk" };
    format!("{kind}{chunk} {}", blocks(&event.message.content))
}

fn blocks(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.to_string(),
            ContentBlock::ToolUse(call) => {
                format!("call {}({}) {}", call.name, call.input, call.id)
            }
            ContentBlock::ToolResult(result) => {
                format!(
                    "{} {} -> {}",
                    result.name,
                    result.id,
                    blocks(&result.output)
                )
            }
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("|")
}

pub(crate) async fn events(stream: AgentStream) -> Vec<String> {
    stream.map(|event| seen(&event.unwrap())).collect().await
}

/// Messages as `role name: text` lines.
fn lines(messages: &[Msg]) -> Vec<String> {
    messages
        .iter()
        .map(|msg| format!("{} {}: {}", role(msg.role), msg.name, blocks(&msg.content)))
        .collect()
}

/// The remote agent's session of `context`, as lines.
async fn remote_session(dir: &std::path::Path, context: &str) -> Vec<String> {
    let state = JsonFileSessionStore::new(dir)
        .load(&format!("assistant.{context}"))
        .await
        .unwrap()
        .unwrap();
    lines(&state.messages)
}

fn all_tasks() -> ListTasksRequest {
    ListTasksRequest {
        context_id: None,
        status: None,
        page_size: None,
        page_token: None,
        history_length: None,
        status_timestamp_after: None,
        include_artifacts: None,
        tenant: None,
    }
}

/// A `delete_files` tool that counts its runs.
fn deleter() -> (Toolkit, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let toolkit = Toolkit::new().tool(tool_fn(
        "delete_files",
        "Deletes files.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        move |_input: Value, _ctx| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("deleted 3 files".to_owned())
            }
        },
    ));
    (toolkit, runs)
}

const SHAPE: &str = r#"a data part {"decisions": [{"toolCallId": "...", "approved": true|false, "arguments"?: {...}, "reason"?: "..."}]}, one entry per pending call"#;

/// The question's text (its calls come typed: `pending_tool_calls`).
fn question() -> String {
    format!(
        "Approval needed for: delete_files({{\"path\":\"/tmp/old\"}}) [c1]. Answer with {SHAPE}."
    )
}

fn approve() -> Msg {
    RemoteAgent::data_message(json!({"decisions": [{"toolCallId": "c1", "approved": true}]}))
}

#[tokio::test]
async fn a_remote_agent_streams_its_reply_and_a_second_call_continues_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::chunks([ScriptedChunk::text("Hel"), ScriptedChunk::text("lo")]),
        ScriptedResponse::text("Again."),
    ]);
    let server = serve(&Paced(model.clone()), Toolkit::new(), dir.path()).await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();
    assert_eq!(remote.name(), "assistant");
    assert_eq!(remote.description(), "Answers questions.");
    assert_eq!(
        remote.url(),
        format!("{}/.well-known/agent-card.json", server.url)
    );
    assert_eq!(remote.context_id(), None);

    assert_eq!(
        events(remote.stream("Hi", StreamOptions::default())).await,
        [
            "reasoning chunk Hel",
            "reasoning chunk lo",
            "reasoning Hello",
            "result Hello",
        ]
    );
    let context = remote.context_id().unwrap();
    let reply = remote.call("Again?").await.unwrap();
    assert_eq!(reply.text(), "Again.");
    assert_eq!(reply.name, "assistant");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(reply.metadata["a2a"]["contextId"], json!(context));
    assert_eq!(reply.metadata["a2a"]["state"], json!("completed"));
    assert_eq!(remote.context_id(), Some(context.clone()));
    // One remote conversation: the second turn's model saw the first.
    assert_eq!(
        remote_session(dir.path(), &context).await,
        [
            "user user: Hi",
            "assistant assistant: Hello",
            "user user: Again?",
            "assistant assistant: Again.",
        ]
    );
    assert_eq!(lines(&model.requests()[1].messages).len(), 3);
    // The local agent keeps the conversation as the caller saw it.
    assert_eq!(
        lines(&remote.agent().memory().messages()),
        [
            "user user: Hi",
            "assistant assistant: Hello",
            "user user: Again?",
            "assistant assistant: Again.",
        ]
    );
}

#[tokio::test]
async fn the_remote_agents_tool_calls_and_results_stream_as_events() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_files", json!({"path": "/tmp/old"})),
        ScriptedResponse::text("Done."),
    ]);
    let (toolkit, runs) = deleter();
    let server = serve(&model, toolkit, dir.path()).await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();
    assert_eq!(
        events(remote.stream("Clean up", StreamOptions::default())).await,
        [
            r#"reasoning call delete_files({"path":"/tmp/old"}) c1"#,
            "tool_result delete_files c1 -> deleted 3 files",
            "reasoning chunk Done.",
            "reasoning Done.",
            "result Done.",
        ]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn observed_messages_go_to_the_remote_agent_before_the_next_input() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Noted.")]);
    let server = serve(&model, Toolkit::new(), dir.path()).await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();
    remote
        .agent()
        .observe(
            Msg::builder()
                .role(Role::Assistant)
                .name("alice")
                .text("It rains.")
                .build(),
        )
        .await
        .unwrap();
    remote.call("Summarise.").await.unwrap();
    let context = remote.context_id().unwrap();
    assert_eq!(
        remote_session(dir.path(), &context).await,
        [
            "user user: alice: It rains.|Summarise.",
            "assistant assistant: Noted.",
        ]
    );
}

#[tokio::test]
async fn a_saved_state_continues_the_remote_context_in_a_new_agent() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::text("First."),
        ScriptedResponse::text("Second."),
    ]);
    let server = serve(&model, Toolkit::new(), dir.path()).await;
    let first = RemoteAgent::connect(&server.url).await.unwrap();
    first.call("One").await.unwrap();
    let state = agentscope::Agent::save_state(&first).unwrap();
    let context = first.context_id().unwrap();

    let restarted = RemoteAgent::connect(&server.url).await.unwrap();
    agentscope::Agent::load_state(&restarted, state)
        .await
        .unwrap();
    assert_eq!(restarted.context_id(), Some(context.clone()));
    assert_eq!(restarted.call("Two").await.unwrap().text(), "Second.");
    assert_eq!(
        remote_session(dir.path(), &context).await,
        [
            "user user: One",
            "assistant assistant: First.",
            "user user: Two",
            "assistant assistant: Second.",
        ]
    );
}

#[tokio::test]
async fn as_a_tool_its_stream_is_progress_and_its_answer_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let remote_model = ScriptedModel::new([ScriptedResponse::chunks([
        ScriptedChunk::text("Fi"),
        ScriptedChunk::text("ve."),
    ])]);
    let server = serve(&Paced(remote_model), Toolkit::new(), dir.path()).await;
    let tool = RemoteAgent::connect(&server.url).await.unwrap().into_tool();
    let local = ReActAgent::builder()
        .name("lead")
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("l1", "assistant", json!({"task": "What is 2+3?"})),
            ScriptedResponse::text("It is 5."),
        ]))
        .toolkit(Toolkit::new().tool(tool.clone()))
        .build()
        .unwrap();
    let seen: Vec<String> = events(local.stream("Ask.", StreamOptions::default()))
        .await
        .into_iter()
        .filter(|line| line.starts_with("tool_result"))
        .collect();
    assert_eq!(
        seen,
        [
            "tool_result chunk assistant l1 -> Fi",
            "tool_result chunk assistant l1 -> ve.",
            "tool_result assistant l1 -> Five.",
        ]
    );
    assert_eq!(
        lines(&local.memory().messages()),
        [
            "user user: Ask.",
            r#"assistant lead: call assistant({"task":"What is 2+3?"}) l1"#,
            "tool assistant: assistant l1 -> Five.",
            "assistant lead: It is 5.",
        ]
    );
    // An `AgentTool` over the same remote agent works as well.
    let context = tool.agent().context_id().unwrap();
    assert_eq!(
        remote_session(dir.path(), &context).await,
        ["user user: What is 2+3?", "assistant assistant: Five."]
    );
}

#[tokio::test]
async fn agent_tool_over_a_remote_agent_forwards_its_stream() {
    let dir = tempfile::tempdir().unwrap();
    let remote_model = ScriptedModel::new([ScriptedResponse::chunks([
        ScriptedChunk::text("Fi"),
        ScriptedChunk::text("ve."),
    ])]);
    let server = serve(&Paced(remote_model), Toolkit::new(), dir.path()).await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();
    let local = ReActAgent::builder()
        .name("lead")
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("l1", "ask", json!({"task": "What is 2+3?"})),
            ScriptedResponse::text("It is 5."),
        ]))
        .toolkit(Toolkit::new().tool(AgentTool::new(remote).with_name("ask")))
        .build()
        .unwrap();
    let seen: Vec<String> = events(local.stream("Ask.", StreamOptions::default()))
        .await
        .into_iter()
        .filter(|line| line.starts_with("tool_result"))
        .collect();
    assert_eq!(
        seen,
        [
            "tool_result chunk ask l1 -> Fi",
            "tool_result chunk ask l1 -> ve.",
            "tool_result ask l1 -> Five.",
        ]
    );
}

#[tokio::test]
async fn a_remote_question_suspends_the_local_call_and_the_answer_resumes_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let remote_model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_files", json!({"path": "/tmp/old"})),
        ScriptedResponse::text("Deleted."),
    ]);
    let (toolkit, runs) = deleter();
    let policy = ApprovalPolicy::tools(["delete_files"]);
    let server = serve_with(&remote_model, toolkit, dir.path(), Some(policy), None).await;
    let tool = RemoteAgent::connect(&server.url)
        .await
        .unwrap()
        .into_tool()
        .with_name("ops");
    let local = ReActAgent::builder()
        .name("lead")
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("l1", "ops", json!({"task": "Delete /tmp/old"})),
            ScriptedResponse::text("Done: Deleted."),
        ]))
        .toolkit(Toolkit::new().tool(tool.clone()))
        .build()
        .unwrap();

    let streamed: Vec<Event> = local
        .stream("Clean up.", StreamOptions::default())
        .map(Result::unwrap)
        .collect()
        .await;
    let first: Vec<String> = streamed.iter().map(seen).collect();
    let question = question();
    assert_eq!(
        first,
        [
            r#"reasoning chunk call ops({"task":"Delete /tmp/old"}) l1"#.to_owned(),
            r#"reasoning call ops({"task":"Delete /tmp/old"}) l1"#.to_owned(),
            r#"tool_result chunk ops l1 -> call delete_files({"path":"/tmp/old"}) c1"#.to_owned(),
            format!("tool_result chunk ops l1 -> {question}"),
            r#"result call ops({"task":"Delete /tmp/old"}) l1"#.to_owned(),
        ]
    );
    let reply = &streamed.last().unwrap().message;
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ToolSuspended));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let asked = tool.agent().pending_question().unwrap();
    assert_eq!(blocks(&asked.content), question);
    assert_eq!(
        tool.agent().pending_tool_calls(),
        [agentscope::ToolUseBlock::new(
            "c1",
            "delete_files",
            json!({"path": "/tmp/old"})
        )]
    );

    // Resumed without an answer, it asks again.
    let again = local.call(()).await.unwrap();
    assert_eq!(again.generate_reason(), Some(GenerateReason::ToolSuspended));
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    assert_eq!(
        tool.answer("l9", approve()).unwrap_err().to_string(),
        "the tool call \"l9\" is not waiting for an answer of the remote agent"
    );
    tool.answer("l1", approve()).unwrap();
    let done = local.call(()).await.unwrap();
    assert_eq!(done.text(), "Done: Deleted.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        lines(&local.memory().messages())[2..],
        [
            "tool ops: ops l1 -> Deleted.".to_owned(),
            "assistant lead: Done: Deleted.".to_owned(),
        ]
    );
    assert_eq!(tool.agent().pending_question(), None);
}

#[tokio::test]
async fn as_an_agent_a_question_is_the_reply_and_the_next_call_answers_the_same_task() {
    let dir = tempfile::tempdir().unwrap();
    let remote_model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_files", json!({"path": "/tmp/old"})),
        ScriptedResponse::text("Deleted."),
    ]);
    let (toolkit, runs) = deleter();
    let policy = ApprovalPolicy::tools(["delete_files"]);
    let server = serve_with(&remote_model, toolkit, dir.path(), Some(policy), None).await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();

    let asked = remote.call("Delete /tmp/old").await.unwrap();
    // Typed as a local agent's stop for approval: the reason, the text, the calls apart.
    assert_eq!(
        asked.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(blocks(&asked.content), question());
    assert_eq!(asked.metadata["a2a"]["state"], json!("input-required"));
    assert_eq!(
        asked.metadata["a2a"]["pendingToolCalls"],
        json!([{"id": "c1", "name": "delete_files", "input": {"path": "/tmp/old"}}])
    );
    assert_eq!(
        remote.pending_tool_calls(),
        [agentscope::ToolUseBlock::new(
            "c1",
            "delete_files",
            json!({"path": "/tmp/old"})
        )]
    );
    assert!(remote.in_doubt_calls().is_empty());
    let task = asked.metadata["a2a"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(remote.pending_question(), Some(asked));

    // A text answer is not a decision: the same task asks again (a new task would be
    // rejected while the context waits).
    let again = remote.call("yes").await.unwrap();
    assert_eq!(again.metadata["a2a"]["taskId"], json!(task));
    assert_eq!(
        blocks(&again.content),
        format!("The message carries no decisions. {}", question())
    );
    let done = remote.call(approve()).await.unwrap();
    assert_eq!(done.text(), "Deleted.");
    assert_eq!(done.metadata["a2a"]["taskId"], json!(task));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(remote.pending_question(), None);
}

#[tokio::test]
async fn an_interrupt_cancels_the_remote_task_and_ends_the_call_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let model =
        ScriptedModel::new(
            [ScriptedResponse::text("too late").with_delay(Duration::from_secs(30))],
        );
    let server = serve(&model, Toolkit::new(), dir.path()).await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();
    let call = tokio::spawn(remote.call("Take your time."));
    // The remote model blocks: wait until the remote task runs.
    let sdk = client(&server, "JSONRPC").await;
    let list = || async {
        let tasks = sdk.list_tasks(&all_tasks()).await.unwrap();
        tasks.tasks
    };
    for _ in 0..100 {
        if list()
            .await
            .first()
            .is_some_and(|task| state(&task.status.state) == "working")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    remote.interrupt();
    let reply = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert_eq!(reply.text(), INTERRUPT_REPLY);
    // The cancel was answered before the call ended.
    let tasks = list().await;
    assert_eq!(tasks.len(), 1);
    assert_eq!(state(&tasks[0].status.state), "canceled");
}

#[tokio::test]
async fn interrupting_the_local_call_cancels_the_remote_task_of_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let model =
        ScriptedModel::new(
            [ScriptedResponse::text("too late").with_delay(Duration::from_secs(30))],
        );
    let server = serve(&model, Toolkit::new(), dir.path()).await;
    let tool = RemoteAgent::connect(&server.url).await.unwrap().into_tool();
    let local = ReActAgent::builder()
        .name("lead")
        .model(ScriptedModel::new([ScriptedResponse::tool_call(
            "l1",
            "assistant",
            json!({"task": "Wait."}),
        )]))
        .toolkit(Toolkit::new().tool(tool))
        .build()
        .unwrap();
    let call = tokio::spawn(local.call("Go."));
    let sdk = client(&server, "JSONRPC").await;
    let list = || async { sdk.list_tasks(&all_tasks()).await.unwrap().tasks };
    for _ in 0..100 {
        if list()
            .await
            .first()
            .is_some_and(|task| state(&task.status.state) == "working")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    local.interrupt();
    let reply = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert_eq!(
        lines(&local.memory().messages())[2],
        format!("tool assistant: assistant l1 -> {INTERRUPTED_RESULT}")
    );
    // The engine dropped the running tool at once: the tool's turn cancels the remote task
    // in the background.
    let mut states = Vec::new();
    for _ in 0..250 {
        states = list()
            .await
            .iter()
            .map(|task| state(&task.status.state))
            .collect();
        if states == ["canceled"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(states, ["canceled"]);
}

#[tokio::test]
async fn a_bearer_token_is_sent_and_a_wrong_one_fails_without_showing_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let server = serve_with(
        &model,
        Toolkit::new(),
        dir.path(),
        None,
        Some("s3cret-token-123"),
    )
    .await;
    let remote = RemoteAgent::builder(&server.url)
        .bearer_token("s3cret-token-123")
        .header("X-Tenant", "tenant-secret-42")
        .connect()
        .await
        .unwrap();
    assert_eq!(remote.call("Hi").await.unwrap().text(), "Hello!");
    let debug = format!("{remote:?} {:?}", remote.clone().into_tool());
    assert!(
        !debug.contains("s3cret") && !debug.contains("tenant-secret"),
        "{debug}"
    );
    assert!(
        debug.contains(r#"headers: ["authorization", "x-tenant"]"#),
        "{debug}"
    );

    let wrong = RemoteAgent::builder(&server.url)
        .bearer_token("wrong-token-456")
        .connect()
        .await
        .unwrap();
    let error = wrong.call("Hi").await.unwrap_err();
    assert!(matches!(error, AgentError::Failed { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "calling the remote agent 'assistant' at {}/.well-known/agent-card.json failed: \
             HTTP 401 Unauthorized: {{\"code\":\"unauthorized\",\"message\":\"a valid bearer \
             token is required (Authorization: Bearer <token>)\"}}",
            server.url
        )
    );
    let texts = format!("{error} {error:?} {wrong:?}");
    assert!(!texts.contains("wrong-token"), "{texts}");
}

#[tokio::test]
async fn a_bad_card_url_or_an_answer_that_is_no_card_is_a_clear_error() {
    // Nothing listens.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let error = RemoteAgent::builder(format!(
        "http://alice:pw-SECRET@127.0.0.1:{port}/a2a?key=q-SECRET"
    ))
    .bearer_token("tok-SECRET")
    .connect()
    .await
    .unwrap_err();
    let RemoteError::Card { url, reason } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(
        url,
        &format!(
            "http://alice:<redacted>@127.0.0.1:{port}/a2a/.well-known/agent-card.json?key=<redacted>"
        )
    );
    assert!(reason.starts_with("it cannot be fetched: "), "{reason}");
    let texts = format!("{error} {error:?}");
    assert!(!texts.contains("SECRET"), "{texts}");

    // A server that is not an A2A agent: a 404, then JSON that is no card.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/other/.well-known/agent-card.json",
        axum::routing::get(|| async { axum::Json(json!({"hello": "world"})) }),
    );
    let _server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    assert_eq!(
        RemoteAgent::connect(format!("{base}/a2a"))
            .await
            .unwrap_err()
            .to_string(),
        format!(
            "the agent card at {base}/a2a/.well-known/agent-card.json cannot be used: the \
             server answered HTTP 404 Not Found"
        )
    );
    assert_eq!(
        RemoteAgent::connect(format!("{base}/other"))
            .await
            .unwrap_err()
            .to_string(),
        format!(
            "the agent card at {base}/other/.well-known/agent-card.json cannot be used: the \
             answer is not an A2A agent card (missing field `name` at line 1 column 17)"
        )
    );
    assert_eq!(
        RemoteAgent::builder(&base)
            .header("bad header", "x")
            .connect()
            .await
            .unwrap_err(),
        RemoteError::InvalidHeader {
            name: "bad header".into()
        }
    );
}

#[tokio::test]
async fn a_failed_or_rejected_remote_task_is_an_agent_error_and_a_tool_error_result() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::error("the GPU caught fire"),
        ScriptedResponse::error("the GPU caught fire"),
    ]);
    let server = serve(&model, Toolkit::new(), dir.path()).await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();
    let error = remote.call("Hi").await.unwrap_err();
    assert!(matches!(error, AgentError::Failed { .. }), "{error:?}");
    // The peer reads what failed and a correlation id, never the model's error text.
    let failed = error.to_string();
    assert!(
        failed.starts_with(
            "the remote agent 'assistant' failed the task: The agent failed (error id "
        ) && !failed.contains("GPU"),
        "{failed}"
    );

    // An image whose type cannot be told is refused by the server: the task is rejected.
    let image = Msg::builder()
        .role(Role::User)
        .block(ContentBlock::Image(ImageBlock {
            url: "https://example.com/picture".into(),
        }))
        .build();
    assert_eq!(
        remote.call(image).await.unwrap_err().to_string(),
        "the remote agent 'assistant' rejected the task: part 0: only text, data and image URL \
         parts are accepted"
    );

    // As a tool: an error result the local model sees.
    let tool = RemoteAgent::connect(&server.url).await.unwrap().into_tool();
    let local = ReActAgent::builder()
        .name("lead")
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("l1", "assistant", json!({"task": "Hi"})),
            ScriptedResponse::text("It failed."),
        ]))
        .toolkit(Toolkit::new().tool(tool))
        .build()
        .unwrap();
    assert_eq!(local.call("Go.").await.unwrap().text(), "It failed.");
    let result = &lines(&local.memory().messages())[2];
    let prefix = "tool assistant: assistant l1 -> Error: Tool execution failed: the remote agent \
                  'assistant' failed the task: The agent failed (error id ";
    assert!(
        result.starts_with(prefix) && !result.contains("GPU"),
        "{result}"
    );
}

/// The idempotency key crosses agents: the tool's message is named by its call's key, and a
/// message sent again is answered with the task it started, not run again.
#[tokio::test]
async fn a_message_sent_again_gets_the_first_answer_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let remote_model = ScriptedModel::new([ScriptedResponse::text("Five.")]);
    let server = serve(&remote_model, Toolkit::new(), dir.path()).await;
    let remote = RemoteAgent::connect(&server.url).await.unwrap();
    let question = Msg::user("What is 2+3?");
    assert_eq!(remote.call(question.clone()).await.unwrap().text(), "Five.");
    // The same message again (a call retried with the same input): the remote agent does
    // not run it again, and the answer is the first task's.
    let again = remote.call(question.clone()).await.unwrap();
    assert_eq!(again.text(), "Five.");
    assert_eq!(remote_model.request_count(), 1);
    let context = remote.context_id().unwrap();
    assert_eq!(
        remote_session(dir.path(), &context).await,
        ["user user: What is 2+3?", "assistant assistant: Five."]
    );
    let stored = JsonFileSessionStore::new(dir.path())
        .load(&format!("assistant.{context}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.messages[0].id, question.id);

    // As a tool, the message is named by the call's idempotency key.
    let tool_dir = tempfile::tempdir().unwrap();
    let tool_model = ScriptedModel::new([ScriptedResponse::text("Six.")]);
    let tool_server = serve(&tool_model, Toolkit::new(), tool_dir.path()).await;
    let tool = RemoteAgent::connect(&tool_server.url)
        .await
        .unwrap()
        .into_tool();
    let local = ReActAgent::builder()
        .name("lead")
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("l1", "assistant", json!({"task": "What is 3+3?"})),
            ScriptedResponse::text("It is 6."),
        ]))
        .toolkit(Toolkit::new().tool(tool.clone()))
        .build()
        .unwrap();
    assert_eq!(local.call("Ask.").await.unwrap().text(), "It is 6.");
    let key = agentscope::ToolContext::new(agentscope::ToolUseBlock::new(
        "l1",
        "assistant",
        json!({"task": "What is 3+3?"}),
    ))
    .with_scope(local.id().to_owned())
    .idempotency_key();
    let context = tool.agent().context_id().unwrap();
    let stored = JsonFileSessionStore::new(tool_dir.path())
        .load(&format!("assistant.{context}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.messages[0].id, key);
}

/// A remote agent is a participant like any other: in a hub's sequential pipeline, it
/// hears what the local agent said before it, and the local agent hears its reply.
#[tokio::test]
async fn a_remote_agent_takes_part_in_a_hub_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let remote_model = ScriptedModel::new([ScriptedResponse::text("Bob here, from afar.")]);
    let server = serve(&remote_model, Toolkit::new(), dir.path()).await;
    let remote: Arc<dyn agentscope::Agent> =
        Arc::new(RemoteAgent::connect(&server.url).await.unwrap());
    let alice = ReActAgent::builder()
        .name("alice")
        .model(ScriptedModel::new([ScriptedResponse::text(
            "Alice says hi.",
        )]))
        .build()
        .unwrap();
    let local: Arc<dyn agentscope::Agent> = Arc::new(alice.clone());
    let hub = agentscope::multi_agent::MsgHub::builder()
        .participants([Arc::clone(&local), Arc::clone(&remote)])
        .enter()
        .await
        .unwrap();
    let last = hub
        .sequential(&[local, Arc::clone(&remote)], "Introduce yourselves.")
        .await
        .unwrap();
    assert_eq!(last.text(), "Bob here, from afar.");
    assert_eq!(last.name, "assistant");
    // The remote agent got what alice said (a pipeline's next input is the reply before),
    // naming her once; alice heard its reply.
    let context = remote_model.requests()[0].messages.clone();
    assert_eq!(lines(&context), ["user user: alice: Alice says hi."]);
    assert_eq!(
        lines(&alice.memory().messages()),
        [
            "user user: Introduce yourselves.",
            "assistant alice: Alice says hi.",
            // Heard as the hub delivers another participant's reply.
            "user assistant: assistant: Bob here, from afar.",
        ]
    );
}
