//! A remote agent's questions, seen from the client: typed as a local agent's stops (the
//! calls awaiting approval, the calls in doubt with their keys, integers as integers); a
//! message sent again on the task that asked returns (an old server's rejection naming the
//! task itself, a new server's answer with the task as it is); a question whose task died
//! is dropped, or abandoned, and the next call starts a new task.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{Part, StreamResponse, TaskState};
use agentscope::ToolUseBlock;
use agentscope::prelude::*;
use agentscope_a2a::RemoteAgent;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::fake::{self, Fake, Seen, card, fake, ok, proto, refused, sse, task};
use crate::support::role;

/// Messages as `role name: text` lines.
fn lines(messages: &[Msg]) -> Vec<String> {
    messages
        .iter()
        .map(|msg| format!("{} {}: {}", role(msg.role), msg.name, msg.text()))
        .collect()
}

/// A `pay` tool recording the inputs it ran with.
fn payer() -> (Toolkit, Arc<Mutex<Vec<Value>>>) {
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&inputs);
    let toolkit = Toolkit::new().tool(tool_fn(
        "pay",
        "Pays an invoice.",
        json!({"type": "object", "properties": {"invoice": {"type": "integer"},
               "amount": {"type": "number"}}, "required": ["invoice"]}),
        move |input: Value, _ctx| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(input.clone());
                Ok::<_, ToolError>(format!("paid invoice {}", input["invoice"]))
            }
        },
    ));
    (toolkit, inputs)
}

#[tokio::test]
async fn a_question_for_approval_is_typed_as_a_local_stop_and_its_integers_stay_integers() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "pay", json!({"invoice": 42, "amount": 7.5})),
        ScriptedResponse::text("Paid."),
    ]);
    let (toolkit, inputs) = payer();
    let policy = ApprovalPolicy::tools(["pay"]);
    let (_server, url) = fake::recorded(&model, toolkit, dir.path(), Some(policy), None).await;
    let remote = RemoteAgent::connect(&url).await.unwrap();

    let asked = remote.call("Pay invoice 42.").await.unwrap();
    assert_eq!(
        asked.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    // The text is the question; the calls are apart, typed.
    assert_eq!(
        asked.text(),
        "Approval needed for: pay({\"amount\":7.5,\"invoice\":42}) [c1]. Answer with a data \
         part {\"decisions\": [{\"toolCallId\": \"...\", \"approved\": true|false, \
         \"arguments\"?: {...}, \"reason\"?: \"...\"}]}, one entry per pending call."
    );
    let calls = remote.pending_tool_calls();
    assert_eq!(
        calls,
        [ToolUseBlock::new(
            "c1",
            "pay",
            json!({"invoice": 42, "amount": 7.5})
        )]
    );
    assert_eq!(
        serde_json::to_string(&calls[0].input).unwrap(),
        r#"{"amount":7.5,"invoice":42}"#
    );
    assert!(remote.in_doubt_calls().is_empty());

    // Decided from the typed calls, as local code decides.
    let decisions: Vec<Value> = calls
        .iter()
        .map(|call| json!({"toolCallId": call.id, "approved": true}))
        .collect();
    let done = remote
        .call(RemoteAgent::data_message(json!({"decisions": decisions})))
        .await
        .unwrap();
    assert_eq!(done.text(), "Paid.");
    assert_eq!(done.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(
        *inputs.lock().unwrap(),
        [json!({"invoice": 42, "amount": 7.5})]
    );
    assert!(remote.pending_tool_calls().is_empty());
}

/// A scripted agent that streams, at `<base>/a2a`: `answer` answers every request but the
/// card's, given its position among them.
async fn scripted(
    answer: impl Fn(usize, &Seen) -> axum::response::Response + Send + Sync + 'static,
) -> Fake {
    let url = Arc::new(Mutex::new(String::new()));
    let card_url = Arc::clone(&url);
    let count = AtomicUsize::new(0);
    let server = fake(move |seen| {
        if seen.path.contains("agent-card.json") {
            return ok(card("ops", &card_url.lock().unwrap(), "HTTP+JSON", true));
        }
        answer(count.fetch_add(1, Ordering::SeqCst), seen)
    })
    .await;
    *url.lock().unwrap() = format!("{}/a2a", server.base);
    server
}

/// What each `message:stream` request sent: its message id, task id and context id.
fn sent(server: &Fake) -> Vec<String> {
    server
        .seen()
        .iter()
        .filter(|seen| seen.path.ends_with("/message:stream"))
        .map(|seen| {
            let message = &seen.json()["message"];
            format!(
                "message {} task {} context {}",
                message["messageId"], message["taskId"], message["contextId"]
            )
        })
        .collect()
}

/// The question of an agentscope-rs server about `pay`, in doubt.
fn in_doubt_question() -> Vec<Part> {
    vec![
        Part::text("In doubt: pay({\"invoice\":7}) [p1] started before the agent stopped."),
        Part::data(json!({"inDoubtToolCalls": [{"id": "p1", "name": "pay",
            "input": {"invoice": 7.0}, "idempotencyKey": "key-p1"}]})),
    ]
}

fn stream_of(update: StreamResponse) -> axum::response::Response {
    sse(&[proto(&update)])
}

#[tokio::test]
async fn a_question_about_calls_in_doubt_is_typed_with_their_idempotency_keys() {
    let server = scripted(|at, _| match at {
        0 => stream_of(StreamResponse::Task(task(
            "t1",
            "c1",
            TaskState::InputRequired,
            in_doubt_question(),
        ))),
        _ => stream_of(StreamResponse::Task(task(
            "t1",
            "c1",
            TaskState::Completed,
            vec![Part::text("Invoice 7 is paid.")],
        ))),
    })
    .await;
    let remote = RemoteAgent::connect(format!("{}/a2a", server.base))
        .await
        .unwrap();
    let asked = remote.call("Was invoice 7 paid?").await.unwrap();
    assert_eq!(asked.generate_reason(), Some(GenerateReason::ToolInDoubt));
    assert_eq!(
        asked.text(),
        "In doubt: pay({\"invoice\":7}) [p1] started before the agent stopped."
    );
    let doubts = remote.in_doubt_calls();
    assert_eq!(doubts.len(), 1);
    assert_eq!(
        doubts[0].call(),
        &ToolUseBlock::new("p1", "pay", json!({"invoice": 7}))
    );
    assert_eq!(doubts[0].idempotency_key(), "key-p1");
    assert!(remote.pending_tool_calls().is_empty());
    let answer = json!({"decisions": [
        {"toolCallId": doubts[0].call().id, "action": "done", "result": "paid, receipt 42"}
    ]});
    let done = remote
        .call(RemoteAgent::data_message(answer))
        .await
        .unwrap();
    assert_eq!(done.text(), "Invoice 7 is paid.");
    assert!(remote.in_doubt_calls().is_empty());
    assert_eq!(
        server.seen()[2].json()["message"]["parts"],
        json!([{"data": {"decisions": [
            {"action": "done", "result": "paid, receipt 42", "toolCallId": "p1"}
        ]}}])
    );
}

/// The finding of issue 42: `call(m.clone())` then `call(m)` on the task that asked. A
/// server that rejects the resend naming the task itself (this crate's server before the
/// fix) makes the call end at once; one that answers with the task as it is makes it the
/// question again. Either way the call returns, and never polls.
#[tokio::test]
async fn a_message_sent_again_on_the_task_that_asked_returns_and_never_polls() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::tool_call(
        "c1",
        "pay",
        json!({"invoice": 42}),
    )]);
    let (toolkit, inputs) = payer();
    let policy = ApprovalPolicy::tools(["pay"]);
    let (server, url) = fake::recorded(&model, toolkit, dir.path(), Some(policy), None).await;
    let remote = RemoteAgent::connect(&url).await.unwrap();
    let message = Msg::user("Pay invoice 42.");
    let asked = remote.call(message.clone()).await.unwrap();
    let task_id = asked.metadata["a2a"]["taskId"].clone();

    let again = tokio::time::timeout(Duration::from_secs(10), remote.call(message))
        .await
        .expect("the call sent again did not return");
    let polls = server
        .lines()
        .iter()
        .filter(|line| line.starts_with("GET /a2a/tasks/"))
        .count();
    assert_eq!(polls, 0, "{:?}", server.lines());
    match again {
        // The server answers with the task, still asking.
        Ok(reply) => {
            assert_eq!(reply.metadata["a2a"]["taskId"], task_id);
            assert_eq!(remote.pending_tool_calls()[0].id, "c1");
        }
        // The server ended the task as a duplicate of itself: the question is over.
        Err(error) => {
            assert_eq!(
                error.to_string(),
                format!(
                    "the remote agent 'assistant' rejected the message as one it had received \
                     already, naming this very task ({}) as the task that received it: that \
                     task has ended",
                    task_id.as_str().unwrap()
                )
            );
            assert_eq!(remote.pending_question(), None);
        }
    }
    assert!(inputs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_old_servers_rejection_naming_the_task_itself_is_not_followed() {
    let server = scripted(|at, _| match at {
        0 => stream_of(StreamResponse::Task(task(
            "t1",
            "c1",
            TaskState::InputRequired,
            vec![Part::text("Shall I?")],
        ))),
        1 => stream_of(StreamResponse::Task(task(
            "t1",
            "c1",
            TaskState::Rejected,
            vec![
                Part::text("Message \"m1\" was already received in this context, by task t1."),
                Part::data(json!({"duplicateOf": {"messageId": "m1", "taskId": "t1"}})),
            ],
        ))),
        _ => stream_of(StreamResponse::Task(task(
            "t2",
            "c1",
            TaskState::Completed,
            vec![Part::text("Fresh start.")],
        ))),
    })
    .await;
    let remote = RemoteAgent::connect(format!("{}/a2a", server.base))
        .await
        .unwrap();
    let message = Msg::builder().id("m1").role(Role::User).text("Go?").build();
    remote.call(message.clone()).await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(10), remote.call(message))
        .await
        .expect("the call sent again did not return")
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the remote agent 'ops' rejected the message as one it had received already, naming \
         this very task (t1) as the task that received it: that task has ended"
    );
    // The task is over, and its question with it: the next call starts a new task.
    assert_eq!(remote.pending_question(), None);
    assert_eq!(remote.call("Again.").await.unwrap().text(), "Fresh start.");
    assert_eq!(
        sent(&server)[1..],
        [
            r#"message "m1" task "t1" context "c1""#.to_owned(),
            format!(
                r#"message "{}" task null context "c1""#,
                remote.agent().memory().messages()[4].id
            ),
        ]
    );
    assert_eq!(
        lines(&remote.agent().memory().messages()),
        [
            "user user: Go?",
            "assistant ops: Shall I?",
            "user user: Go?",
            "assistant ops: (The remote task t1 that asked the question has ended (rejected): \
             the question is over.)",
            "user user: Again.",
            "assistant ops: Fresh start.",
        ]
    );
    assert!(
        !server
            .lines()
            .iter()
            .any(|line| line.starts_with("GET /a2a/tasks/")),
        "{:?}",
        server.lines()
    );
}

#[tokio::test]
async fn a_new_servers_answer_with_the_original_task_as_it_is_is_followed_from_there() {
    let server = scripted(|at, seen| match (at, seen.method.as_str()) {
        (0, _) => stream_of(StreamResponse::Task(task(
            "t1",
            "c1",
            TaskState::InputRequired,
            vec![
                Part::text("Approve pay?"),
                Part::data(json!({"pendingToolCalls": [
                    {"id": "c1", "name": "pay", "input": {"invoice": 42.0}}
                ]})),
            ],
        ))),
        // Sent again on the task that asks: the task, still asking.
        (1, _) => stream_of(StreamResponse::Task(task(
            "t1",
            "c1",
            TaskState::InputRequired,
            vec![
                Part::text("Approve pay?"),
                Part::data(json!({"pendingToolCalls": [
                    {"id": "c1", "name": "pay", "input": {"invoice": 42.0}}
                ]})),
            ],
        ))),
        // The answer: the task working, and the stream closes before it ends.
        (2, _) => stream_of(StreamResponse::Task(task(
            "t1",
            "c1",
            TaskState::Working,
            Vec::new(),
        ))),
        // The task, polled.
        (_, "GET") => ok(proto(&task(
            "t1",
            "c1",
            TaskState::Completed,
            vec![Part::text("Paid.")],
        ))),
        _ => unreachable!("{}", seen.line()),
    })
    .await;
    let remote = RemoteAgent::connect(format!("{}/a2a", server.base))
        .await
        .unwrap();
    let message = Msg::user("Pay invoice 42.");
    remote.call(message.clone()).await.unwrap();
    let again = remote.call(message).await.unwrap();
    assert_eq!(again.text(), "Approve pay?");
    assert_eq!(
        again.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(
        remote.pending_tool_calls(),
        [ToolUseBlock::new("c1", "pay", json!({"invoice": 42}))]
    );
    let approve = json!({"decisions": [{"toolCallId": "c1", "approved": true}]});
    let done = remote
        .call(RemoteAgent::data_message(approve))
        .await
        .unwrap();
    assert_eq!(done.text(), "Paid.");
    assert_eq!(done.metadata["a2a"]["taskId"], json!("t1"));
    assert_eq!(
        server.lines()[1..],
        [
            "POST /a2a/message:stream",
            "POST /a2a/message:stream",
            "POST /a2a/message:stream",
            "GET /a2a/tasks/t1?historyLength=0",
        ]
    );
}

/// Finding 15 of issue 42: the server died while the client answered its question, and
/// the one that came back failed the task; every later call was sent on that dead task.
#[tokio::test]
async fn a_question_whose_task_ended_is_dropped_and_the_next_call_starts_a_new_task() {
    let server = scripted(|_, seen| {
        let message = &seen.json()["message"];
        match (seen.method.as_str(), message["taskId"].as_str()) {
            ("POST", Some("t1")) => refused(
                StatusCode::BAD_REQUEST,
                "UNSUPPORTED_OPERATION",
                "task t1 has already reached a terminal state",
            ),
            ("GET", _) => ok(proto(&task(
                "t1",
                "c1",
                TaskState::Failed,
                vec![Part::text("The task's call stopped before it finished.")],
            ))),
            _ if message["parts"][0]["text"] == "Pay invoice 7." => {
                stream_of(StreamResponse::Task(task(
                    "t1",
                    "c1",
                    TaskState::InputRequired,
                    vec![Part::text("Approve pay?")],
                )))
            }
            _ => stream_of(StreamResponse::Task(task(
                "t2",
                "c1",
                TaskState::InputRequired,
                in_doubt_question(),
            ))),
        }
    })
    .await;
    let remote = RemoteAgent::connect(format!("{}/a2a", server.base))
        .await
        .unwrap();
    remote.call("Pay invoice 7.").await.unwrap();
    let approve = json!({"decisions": [{"toolCallId": "c1", "approved": true}]});
    let error = remote
        .call(RemoteAgent::data_message(approve.clone()))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the remote agent 'ops' cannot take the answer: its task t1, which asked the \
         question, has ended (failed), so the answer was not given to it. The question is \
         dropped: the next call starts a new task in the context. (task t1 has already \
         reached a terminal state)"
    );
    assert_eq!(remote.pending_question(), None);

    // The next call goes to a new task in the same context (where the server asks about
    // the call that was running when it died).
    let asked = remote
        .call(RemoteAgent::data_message(approve))
        .await
        .unwrap();
    assert_eq!(asked.generate_reason(), Some(GenerateReason::ToolInDoubt));
    assert_eq!(asked.metadata["a2a"]["taskId"], json!("t2"));
    assert_eq!(remote.in_doubt_calls()[0].idempotency_key(), "key-p1");
    let memory = remote.agent().memory().messages();
    assert_eq!(
        sent(&server),
        [
            format!(r#"message "{}" task null context null"#, memory[0].id),
            format!(r#"message "{}" task "t1" context "c1""#, memory[2].id),
            format!(r#"message "{}" task null context "c1""#, memory[4].id),
        ]
    );
    assert_eq!(
        lines(&memory)[3],
        "assistant ops: (The remote task t1 that asked the question has ended (failed): the \
         question is over.)"
    );
    assert_eq!(
        server.lines()[1..],
        [
            "POST /a2a/message:stream",
            "POST /a2a/message:stream",
            "GET /a2a/tasks/t1?historyLength=0",
            "POST /a2a/message:stream",
        ]
    );
}

#[tokio::test]
async fn an_abandoned_question_cancels_its_task_and_the_next_call_starts_a_new_one() {
    let server = scripted(|_, seen| match seen.method.as_str() {
        "POST" if seen.path.ends_with("t1:cancel") => {
            ok(proto(&task("t1", "c1", TaskState::Canceled, Vec::new())))
        }
        _ if seen.json()["message"]["parts"][0]["text"] == "Book a table." => {
            stream_of(StreamResponse::Task(task(
                "t1",
                "c1",
                TaskState::InputRequired,
                vec![Part::text("For how many?")],
            )))
        }
        _ => stream_of(StreamResponse::Task(task(
            "t2",
            "c1",
            TaskState::Completed,
            vec![Part::text("What else?")],
        ))),
    })
    .await;
    let remote = RemoteAgent::connect(format!("{}/a2a", server.base))
        .await
        .unwrap();
    assert!(!remote.abandon_question().await.unwrap());
    remote.call("Book a table.").await.unwrap();
    assert!(remote.pending_question().is_some());
    assert!(remote.abandon_question().await.unwrap());
    assert_eq!(remote.pending_question(), None);
    assert!(!remote.abandon_question().await.unwrap());
    assert_eq!(
        remote.call("Never mind.").await.unwrap().text(),
        "What else?"
    );
    let memory = remote.agent().memory().messages();
    assert_eq!(
        lines(&memory),
        [
            "user user: Book a table.",
            "assistant ops: For how many?",
            "assistant ops: (The question of the remote task t1 was abandoned.)",
            "user user: Never mind.",
            "assistant ops: What else?",
        ]
    );
    assert_eq!(
        server.lines()[1..],
        [
            "POST /a2a/message:stream",
            "POST /a2a/tasks/t1:cancel",
            "POST /a2a/message:stream",
        ]
    );
    assert_eq!(
        sent(&server)[1],
        format!(r#"message "{}" task null context "c1""#, memory[3].id)
    );
    // Nothing of the note went to the remote agent.
    assert_eq!(
        server.seen()[3].json()["message"]["parts"],
        json!([{"text": "Never mind."}])
    );
}
