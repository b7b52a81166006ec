//! The server against the official AG-UI TypeScript client (`@ag-ui/client` 1.0, pinned in
//! `tests/agui-client/package-lock.json`), with the client's own validation on: its schema
//! parse of every event, its event-order verifier and its message reconstruction.
//!
//! The server runs in-process on 127.0.0.1 with a scripted model; `node
//! tests/agui-client/client.test.mjs <url>` runs six scenarios with `HttpAgent` (a streamed
//! answer, a tool call round trip, an approval stop then approve, a reject, a model failure,
//! and a call in doubt: a new client gets its interrupt and answers it with a retry) and
//! prints one JSON report; this test asserts the exact events, values and messages the
//! client saw, and what the agent side did (tool runs, model requests). The call in doubt is
//! prepared here first, over HTTP, on a second agent (`payments`).
//!
//! Needs Node 20+ and the client's packages (`npm ci` in `tests/agui-client`, which the
//! test runs itself when npm is there). Under CI (`AGENTSCOPE_CI`, set by `.ci/run`, which
//! installs both) a missing one fails the test; elsewhere the test is ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentscope::ToolError;
use agentscope::hooks::ApprovalPolicy;
use agentscope::prelude::*;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::tools::{self, Calculator};
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};
use support::components::{node, node_packages, run_node};
use support::events::{TOOL_CALL_STEP, TOOL_RESULT_STEP, run_of, text_step};
use support::expected::in_doubt_interrupt;
use support::http::{find, go_away_mid_tool, post_to};
use support::serve::{Served, guarded_assistant, input, serve, user};

const CLIENT_DIR: &str = "tests/agui-client";

/// The model's answers, in the order the client's scenarios ask for them (one model serves
/// every thread; the scenarios run one after another).
fn script() -> Vec<ScriptedResponse> {
    vec![
        // a_stream: a text answer in three chunks.
        ScriptedResponse::chunks([
            ScriptedChunk::text("Hello"),
            ScriptedChunk::text("! How can I "),
            ScriptedChunk::text("help?"),
        ]),
        // b_tool: thinking, then a calculator call streamed in pieces; then the answer.
        ScriptedResponse::chunks([
            ScriptedChunk::thinking("I should use the calculator."),
            ScriptedChunk::tool_call_start("call-calc", "calculator"),
            ScriptedChunk::tool_call_args("{\"expression\":"),
            ScriptedChunk::tool_call_args("\"6*7\"}"),
        ]),
        ScriptedResponse::text("6*7 = 42."),
        // c_approve: a guarded call (the run stops), then, once approved, the answer.
        ScriptedResponse::tool_call("call-del-approve", "delete_files", json!({"glob": "*.log"})),
        ScriptedResponse::text("I deleted the old log files."),
        // d_reject: a guarded call, then, once rejected, the answer.
        ScriptedResponse::tool_call("call-del-reject", "delete_files", json!({"glob": "/tmp/*"})),
        ScriptedResponse::text("OK, I left the temp files alone."),
        // e_error: the model fails before any output.
        ScriptedResponse::error("the model is overloaded"),
    ]
}

struct Server {
    served: Served,
    model: ScriptedModel,
    deletes: Arc<AtomicUsize>,
    /// The idempotency key of every run of `pay` (agent `payments`), in order.
    payments: Arc<Mutex<Vec<String>>>,
    _sessions: tempfile::TempDir,
}

/// The thread of `payments` whose `pay` call is left in doubt before the client runs.
const IN_DOUBT_THREAD: &str = "agui-f-in-doubt";

/// `payments`: a scripted model that calls `pay` then answers, and `pay` (approval needed),
/// which records its idempotency key and never returns the first time (its run is cut short
/// meanwhile).
fn payments_agent(keys: Arc<Mutex<Vec<String>>>) -> AgentSpec {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("call-pay", "pay", json!({"invoice": 7})),
        ScriptedResponse::text("Invoice 7 is paid."),
    ]);
    AgentSpec::new(move || {
        let keys = keys.clone();
        let pay = tools::pay(move |invoice, ctx| {
            let keys = keys.clone();
            async move {
                let run = {
                    let mut keys = keys.lock().unwrap();
                    keys.push(ctx.idempotency_key());
                    keys.len()
                };
                if run == 1 {
                    std::future::pending::<()>().await;
                }
                format!("paid invoice {invoice} (run {run})")
            }
        });
        ReActAgent::builder()
            .model(model.clone())
            .toolkit(Toolkit::new().tool(pay))
    })
    .approval(ApprovalPolicy::tools(["pay"]))
}

/// Leaves `pay` in doubt on [`IN_DOUBT_THREAD`]: asked, approved, and cut short while it ran.
async fn leave_pay_in_doubt(server: &Server) {
    let url = format!("{}/agents/payments", server.served.base);
    let (status, events) = post_to(
        &url,
        &input(
            IN_DOUBT_THREAD,
            "f-prepare-1",
            json!([user("f-user-1", "Pay invoice 7.")]),
        ),
        None,
    )
    .await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(
        find(&events, "RUN_FINISHED")["outcome"]["interrupts"][0]["reason"],
        "tool_approval"
    );
    let mut approve = input(IN_DOUBT_THREAD, "f-prepare-2", json!([]));
    approve["resume"] =
        json!([{"interruptId": "call-pay", "status": "resolved", "payload": {"approved": true}}]);
    go_away_mid_tool(&url, &server.served.agui, &approve, || {
        server.payments.lock().unwrap().len() == 1
    })
    .await;
}

async fn start_server() -> Server {
    let model = ScriptedModel::new(script());
    let deletes = Arc::new(AtomicUsize::new(0));
    let sessions = tempfile::tempdir().unwrap();

    let payments = Arc::new(Mutex::new(Vec::new()));
    let spec_model = model.clone();
    let spec_deletes = deletes.clone();
    let agui = guarded_assistant(sessions.path(), move || {
        let deletes = spec_deletes.clone();
        let delete_files = tool_fn(
            "delete_files",
            "Deletes the files matching a glob.",
            json!({"type": "object", "properties": {"glob": {"type": "string"}},
                   "required": ["glob"]}),
            move |input: Value, _ctx| {
                let deletes = deletes.clone();
                async move {
                    // The result says how many times the tool has run, this run included.
                    let run = deletes.fetch_add(1, Ordering::SeqCst) + 1;
                    let glob = input["glob"].as_str().unwrap_or_default().to_owned();
                    Ok::<_, ToolError>(format!("deleted the files matching {glob} (run {run})"))
                }
            },
        );
        ReActAgent::builder()
            .model(spec_model.clone())
            .toolkit(Toolkit::new().tool(Calculator::new()).tool(delete_files))
    })
    .agent("payments", payments_agent(payments.clone()))
    .build()
    .unwrap();
    Server {
        served: serve(agui).await,
        model,
        deletes,
        payments,
        _sessions: sessions,
    }
}

/// Runs the Node client against `url` and returns its report.
async fn run_client(url: &str) -> Value {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let client_dir: PathBuf = crate_dir.join(CLIENT_DIR);
    let installed = client_dir.join("node_modules/@ag-ui/client/package.json");
    assert!(
        installed.is_file(),
        "the AG-UI client is not installed: run `npm ci` in {} (CI does) and run the test again",
        client_dir.display()
    );
    let stdout = run_node(&format!("{CLIENT_DIR}/client.test.mjs"), url, &[]).await;
    // AGUI_CLIENT_REPORT=<file> keeps the whole report (every event and frame) for a look.
    if let Some(path) = std::env::var_os("AGUI_CLIENT_REPORT") {
        std::fs::write(path, stdout.as_bytes()).unwrap();
    }
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the client's report is not JSON ({e}):\n{stdout}"))
}

/// Run `index` of `scenario`, checked to have gone cleanly as far as the client is
/// concerned: resolved, no console warning (material the client stripped) or error, and the
/// server's frames delivered as they were sent.
fn clean_run<'a>(report: &'a Value, scenario: &str, index: usize) -> &'a Value {
    let run = &report["scenarios"][scenario]["runs"][index];
    assert!(run.is_object(), "{scenario}: no run {index}: {report:#}");
    let what = format!("{scenario} run {index} ({})", run["label"]);
    assert_eq!(run["resolved"], json!(true), "{what}: {run:#}");
    assert_eq!(
        run["rejected"],
        json!(false),
        "{what}: {}",
        run["rejection"]
    );
    assert_eq!(run["timedOut"], json!(false), "{what}");
    assert_eq!(run["warnings"], json!([]), "{what}: the client warned");
    assert_eq!(run["errors"], json!([]), "{what}: the client logged errors");
    assert_eq!(run["wire"]["status"], json!(200), "{what}");
    let content_type = run["wire"]["contentType"].as_str().unwrap_or_default();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{what}: content type {content_type:?}"
    );
    assert_eq!(
        run["wire"]["rawTail"],
        json!(""),
        "{what}: an unterminated frame"
    );
    // What the subscribers got is what the server sent: nothing stripped, added or changed.
    assert_eq!(run["events"], run["wire"]["frames"], "{what}");
    run
}

fn types(run: &Value) -> Vec<&str> {
    run["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

fn summary<'a>(run: &'a Value, key: &str) -> &'a Value {
    &run["summary"][key]
}

/// The only entry of `key` in a run's summary, and the id it holds under `id_key`.
fn only<'a>(run: &'a Value, key: &str, id_key: &str) -> (&'a Value, String) {
    let entries = summary(run, key).as_array().unwrap();
    assert_eq!(entries.len(), 1, "{key}: {entries:?}");
    (&entries[0], entries[0][id_key].as_str().unwrap().to_owned())
}

/// The id of the only text message of a run.
fn text_id(run: &Value) -> String {
    only(run, "texts", "messageId").1
}

fn text_message(run: &Value, text: &str) -> Value {
    json!([{"messageId": text_id(run), "role": "assistant", "text": text,
            "deltas": [text], "ended": true}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn the_official_ag_ui_client_runs_every_scenario() {
    if node().is_none() || node_packages(CLIENT_DIR).is_none() {
        return;
    }
    let server = start_server().await;
    leave_pay_in_doubt(&server).await;
    let report = run_client(&server.served.base).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert_eq!(report["client"]["version"], json!("1.0.0"));
    assert_eq!(report["client"]["protocolVersion"], json!("1.0"));
    assert_eq!(report["consoleOutsideRuns"], json!([]));

    check_stream(&report);
    check_tool(&report);
    check_approve(&report);
    check_reject(&report);
    check_error(&report);
    check_in_doubt(&report);
    // `pay` ran twice, the retry with the key of its first run.
    let keys = server.payments.lock().unwrap().clone();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);

    // The agent side: delete_files ran once, for the approved call (its result says "run 1"),
    // and not for the rejected one; every scripted answer was asked for exactly once.
    assert_eq!(server.deletes.load(Ordering::SeqCst), 1);
    assert_eq!(server.model.remaining(), 0);
    let requests = server.model.requests();
    assert_eq!(requests.len(), 8);
    let last_text = |i: usize| requests[i].messages.last().unwrap().text();
    assert_eq!(last_text(0), "Hello");
    assert_eq!(last_text(1), "What is 6*7?");
    assert_eq!(last_text(3), "Delete the old log files.");
    assert_eq!(last_text(5), "Delete the temp files.");
    assert_eq!(last_text(7), "Please fail.");
    let last_result = |i: usize| {
        let results = requests[i].messages.last().unwrap().tool_results();
        assert_eq!(results.len(), 1, "request {i}");
        (results[0].id.clone(), results[0].text_output())
    };
    assert_eq!(last_result(2), ("call-calc".into(), "42".into()));
    assert_eq!(
        last_result(4),
        (
            "call-del-approve".into(),
            "deleted the files matching *.log (run 1)".into()
        )
    );
    assert_eq!(
        last_result(6),
        (
            "call-del-reject".into(),
            "Rejected by the user: not now".into()
        )
    );
}

fn check_stream(report: &Value) {
    let run = clean_run(report, "a_stream", 0);
    assert_eq!(types(run), run_of(&[&text_step(3)]));
    let answer = text_id(run);
    assert_eq!(
        summary(run, "runStarted"),
        &json!({"threadId": "agui-a-stream", "runId": "a-run-1", "protocolVersion": "1.0"})
    );
    assert_eq!(
        summary(run, "steps"),
        &json!(["STEP_STARTED reasoning 1", "STEP_FINISHED reasoning 1"])
    );
    assert_eq!(
        summary(run, "texts"),
        &json!([{"messageId": answer, "role": "assistant", "text": "Hello! How can I help?",
                 "deltas": ["Hello", "! How can I ", "help?"], "ended": true}])
    );
    let messages = json!([
        {"id": "a-user-1", "role": "user", "content": "Hello"},
        {"id": answer, "role": "assistant", "content": "Hello! How can I help?"},
    ]);
    assert_eq!(summary(run, "snapshotMessages"), &messages);
    assert_eq!(
        summary(run, "runFinished"),
        &json!({"threadId": "agui-a-stream", "runId": "a-run-1",
                "result": {"messageId": answer, "text": "Hello! How can I help?",
                           "generateReason": "model_stop"},
                "outcome": {"type": "success"}})
    );
    assert_eq!(summary(run, "outcome"), &json!({"type": "success"}));
    assert_eq!(
        run["runAgentResult"],
        json!({"messageId": answer, "text": "Hello! How can I help?",
               "generateReason": "model_stop"})
    );
    assert_eq!(run["pendingInterrupts"], json!([]));
    assert_eq!(report["scenarios"]["a_stream"]["messages"], messages);
}

fn check_tool(report: &Value) {
    let run = clean_run(report, "b_tool", 0);
    let asking = [
        "STEP_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_ARGS",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TOOL_CALL_END",
        "STEP_FINISHED",
    ];
    assert_eq!(
        types(run),
        run_of(&[&asking, TOOL_RESULT_STEP, &text_step(1)])
    );
    assert_eq!(
        summary(run, "steps"),
        &json!([
            "STEP_STARTED reasoning 1",
            "STEP_FINISHED reasoning 1",
            "STEP_STARTED acting 1",
            "STEP_FINISHED acting 1",
            "STEP_STARTED reasoning 2",
            "STEP_FINISHED reasoning 2"
        ])
    );
    let (call, asked) = only(run, "toolCalls", "parentMessageId");
    assert_eq!(
        call,
        &json!({"toolCallId": "call-calc", "toolCallName": "calculator", "parentMessageId": asked,
                "args": "{\"expression\":\"6*7\"}", "parsedArgs": {"expression": "6*7"},
                "ended": true})
    );
    let (reasoning, reasoning_id) = only(run, "reasoning", "messageId");
    assert_eq!(
        reasoning,
        &json!({"messageId": reasoning_id, "role": "reasoning",
                "text": "I should use the calculator.", "ended": true})
    );
    let (result, result_id) = only(run, "toolResults", "messageId");
    assert_eq!(
        result,
        &json!({"messageId": result_id, "toolCallId": "call-calc", "content": "42", "role": "tool"})
    );
    let answer = text_id(run);
    assert_eq!(summary(run, "texts"), &text_message(run, "6*7 = 42."));
    assert_eq!(
        summary(run, "runFinished"),
        &json!({"threadId": "agui-b-tool", "runId": "b-run-1",
                "result": {"messageId": answer, "text": "6*7 = 42.",
                           "generateReason": "model_stop"},
                "outcome": {"type": "success"}})
    );
    assert_eq!(
        run["subscriber"]["runFinished"]["pendingToolCallIds"],
        json!([])
    );
    let messages = json!([
        {"id": "b-user-1", "role": "user", "content": "What is 6*7?"},
        {"id": reasoning_id, "role": "reasoning", "content": "I should use the calculator."},
        {"id": asked, "role": "assistant", "toolCalls": [{"id": "call-calc", "type": "function",
            "function": {"name": "calculator", "arguments": "{\"expression\":\"6*7\"}"}}]},
        {"id": result_id, "role": "tool", "content": "42", "toolCallId": "call-calc"},
        {"id": answer, "role": "assistant", "content": "6*7 = 42."},
    ]);
    assert_eq!(summary(run, "snapshotMessages"), &messages);
    assert_eq!(report["scenarios"]["b_tool"]["messages"], messages);
}

/// The JSON schema of an approval's resume payload, as every interrupt carries it.
fn approval_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "arguments": {"type": "object", "description": "new arguments (approve with edits)"},
            "reason": {"type": "string", "description": "why it is rejected"},
        },
        "required": ["approved"],
    })
}

/// One approval scenario: run 1 asks and stops on the guarded call (interrupt outcome);
/// run 2 answers with `resume` and gets the call's result (or its rejection), then the
/// answer.
struct Approval<'a> {
    scenario: &'a str,
    thread: &'a str,
    prefix: &'a str,
    question: &'a str,
    call_id: &'a str,
    args: Value,
    payload: Value,
    result: &'a str,
    /// The stored result is an error result (a rejection).
    result_is_error: bool,
    answer: &'a str,
}

fn check_approval(report: &Value, a: &Approval<'_>) {
    let scenario = a.scenario;
    let first = clean_run(report, scenario, 0);
    assert_eq!(types(first), run_of(&[TOOL_CALL_STEP]), "{scenario}");
    assert_eq!(
        summary(first, "steps"),
        &json!(["STEP_STARTED reasoning 1", "STEP_FINISHED reasoning 1"])
    );
    let (call, asked) = only(first, "toolCalls", "parentMessageId");
    let args_text = a.args.to_string();
    assert_eq!(
        call,
        &json!({"toolCallId": a.call_id, "toolCallName": "delete_files", "parentMessageId": asked,
                "args": args_text, "parsedArgs": a.args, "ended": true})
    );
    assert_eq!(summary(first, "toolResults"), &json!([]));
    assert_eq!(summary(first, "texts"), &json!([]));
    let interrupts = json!([{
        "id": a.call_id,
        "reason": "tool_approval",
        "message": format!("Approve calling delete_files with {args_text}?"),
        "toolCallId": a.call_id,
        "responseSchema": approval_schema(),
    }]);
    let outcome = json!({"type": "interrupt", "interrupts": interrupts});
    assert_eq!(
        summary(first, "runFinished"),
        &json!({"threadId": a.thread, "runId": format!("{}-run-1", a.prefix),
                "result": null, "outcome": outcome}),
        "{scenario}"
    );
    // The client's reading: an interrupt outcome, held as pending until a run answers it.
    assert_eq!(summary(first, "outcome"), &outcome);
    assert_eq!(
        run_finished_subscriber(first),
        json!({"outcome": "interrupt", "interrupts": interrupts})
    );
    assert_eq!(first["pendingInterrupts"], interrupts);
    let user = json!({"id": format!("{}-user-1", a.prefix), "role": "user", "content": a.question});
    let assistant = json!({"id": asked, "role": "assistant", "toolCalls": [
        {"id": a.call_id, "type": "function",
         "function": {"name": "delete_files", "arguments": args_text}}]});
    assert_eq!(
        summary(first, "snapshotMessages"),
        &json!([user, assistant])
    );

    // The resume request the client sent: the open interrupt answered, no new message.
    let resume = json!([{"interruptId": a.call_id, "status": "resolved", "payload": a.payload}]);
    assert_eq!(report["scenarios"][scenario]["resume"], resume);
    let second = clean_run(report, scenario, 1);
    assert_eq!(second["wire"]["request"]["resume"], resume);
    assert_eq!(second["wire"]["request"]["threadId"], json!(a.thread));
    assert_eq!(
        second["wire"]["request"]["messages"],
        json!([user, assistant])
    );
    assert_eq!(
        types(second),
        run_of(&[TOOL_RESULT_STEP, &text_step(1)]),
        "{scenario}"
    );
    assert_eq!(
        summary(second, "steps"),
        &json!([
            "STEP_STARTED acting 1",
            "STEP_FINISHED acting 1",
            "STEP_STARTED reasoning 1",
            "STEP_FINISHED reasoning 1"
        ])
    );
    let (result, result_id) = only(second, "toolResults", "messageId");
    assert_eq!(
        result,
        &json!({"messageId": result_id, "toolCallId": a.call_id, "content": a.result,
                "role": "tool"})
    );
    let answer = text_id(second);
    assert_eq!(summary(second, "texts"), &text_message(second, a.answer));
    assert_eq!(
        summary(second, "runFinished"),
        &json!({"threadId": a.thread, "runId": format!("{}-run-2", a.prefix),
                "result": {"messageId": answer, "text": a.answer, "generateReason": "model_stop"},
                "outcome": {"type": "success"}})
    );
    assert_eq!(summary(second, "outcome"), &json!({"type": "success"}));
    assert_eq!(second["pendingInterrupts"], json!([]));
    let mut tool = json!({"id": result_id, "role": "tool", "content": a.result,
                          "toolCallId": a.call_id});
    if a.result_is_error {
        tool["error"] = json!(a.result);
    }
    let messages = json!([
        user,
        assistant,
        tool,
        {"id": answer, "role": "assistant", "content": a.answer},
    ]);
    assert_eq!(summary(second, "snapshotMessages"), &messages);
    assert_eq!(report["scenarios"][scenario]["messages"], messages);
}

/// What the client's `onRunFinishedEvent` subscriber was told, without the absent parts.
fn run_finished_subscriber(run: &Value) -> Value {
    let mut told = run["subscriber"]["runFinished"].clone();
    told.as_object_mut()
        .unwrap()
        .retain(|_, value| !value.is_null());
    told
}

fn check_approve(report: &Value) {
    check_approval(
        report,
        &Approval {
            scenario: "c_approve",
            thread: "agui-c-approve",
            prefix: "c",
            question: "Delete the old log files.",
            call_id: "call-del-approve",
            args: json!({"glob": "*.log"}),
            payload: json!({"approved": true}),
            result: "deleted the files matching *.log (run 1)",
            result_is_error: false,
            answer: "I deleted the old log files.",
        },
    );
}

fn check_reject(report: &Value) {
    check_approval(
        report,
        &Approval {
            scenario: "d_reject",
            thread: "agui-d-reject",
            prefix: "d",
            question: "Delete the temp files.",
            call_id: "call-del-reject",
            args: json!({"glob": "/tmp/*"}),
            payload: json!({"approved": false, "reason": "not now"}),
            result: "Rejected by the user: not now",
            result_is_error: true,
            answer: "OK, I left the temp files alone.",
        },
    );
}

fn check_error(report: &Value) {
    let scenario = &report["scenarios"]["e_error"];
    let run = &scenario["runs"][0];
    // The client takes RUN_ERROR as the end of the run: runAgent resolves (it does not
    // reject) and subscribers get onRunErrorEvent.
    assert_eq!(
        scenario["errorObservedAs"],
        json!("RUN_ERROR event; runAgent resolved"),
        "{run:#}"
    );
    let run = clean_run(report, "e_error", 0);
    assert_eq!(types(run), ["RUN_STARTED", "CUSTOM", "RUN_ERROR"]);
    // The client reads what failed and a correlation id, never the model's error text (the
    // details are in the server's log under that id).
    let error = summary(run, "runError").clone();
    assert_eq!(error["code"], "model_error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("The agent failed (error id ")
            && message.ends_with("); the details are in the server's log.")
            && !message.contains("overloaded"),
        "{message}"
    );
    assert_eq!(run["subscriber"]["runError"], error);
    assert_eq!(run["subscriber"]["runFailed"], Value::Null);
    assert_eq!(summary(run, "runFinished"), &Value::Null);
    assert_eq!(
        scenario["messages"],
        json!([{"id": "e-user-1", "role": "user", "content": "Please fail."}])
    );
}

fn check_in_doubt(report: &Value) {
    let scenario = "f_in_doubt";
    let call = ToolUseBlock::new("call-pay", "pay", json!({"invoice": 7}));
    let interrupt = in_doubt_interrupt(&call, &AgUi::session_id("payments", IN_DOUBT_THREAD));

    // A client that knows nothing of the thread runs without messages: the server answers
    // with the thread and the interrupt of the call in doubt, and nothing runs.
    let first = clean_run(report, scenario, 0);
    assert_eq!(first["wire"]["request"]["messages"], json!([]));
    assert!(first["wire"]["request"].get("resume").is_none());
    assert_eq!(types(first), run_of(&[]));
    let outcome = json!({"type": "interrupt", "interrupts": [interrupt]});
    assert_eq!(
        summary(first, "runFinished"),
        &json!({"threadId": IN_DOUBT_THREAD, "runId": "f-run-1", "result": null,
                "outcome": outcome})
    );
    assert_eq!(summary(first, "outcome"), &outcome);
    assert_eq!(
        run_finished_subscriber(first),
        json!({"outcome": "interrupt", "interrupts": [interrupt]})
    );
    assert_eq!(first["pendingInterrupts"], json!([interrupt]));
    let snapshot = summary(first, "snapshotMessages")
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(snapshot.len(), 2, "{snapshot:?}");
    assert_eq!(
        snapshot[0],
        json!({"id": "f-user-1", "role": "user", "content": "Pay invoice 7."})
    );
    let asked = snapshot[1]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        snapshot[1],
        json!({"id": asked, "role": "assistant", "toolCalls": [{"id": "call-pay",
            "type": "function", "function": {"name": "pay", "arguments": "{\"invoice\":7}"}}]})
    );

    // The client's own helper answers it with a retry: the call runs again, the model
    // answers.
    let resume = json!([{"interruptId": "call-pay", "status": "resolved",
                         "payload": {"action": "retry"}}]);
    assert_eq!(report["scenarios"][scenario]["resume"], resume);
    let second = clean_run(report, scenario, 1);
    assert_eq!(second["wire"]["request"]["resume"], resume);
    assert_eq!(types(second), run_of(&[TOOL_RESULT_STEP, &text_step(1)]));
    let (result, result_id) = only(second, "toolResults", "messageId");
    assert_eq!(
        result,
        &json!({"messageId": result_id, "toolCallId": "call-pay",
                "content": "paid invoice 7 (run 2)", "role": "tool"})
    );
    let answer = text_id(second);
    assert_eq!(
        summary(second, "runFinished"),
        &json!({"threadId": IN_DOUBT_THREAD, "runId": "f-run-2",
                "result": {"messageId": answer, "text": "Invoice 7 is paid.",
                           "generateReason": "model_stop"},
                "outcome": {"type": "success"}})
    );
    assert_eq!(second["pendingInterrupts"], json!([]));
    let messages = json!([
        snapshot[0],
        snapshot[1],
        {"id": result_id, "role": "tool", "content": "paid invoice 7 (run 2)",
         "toolCallId": "call-pay"},
        {"id": answer, "role": "assistant", "content": "Invoice 7 is paid."},
    ]);
    assert_eq!(summary(second, "snapshotMessages"), &messages);
    assert_eq!(report["scenarios"][scenario]["messages"], messages);
}
