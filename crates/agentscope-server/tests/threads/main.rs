//! Threads over AG-UI that can always be continued or closed, over real HTTP on 127.0.0.1.
//!
//! - `in_doubt`: a tool call that was running when its run was cut short is a
//!   `tool_in_doubt` interrupt, in the thread's history and in the next run's outcome; the
//!   answers done, retry, fail and cancel resolve it (one resume also answers approvals
//!   alongside), and answers that do not fit are refused before anything runs.
//! - `stuck`: each way a thread used to get stuck for good (a decision stored before its
//!   call started, a call the approval policy no longer guards, a call in doubt whose tool is
//!   no longer guarded, a conversation cut after a tool result) continues.
//! - `killed`: a server process killed with SIGKILL while an approved tool runs; a new
//!   process on the same store reports the call in doubt, and a retry runs it again with the
//!   same idempotency key against a service that pays once per key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod in_doubt;
mod killed;
mod stuck;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentscope::hooks::ApprovalPolicy;
use agentscope::prelude::*;
use agentscope::session::{AgentState, JsonFileSessionStore, SessionStore};
use agentscope::{BoxedHook, ToolContext};
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::{ScriptedModel, ScriptedResponse, tools};
use serde_json::{Value, json};
use support::http::{find, go_away_mid_tool, post};
use support::serve::{Served, serve, user};

/// What the `pay` and `notify` tools did, shared by the agents a server builds.
#[derive(Clone, Default)]
struct Payments {
    /// The idempotency key of every run of `pay`, in order.
    keys: Arc<Mutex<Vec<String>>>,
    /// The next run of `pay` hangs (until its call is dropped) instead of paying.
    hang_next: Arc<AtomicBool>,
    /// How many times `notify` ran.
    notified: Arc<AtomicUsize>,
}

impl Payments {
    fn keys(&self) -> Vec<String> {
        self.keys.lock().unwrap().clone()
    }
}

/// `pay {"invoice": n}`: records its idempotency key, then pays (`"paid invoice n"`) or,
/// when told to, hangs.
fn pay(payments: &Payments) -> impl Tool + use<> {
    let payments = payments.clone();
    tools::pay(move |invoice, ctx| {
        let payments = payments.clone();
        async move {
            payments.keys.lock().unwrap().push(ctx.idempotency_key());
            if payments.hang_next.swap(false, Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            format!("paid invoice {invoice}")
        }
    })
}

/// `notify {"invoice": n}`: counts its runs and says it notified.
fn notify(payments: &Payments) -> impl Tool + use<> {
    let notified = payments.notified.clone();
    tool_fn(
        "notify",
        "Tells the customer about an invoice.",
        json!({"type": "object", "properties": {"invoice": {"type": "integer"}},
               "required": ["invoice"]}),
        move |input: Value, _ctx: ToolContext| {
            notified.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(format!("notified about invoice {}", input["invoice"])) }
        },
    )
}

/// A server for `assistant` on the threads in `dir`: `model`, the `pay` and `notify` tools
/// of `payments`, the approval policy `approval` and the extra `hooks`.
async fn server(
    dir: &std::path::Path,
    model: &ScriptedModel,
    payments: &Payments,
    approval: Option<ApprovalPolicy>,
    hooks: Vec<BoxedHook>,
) -> Served {
    let (model, payments) = (model.clone(), payments.clone());
    let mut spec = AgentSpec::new(move || {
        let mut builder = ReActAgent::builder()
            .model(model.clone())
            .toolkit(Toolkit::new().tool(pay(&payments)).tool(notify(&payments)));
        for hook in &hooks {
            builder = builder.hook(hook.clone());
        }
        builder
    });
    if let Some(approval) = approval {
        spec = spec.approval(approval);
    }
    let agui = AgUi::builder()
        .agent("assistant", spec)
        .store(JsonFileSessionStore::new(dir))
        .chat_page(false)
        .build()
        .unwrap();
    serve(agui).await
}

/// Calls of `pay` need approval.
fn guarded() -> Option<ApprovalPolicy> {
    Some(ApprovalPolicy::tools(["pay"]))
}

/// A run on `thread` with the run id `run-<thread>`.
fn input(thread: &str, messages: Value) -> Value {
    support::serve::input(thread, &format!("run-{thread}"), messages)
}

/// A run on `thread` that answers with `resume`.
fn resume(thread: &str, answers: Value) -> Value {
    let mut body = input(thread, json!([]));
    body["resume"] = answers;
    body
}

/// One answer: `payload` for the interrupt `id`.
fn answer(id: &str, payload: Value) -> Value {
    json!([{"interruptId": id, "status": "resolved", "payload": payload}])
}

/// The stored state of `thread`.
async fn stored(dir: &std::path::Path, thread: &str) -> AgentState {
    let session = AgUi::session_id("assistant", thread);
    JsonFileSessionStore::new(dir)
        .load(&session)
        .await
        .unwrap()
        .unwrap()
}

/// Asks `server` on `thread` to pay invoice 7 (the model's next answer must be that
/// `pay` call, `p1`, which needs approval), approves, and goes away while the tool runs:
/// the call is left recorded as running, with no result.
async fn leave_in_doubt(server: &Served, payments: &Payments, thread: &str) {
    let (status, events) = post(
        &server.base,
        &input(thread, json!([user("u1", "Pay invoice 7.")])),
    )
    .await;
    assert_eq!(status, 200, "{events:?}");
    let outcome = &find(&events, "RUN_FINISHED")["outcome"];
    assert_eq!(
        outcome["interrupts"][0]["reason"], "tool_approval",
        "{outcome}"
    );
    payments.hang_next.store(true, Ordering::SeqCst);
    let runs = payments.keys().len();
    go_away_mid_tool(
        &format!("{}/agents/assistant", server.base),
        &server.agui,
        &resume(thread, answer("p1", json!({"approved": true}))),
        || payments.keys().len() > runs,
    )
    .await;
}

/// The interrupt of the call `p1` (`pay {"invoice": 7}`) in doubt on `thread`.
fn in_doubt_interrupt(thread: &str) -> Value {
    let call = ToolUseBlock::new("p1", "pay", json!({"invoice": 7}));
    support::expected::in_doubt_interrupt(&call, &AgUi::session_id("assistant", thread))
}

/// The model's answer that calls `pay` for invoice 7, as call `p1`.
fn asks_to_pay() -> ScriptedResponse {
    ScriptedResponse::tool_call("p1", "pay", json!({"invoice": 7}))
}
