//! Structured output (`call_structured`): the exact memory and model requests for a direct answer, a text answer that draws a reminder, invalid arguments, running out of reminders, real tool calls before the answer, and calls that end without a value.

use crate::support::describe::tool_names;
use crate::support::failures::hook_error;
use crate::support::fixtures::{build_agent, recorded_agent};
use agentscope::hooks::StructuredOutputHook;
use agentscope::prelude::*;
use agentscope::{BoxedHook, ModelRequest, ToolChoice};
use agentscope_test::tools::Calculator;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct City {
    /// The city's name.
    name: String,
    /// Its population.
    population: u64,
}

fn paris() -> Value {
    json!({"name": "Paris", "population": 2_100_000})
}

fn paris_city() -> City {
    City {
        name: "Paris".into(),
        population: 2_100_000,
    }
}

/// Role, name, content and the whole metadata of a message.
type Row = (Role, String, Vec<ContentBlock>, Value);

fn rows(messages: &[Msg]) -> Vec<Row> {
    messages
        .iter()
        .map(|m| {
            (
                m.role,
                m.name.to_string(),
                m.content.to_vec(),
                Value::Object(m.metadata.clone().into_map()),
            )
        })
        .collect()
}

fn user(text: &str) -> Row {
    (
        Role::User,
        "user".into(),
        vec![ContentBlock::text(text)],
        json!({}),
    )
}

fn reminder() -> Row {
    (
        Role::User,
        "user".into(),
        vec![ContentBlock::text(StructuredOutputHook::REMINDER)],
        json!({"structured_output_reminder": true}),
    )
}

fn text_answer(text: &str) -> Row {
    (
        Role::Assistant,
        "assistant".into(),
        vec![ContentBlock::text(text)],
        json!({}),
    )
}

fn calls(blocks: &[(&str, &str, Value)]) -> Row {
    (
        Role::Assistant,
        "assistant".into(),
        blocks
            .iter()
            .map(|(id, name, input)| ToolUseBlock::new(*id, *name, input.clone()).into())
            .collect(),
        json!({}),
    )
}

fn result(id: &str, name: &str, output: &str, is_error: bool) -> Row {
    let block = if is_error {
        ToolResultBlock::error(id, name, output)
    } else {
        ToolResultBlock::text(id, name, output)
    };
    (Role::Tool, name.into(), vec![block.into()], json!({}))
}

fn final_row(value: &Value) -> Row {
    (
        Role::Assistant,
        "assistant".into(),
        vec![ContentBlock::text(value.to_string())],
        json!({"structured_output": value, "generate_reason": "structured_output"}),
    )
}

/// The memory of a structured call on `question` that called the calculator (`c1`) on
/// `expression`, got `output`, and answered Paris.
fn calculated(question: &str, expression: &str, output: &str) -> Vec<Row> {
    vec![
        user(question),
        calls(&[("c1", "calculator", json!({ "expression": expression }))]),
        result("c1", "calculator", output, false),
        final_row(&paris()),
    ]
}

/// What the model saw: role, content and metadata of each message (no system prompt is set).
fn seen(request: &ModelRequest) -> Vec<Row> {
    rows(&request.messages)
}

/// Makes the structured call `question` on `agent` and checks that it returns Paris.
async fn assert_paris(agent: &ReActAgent, question: &str) {
    let city: City = agent.call_structured(question).await.unwrap();
    assert_eq!(city, paris_city());
}

/// Checks that `agent`'s memory holds the question and the final answer (Paris) only: what
/// led to it (text answers, reminders, invalid calls) is gone.
fn assert_only_the_answer_is_kept(agent: &ReActAgent, question: &str) {
    assert_eq!(
        rows(&agent.memory().messages()),
        vec![user(question), final_row(&paris())]
    );
}

fn agent(model: &ScriptedModel) -> ReActAgent {
    ReActAgent::builder().model(model.clone()).build().unwrap()
}

fn agent_with_calculator(model: &ScriptedModel, calc: &Calculator) -> ReActAgent {
    build_agent(model, Toolkit::new().tool(calc.clone()), Vec::new())
}

#[tokio::test]
async fn a_direct_answer_returns_the_value_and_one_final_message() {
    let model = ScriptedModel::new([ScriptedResponse::tool_call(
        "g1",
        "generate_response",
        paris(),
    )]);
    let agent = agent(&model);

    let (city, reply) = agent
        .call_structured_with_message::<City>("capital of France?")
        .await
        .unwrap();

    assert_eq!(city, paris_city());
    assert_eq!(reply.text(), paris().to_string());
    assert_eq!(reply.metadata["structured_output"], paris());
    assert_eq!(
        reply.generate_reason(),
        Some(GenerateReason::StructuredOutput)
    );
    let memory = agent.memory().messages();
    assert_eq!(
        rows(&memory),
        vec![user("capital of France?"), final_row(&paris())]
    );
    assert_eq!(memory[1], reply, "the caller gets the stored final message");

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(seen(&requests[0]), vec![user("capital of France?")]);
    assert_eq!(tool_names(&requests[0]), ["generate_response"]);
    assert_eq!(
        *requests[0].tools[0].parameters,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The city's name."},
                "population": {
                    "type": "integer",
                    "format": "uint64",
                    "minimum": 0,
                    "description": "Its population."
                }
            },
            "required": ["name", "population"]
        })
    );
    assert_eq!(requests[0].options.tool_choice, ToolChoice::Auto);
}

#[tokio::test]
async fn the_hook_and_tool_exist_for_that_call_only() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("g1", "generate_response", paris()),
        ScriptedResponse::text("plain"),
    ]);
    let (agent, rec) = recorded_agent(&model, Toolkit::new());
    let order_before = agent.hook_order();

    let _: City = agent.call_structured("q").await.unwrap();
    let reply = agent.call("next").await.unwrap();

    assert_eq!(reply.text(), "plain");
    assert!(model.requests()[1].tools.is_empty());
    assert_eq!(agent.hook_order(), order_before);
    // PostCall hooks see the final structured message.
    let post_calls: Vec<Msg> = rec
        .events()
        .into_iter()
        .filter_map(|event| match event {
            HookEvent::PostCall(e) => Some(e.final_message().clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        post_calls[0].generate_reason(),
        Some(GenerateReason::StructuredOutput)
    );
    assert_eq!(post_calls[0].metadata["structured_output"], paris());
}

#[tokio::test]
async fn a_text_answer_gets_a_reminder_and_then_a_forced_tool_choice() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("It is Paris."),
        ScriptedResponse::tool_call("g1", "generate_response", paris()),
    ]);
    let agent = agent(&model);

    assert_paris(&agent, "capital of France?").await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].options.tool_choice, ToolChoice::Auto);
    assert_eq!(
        seen(&requests[1]),
        vec![
            user("capital of France?"),
            // A message answered by a goto is stored without a generate reason.
            text_answer("It is Paris."),
            reminder(),
        ]
    );
    assert_eq!(
        requests[1].options.tool_choice,
        ToolChoice::Specific("generate_response".into())
    );
    assert_eq!(tool_names(&requests[1]), ["generate_response"]);
    assert_only_the_answer_is_kept(&agent, "capital of France?");
}

#[tokio::test]
async fn invalid_arguments_go_back_to_the_model_as_an_error_result() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("g1", "generate_response", json!({"name": "Paris"})),
        ScriptedResponse::tool_call("g2", "generate_response", paris()),
    ]);
    let agent = agent(&model);

    assert_paris(&agent, "capital of France?").await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        seen(&requests[1]),
        vec![
            user("capital of France?"),
            calls(&[("g1", "generate_response", json!({"name": "Paris"}))]),
            result(
                "g1",
                "generate_response",
                "Error: Parameter validation failed for tool 'generate_response': \"population\" is a required property",
                true,
            ),
        ]
    );
    // The model was not reminded: it called the tool, so the choice stays its own.
    assert_eq!(requests[1].options.tool_choice, ToolChoice::Auto);
    assert_only_the_answer_is_kept(&agent, "capital of France?");
}

#[tokio::test]
async fn three_reminders_then_a_text_answer_fail_the_call_and_leave_memory_as_before() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("one"),
        ScriptedResponse::text("two"),
        ScriptedResponse::text("three"),
        ScriptedResponse::text("four"),
    ]);
    let rec = RecordingHook::new(100).with_interests(HookEventType::Error);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .hook(rec.clone())
        .build()
        .unwrap();

    let err = agent
        .call_structured::<City>("capital of France?")
        .await
        .unwrap_err();

    let source = hook_error(&err, "structured_output", HookEventType::PostReasoning);
    assert_eq!(
        source.to_string(),
        "the model did not call generate_response after 3 reminders"
    );
    assert_eq!(rec.types(), [HookEventType::Error]);
    // The last request carried every answer and reminder so far, with the tool forced.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let answer = text_answer;
    assert_eq!(
        seen(&requests[3]),
        vec![
            user("capital of France?"),
            answer("one"),
            reminder(),
            answer("two"),
            reminder(),
            answer("three"),
            reminder(),
        ]
    );
    assert_eq!(
        requests[3].options.tool_choice,
        ToolChoice::Specific("generate_response".into())
    );
    // Memory is cleaned on failure too: the text answers and reminders are gone, and the
    // input, which nothing answered, is taken back.
    assert!(agent.memory().is_empty());
    // The agent is usable again.
    model.push(ScriptedResponse::text("hello"));
    assert_eq!(agent.call("hi").await.unwrap().text(), "hello");
}

#[tokio::test]
async fn real_tool_calls_before_the_answer_stay_in_memory() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "2000000+100000"})),
        ScriptedResponse::tool_call("g1", "generate_response", paris()),
    ]);
    let calc = Calculator::new();
    let agent = agent_with_calculator(&model, &calc);

    assert_paris(&agent, "capital of France?").await;
    assert_eq!(calc.log().count(), 1);
    let requests = model.requests();
    assert_eq!(
        tool_names(&requests[0]),
        ["calculator", "generate_response"]
    );
    assert_eq!(
        rows(&agent.memory().messages()),
        calculated("capital of France?", "2000000+100000", "2100000")
    );
}

#[tokio::test]
async fn a_real_call_next_to_generate_response_keeps_its_call_and_result() {
    let model = ScriptedModel::new([ScriptedResponse::tool_calls([
        ("c1", "calculator", json!({"expression": "1+1"})),
        ("g1", "generate_response", paris()),
    ])]);
    let calc = Calculator::new();
    let agent = agent_with_calculator(&model, &calc);

    assert_paris(&agent, "q").await;
    assert_eq!(model.request_count(), 1);
    assert_eq!(
        rows(&agent.memory().messages()),
        calculated("q", "1+1", "2")
    );
}

#[tokio::test]
async fn earlier_history_is_left_alone() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("hello"),
        ScriptedResponse::text("Paris, I think."),
        ScriptedResponse::tool_call("g1", "generate_response", paris()),
    ]);
    let agent = agent(&model);
    agent.call("hi").await.unwrap();

    assert_paris(&agent, "capital?").await;
    assert_eq!(
        rows(&agent.memory().messages()),
        vec![
            user("hi"),
            (
                Role::Assistant,
                "assistant".into(),
                vec![ContentBlock::text("hello")],
                json!({"generate_reason": "model_stop"}),
            ),
            user("capital?"),
            final_row(&paris()),
        ]
    );
}

/// Checks that `err` says the call ended (with `reason`) before the model called
/// generate_response, and that the call's reply, `reply`, is kept as the last of the `len`
/// messages of `agent`'s memory.
fn assert_ended_without_a_value(
    err: &AgentError,
    agent: &ReActAgent,
    reason: &str,
    reply: &str,
    len: usize,
) {
    assert_eq!(
        err.to_string(),
        format!(
            "structured output failed: the call ended before the model called \
             generate_response (it ended with {reason})"
        )
    );
    let memory = agent.memory().messages();
    assert_eq!(memory.len(), len);
    assert_eq!(memory[len - 1].text(), reply);
}

#[tokio::test]
async fn a_call_that_ends_without_a_value_fails_and_keeps_its_reply() {
    // The iteration limit is reached while the model keeps calling the calculator.
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "1+1"})),
        ScriptedResponse::text("summary"),
    ]);
    let calc = Calculator::new();
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(calc.clone()))
        .max_iters(1)
        .build()
        .unwrap();

    let err = agent.call_structured::<City>("q").await.unwrap_err();

    assert!(
        matches!(err, AgentError::StructuredOutput { .. }),
        "unexpected error: {err}"
    );
    assert_ended_without_a_value(&err, &agent, "MaxIterations", "summary", 4);
    let memory = agent.memory().messages();
    assert_eq!(
        memory[3].generate_reason(),
        Some(GenerateReason::MaxIterations)
    );
}

#[tokio::test]
async fn a_toolkit_with_its_own_generate_response_is_rejected() {
    let model = ScriptedModel::new([]);
    let clash = tool_fn(
        "generate_response",
        "mine",
        json!({"type": "object"}),
        |_, _| async { Ok("x") },
    );
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(clash))
        .build()
        .unwrap();

    let err = agent.call_structured::<City>("q").await.unwrap_err();

    assert!(matches!(err, AgentError::InvalidInput { .. }), "{err}");
    assert_eq!(model.request_count(), 0);
    assert!(agent.memory().is_empty());
}

#[tokio::test]
async fn another_hooks_stop_wins_over_the_reminder() {
    let model = ScriptedModel::new([ScriptedResponse::text("no")]);
    let stopper = hook_fn(|event| {
        if let HookEvent::PostReasoning(e) = event {
            e.stop_agent();
        }
        Ok(())
    });
    let agent = ReActAgent::builder()
        .model(model.clone())
        .hook(BoxedHook::new(stopper))
        .build()
        .unwrap();

    let err = agent.call_structured::<City>("q").await.unwrap_err();

    assert_ended_without_a_value(&err, &agent, "ReasoningStopRequested", "no", 2);
}

#[tokio::test]
async fn a_dropped_call_leaves_memory_clean_and_the_agent_free() {
    let model = ScriptedModel::new([
        ScriptedResponse::text("It is Paris."),
        ScriptedResponse::tool_call("g1", "generate_response", paris())
            .with_delay(std::time::Duration::from_secs(3600)),
    ]);
    let agent = agent(&model);

    let mut call = Box::pin(agent.call_structured::<City>("capital of France?"));
    // The first poll runs up to the second model call, which waits on the timer.
    assert!(futures::poll!(call.as_mut()).is_pending());
    assert_eq!(agent.memory().len(), 3, "input, text answer, reminder");
    drop(call);

    assert_eq!(
        rows(&agent.memory().messages()),
        vec![user("capital of France?")]
    );
    assert!(!agent.is_running());
}
