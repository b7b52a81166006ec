//! What a served task promises across instances and crashes (issue 42's findings): a resent
//! decisions message on another instance follows the task to its end with one effect; a
//! task whose call finished is never reported failed; a cancel that interrupts nothing is
//! not reported canceled; a resent message on a task that waits leaves it waiting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{Part, StreamResponse};
use agentscope::prelude::*;
use agentscope::session::{SessionStore, StateChange};
use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{Server, Watched, answer, cancel, client, get, request, serve_on, state};
use crate::task_of;

/// A `pay` tool that records each payment with its idempotency key, and (while `hold` is
/// set) waits for `release` before it returns.
#[derive(Clone, Default)]
struct Ledger {
    paid: Arc<Mutex<Vec<(Value, String)>>>,
    started: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
    hold: Arc<std::sync::atomic::AtomicBool>,
}

impl Ledger {
    fn toolkit(&self) -> Toolkit {
        let ledger = self.clone();
        Toolkit::new().tool(tool_fn(
            "pay",
            "Pays an invoice.",
            json!({"type": "object", "properties": {"invoice": {"type": "integer"}},
                   "required": ["invoice"]}),
            move |input: Value, ctx: ToolContext| {
                let ledger = ledger.clone();
                async move {
                    ledger.started.notify_one();
                    if ledger.hold.load(std::sync::atomic::Ordering::SeqCst) {
                        ledger.release.notified().await;
                    }
                    ledger
                        .paid
                        .lock()
                        .unwrap()
                        .push((input, ctx.idempotency_key().to_owned()));
                    Ok::<_, ToolError>("paid".to_owned())
                }
            },
        ))
    }

    fn payments(&self) -> Vec<(Value, String)> {
        self.paid.lock().unwrap().clone()
    }
}

/// Two instances of a `pay` agent whose payments need approval, on one SQLite file.
async fn two_payers(
    model: &ScriptedModel,
    ledger: &Ledger,
    path: &std::path::Path,
    store: impl Fn(&std::path::Path) -> SqliteSessionStore,
) -> (Server, Server) {
    let policy = || Some(ApprovalPolicy::tools(["pay"]));
    let first = serve_on(model, ledger.toolkit(), store(path), policy(), None).await;
    let second = serve_on(model, ledger.toolkit(), store(path), policy(), None).await;
    (first, second)
}

fn decisions(task: &a2a::Task) -> a2a::SendMessageRequest {
    answer(
        task,
        vec![Part::data(
            json!({"decisions": [{"toolCallId": "p1", "approved": true}]}),
        )],
    )
}

fn pays() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("p1", "pay", json!({"invoice": 7})),
        ScriptedResponse::text("Paid."),
    ])
}

/// Finding 1: the decisions message, resent to another instance while the approved
/// payment runs on the first, follows the task to its end: `completed`, one payment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decisions_message_resent_to_another_instance_while_the_tool_runs_ends_completed_once() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::default();
    let model = pays();
    let (first, second) = two_payers(&model, &ledger, &dir.path().join("s.db"), |path| {
        SqliteSessionStore::open(path).unwrap()
    })
    .await;
    let on_first = client(&first, "JSONRPC").await;
    let asked = task_of(
        on_first
            .send_message(&request("Pay invoice 7", "c1"))
            .await
            .unwrap(),
    );
    assert_eq!(state(&asked.status.state), "input-required");

    // The decisions go to the first instance; the payment starts and holds.
    ledger.hold.store(true, std::sync::atomic::Ordering::SeqCst);
    let answer = decisions(&asked);
    let mut resumed = on_first.send_streaming_message(&answer).await.unwrap();
    let first_event = resumed.next().await.unwrap().unwrap();
    assert!(
        matches!(first_event, StreamResponse::Task(_)),
        "{first_event:?}"
    );
    tokio::time::timeout(Duration::from_secs(10), ledger.started.notified())
        .await
        .unwrap();

    // The client lost the answer and sends the same message to the second instance.
    let on_second = client(&second, "HTTP+JSON").await;
    let resend = tokio::spawn(async move { on_second.send_message(&answer).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!resend.is_finished(), "the resend waits for the task's end");
    ledger.release.notify_one();
    let followed = task_of(
        tokio::time::timeout(Duration::from_secs(20), resend)
            .await
            .unwrap()
            .unwrap()
            .unwrap(),
    );
    assert_eq!(followed.id, asked.id);
    assert_eq!(state(&followed.status.state), "completed");
    assert_eq!(
        followed
            .status
            .message
            .as_ref()
            .map(crate::support::line)
            .as_deref(),
        Some("agent: Paid.")
    );
    let rest: Vec<_> = resumed.collect().await;
    assert!(rest.iter().all(Result::is_ok), "{rest:?}");
    // One payment; the model asked twice (the call, then the answer after the payment).
    let payments = ledger.payments();
    assert_eq!(payments.len(), 1, "{payments:?}");
    assert_eq!(payments[0].0, json!({"invoice": 7}));
    assert_eq!(model.request_count(), 2);
    // Either instance reports the task as it is stored: completed.
    let got = client(&first, "JSONRPC")
        .await
        .get_task(&get(&asked.id))
        .await
        .unwrap();
    assert_eq!(got, followed);
}

/// Finding 14: a resend of the message that started a task waiting for decisions (same
/// message id, on the task) answers the task as it is, still waiting, and the decisions
/// then resume it.
#[tokio::test]
async fn a_resent_message_on_a_waiting_task_leaves_it_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::default();
    let model = pays();
    let server = serve_on(
        &model,
        ledger.toolkit(),
        agentscope::session::JsonFileSessionStore::new(dir.path()),
        Some(ApprovalPolicy::tools(["pay"])),
        None,
    )
    .await;
    let client = client(&server, "JSONRPC").await;
    let first = request("Pay invoice 7", "c1");
    let asked = task_of(client.send_message(&first).await.unwrap());
    assert_eq!(state(&asked.status.state), "input-required");
    // Sent again, on the task.
    let mut again = first.clone();
    again.message.task_id = Some(asked.id.clone());
    let still = task_of(client.send_message(&again).await.unwrap());
    assert_eq!(still, asked);
    // And without naming the task (a client that lost the task id).
    let still = task_of(client.send_message(&first).await.unwrap());
    assert_eq!(still, asked);
    let done = task_of(client.send_message(&decisions(&asked)).await.unwrap());
    assert_eq!(state(&done.status.state), "completed");
    assert_eq!(ledger.payments().len(), 1);
    assert_eq!(model.request_count(), 2);
}

/// Finding 2: a task whose call finished (its reply stored in the conversation) is reported
/// `completed` even when its record says `working` (what a process that stored the reply
/// and died before its record would leave; the orphan rule reads the conversation).
#[tokio::test]
async fn a_task_whose_call_finished_is_completed_whatever_its_record_says() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let server = serve_on(
        &model,
        Toolkit::new(),
        SqliteSessionStore::open(dir.path().join("s.db")).unwrap(),
        None,
        None,
    )
    .await;
    let client = client(&server, "JSONRPC").await;
    let done = task_of(client.send_message(&request("Hi", "c1")).await.unwrap());
    assert_eq!(state(&done.status.state), "completed");

    // The record goes back to `working`, no call holding the session.
    let store = SqliteSessionStore::open(dir.path().join("s.db")).unwrap();
    let mut state_now = store.load("assistant.c1").await.unwrap().unwrap();
    state_now.hooks["served_runs"]["runs"][0]["state"] = json!({"state": "working"});
    let change = StateChange::replace(&state_now);
    store.save("assistant.c1", &change).await.unwrap();

    let other = serve_on(&model, Toolkit::new(), store, None, None).await;
    let got = crate::support::client(&other, "HTTP+JSON")
        .await
        .get_task(&get(&done.id))
        .await
        .unwrap();
    assert_eq!(state(&got.status.state), "completed");
    assert_eq!(
        got.status
            .message
            .as_ref()
            .map(crate::support::line)
            .as_deref(),
        Some("agent: Hello!")
    );
    // Settled in the store too.
    let stored = SqliteSessionStore::open(dir.path().join("s.db"))
        .unwrap()
        .load("assistant.c1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.hooks["served_runs"]["runs"][0]["state"]["state"],
        "completed"
    );
}

/// Finding 2: a turn of 11 s, polled every 200 ms from a second instance, is `working` at
/// every poll (however long since its last save) and ends `completed`: never `failed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_polled_from_another_instance_is_never_failed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let model =
        ScriptedModel::new(
            [ScriptedResponse::text("At last.").with_delay(Duration::from_secs(11))],
        );
    let first = serve_on(
        &model,
        Toolkit::new(),
        SqliteSessionStore::open(&path).unwrap(),
        None,
        None,
    )
    .await;
    let second = serve_on(
        &model,
        Toolkit::new(),
        SqliteSessionStore::open(&path).unwrap(),
        None,
        None,
    )
    .await;
    let mut events = client(&first, "JSONRPC")
        .await
        .send_streaming_message(&request("Take 11 s", "c1"))
        .await
        .unwrap();
    let StreamResponse::Task(task) = events.next().await.unwrap().unwrap() else {
        panic!("the first event is not the task")
    };
    let poller = client(&second, "HTTP+JSON").await;
    let mut seen = Vec::new();
    let end = loop {
        let got = poller.get_task(&get(&task.id)).await.unwrap();
        let now = state(&got.status.state);
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        if got.status.state.is_terminal() {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(seen, ["working", "completed"]);
    assert_eq!(
        end.status
            .message
            .as_ref()
            .map(crate::support::line)
            .as_deref(),
        Some("agent: At last.")
    );
}

/// Finding 3: a cancel that interrupts nothing is not reported canceled. Without leases (a
/// store that does not coordinate instances), a task running on the first instance cannot
/// be reached from the second: the cancel is refused (`TaskNotCancelableError`, saying why)
/// and the task runs to its end, `completed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_that_reaches_no_call_is_refused_and_the_task_completes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let model = ScriptedModel::new([
        ScriptedResponse::text("Done anyway.").with_delay(Duration::from_secs(2))
    ]);
    let unleased = |path: &std::path::Path| {
        SqliteSessionStore::builder(path)
            .without_leases()
            .open()
            .unwrap()
    };
    let first = serve_on(&model, Toolkit::new(), unleased(&path), None, None).await;
    let second = serve_on(&model, Toolkit::new(), unleased(&path), None, None).await;
    let mut events = client(&first, "JSONRPC")
        .await
        .send_streaming_message(&request("Take your time", "c1"))
        .await
        .unwrap();
    let StreamResponse::Task(task) = events.next().await.unwrap().unwrap() else {
        panic!("the first event is not the task")
    };
    while model.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = client(&second, "HTTP+JSON")
        .await
        .cancel_task(&cancel(&task.id))
        .await
        .unwrap_err();
    assert_eq!(refused.code, a2a::error_code::TASK_NOT_CANCELABLE);
    assert!(
        refused.message.contains("cannot be canceled from here"),
        "{}",
        refused.message
    );
    let last: Vec<_> = events.map(|event| event.unwrap()).collect().await;
    let StreamResponse::StatusUpdate(end) = last.last().unwrap() else {
        panic!("{last:?}")
    };
    assert_eq!(state(&end.status.state), "completed");
}

/// Events as the log would show them: the names of the spans they happened in, and their
/// fields.
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<LogLine>>>);

/// The spans an event happened in (innermost first), and its fields.
type LogLine = (Vec<String>, String);

impl<S> tracing_subscriber::Layer<S> for Logged
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_event(&self, event: &tracing::Event<'_>, ctx: tracing_subscriber::layer::Context<'_, S>) {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{}={value:?} ", field.name()));
            }
        }
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        let spans = ctx
            .event_scope(event)
            .map(|scope| scope.map(|span| span.name().to_owned()).collect())
            .unwrap_or_default();
        self.0.lock().unwrap().push((spans, fields.0));
    }
}

/// Finding 7: a peer reads what failed and a correlation id, never the error's text; the
/// details are logged under that id, inside the task's span.
#[tokio::test]
async fn a_failed_task_tells_the_peer_a_correlation_id_and_logs_the_details_under_it() {
    use tracing_subscriber::layer::SubscriberExt;
    let logged = Logged::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(logged.clone()));
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::error(
        "connect to db.internal:5432 as admin failed",
    )]);
    let server = serve_on(
        &model,
        Toolkit::new(),
        agentscope::session::JsonFileSessionStore::new(dir.path()),
        None,
        None,
    )
    .await;
    let failed = task_of(
        client(&server, "JSONRPC")
            .await
            .send_message(&request("Hi", "c1"))
            .await
            .unwrap(),
    );
    assert_eq!(state(&failed.status.state), "failed");
    let said = crate::support::line(failed.status.message.as_ref().unwrap());
    assert!(!said.contains("db.internal"), "{said}");
    let id = said
        .strip_prefix("agent: The agent failed (error id ")
        .and_then(|rest| rest.strip_suffix("); the details are in the server's log."))
        .unwrap_or_else(|| panic!("{said}"));
    assert_eq!(id.len(), 32);
    let logged = logged.0.lock().unwrap().clone();
    let details: Vec<_> = logged
        .iter()
        .filter(|(_, fields)| fields.contains(&format!("error_id={id}")))
        .collect();
    assert_eq!(details.len(), 1, "{logged:#?}");
    let (spans, fields) = details[0];
    assert!(
        fields.contains("connect to db.internal:5432 as admin failed"),
        "{fields}"
    );
    assert!(spans.iter().any(|span| span == "a2a_task"), "{spans:?}");
}

/// Finding 12: the bearer token guards `SendStreamingMessage` over JSON-RPC, which this
/// crate writes itself: without it, or with another, `401` and nothing runs; with it, the
/// task streams.
#[tokio::test]
async fn the_bearer_token_guards_the_streaming_json_rpc_path() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Hi!")]);
    let server = serve_on(
        &model,
        Toolkit::new(),
        agentscope::session::JsonFileSessionStore::new(dir.path()),
        None,
        Some("s3cret"),
    )
    .await;
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1,
        "method": "SendStreamingMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": "m1", "contextId": "c1",
                    "parts": [{"text": "Hello"}]}}}))
    .unwrap();
    let send = |token: Option<&str>| {
        let mut request = reqwest::Client::new()
            .post(&server.url)
            .header("A2A-Version", "1.0")
            .header("content-type", "application/json")
            .body(body.clone());
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request.send()
    };
    for token in [None, Some("wrong")] {
        let refused = send(token).await.unwrap();
        assert_eq!(refused.status(), 401, "{token:?}");
        assert_eq!(refused.headers()["www-authenticate"], "Bearer");
    }
    assert_eq!(model.request_count(), 0, "nothing ran");
    assert!(
        agentscope::session::JsonFileSessionStore::new(dir.path())
            .load("assistant.c1")
            .await
            .unwrap()
            .is_none(),
        "nothing was stored"
    );
    let served = send(Some("s3cret")).await.unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(served.headers()["content-type"], "text/event-stream");
    assert!(
        served
            .text()
            .await
            .unwrap()
            .contains("TASK_STATE_COMPLETED")
    );
    assert_eq!(model.request_count(), 1);
}

/// Finding 4: `ListTasks` without a context returns every task once, most recently updated
/// first across contexts (the specification's order), and a page reads about a page of
/// contexts, not every task; with a context it is that context's tasks.
#[tokio::test]
async fn list_tasks_pages_in_the_store_newest_first_across_contexts() {
    let dir = tempfile::tempdir().unwrap();
    let loads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // Counts the sessions loaded.
    let counted = Arc::clone(&loads);
    let store = Watched {
        files: agentscope::session::JsonFileSessionStore::new(dir.path()),
        before_load: Box::new(move |_session| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async {})
        }),
    };
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]).cycling();
    let server = serve_on(&model, Toolkit::new(), store, None, None).await;
    let client = client(&server, "JSONRPC").await;
    // 40 contexts, one task each, then a second task in the first context: updated last,
    // it leads the listing, before the other tasks of the first context.
    let mut ids = Vec::new();
    for n in 0..40 {
        let task = task_of(
            client
                .send_message(&request("Hi", &format!("ctx-{n:02}")))
                .await
                .unwrap(),
        );
        ids.push(task.id);
    }
    let last = task_of(
        client
            .send_message(&request("Again", "ctx-00"))
            .await
            .unwrap(),
    );
    ids.push(last.id);
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();

    let mut listed = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        loads.store(0, std::sync::atomic::Ordering::SeqCst);
        let page = client
            .list_tasks(&a2a::ListTasksRequest {
                context_id: None,
                status: None,
                page_size: Some(7),
                page_token: Some(token.clone()),
                history_length: None,
                status_timestamp_after: None,
                include_artifacts: None,
                tenant: None,
            })
            .await
            .unwrap();
        pages += 1;
        if pages == 1 {
            // About a page of contexts (the listing reads 16 at a time), not all 41 tasks.
            let read = loads.load(std::sync::atomic::Ordering::SeqCst);
            assert!(read <= 16, "the first page loaded {read} sessions");
            assert_eq!(page.total_size, 8, "seven, and at least one more");
        }
        listed.extend(page.tasks.iter().map(|task| task.id.clone()));
        if page.next_page_token.is_empty() {
            assert_eq!(page.total_size, 41, "exact on the last page");
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(pages, 6);
    assert_eq!(listed, newest_first);

    // One context: its tasks, newest first, counted exactly.
    let page = client
        .list_tasks(&a2a::ListTasksRequest {
            context_id: Some("ctx-00".into()),
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
    let in_context: Vec<&str> = page.tasks.iter().map(|task| task.id.as_str()).collect();
    assert_eq!(in_context, [ids[40].as_str(), ids[0].as_str()]);
    assert_eq!(page.total_size, 2);
}
