//! Stop, resume and suspension: `stop_agent()` after reasoning and after acting, resuming pending tool calls (with `()` or with tool results), the validation of resume input, suspended tools, and the per-call iteration count.

use std::sync::{Arc, Mutex};

use crate::support::failures::{conversation_error, pending_calls};
use crate::support::fixtures::expr;
use crate::support::hooks::{hooks, stop_after_first_reasoning};
use crate::support::recorded::kinds;
use crate::support::rows::{Row, answer_row, calls_row, result_row, rows, user};
use agentscope::InMemoryMemory;
use agentscope::prelude::*;
use agentscope::{BoxedHook, HookFn};
use agentscope_test::tools::{Calculator, SuspendingTool};
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ToolUseBlock::new(id, name, input).into()
}

fn tool_result(id: &str, name: &str, output: &str) -> ContentBlock {
    ToolResultBlock::text(id, name, output).into()
}

fn tool_row(id: &str, name: &str, output: &str) -> Row {
    result_row(ToolResultBlock::text(id, name, output))
}

/// Two calculator calls in one reasoning message.
fn two_calls() -> ScriptedResponse {
    ScriptedResponse::tool_calls([
        ("c1", "calculator", expr("6*7")),
        ("c2", "calculator", expr("1+1")),
    ])
}

fn two_calls_row(reason: Option<GenerateReason>) -> Row {
    calls_row(
        &[
            ("c1", "calculator", expr("6*7")),
            ("c2", "calculator", expr("1+1")),
        ],
        reason,
    )
}

fn build(
    model: &ScriptedModel,
    toolkit: Toolkit,
    max_iters: usize,
    hooks: Vec<BoxedHook>,
) -> ReActAgent {
    ReActAgent::builder()
        .model(model.clone())
        .toolkit(toolkit)
        .max_iters(max_iters)
        .hooks(hooks)
        .build()
        .unwrap()
}

/// An agent with a calculator that stops after its first reasoning, playing `model`.
fn stopping_agent(model: &ScriptedModel) -> (ReActAgent, Calculator, RecordingHook) {
    let calc = Calculator::new();
    let rec = RecordingHook::new(200);
    let agent = build(
        model,
        Toolkit::new().tool(calc.clone()),
        10,
        hooks![stop_after_first_reasoning(), rec.clone()],
    );
    (agent, calc, rec)
}

/// An agent with a calculator whose first reasoning (two calls c1, c2) was stopped.
async fn stopped_agent(
    answer: ScriptedResponse,
) -> (ReActAgent, ScriptedModel, Calculator, RecordingHook) {
    let model = ScriptedModel::new([two_calls(), answer]);
    let (agent, calc, rec) = stopping_agent(&model);
    let reply = agent.call(Msg::user("q")).await.unwrap();
    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    rec.clear();
    (agent, model, calc, rec)
}

#[tokio::test]
async fn stop_after_reasoning_returns_the_stored_message_and_leaves_calls_pending() {
    let model = ScriptedModel::new([two_calls()]);
    let (agent, calc, rec) = stopping_agent(&model);
    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(reply.role, Role::Assistant);
    assert_eq!(reply.name, "assistant");
    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    let ids: Vec<&str> = reply.tool_uses().iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);

    let memory = agent.memory().messages();
    assert_eq!(
        rows(&memory),
        vec![
            user("q"),
            two_calls_row(Some(GenerateReason::ReasoningStopRequested))
        ]
    );
    assert_eq!(memory[1].id, reply.id, "the reply is the stored message");
    assert_eq!(calc.log().count(), 0, "no tool ran");
    assert_eq!(model.request_count(), 1);
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreReasoning PostReasoning PostCall")
    );
}

#[tokio::test]
async fn resume_with_no_input_runs_the_pending_tools_exactly_once_then_reasons() {
    let (agent, model, calc, rec) = stopped_agent(ScriptedResponse::text("42 and 2")).await;

    let reply = agent.call(()).await.unwrap();

    assert_eq!(reply.text(), "42 and 2");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(calc.log().calls(), [expr("6*7"), expr("1+1")]);
    assert_eq!(
        rec.types_without_chunks(),
        kinds(
            "PreCall PreActing PreActing PostActing PostActing PreReasoning PostReasoning \
             PostCall"
        )
    );
    let HookEvent::PreCall(pre_call) = &rec.events()[0] else {
        panic!("first event is not PreCall");
    };
    assert!(pre_call.input_messages().is_empty());

    assert_eq!(
        rows(&agent.memory().messages()),
        vec![
            user("q"),
            two_calls_row(Some(GenerateReason::ReasoningStopRequested)),
            tool_row("c1", "calculator", "42"),
            tool_row("c2", "calculator", "2"),
            answer_row("42 and 2"),
        ]
    );
    // The second model request saw the tool results.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        rows(&requests[1].messages),
        rows(&agent.memory().messages()[..4])
    );

    // Nothing is pending any more: resuming again is an error, and nothing runs.
    let again = agent.call(()).await.unwrap_err();
    assert!(
        matches!(
            again,
            AgentError::Conversation(agentscope::ConversationError::NothingToResume)
        ),
        "{again:?}"
    );
    assert_eq!(model.requests().len(), 2);
    assert_eq!(calc.log().count(), 2, "the tools ran exactly once");
}

#[tokio::test]
async fn resume_with_all_tool_results_stores_them_and_reasons_without_running_tools() {
    let (agent, model, calc, rec) = stopped_agent(ScriptedResponse::text("done")).await;

    let reply = agent
        .call(vec![
            Msg::tool_result(ToolResultBlock::text("c1", "calculator", "forty-two")),
            Msg::tool_result(ToolResultBlock::text("c2", "calculator", "two")),
        ])
        .await
        .unwrap();

    assert_eq!(reply.text(), "done");
    assert_eq!(calc.log().count(), 0);
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreReasoning PostReasoning PostCall")
    );
    let expected = vec![
        user("q"),
        two_calls_row(Some(GenerateReason::ReasoningStopRequested)),
        tool_row("c1", "calculator", "forty-two"),
        tool_row("c2", "calculator", "two"),
    ];
    let memory = agent.memory().messages();
    assert_eq!(rows(&memory[..4]), expected);
    assert_eq!(rows(&model.requests()[1].messages), expected);
}

/// Runs one invalid resume against a stopped agent and checks that it failed with
/// `Conversation(error)` with this message and left memory unchanged.
async fn assert_invalid_resume(input: Vec<Msg>, message: &str) {
    let (agent, model, calc, rec) = stopped_agent(ScriptedResponse::text("unused")).await;
    let before = agent.memory().messages();

    let err = agent.call(input).await.unwrap_err();

    assert_eq!(conversation_error(&err).to_string(), message);
    assert_eq!(agent.memory().messages(), before, "memory is unchanged");
    assert_eq!(calc.log().count(), 0);
    assert_eq!(model.request_count(), 1);
    assert_eq!(
        rec.types(),
        [HookEventType::PreCall, HookEventType::Error],
        "the failure reaches Error hooks, no PostCall"
    );
}

#[tokio::test]
async fn resume_with_a_duplicate_result_id_is_rejected() {
    assert_invalid_resume(
        vec![
            Msg::tool_result(ToolResultBlock::text("c1", "calculator", "42")),
            Msg::tool_result(ToolResultBlock::text("c1", "calculator", "42 again")),
        ],
        "Duplicate tool result for tool call id 'c1'",
    )
    .await;
}

#[tokio::test]
async fn resume_with_an_unknown_result_id_is_rejected() {
    assert_invalid_resume(
        vec![Msg::tool_result(ToolResultBlock::text(
            "zz",
            "calculator",
            "?",
        ))],
        "Tool result id 'zz' does not match any pending tool call. Pending tool call ids: [c1, c2]",
    )
    .await;
}

#[tokio::test]
async fn partial_results_mixed_with_text_are_rejected() {
    assert_invalid_resume(
        vec![
            Msg::tool_result(ToolResultBlock::text("c1", "calculator", "42")),
            Msg::user("and another question"),
        ],
        "Partial tool results cannot be mixed with new content: results are missing for pending tool call ids [c2]",
    )
    .await;
}

#[tokio::test]
async fn new_text_while_calls_are_pending_fails_naming_the_pending_ids() {
    let (agent, model, calc, rec) = stopped_agent(ScriptedResponse::text("unused")).await;
    let before = agent.memory().messages();

    let err = agent.call(Msg::user("something else")).await.unwrap_err();

    assert_eq!(pending_calls(&err), ["c1", "c2"]);
    assert!(err.to_string().contains("[c1, c2]"), "{err}");
    assert_eq!(agent.memory().messages(), before);
    assert_eq!(calc.log().count(), 0);
    assert_eq!(model.request_count(), 1);
    assert_eq!(rec.types(), [HookEventType::PreCall, HookEventType::Error]);
}

#[tokio::test]
async fn partial_results_alone_store_them_and_run_the_remaining_calls() {
    let (agent, model, calc, rec) = stopped_agent(ScriptedResponse::text("done")).await;

    let reply = agent
        .call(Msg::tool_result(ToolResultBlock::text(
            "c1",
            "calculator",
            "external 42",
        )))
        .await
        .unwrap();

    assert_eq!(reply.text(), "done");
    assert_eq!(calc.log().calls(), [expr("1+1")], "only c2 ran");
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreActing PostActing PreReasoning PostReasoning PostCall")
    );
    let pre_acting: Vec<String> = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            HookEvent::PreActing(e) => Some(e.tool_use().id.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(pre_acting, ["c2"]);
    let expected = vec![
        user("q"),
        two_calls_row(Some(GenerateReason::ReasoningStopRequested)),
        tool_row("c1", "calculator", "external 42"),
        tool_row("c2", "calculator", "2"),
    ];
    assert_eq!(rows(&agent.memory().messages()[..4]), expected);
    assert_eq!(rows(&model.requests()[1].messages), expected);
}

/// Stops from the PostActing of the call with id `stop_at` in a batch of three.
async fn stop_after_acting_at(stop_at: &'static str) {
    let model = ScriptedModel::new([ScriptedResponse::tool_calls([
        ("c1", "calculator", expr("1+1")),
        ("c2", "calculator", expr("2+2")),
        ("c3", "calculator", expr("3+3")),
    ])]);
    let calc = Calculator::new();
    let rec = RecordingHook::new(200);
    let stopper = hook_fn(move |event| {
        if let HookEvent::PostActing(e) = event
            && e.tool_use().id == stop_at
        {
            e.stop_agent();
        }
        Ok(())
    });
    let agent = build(
        &model,
        Toolkit::new().tool(calc.clone()),
        10,
        hooks![stopper, rec.clone()],
    );

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::ActingStopRequested),
        "stop at {stop_at}"
    );
    assert_eq!(reply.role, Role::Tool);
    assert_eq!(reply.content, vec![tool_result("c3", "calculator", "6")]);
    let memory = agent.memory().messages();
    let stored: Vec<Row> = rows(&memory)
        .into_iter()
        .map(|(role, name, content, _)| (role, name, content, None))
        .collect();
    assert_eq!(
        stored,
        vec![
            user("q"),
            calls_row(
                &[
                    ("c1", "calculator", expr("1+1")),
                    ("c2", "calculator", expr("2+2")),
                    ("c3", "calculator", expr("3+3")),
                ],
                None
            ),
            tool_row("c1", "calculator", "2"),
            tool_row("c2", "calculator", "4"),
            tool_row("c3", "calculator", "6"),
        ],
        "stop at {stop_at}: the whole batch is stored"
    );
    assert_eq!(reply.id, memory[4].id, "the last tool message is returned");
    assert_eq!(calc.log().count(), 3);
    assert_eq!(model.request_count(), 1, "no reasoning after the stop");
    assert_eq!(
        rec.types_without_chunks(),
        kinds(
            "PreCall PreReasoning PostReasoning PreActing PreActing PreActing PostActing \
             PostActing PostActing PostCall"
        ),
        "stop at {stop_at}"
    );
}

#[tokio::test]
async fn stop_from_the_first_post_acting_of_a_batch_is_honoured_after_the_batch() {
    stop_after_acting_at("c1").await;
}

#[tokio::test]
async fn stop_from_a_middle_post_acting_of_a_batch_is_honoured_after_the_batch() {
    stop_after_acting_at("c2").await;
}

#[tokio::test]
async fn stop_from_the_last_post_acting_of_a_batch_is_honoured_after_the_batch() {
    stop_after_acting_at("c3").await;
}

#[tokio::test]
async fn suspended_tool_returns_tool_suspended_and_resumes_with_its_result() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ("c1", "calculator", expr("6*7")),
            ("c2", "external", json!({"task": "approve"})),
        ]),
        ScriptedResponse::text("approved, 42"),
    ]);
    let calc = Calculator::new();
    let external = SuspendingTool::new();
    let rec = RecordingHook::new(200);
    let agent = build(
        &model,
        Toolkit::new().tool(calc.clone()).tool(external.clone()),
        10,
        hooks![rec.clone()],
    );

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(reply.generate_reason(), Some(GenerateReason::ToolSuspended));
    assert_eq!(reply.role, Role::Assistant);
    assert_eq!(reply.name, "assistant");
    assert_eq!(
        reply.content,
        vec![tool_use("c2", "external", json!({"task": "approve"}))]
    );
    let calls = calls_row(
        &[
            ("c1", "calculator", expr("6*7")),
            ("c2", "external", json!({"task": "approve"})),
        ],
        None,
    );
    assert_eq!(
        rows(&agent.memory().messages()),
        vec![user("q"), calls.clone(), tool_row("c1", "calculator", "42")]
    );
    assert_eq!(external.log().count(), 1);
    assert_eq!(calc.log().count(), 1);
    assert_eq!(
        rec.types_without_chunks(),
        kinds("PreCall PreReasoning PostReasoning PreActing PreActing PostActing PostCall")
    );

    // New text is refused while the suspended call is pending.
    let err = agent.call("hello?").await.unwrap_err();
    assert_eq!(pending_calls(&err), ["c2"]);

    let reply = agent
        .call(Msg::tool_result(ToolResultBlock::text(
            "c2", "external", "approved",
        )))
        .await
        .unwrap();
    assert_eq!(reply.text(), "approved, 42");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(
        external.log().count(),
        1,
        "the suspended tool is not re-run"
    );
    assert_eq!(calc.log().count(), 1);
    let expected = vec![
        user("q"),
        calls,
        tool_row("c1", "calculator", "42"),
        tool_row("c2", "external", "approved"),
    ];
    assert_eq!(rows(&agent.memory().messages()[..4]), expected);
    assert_eq!(rows(&model.requests()[1].messages), expected);
}

/// Records `iteration()` of every PreReasoning.
fn iteration_recorder(log: &Arc<Mutex<Vec<usize>>>) -> HookFn {
    let log = Arc::clone(log);
    hook_fn(move |event| {
        if let HookEvent::PreReasoning(e) = event {
            log.lock().unwrap().push(e.iteration());
        }
        Ok(())
    })
    .with_interests(HookEventType::PreReasoning)
}

#[tokio::test]
async fn every_call_restarts_the_iteration_count_at_zero() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", expr("1+1")),
        ScriptedResponse::text("two"),
        ScriptedResponse::tool_call("c2", "calculator", expr("2+2")),
        ScriptedResponse::text("four"),
    ]);
    let iterations = Arc::new(Mutex::new(Vec::new()));
    let agent = build(
        &model,
        Toolkit::new().tool(Calculator::new()),
        10,
        hooks![iteration_recorder(&iterations)],
    );
    assert_eq!(agent.call("first").await.unwrap().text(), "two");
    assert_eq!(*iterations.lock().unwrap(), [0, 1]);
    assert_eq!(agent.call("second").await.unwrap().text(), "four");
    assert_eq!(*iterations.lock().unwrap(), [0, 1, 0, 1]);
}

#[tokio::test]
async fn a_resume_restarts_the_iteration_count_at_zero() {
    // max_iters 2: if the resume kept counting (2 iterations used), it would summarise.
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", expr("1+1")),
        ScriptedResponse::tool_call("c2", "calculator", expr("2+2")),
        ScriptedResponse::text("done"),
    ]);
    let iterations = Arc::new(Mutex::new(Vec::new()));
    let stop_at_iteration_one = hook_fn(|event| {
        if let HookEvent::PostReasoning(e) = event
            && e.iteration() == 1
            && e.reasoning_message().has_tool_uses()
        {
            e.stop_agent();
        }
        Ok(())
    });
    let calc = Calculator::new();
    let agent = build(
        &model,
        Toolkit::new().tool(calc.clone()),
        2,
        hooks![iteration_recorder(&iterations), stop_at_iteration_one],
    );
    let stopped = agent.call("q").await.unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!(*iterations.lock().unwrap(), [0, 1]);

    let reply = agent.call(()).await.unwrap();
    assert_eq!(reply.text(), "done");
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_eq!(*iterations.lock().unwrap(), [0, 1, 0]);
    assert_eq!(calc.log().calls(), [expr("1+1"), expr("2+2")]);
}

/// `earlier` user/assistant exchanges, then one assistant message calling the calculator
/// `calls` times (`c0`, `c1`, ...), of which the first `answered` have results.
fn long_conversation(earlier: usize, calls: usize, answered: usize) -> Vec<Msg> {
    let mut messages = Vec::new();
    for i in 0..earlier {
        messages.push(Msg::user(format!("q{i}")));
        messages.push(Msg::assistant(format!("a{i}")));
    }
    let ids: Vec<String> = (0..calls).map(|i| format!("c{i}")).collect();
    let uses: Vec<ContentBlock> = ids
        .iter()
        .map(|id| tool_use(id, "calculator", expr("1+1")))
        .collect();
    messages.push(Msg::new(Role::Assistant, "agent", uses));
    for id in &ids[..answered] {
        messages.push(Msg::tool_result(ToolResultBlock::text(
            id,
            "calculator",
            "2",
        )));
    }
    messages
}

fn agent_on(model: &ScriptedModel, calc: &Calculator, history: Vec<Msg>) -> ReActAgent {
    ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(calc.clone()))
        .memory(InMemoryMemory::with_messages(history))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_long_conversation_resumes_exactly_its_unanswered_call() {
    // The call's last assistant message among the conversation's last few messages, and
    // ten messages back behind the results of nine of its ten calls.
    for (calls, answered) in [(2, 1), (10, 9)] {
        let model = ScriptedModel::new([ScriptedResponse::text("done")]);
        let calc = Calculator::new();
        let history = long_conversation(20, calls, answered);
        let agent = agent_on(&model, &calc, history.clone());

        let reply = agent.call(()).await.unwrap();

        assert_eq!(reply.text(), "done");
        assert_eq!(calc.log().calls(), [expr("1+1")], "{calls} calls");
        let mut expected = rows(&history);
        expected.push(tool_row(&format!("c{}", calls - 1), "calculator", "2"));
        expected.push(answer_row("done"));
        assert_eq!(rows(&agent.memory().messages()), expected);
        // New text while the call was pending would have named it.
        let agent = agent_on(&model, &calc, history);
        let error = agent.call("next").await.unwrap_err();
        assert!(
            error.to_string().contains(&format!("c{}", calls - 1)),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_failed_call_on_a_long_conversation_takes_exactly_its_input_back() {
    let mut answered = long_conversation(20, 1, 1);
    answered.push(Msg::assistant("two"));
    // Ending in an answer, and in the results of ten calls (the last assistant message ten
    // messages back).
    for history in [answered, long_conversation(20, 10, 10)] {
        let model = ScriptedModel::new([ScriptedResponse::error("down")]);
        let agent = agent_on(&model, &Calculator::new(), history.clone());

        let error = agent.call("next").await.unwrap_err();

        assert!(error.to_string().contains("down"), "{error}");
        assert_eq!(rows(&agent.memory().messages()), rows(&history));
        let request = &model.requests()[0].messages;
        assert_eq!(rows(&request[..history.len()]), rows(&history));
        assert_eq!(rows(&request[history.len()..]), [user("next")]);
    }
}
