//! Event modifications: every setter of the DESIGN section 3 table has its effect exactly
//! where documented (memory, model requests, tool execution, stream, reply), and changes
//! chain from one hook to the next.

use std::sync::{Arc, Mutex};

use crate::support::describe::parsed::{describe, memory_of};
use crate::support::describe::{line, tool_names};
use crate::support::failures::hook_error;
use crate::support::fixtures::{CANCELLED, calc_call};
use crate::support::hooks::{on, on_event};
use crate::support::recorded::{events_of, kinds};
use agentscope::prelude::*;
use agentscope::{BoxedHook, ModelRequest, PostActingEvent, ReActAgentBuilder};
use agentscope_test::tools::{Calculator, EchoTool};
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

use agentscope::HookEventType as K;

fn agent_with(
    model: &ScriptedModel,
    toolkit: Toolkit,
    hooks: impl IntoIterator<Item = BoxedHook>,
) -> ReActAgent {
    ReActAgent::builder()
        .sys_prompt("seed")
        .model(model.clone())
        .toolkit(toolkit)
        .hooks(hooks)
        .build()
        .unwrap()
}

fn calculator_agent(
    model: &ScriptedModel,
    calc: &Calculator,
    hooks: impl IntoIterator<Item = BoxedHook>,
) -> ReActAgent {
    agent_with(model, Toolkit::new().tool(calc.clone()), hooks)
}

/// A calculator agent (see [`calculator_agent`]) whose model calls the calculator on
/// `expression` (call "c1"), then answers `answer`; with its model and calculator.
fn calculating(
    expression: &str,
    answer: &str,
    hooks: impl IntoIterator<Item = BoxedHook>,
) -> (ReActAgent, ScriptedModel, Calculator) {
    let model = ScriptedModel::new([calc_call("c1", expression), ScriptedResponse::text(answer)]);
    let calc = Calculator::new();
    let agent = calculator_agent(&model, &calc, hooks);
    (agent, model, calc)
}

/// An agent built from `builder` with a calculator and `hook` that may reason once: its model
/// calls the calculator on "1+1" (call "c1"), so the call ends with the summary `summary`.
fn summarising(
    builder: ReActAgentBuilder,
    summary: &str,
    hook: BoxedHook,
) -> (ReActAgent, ScriptedModel) {
    let model = ScriptedModel::new([calc_call("c1", "1+1"), ScriptedResponse::text(summary)]);
    let agent = builder
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .max_iters(1)
        .hook(hook)
        .build()
        .unwrap();
    (agent, model)
}

/// An agent whose model answers "loop answer" and whose PostCall hook replaces the final
/// message with `replacement`.
fn replacing_the_final_message(replacement: &Msg) -> ReActAgent {
    let model = ScriptedModel::new([ScriptedResponse::text("loop answer")]);
    let replacement = replacement.clone();
    let hook = on_event!(PostCall, 10, |e| e.set_final_message(replacement.clone()));
    agent_with(&model, Toolkit::new(), [hook])
}

fn describe_all(msgs: &[Msg]) -> Vec<String> {
    msgs.iter().map(describe).collect()
}

fn request_messages(request: &ModelRequest) -> Vec<String> {
    describe_all(&request.messages)
}

fn slot<T>() -> Arc<Mutex<Option<T>>> {
    Arc::new(Mutex::new(None))
}

// ---------------------------------------------------------------------------------------
// PreCall
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn pre_call_set_input_messages_changes_what_is_stored_and_sent() {
    let model = ScriptedModel::new([ScriptedResponse::text("answer")]);
    let before = RecordingHook::new(5).with_interests(K::PreCall);
    let after = RecordingHook::new(20).with_interests(K::PreCall);
    let rewrite = on_event!(PreCall, 10, |e| {
        e.set_input_messages(vec![Msg::user("rewritten"), Msg::user("extra")]);
    });
    let agent = agent_with(
        &model,
        Toolkit::new(),
        [
            BoxedHook::new(before.clone()),
            rewrite,
            BoxedHook::new(after.clone()),
        ],
    );

    agent.call(Msg::user("original")).await.unwrap();

    let inputs = |hook: &RecordingHook| -> Vec<String> {
        match &hook.events()[0] {
            HookEvent::PreCall(e) => describe_all(e.input_messages()),
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(inputs(&before), [r#"user/user: text "original""#]);
    assert_eq!(
        inputs(&after),
        [
            r#"user/user: text "rewritten""#,
            r#"user/user: text "extra""#
        ]
    );
    assert_eq!(
        memory_of(&agent),
        [
            line::user("rewritten"),
            line::user("extra"),
            line::answer("answer"),
        ]
    );
    assert_eq!(
        request_messages(&model.requests()[0]),
        [
            r#"system/system: text "seed""#,
            r#"user/user: text "rewritten""#,
            r#"user/user: text "extra""#,
        ]
    );
}

#[tokio::test]
async fn pre_call_system_setters_change_the_base_of_every_model_request_of_the_call() {
    let replace = on_event!(PreCall, 10, |e| {
        e.set_system_message(Some(Msg::system("replaced")));
    });
    let append = on_event!(PreCall, 20, |e| e.append_system_content("appended"));
    let (agent, model, _) = calculating("1+1", "2", [replace, append]);

    agent.call(Msg::user("1+1?")).await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            describe(&request.messages[0]),
            r#"system/system: text "replaced" | text "appended""#
        );
    }
    assert_eq!(
        memory_of(&agent),
        line::calc_round_trip("1+1?", ("c1", "1+1", "2"), "2")
    );
}

#[tokio::test]
async fn pre_call_set_system_message_none_removes_the_system_message() {
    let model = ScriptedModel::new([ScriptedResponse::text("answer")]);
    let remove = on_event!(PreCall, 10, |e| e.set_system_message(None));
    let agent = agent_with(&model, Toolkit::new(), [remove]);

    agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(
        request_messages(&model.requests()[0]),
        [r#"user/user: text "q""#]
    );
}

#[tokio::test]
async fn pre_call_append_without_seed_creates_a_system_message() {
    let model = ScriptedModel::new([ScriptedResponse::text("answer")]);
    let append = on_event!(PreCall, 10, |e| e.append_system_content("created"));
    let agent = ReActAgent::builder()
        .model(model.clone())
        .hook(append)
        .build()
        .unwrap();

    agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(
        request_messages(&model.requests()[0]),
        [r#"system/system: text "created""#, r#"user/user: text "q""#]
    );
    assert_eq!(memory_of(&agent), [line::user("q"), line::answer("answer")]);
}

// ---------------------------------------------------------------------------------------
// PreReasoning
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn pre_reasoning_changes_apply_to_that_model_request_only_and_never_to_memory() {
    let model = ScriptedModel::new([calc_call("c1", "6*7"), ScriptedResponse::text("42")]);
    let calc = Calculator::new();
    let configured = GenerateOptions::default().temperature(0.5);
    let changed = GenerateOptions::default().temperature(0.1).max_tokens(7);
    let hook = {
        let changed = changed.clone();
        on_event!(PreReasoning, 10, |e| {
            if e.iteration() == 0 {
                e.set_input_messages(vec![Msg::user("only this")]);
                e.set_generate_options(changed.clone());
                e.append_system_content("for iteration 0");
            }
        })
    };
    let agent = ReActAgent::builder()
        .sys_prompt("seed")
        .model(model.clone())
        .toolkit(Toolkit::new().tool(calc.clone()))
        .generate_options(configured.clone())
        .hook(hook)
        .build()
        .unwrap();

    let reply = agent.call(Msg::user("6*7?")).await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        request_messages(&requests[0]),
        [
            r#"system/system: text "seed" | text "for iteration 0""#,
            r#"user/user: text "only this""#,
        ]
    );
    assert_eq!(requests[0].options, changed);
    assert_eq!(tool_names(&requests[0]), ["calculator"]);
    assert_eq!(
        request_messages(&requests[1]),
        [
            r#"system/system: text "seed""#,
            r#"user/user: text "6*7?""#,
            r#"assistant/assistant: tool_use c1 calculator {"expression":"6*7"}"#,
            r#"tool/calculator: tool_result c1 calculator "42""#,
        ]
    );
    assert_eq!(requests[1].options, configured);
    assert_eq!(tool_names(&requests[1]), ["calculator"]);
    assert_eq!(reply.text(), "42");
    assert_eq!(
        memory_of(&agent),
        line::calc_round_trip("6*7?", ("c1", "6*7", "42"), "42")
    );
}

#[tokio::test]
async fn pre_reasoning_set_system_message_replaces_it_for_that_request_only() {
    let hook = on_event!(PreReasoning, 10, |e| {
        match e.iteration() {
            0 => e.set_system_message(Some(Msg::system("iteration zero only"))),
            _ => e.set_system_message(None),
        }
    });
    let (agent, model, _) = calculating("1+2", "3", [hook]);

    agent.call(Msg::user("1+2?")).await.unwrap();

    let requests = model.requests();
    assert_eq!(
        describe(&requests[0].messages[0]),
        r#"system/system: text "iteration zero only""#
    );
    assert_eq!(
        describe(&requests[1].messages[0]),
        r#"user/user: text "1+2?""#
    );
    assert_eq!(requests[1].messages.len(), 3);
}

// ---------------------------------------------------------------------------------------
// PostReasoning
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn post_reasoning_set_reasoning_message_replacing_a_tool_call_with_text_runs_no_tool() {
    let model = ScriptedModel::new([calc_call("c1", "1+1")]);
    let calc = Calculator::new();
    let rec = RecordingHook::new(200);
    let replace = on_event!(PostReasoning, 10, |e| {
        e.set_reasoning_message(
            Msg::builder()
                .role(Role::Assistant)
                .text("No tools needed.")
                .build(),
        );
    });
    let agent = calculator_agent(&model, &calc, [replace, BoxedHook::new(rec.clone())]);

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(
        describe(&reply),
        r#"assistant/assistant: text "No tools needed." <ModelStop>"#
    );
    assert_eq!(calc.log().count(), 0);
    assert_eq!(model.request_count(), 1);
    assert_eq!(
        rec.types_without_chunks(),
        [K::PreCall, K::PreReasoning, K::PostReasoning, K::PostCall]
    );
    assert_eq!(
        memory_of(&agent),
        [line::user("q"), line::answer("No tools needed.")]
    );
}

#[tokio::test]
async fn post_reasoning_set_reasoning_message_adding_a_tool_call_runs_that_tool() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("guess: 5"),
        ScriptedResponse::text("4"),
    ]);
    let calc = Calculator::new();
    let replace = on_event!(PostReasoning, 10, |e| {
        if e.iteration() == 0 {
            e.set_reasoning_message(
                Msg::builder()
                    .role(Role::Assistant)
                    .block(ToolUseBlock::new(
                        "c9",
                        "calculator",
                        json!({"expression": "2+2"}),
                    ))
                    .build(),
            );
        }
    });
    let agent = calculator_agent(&model, &calc, [replace]);

    let reply = agent.call(Msg::user("2+2?")).await.unwrap();

    assert_eq!(reply.text(), "4");
    assert_eq!(calc.log().calls(), [json!({"expression": "2+2"})]);
    assert_eq!(
        memory_of(&agent),
        line::calc_round_trip("2+2?", ("c9", "2+2", "4"), "4")
    );
}

// ---------------------------------------------------------------------------------------
// PreActing
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn pre_acting_set_tool_use_changes_what_executes() {
    let rec = RecordingHook::new(200).with_interests(K::PostActing);
    let change = on_event!(PreActing, 10, |e| {
        let mut tool_use = e.tool_use().clone();
        tool_use.input = json!({"expression": "6*7"}).into();
        e.set_tool_use(tool_use)?;
    });
    let (agent, _, calc) = calculating("1+1", "42", [change, BoxedHook::new(rec.clone())]);

    agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(calc.log().calls(), [json!({"expression": "6*7"})]);
    match &rec.events()[0] {
        HookEvent::PostActing(e) => {
            assert_eq!(e.tool_use().input, json!({"expression": "6*7"}));
            assert_eq!(e.tool_result().text_output(), "42");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        memory_of(&agent),
        [
            r#"user/user: text "q""#,
            // The stored reasoning message is what the model said.
            r#"assistant/assistant: tool_use c1 calculator {"expression":"1+1"}"#,
            r#"tool/calculator: tool_result c1 calculator "42""#,
            r#"assistant/assistant: text "42" <ModelStop>"#,
        ]
    );
}

#[tokio::test]
async fn pre_acting_set_tool_use_with_another_id_is_rejected_and_fails_the_call() {
    let setter_result = slot::<Result<(), HookError>>();
    let change = {
        let setter_result = Arc::clone(&setter_result);
        BoxedHook::new(
            hook_fn(move |event: &mut HookEvent| {
                if let HookEvent::PreActing(e) = event {
                    let mut tool_use = e.tool_use().clone();
                    tool_use.id = "other".into();
                    let result = e.set_tool_use(tool_use);
                    *setter_result.lock().unwrap() = Some(result.clone());
                    result?;
                }
                Ok(())
            })
            .with_name("id-changer"),
        )
    };
    let (agent, model, calc) = calculating("1+1", "never", [change]);

    let err = agent.call(Msg::user("q")).await.unwrap_err();

    let expected_message = "set_tool_use must keep the tool call id 'c1' (got 'other')";
    match setter_result.lock().unwrap().clone() {
        Some(Err(HookError::InvalidModification { message })) => {
            assert_eq!(message, expected_message);
        }
        other => panic!("setter returned {other:?}"),
    }
    let source = hook_error(&err, "id-changer", K::PreActing);
    assert!(
        matches!(source, HookError::InvalidModification { message } if message == expected_message),
        "{source:?}"
    );
    assert_eq!(calc.log().count(), 0);
    assert_eq!(model.request_count(), 1);
    assert_eq!(
        memory_of(&agent),
        [
            r#"user/user: text "q""#,
            r#"assistant/assistant: tool_use c1 calculator {"expression":"1+1"}"#,
            &format!("tool/calculator: tool_result c1 calculator error {CANCELLED:?}"),
        ]
    );
}

#[tokio::test]
async fn pre_acting_rejected_id_change_leaves_the_event_unchanged() {
    let change = on_event!(PreActing, 10, |e| {
        let result = e.set_tool_use(ToolUseBlock::new(
            "other",
            "calculator",
            json!({"expression": "9*9"}),
        ));
        assert!(matches!(result, Err(HookError::InvalidModification { .. })));
        assert_eq!(e.tool_use().id, "c1");
        assert_eq!(e.tool_use().input, json!({"expression": "1+1"}));
    });
    let (agent, _, calc) = calculating("1+1", "2", [change]);

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(reply.text(), "2");
    assert_eq!(calc.log().calls(), [json!({"expression": "1+1"})]);
}

#[tokio::test]
async fn pre_acting_skip_with_does_not_run_the_tool_and_stores_the_skip_result() {
    let rec = RecordingHook::new(200);
    let skip = on_event!(PreActing, 10, |e| {
        // Id and name are normalised to the call's.
        e.skip_with(ToolResultBlock::text("whatever", "whatever", "cached: 42"));
    });
    let (agent, model, calc) = calculating("6*7", "cached", [skip, BoxedHook::new(rec.clone())]);

    agent.call(Msg::user("6*7?")).await.unwrap();

    assert_eq!(calc.log().count(), 0);
    assert_eq!(
        rec.types_without_chunks(),
        kinds(
            "PreCall PreReasoning PostReasoning PreActing PostActing PreReasoning \
             PostReasoning PostCall"
        )
    );
    let post_acting: Vec<ToolResultBlock> = events_of::<PostActingEvent>(&rec)
        .iter()
        .map(|e| e.tool_result().clone())
        .collect();
    assert_eq!(
        post_acting,
        [ToolResultBlock::text("c1", "calculator", "cached: 42")]
    );
    assert_eq!(
        memory_of(&agent),
        line::calc_round_trip("6*7?", ("c1", "6*7", "cached: 42"), "cached")
    );
    assert_eq!(
        describe(model.requests()[1].messages.last().unwrap()),
        r#"tool/calculator: tool_result c1 calculator "cached: 42""#
    );
}

// ---------------------------------------------------------------------------------------
// PostActing
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn post_acting_set_tool_result_reaches_memory_stream_and_model() {
    let later = RecordingHook::new(200).with_interests(K::PostActing);
    let redact = on_event!(PostActing, 10, |e| {
        e.set_tool_result(ToolResultBlock::text("x", "y", "redacted"));
    });
    let (agent, model, calc) = calculating("6*7", "ok", [redact, BoxedHook::new(later.clone())]);

    let events: Vec<Event> = agent
        .stream(Msg::user("6*7?"), StreamOptions::default())
        .map(Result::unwrap)
        .collect()
        .await;

    assert_eq!(calc.log().count(), 1);
    let tool_events: Vec<(bool, String)> = events
        .iter()
        .filter(|e| e.event_type == EventType::ToolResult)
        .map(|e| (e.is_last, describe(&e.message)))
        .collect();
    assert_eq!(
        tool_events,
        [(
            true,
            r#"tool/calculator: tool_result c1 calculator "redacted""#.to_owned()
        )]
    );
    match &later.events()[0] {
        HookEvent::PostActing(e) => {
            assert_eq!(
                e.tool_result(),
                &ToolResultBlock::text("c1", "calculator", "redacted")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        memory_of(&agent),
        line::calc_round_trip("6*7?", ("c1", "6*7", "redacted"), "ok")
    );
    assert_eq!(
        describe(model.requests()[1].messages.last().unwrap()),
        r#"tool/calculator: tool_result c1 calculator "redacted""#
    );
}

// ---------------------------------------------------------------------------------------
// PostSummary and PostCall
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn pre_summary_changes_apply_to_the_summary_request_only_and_never_to_memory() {
    const SUMMARY_HINT: &str = "You have failed to generate response within the maximum iterations. Now respond directly by summarizing the current situation.";
    let seen_input = slot::<Vec<String>>();
    let hook = {
        let seen_input = Arc::clone(&seen_input);
        on_event!(PreSummary, 10, |e| {
            *seen_input.lock().unwrap() = Some(describe_all(e.input_messages()));
            e.set_input_messages(vec![Msg::user("just summarise")]);
            e.set_generate_options(GenerateOptions::default().max_tokens(3));
            e.append_system_content("summary mode");
        })
    };
    let (agent, model) = summarising(ReActAgent::builder().sys_prompt("seed"), "summary", hook);

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(
        seen_input.lock().unwrap().clone().unwrap(),
        [
            r#"user/user: text "q""#.to_owned(),
            r#"assistant/assistant: tool_use c1 calculator {"expression":"1+1"}"#.to_owned(),
            r#"tool/calculator: tool_result c1 calculator "2""#.to_owned(),
            format!("user/user: text {SUMMARY_HINT:?}"),
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        request_messages(&requests[1]),
        [
            r#"system/system: text "seed" | text "summary mode""#,
            r#"user/user: text "just summarise""#,
        ]
    );
    assert_eq!(
        requests[1].options,
        GenerateOptions::default().max_tokens(3)
    );
    assert!(requests[1].tools.is_empty());
    assert_eq!(
        describe(&reply),
        r#"assistant/assistant: text "summary" <MaxIterations>"#
    );
    assert_eq!(
        memory_of(&agent),
        [
            r#"user/user: text "q""#,
            r#"assistant/assistant: tool_use c1 calculator {"expression":"1+1"}"#,
            r#"tool/calculator: tool_result c1 calculator "2""#,
            r#"assistant/assistant: text "summary" <MaxIterations>"#,
        ]
    );
}

#[tokio::test]
async fn post_summary_set_summary_message_is_stored_and_returned() {
    let edit = on_event!(PostSummary, 10, |e| {
        assert_eq!(e.summary_message().text(), "raw summary");
        e.set_summary_message(Msg::assistant("edited summary"));
    });
    let (agent, _) = summarising(ReActAgent::builder(), "raw summary", edit);

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(
        describe(&reply),
        r#"assistant/assistant: text "edited summary" <MaxIterations>"#
    );
    assert_eq!(
        memory_of(&agent),
        [
            r#"user/user: text "q""#,
            r#"assistant/assistant: tool_use c1 calculator {"expression":"1+1"}"#,
            r#"tool/calculator: tool_result c1 calculator "2""#,
            r#"assistant/assistant: text "edited summary" <MaxIterations>"#,
        ]
    );
}

#[tokio::test]
async fn post_call_set_final_message_changes_only_what_the_caller_gets() {
    let replacement = Msg::assistant("caller answer");
    let agent = replacing_the_final_message(&replacement);

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(reply, replacement);
    assert_eq!(
        memory_of(&agent),
        [line::user("q"), line::answer("loop answer")]
    );
}

#[tokio::test]
async fn post_call_set_final_message_reaches_the_stream_result() {
    let agent = replacing_the_final_message(&Msg::assistant("caller answer"));

    let events: Vec<Event> = agent
        .stream(Msg::user("q"), StreamOptions::default())
        .map(Result::unwrap)
        .collect()
        .await;

    let last = events.last().unwrap();
    assert_eq!(last.event_type, EventType::AgentResult);
    assert_eq!(last.message.text(), "caller answer");
    assert_eq!(
        memory_of(&agent),
        [line::user("q"), line::answer("loop answer")]
    );
}

// ---------------------------------------------------------------------------------------
// Chaining: a later hook sees an earlier hook's change
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn pre_reasoning_changes_chain_from_hook_to_hook() {
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    let seen_by_b = slot::<(String, GenerateOptions)>();
    let a = on_event!(PreReasoning, 10, |e| {
        e.append_system_content("A");
        e.set_generate_options(GenerateOptions::default().temperature(0.1));
    });
    let b = {
        let seen_by_b = Arc::clone(&seen_by_b);
        on_event!(PreReasoning, 20, |e| {
            *seen_by_b.lock().unwrap() = Some((
                describe(e.system_message().unwrap()),
                e.generate_options().clone(),
            ));
            e.append_system_content("B");
            let options = e.generate_options().clone().max_tokens(9);
            e.set_generate_options(options);
        })
    };
    // Registered in reverse: priorities, not registration, decide.
    let agent = agent_with(&model, Toolkit::new(), [b, a]);

    agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(
        seen_by_b.lock().unwrap().clone(),
        Some((
            r#"system/system: text "seed" | text "A""#.to_owned(),
            GenerateOptions::default().temperature(0.1)
        ))
    );
    let request = &model.requests()[0];
    assert_eq!(
        describe(&request.messages[0]),
        r#"system/system: text "seed" | text "A" | text "B""#
    );
    assert_eq!(
        request.options,
        GenerateOptions::default().temperature(0.1).max_tokens(9)
    );
}

#[tokio::test]
async fn pre_acting_and_post_acting_changes_chain_from_hook_to_hook() {
    let bump = |from: &'static str, to: &'static str, priority: i32| -> BoxedHook {
        on_event!(PreActing, priority, |e| {
            assert_eq!(e.tool_use().input, json!({ "expression": from }));
            let mut tool_use = e.tool_use().clone();
            tool_use.input = json!({ "expression": to }).into();
            e.set_tool_use(tool_use)?;
        })
    };
    let annotate = |suffix: &'static str, priority: i32| -> BoxedHook {
        on_event!(PostActing, priority, |e| {
            let text = format!("{}{suffix}", e.tool_result().text_output());
            e.set_tool_result(ToolResultBlock::text("", "", text));
        })
    };
    let (agent, _, calc) = calculating(
        "1+1",
        "done",
        [
            bump("2+2", "3+3", 20),
            bump("1+1", "2+2", 10),
            annotate("-A", 10),
            annotate("-B", 20),
        ],
    );

    agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(calc.log().calls(), [json!({"expression": "3+3"})]);
    assert_eq!(
        describe(&agent.memory().messages()[2]),
        r#"tool/calculator: tool_result c1 calculator "6-A-B""#
    );
}

#[tokio::test]
async fn post_call_and_post_reasoning_changes_chain_from_hook_to_hook() {
    let model = ScriptedModel::new([ScriptedResponse::text("x")]);
    let suffix = |kind: HookEventType, priority: i32, suffix: &'static str| -> BoxedHook {
        on(kind, priority, move |event| {
            match event {
                HookEvent::PostReasoning(e) => {
                    let text = format!("{}{suffix}", e.reasoning_message().text());
                    e.set_reasoning_message(Msg::assistant(text));
                }
                HookEvent::PostCall(e) => {
                    let text = format!("{}{suffix}", e.final_message().text());
                    e.set_final_message(Msg::assistant(text));
                }
                _ => {}
            }
            Ok(())
        })
    };
    let agent = agent_with(
        &model,
        Toolkit::new(),
        [
            suffix(K::PostCall, 20, "-d"),
            suffix(K::PostReasoning, 10, "-a"),
            suffix(K::PostCall, 10, "-c"),
            suffix(K::PostReasoning, 20, "-b"),
        ],
    );

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(reply.text(), "x-a-b-c-d");
    assert_eq!(memory_of(&agent), [line::user("q"), line::answer("x-a-b")]);
}

#[tokio::test]
async fn pre_acting_set_tool_use_can_switch_to_another_tool() {
    let model = ScriptedModel::new([calc_call("c1", "1+1"), ScriptedResponse::text("done")]);
    let calc = Calculator::new();
    let echo = EchoTool::new();
    let switch = on_event!(PreActing, 10, |e| {
        e.set_tool_use(ToolUseBlock::new("c1", "echo", json!({"text": "hello"})))?;
    });
    let agent = agent_with(
        &model,
        Toolkit::new().tool(calc.clone()).tool(echo.clone()),
        [switch],
    );

    agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(calc.log().count(), 0);
    assert_eq!(echo.log().calls(), [json!({"text": "hello"})]);
    assert_eq!(
        describe(&agent.memory().messages()[2]),
        r#"tool/echo: tool_result c1 echo "hello""#
    );
}
