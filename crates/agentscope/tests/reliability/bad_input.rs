//! Bad input at the edges (what errors.rs, modification.rs and goto.rs don't already cover): invalid JSON-schema tool definitions and duplicate tool names rejected at build time with a clear error; goto_reasoning with wrong, extra or duplicate result ids; hooks that change a tool call's id or an event's kind by replacing the event; Msg JSON with unknown block types, roles or shapes (an error, never a panic), including a property test over arbitrary JSON. Secrets in Debug output are checked in crates/agentscope-openai/tests (errors.rs, secrets.rs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::describe::{line, memory_of};
use crate::support::failures::{conversation_error, invalid_goto};
use crate::support::fixtures::{CANCELLED, SwapModel, build_agent, calc_call};
use crate::support::hooks::hooks;
use crate::support::invariants::{Pending, assert_follow_up_call, assert_invariants};
use agentscope::ConversationError;
use agentscope::prelude::*;
use agentscope::{HookFn, PreActingEvent, ToolkitError};
use agentscope_core::engine::{CallContext, events};
use agentscope_test::tools::{Calculator, EchoTool};
use agentscope_test::{RecordingHook, ScriptedResponse};
use proptest::prelude::*;
use serde_json::{Value, json};

type K = HookEventType;

fn schema_tool(name: &str, parameters: Value) -> impl Tool {
    tool_fn(name.to_owned(), "A tool.", parameters, |_, _| async {
        Ok("x")
    })
}

fn build_with(toolkit: Toolkit) -> Result<ReActAgent, BuildError> {
    ReActAgent::builder()
        .model(SwapModel::new([]))
        .toolkit(toolkit)
        .build()
}

// ---------------------------------------------------------------------------------------
// Tool definitions
// ---------------------------------------------------------------------------------------

#[test]
fn non_object_parameter_schemas_are_rejected_at_build_time() {
    let not_an_object = "the schema must be a JSON object";
    for (parameters, message) in [
        (json!("string"), not_an_object.to_owned()),
        (json!(null), not_an_object.to_owned()),
        (json!(["object"]), not_an_object.to_owned()),
        (json!(42), not_an_object.to_owned()),
        (
            json!({"type": ["object", "null"]}),
            "arguments must be an object schema (\"type\": \"object\"), got \"type\": [\"object\",\"null\"]"
                .to_owned(),
        ),
        (
            json!({"type": "string"}),
            "arguments must be an object schema (\"type\": \"object\"), got \"type\": \"string\""
                .to_owned(),
        ),
    ] {
        let err = build_with(Toolkit::new().tool(schema_tool("t", parameters.clone()))).unwrap_err();
        assert_eq!(
            err,
            BuildError::Toolkit(ToolkitError::InvalidSchema {
                tool: "t".to_owned(),
                message: message.clone(),
            }),
            "{parameters}"
        );
        assert_eq!(
            err.to_string(),
            format!("invalid toolkit: tool 't' has an invalid parameter schema: {message}")
        );
    }
}

#[test]
fn schemas_that_are_not_valid_json_schema_are_rejected_at_build_time() {
    for parameters in [
        json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "(unclosed"}}}),
        json!({"type": "object", "required": "x"}),
        json!({"type": "object", "properties": {"x": {"minimum": "zero"}}}),
        json!({"type": "object", "properties": {"x": {"type": "no-such-type"}}}),
        json!({"type": "object", "properties": 7}),
    ] {
        let err =
            build_with(Toolkit::new().tool(schema_tool("bad", parameters.clone()))).unwrap_err();
        match &err {
            BuildError::Toolkit(ToolkitError::InvalidSchema { tool, message }) => {
                assert_eq!(tool, "bad", "{parameters}");
                assert!(!message.is_empty(), "{parameters}");
            }
            other => panic!("{parameters}: expected InvalidSchema, got {other:?}"),
        }
        assert!(
            err.to_string()
                .starts_with("invalid toolkit: tool 'bad' has an invalid parameter schema: "),
            "{err}"
        );
    }
}

#[cfg(feature = "schema")]
#[test]
fn a_typed_tool_whose_arguments_are_not_an_object_is_rejected() {
    let scalar = typed_tool_fn("count", "Takes a bare number.", |n: u32, _ctx| async move {
        Ok(n.to_string())
    });
    let err = build_with(Toolkit::new().tool(scalar)).unwrap_err();
    assert!(
        matches!(&err, BuildError::Toolkit(ToolkitError::InvalidSchema { tool, message })
            if tool == "count" && message.starts_with("arguments must be an object schema")),
        "{err:?}"
    );
}

#[test]
fn empty_tool_names_are_rejected() {
    for name in ["", "   "] {
        let err = build_with(Toolkit::new().tool(schema_tool(name, json!({"type": "object"}))))
            .unwrap_err();
        assert_eq!(err, BuildError::Toolkit(ToolkitError::EmptyName));
        assert_eq!(err.to_string(), "invalid toolkit: a tool has an empty name");
    }
}

#[test]
fn the_first_bad_tool_is_reported_and_add_tool_rejects_without_adding() {
    let toolkit = Toolkit::new()
        .tool(schema_tool("first", json!({"type": "array"})))
        .tool(schema_tool("", json!({"type": "object"})));
    assert_eq!(
        toolkit.error(),
        Some(&ToolkitError::InvalidSchema {
            tool: "first".to_owned(),
            message:
                "arguments must be an object schema (\"type\": \"object\"), got \"type\": \"array\""
                    .to_owned(),
        })
    );
    assert!(toolkit.is_empty());

    let mut toolkit = Toolkit::new().tool(EchoTool::new());
    assert_eq!(
        toolkit.add_tool(EchoTool::new()),
        Err(ToolkitError::DuplicateTool {
            name: "echo".to_owned()
        })
    );
    assert_eq!(
        toolkit
            .add_tool(schema_tool("broken", json!({"type": 1})))
            .unwrap_err()
            .to_string(),
        "tool 'broken' has an invalid parameter schema: arguments must be an object schema (\"type\": \"object\"), got \"type\": 1"
    );
    // Rejected tools are not added, and the toolkit stays usable.
    assert_eq!(toolkit.names(), ["echo"]);
    assert!(toolkit.error().is_none());
    assert!(build_with(toolkit).is_ok());
}

#[test]
fn duplicate_tool_names_are_rejected_however_the_tools_are_added() {
    let duplicate = BuildError::Toolkit(ToolkitError::DuplicateTool {
        name: "echo".to_owned(),
    });
    let timed = Toolkit::new()
        .tool(EchoTool::new())
        .tool_with_timeout(EchoTool::new(), std::time::Duration::from_secs(1));
    assert_eq!(build_with(timed).unwrap_err(), duplicate);
    let timed_first = Toolkit::new()
        .tool_with_timeout(EchoTool::new(), std::time::Duration::from_secs(1))
        .tool(EchoTool::new());
    assert_eq!(build_with(timed_first).unwrap_err(), duplicate);
    assert_eq!(
        duplicate.to_string(),
        "invalid toolkit: duplicate tool name 'echo'"
    );
}

#[cfg(feature = "schema")]
#[tokio::test]
async fn a_structured_call_with_a_generate_response_tool_in_the_toolkit_is_rejected() {
    use crate::support::fixtures::recorded_agent;
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Answer {
        #[allow(dead_code)]
        value: u32,
    }
    let model = SwapModel::new([]);
    let (agent, rec) = recorded_agent(
        &model,
        Toolkit::new().tool(schema_tool("generate_response", json!({"type": "object"}))),
    );

    let err = agent.call_structured::<Answer>("q").await.unwrap_err();

    assert!(matches!(&err, AgentError::InvalidInput { .. }), "{err:?}");
    assert_eq!(err.to_string(), "duplicate tool name 'generate_response'");
    assert!(agent.memory().is_empty());
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

// ---------------------------------------------------------------------------------------
// goto_reasoning with wrong ids
// ---------------------------------------------------------------------------------------

/// What `goto_reasoning` returned, once called.
type GotoOutcome = Arc<Mutex<Option<Result<(), HookError>>>>;

/// Calls `goto_reasoning(make())` at the first PostReasoning and keeps what it returned; the
/// hook itself never fails (a rejected goto changes nothing).
fn goto_probe(make: impl Fn() -> Vec<Msg> + Send + Sync + 'static) -> (HookFn, GotoOutcome) {
    let outcome: GotoOutcome = Arc::default();
    let seen = Arc::clone(&outcome);
    let hook = hook_fn(move |event| {
        if let HookEvent::PostReasoning(e) = event {
            let mut seen = seen.lock().unwrap();
            if seen.is_none() {
                *seen = Some(e.goto_reasoning(make()));
            }
        }
        Ok(())
    })
    .with_interests(K::PostReasoning)
    .with_name("goto-probe");
    (hook, outcome)
}

fn result_msg(id: &str) -> Msg {
    Msg::tool_result(ToolResultBlock::text(id, "calculator", "42"))
}

/// Runs a call whose first reasoning is `first` with a goto probe; `expect` checks what
/// `goto_reasoning` returned, then the invariants are checked.
async fn goto_with(
    first: ScriptedResponse,
    goto: impl Fn() -> Vec<Msg> + Send + Sync + 'static,
    expect: impl FnOnce(Result<(), HookError>),
) -> ReActAgent {
    let model = SwapModel::new([first, ScriptedResponse::text("answer")]);
    let rec = RecordingHook::new(1000);
    let (probe, outcome) = goto_probe(goto);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(probe)
        .hook(rec.clone())
        .build()
        .unwrap();
    let reply = agent.call("q").await.unwrap();
    expect(outcome.lock().unwrap().clone().expect("no PostReasoning"));
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
    agent
}

/// The rule a rejected goto broke, as text; panics unless the goto was rejected as invalid.
fn rejection(outcome: Result<(), HookError>) -> String {
    let error = outcome.expect_err("the goto must be rejected");
    invalid_goto(&error).to_string()
}

/// Runs [`goto_with`] with a goto carrying a calculator result for each of `result_ids`, and
/// expects the goto to be rejected as invalid with an error naming `id`.
async fn goto_with_results_rejected(
    first: ScriptedResponse,
    result_ids: &'static [&'static str],
    id: &'static str,
) {
    let goto = move || result_ids.iter().map(|id| result_msg(id)).collect();
    goto_with(first, goto, move |outcome| {
        let message = rejection(outcome);
        assert!(message.contains(id), "{message}");
    })
    .await;
}

/// The model's call of the calculator on "6*7" (call "c1").
fn six_times_seven() -> ScriptedResponse {
    calc_call("c1", "6*7")
}

#[tokio::test]
async fn goto_with_a_wrong_result_id_is_rejected_naming_the_missing_one() {
    let agent = goto_with(
        six_times_seven(),
        || vec![result_msg("zz")],
        |outcome| {
            assert_eq!(
                rejection(outcome),
                "Missing ToolResult for pending ToolUse. Missing IDs: [c1]"
            );
        },
    )
    .await;
    // The rejected goto changed nothing: the tool ran.
    assert_eq!(
        memory_of(&agent)[..4],
        line::calc_round_trip("q", ("c1", "6*7", "42"), "answer")
    );
}

/// A result for an id no pending call has would be stored as a tool result answering no
/// call: providers reject such a conversation, and resuming a call with such a result is
/// already an error ("Tool result id 'x' does not match any pending tool call").
#[tokio::test]
async fn goto_with_an_extra_unknown_result_id_is_rejected() {
    goto_with_results_rejected(six_times_seven(), &["c1", "zz"], "zz").await;
}

/// Two results for one call: the resume path rejects this ("Duplicate tool result for tool
/// call id"); goto must too.
#[tokio::test]
async fn goto_with_a_duplicate_result_id_is_rejected() {
    goto_with_results_rejected(six_times_seven(), &["c1", "c1"], "c1").await;
}

/// With no tool call pending, a tool result in the goto messages answers nothing.
#[tokio::test]
async fn goto_with_a_tool_result_when_no_call_is_pending_is_rejected() {
    goto_with_results_rejected(ScriptedResponse::text("first"), &["zz"], "zz").await;
}

/// The caller's side of the same rule: while calls are pending, a result with an unknown id
/// is rejected ("Tool result id 'x' does not match any pending tool call"); with none
/// pending, a result answers nothing and must be rejected the same way, by `call` and by
/// `observe`, rather than stored.
#[tokio::test]
async fn input_with_a_tool_result_when_no_call_is_pending_is_rejected() {
    let model = SwapModel::new([ScriptedResponse::text("unused")]);
    let rec = RecordingHook::new(1000);
    let agent = build_agent(&model, Toolkit::new(), hooks![rec.clone()]);

    let called = agent.call(result_msg("zz")).await;
    let observed = agent.observe(result_msg("yy")).await;

    assert!(
        matches!(&called, Err(AgentError::Conversation(error)) if error.to_string().contains("zz")),
        "call: {called:?}"
    );
    assert!(
        matches!(&observed, Err(AgentError::Conversation(error)) if error.to_string().contains("yy")),
        "observe: {observed:?}"
    );
    assert!(agent.memory().is_empty(), "{:?}", memory_of(&agent));
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

#[tokio::test]
async fn a_goto_made_invalid_by_a_later_change_of_the_reasoning_message_fails_the_call() {
    // Hook 1 requests a valid goto on a text answer; hook 2 then gives the message a tool
    // call the goto messages do not answer. The engine re-validates after the chain.
    let model = SwapModel::new([ScriptedResponse::text("first")]);
    let rec = RecordingHook::new(1000);
    let armed = Arc::new(AtomicBool::new(true));
    let (armed1, armed2) = (Arc::clone(&armed), Arc::clone(&armed));
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(
            hook_fn(move |event| {
                if let HookEvent::PostReasoning(e) = event
                    && armed1.load(Ordering::SeqCst)
                {
                    e.goto_reasoning(vec![Msg::user("think again")])?;
                }
                Ok(())
            })
            .with_priority(10),
        )
        .hook(
            hook_fn(move |event| {
                if let HookEvent::PostReasoning(e) = event
                    && armed2.load(Ordering::SeqCst)
                {
                    let msg = Msg::builder()
                        .role(Role::Assistant)
                        .name("assistant")
                        .block(ToolUseBlock::new(
                            "c9",
                            "calculator",
                            json!({"expression": "1"}),
                        ))
                        .build();
                    e.set_reasoning_message(msg);
                }
                Ok(())
            })
            .with_priority(20),
        )
        .hook(rec.clone())
        .build()
        .unwrap();

    let err = agent.call("q").await.unwrap_err();

    let rule = conversation_error(&err);
    assert!(
        matches!(rule, ConversationError::GotoMissingToolResults { ids } if ids == &["c9"]),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "Missing ToolResult for pending ToolUse. Missing IDs: [c9]"
    );
    // Nothing of the rejected step was stored, and the input it answered is taken back.
    assert!(memory_of(&agent).is_empty());
    assert_eq!(rec.types_without_chunks().last(), Some(&K::Error));
    assert_invariants(&agent, &[&rec], Pending::None);
    armed.store(false, Ordering::SeqCst);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

// ---------------------------------------------------------------------------------------
// Hooks that replace events
// ---------------------------------------------------------------------------------------

/// An agent whose model calls the calculator (see [`six_times_seven`]) and whose hook
/// `name` replaces the PreActing event with what `replace` makes of it; with its model,
/// calculator and recorder (priority 1000).
fn replacing_pre_acting(
    name: &'static str,
    replace: impl Fn(&PreActingEvent) -> HookEvent + Send + Sync + 'static,
) -> (ReActAgent, SwapModel, Calculator, RecordingHook) {
    let model = SwapModel::new([six_times_seven(), ScriptedResponse::text("never")]);
    let calc = Calculator::new();
    let rec = RecordingHook::new(1000);
    let replacer = hook_fn(move |event| {
        if let HookEvent::PreActing(e) = event {
            *event = replace(e);
        }
        Ok(())
    });
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(calc.clone()))
        .hook(replacer.with_name(name))
        .hook(rec.clone())
        .build()
        .unwrap();
    (agent, model, calc, rec)
}

#[tokio::test]
async fn replacing_the_pre_acting_event_with_another_tool_call_id_fails_the_call() {
    let (agent, model, calc, rec) = replacing_pre_acting("forger", |e| {
        let forged = CallContext::new(Arc::new(e.agent().clone()));
        let mut call = e.tool_use().clone();
        call.id = "forged".into();
        HookEvent::PreActing(events::pre_acting(forged.info(), call))
    });

    let err = agent.call("q").await.unwrap_err();

    match &err {
        AgentError::Hook {
            event: K::PreActing,
            source: HookError::InvalidModification { message },
            ..
        } => assert_eq!(message, "the tool call id 'c1' must not change"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(calc.log().count(), 0, "nothing ran under a forged id");
    assert_eq!(
        memory_of(&agent),
        [
            r#"user/user: text "q""#.to_owned(),
            r#"assistant/assistant: tool_use c1 calculator {"expression":"6*7"}"#.to_owned(),
            format!("tool/calculator: tool_result c1 calculator error {CANCELLED:?}"),
        ]
    );
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

#[tokio::test]
async fn replacing_an_event_with_one_of_another_kind_fails_the_call() {
    let (agent, model, _, rec) = replacing_pre_acting("swapper", |e| {
        let forged = CallContext::new(Arc::new(e.agent().clone()));
        HookEvent::PostCall(events::post_call(forged.info(), Msg::assistant("fake")))
    });

    let err = agent.call("q").await.unwrap_err();

    assert_eq!(
        err.to_string(),
        "hook 'swapper' failed at PreActing: the hook replaced the PreActing event with a PostCall event"
    );
    assert!(matches!(
        err.hook_error(),
        Some(HookError::InvalidModification { .. })
    ));
    assert!(
        !rec.types().contains(&K::PostCall),
        "the fake PostCall reached nobody"
    );
    assert_invariants(&agent, &[&rec], Pending::None);
    assert_follow_up_call(&agent, &model, &[&rec]).await;
}

#[tokio::test]
async fn skip_and_result_changes_with_other_ids_are_normalised_to_the_call() {
    let model = SwapModel::new([
        ScriptedResponse::tool_calls([
            ("c1", "calculator", json!({"expression": "6*7"})),
            ("c2", "calculator", json!({"expression": "1+1"})),
        ]),
        ScriptedResponse::text("done"),
    ]);
    let rec = RecordingHook::new(1000);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(hook_fn(|event| {
            match event {
                HookEvent::PreActing(e) if e.tool_use().id == "c1" => {
                    e.skip_with(ToolResultBlock::text("wrong-id", "wrong-name", "cached"));
                }
                HookEvent::PostActing(e) if e.tool_use().id == "c2" => {
                    e.set_tool_result(ToolResultBlock::text("other", "other", "edited"));
                }
                _ => {}
            }
            Ok(())
        }))
        .hook(rec.clone())
        .build()
        .unwrap();

    agent.call("q").await.unwrap();

    assert_eq!(
        memory_of(&agent)[2..4],
        [
            line::calc_result("c1", "cached"),
            line::calc_result("c2", "edited"),
        ]
    );
    assert_invariants(&agent, &[&rec], Pending::None);
}

// ---------------------------------------------------------------------------------------
// Msg JSON
// ---------------------------------------------------------------------------------------

fn valid_msg_json() -> Value {
    json!({
        "id": "m1", "name": "assistant", "role": "assistant",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "c1", "name": "calc", "input": {"expression": "1+1"}},
            {"type": "tool_result", "id": "c1", "name": "calc",
             "output": [{"type": "text", "text": "2"}], "is_error": false}
        ],
        "metadata": {},
        "timestamp": "2026-11-30T10:00:00Z"
    })
}

#[test]
fn msg_json_with_unknown_or_malformed_parts_is_an_error_naming_the_problem() {
    let with = |pointer: &str, value: Value| -> Value {
        let mut msg = valid_msg_json();
        *msg.pointer_mut(pointer).unwrap() = value;
        msg
    };
    let cases = [
        (
            "unknown block type",
            with("/content/0", json!({"type": "hologram", "data": 1})),
            "hologram",
        ),
        (
            "unknown block type inside a tool result",
            with("/content/2/output/0", json!({"type": "video", "url": "x"})),
            "video",
        ),
        (
            "block without a type",
            with("/content/0", json!({"text": "hi"})),
            "type",
        ),
        (
            "block type not a string",
            with("/content/0", json!({"type": 5, "text": "hi"})),
            "type",
        ),
        ("unknown role", with("/role", json!("narrator")), "narrator"),
        (
            "content not a list",
            with("/content", json!("hi")),
            "sequence",
        ),
        (
            "text not a string",
            with("/content/0/text", json!(["h", "i"])),
            "string",
        ),
        ("bad timestamp", with("/timestamp", json!("yesterday")), ""),
        (
            "tool_use without a name",
            {
                let mut msg = valid_msg_json();
                msg["content"][1].as_object_mut().unwrap().remove("name");
                msg
            },
            "name",
        ),
    ];
    for (case, value, mentions) in cases {
        let err = serde_json::from_value::<Msg>(value.clone()).expect_err(case);
        assert!(err.to_string().contains(mentions), "{case}: {err}");
        // The same from text, and inside a list of messages.
        let text = serde_json::to_string(&vec![valid_msg_json(), value]).unwrap();
        assert!(serde_json::from_str::<Vec<Msg>>(&text).is_err(), "{case}");
    }
    // A stream event carrying such a message is rejected the same way.
    let event = json!({
        "event_type": "reasoning",
        "message": with("/content/0", json!({"type": "hologram"})),
        "is_last": true
    });
    let err = serde_json::from_value::<Event>(event).unwrap_err();
    assert!(err.to_string().contains("hologram"), "{err}");
    // Unknown fields are ignored; a garbage generate reason reads as none.
    let mut lenient = valid_msg_json();
    lenient["future_field"] = json!(1);
    lenient["content"][0]["style"] = json!("bold");
    lenient["metadata"]["generate_reason"] = json!({"not": "a reason"});
    let msg: Msg = serde_json::from_value(lenient).unwrap();
    assert_eq!(msg.text(), "hi");
    assert_eq!(msg.generate_reason(), None);
}

/// One of `words`, or a string matching the regex `other`: each of the `words.len() + 1`
/// choices as likely as the others.
fn word_or(words: &'static [&'static str], other: &'static str) -> impl Strategy<Value = String> {
    let weight = u32::try_from(words.len()).unwrap();
    prop_oneof![
        weight => prop::sample::select(words).prop_map(str::to_owned),
        1 => other,
    ]
}

/// Arbitrary JSON, up to a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        word_or(
            &[
                "text",
                "tool_use",
                "tool_result",
                "thinking",
                "image",
                "assistant"
            ],
            ".{0,8}"
        )
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                word_or(
                    &[
                        "type", "text", "id", "name", "input", "output", "is_error", "thinking",
                        "url",
                    ],
                    "[a-z]{1,6}"
                ),
                inner,
                0..6,
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever JSON arrives as a message's content (or as one block of it), deserialising
    /// returns a value or an error, never panics; a value that deserialises round-trips.
    #[test]
    fn arbitrary_json_content_deserialises_or_errors_without_panicking(
        content in any_json(),
        block in any_json(),
        role in prop_oneof![Just(json!("user")), Just(json!("assistant")), Just(json!("tool")), any_json()],
    ) {
        for candidate in [
            { let mut m = valid_msg_json(); m["content"] = content.clone(); m["role"] = role.clone(); m },
            { let mut m = valid_msg_json(); m["content"][1] = block.clone(); m },
            { let mut m = valid_msg_json(); m["content"][2]["output"] = json!([block.clone()]); m },
        ] {
            let parsed = std::panic::catch_unwind(|| serde_json::from_value::<Msg>(candidate.clone()));
            let parsed = parsed.map_err(|_| TestCaseError::fail(format!("panicked on {candidate}")))?;
            if let Ok(msg) = parsed {
                let again: Msg = serde_json::from_value(serde_json::to_value(&msg).unwrap()).unwrap();
                prop_assert_eq!(again, msg);
            }
        }
    }
}
