//! Two instances of the AG-UI server sharing one real `redis-server` (127.0.0.1): a run on a
//! thread that the other instance is running is refused by the session's lease, as the
//! serving guide says ("Several instances"): its stream is `RUN_STARTED` then `RUN_ERROR`
//! with code `busy`, before any hook runs and with nothing stored. Then an interrupt through
//! the store stops the first run wherever it runs, and the thread continues on the other
//! instance.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../agentscope-redis/tests/support/mod.rs"]
mod redis_support;
mod support;

use std::time::Duration;

use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT};
use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope::{ContentBlock, HookEventType};
use agentscope_redis::RedisSessionStore;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::tools::SlowTool;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use redis_support::RedisServer;
use serde_json::{Value, json};
use support::events::{run_of, text_step, types};
use support::http::thread;
use support::serve::{Served, input, serve, user};

/// How long any single wait of the test may take.
const WAIT: Duration = Duration::from_secs(20);

/// One service instance: its own Redis connection, its own model, its own listener.
struct Instance {
    served: Served,
    model: ScriptedModel,
    /// Every hook event of the instance's calls (a hook given to every agent it builds).
    hooks: RecordingHook,
    /// A clone of the instance's store (clones share its connection).
    store: RedisSessionStore,
}

/// An instance serving `assistant` (the model `model`, the `slow` tool, a recording hook)
/// on its own store connected to `server`, on a free port of 127.0.0.1.
async fn instance(server: &RedisServer, model: ScriptedModel) -> Instance {
    let store = RedisSessionStore::connect(server.url())
        .await
        .expect("the store connects");
    let hooks = RecordingHook::new(0);
    let (factory_model, factory_hooks) = (model.clone(), hooks.clone());
    let spec = AgentSpec::new(move || {
        ReActAgent::builder()
            .model(factory_model.clone())
            .toolkit(Toolkit::new().tool(SlowTool::new()))
            .hook(factory_hooks.clone())
    });
    let agui = AgUi::builder()
        .agent("assistant", spec)
        .store(store.clone())
        .chat_page(false)
        .build()
        .unwrap();
    Instance {
        served: serve(agui).await,
        model,
        hooks,
        store,
    }
}

/// A run's server-sent events, read one at a time as they arrive.
struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    /// Starts a run on `base`; the response must be a `200` event stream.
    async fn start(base: &str, body: &Value) -> Self {
        let response = reqwest::Client::new()
            .post(format!("{base}/agents/assistant"))
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "the run is not a stream");
        Self {
            response,
            buffer: Vec::new(),
        }
    }

    /// The next event (`data:` frames only; keep-alive comments are skipped), or `None`
    /// when the stream has ended.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let frame: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let frame = std::str::from_utf8(&frame[..end]).unwrap();
                if let Some(data) = frame.strip_prefix("data: ") {
                    return Some(serde_json::from_str(data).unwrap());
                }
                continue;
            }
            let chunk = tokio::time::timeout(WAIT, self.response.chunk())
                .await
                .expect("the stream stalled")
                .unwrap();
            match chunk {
                Some(chunk) => self.buffer.extend_from_slice(&chunk),
                None => {
                    assert!(self.buffer.is_empty(), "a partial frame at the end");
                    return None;
                }
            }
        }
    }

    /// The events up to and including the first of type `kind`.
    async fn until(&mut self, kind: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            let done = event["type"] == kind;
            seen.push(event);
            if done {
                return seen;
            }
        }
        panic!("the run ended before {kind}: {seen:?}");
    }

    /// The remaining events, to the end of the stream.
    async fn rest(&mut self) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            seen.push(event);
        }
        seen
    }
}

/// Waits until `condition` holds, polling.
async fn wait_until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The roles and texts of messages (a tool call as `call <id> <name>`, a tool result as
/// `result <id>: <text>`).
fn transcript(messages: &[Msg]) -> Vec<(Role, String)> {
    messages
        .iter()
        .map(|msg| {
            let mut parts = vec![msg.text()];
            for call in msg.tool_uses() {
                parts.push(format!("call {} {} {}", call.id, call.name, call.input));
            }
            for result in msg.tool_results() {
                let text: String = result
                    .output
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect();
                parts.push(format!(
                    "result {} (error: {}): {text}",
                    result.id, result.is_error
                ));
            }
            parts.retain(|part| !part.is_empty());
            (msg.role, parts.join(" | "))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_run_on_a_thread_another_instance_runs_is_refused_by_the_lease() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let session = AgUi::session_id("assistant", "t1");
    assert_eq!(session, "assistant.t1");
    let a = instance(
        &server,
        ScriptedModel::new([ScriptedResponse::tool_call(
            "w1",
            "slow",
            json!({"ms": 600_000}),
        )]),
    )
    .await;
    let b = instance(
        &server,
        ScriptedModel::new([ScriptedResponse::text("Done.")]),
    )
    .await;

    // Run 1 on instance A: the slow tool starts and keeps the call (and the lease) alive.
    let mut run1 = Events::start(
        &a.served.base,
        &input("t1", "run-1", json!([user("u1", "Wait for it.")])),
    )
    .await;
    let head = run1.until("TOOL_CALL_END").await;
    assert_eq!(
        types(&head),
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END"
        ]
    );
    assert_eq!(
        (&head[2]["toolCallId"], &head[2]["toolCallName"]),
        (&json!("w1"), &json!("slow"))
    );
    wait_until("the tool is recorded as running", || async {
        a.store
            .load(&session)
            .await
            .unwrap()
            .is_some_and(|state| state.running_tools == ["w1"])
    })
    .await;
    let before = b.store.load(&session).await.unwrap().unwrap();
    // The run's admission (its record, `working`), then the reasoning with the tool call
    // recorded as running.
    assert_eq!(before.revision, 3);
    assert_eq!(
        transcript(&before.messages),
        [
            (Role::User, "Wait for it.".to_owned()),
            (Role::Assistant, r#"call w1 slow {"ms":600000}"#.to_owned()),
        ]
    );
    // Only A runs the thread: B's own (per-instance) busy check has nothing to say.
    assert_eq!((a.served.agui.running(), b.served.agui.running()), (1, 0));
    assert!(b.hooks.types().is_empty());
    // To B, the call recorded as running is running (A holds the lease), not in doubt: no
    // interrupt to answer, and an answer is refused.
    let history = thread(&b.served.base, "t1").await;
    assert_eq!(
        (&history["interrupts"], &history["awaits"]),
        (&json!([]), &json!("busy"))
    );
    let mut answer = input("t1", "run-2a", json!([]));
    answer["resume"] =
        json!([{"interruptId": "w1", "status": "resolved", "payload": {"action": "retry"}}]);
    let refused = reqwest::Client::new()
        .post(format!("{}/agents/assistant", b.served.base))
        .json(&answer)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "thread_busy");

    // Run 2 on instance B, same thread: B runs nothing, but the session's lease refuses the
    // run's call before anything is read or decided: the same 409 as on A.
    let refused = reqwest::Client::new()
        .post(format!("{}/agents/assistant", b.served.base))
        .json(&input(
            "t1",
            "run-2",
            json!([user("u1", "Wait for it."), user("u2", "Are you done?")]),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "thread_busy");
    // No hook of B ran, B's model was not asked, nothing was stored (the whole state, its
    // revision and `saved_at` included, is as before), and run 1 goes on.
    assert_eq!(b.hooks.types(), []);
    assert_eq!(b.model.request_count(), 0);
    let after = b.store.load(&session).await.unwrap().unwrap();
    assert_eq!(after.revision, 3);
    assert_eq!(after, before);
    assert_eq!((a.served.agui.running(), b.served.agui.running()), (1, 0));

    // An interrupt through B's store stops run 1 on A: it ends as a cancelled run, after
    // its engine stored the interrupted tool call.
    assert!(b.store.interrupt(&session).await.unwrap());
    let tail = run1.rest().await;
    assert_eq!(
        types(&tail),
        [
            "STEP_FINISHED",
            "MESSAGES_SNAPSHOT",
            "CUSTOM",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(tail[0]["stepName"], "reasoning 1");
    let snapshot = &tail[1]["messages"];
    assert_eq!(
        (
            &snapshot[0],
            &snapshot[2],
            &snapshot[3]["content"],
            snapshot.as_array().unwrap().len()
        ),
        (
            &json!({"id": "u1", "role": "user", "content": "Wait for it."}),
            &json!({"id": "result-w1", "role": "tool", "toolCallId": "w1",
                    "content": INTERRUPTED_RESULT, "error": INTERRUPTED_RESULT}),
            &json!(INTERRUPT_REPLY),
            4
        )
    );
    assert_eq!(
        tail[3],
        json!({"type": "RUN_FINISHED", "threadId": "t1", "runId": "run-1",
               "outcome": {"type": "cancelled"}})
    );
    wait_until("A's run ended", || async { a.served.agui.running() == 0 }).await;
    assert_eq!(a.model.request_count(), 1);
    let interrupted = a.store.load(&session).await.unwrap().unwrap();
    assert_eq!(interrupted.revision, 4);
    // The run's record says how it ended, stored with the interrupted conversation.
    assert_eq!(
        interrupted.hooks["served_runs"]["runs"][0]["state"],
        json!({"state": "canceled", "reply": interrupted.messages[3].id})
    );
    assert!(interrupted.running_tools.is_empty());
    let earlier = transcript(&interrupted.messages);
    assert_eq!(
        earlier[2..],
        [
            (
                Role::Tool,
                format!("result w1 (error: true): {INTERRUPTED_RESULT}")
            ),
            (Role::Assistant, INTERRUPT_REPLY.to_owned()),
        ]
    );

    // The thread continues on B, its model given the earlier conversation.
    let mut run3 = Events::start(
        &b.served.base,
        &input(
            "t1",
            "run-3",
            json!([user("u1", "Wait for it."), user("u3", "Go on.")]),
        ),
    )
    .await;
    let finished = run3.rest().await;
    assert_eq!(types(&finished), run_of(&[&text_step(1)]));
    let last = finished.last().unwrap();
    assert_eq!(last["outcome"], json!({"type": "success"}));
    assert_eq!(last["result"]["text"], "Done.");
    assert_eq!(b.model.request_count(), 1);
    let mut expected_input = earlier.clone();
    expected_input.push((Role::User, "Go on.".to_owned()));
    assert_eq!(transcript(&b.model.requests()[0].messages), expected_input);
    assert_eq!(
        b.hooks.types_without_chunks().first(),
        Some(&HookEventType::PreCall)
    );
    let stored = b.store.load(&session).await.unwrap().unwrap();
    assert_eq!(stored.revision, 6);
    expected_input.push((Role::Assistant, "Done.".to_owned()));
    assert_eq!(transcript(&stored.messages), expected_input);
    let runs = &stored.hooks["served_runs"]["runs"];
    assert_eq!(
        (&runs[0]["id"], &runs[1]["id"], &runs[1]["state"]),
        (
            &json!("run-1"),
            &json!("run-3"),
            &json!({"state": "completed", "reply": stored.messages[5].id})
        )
    );
}
