//! Conformance with `ScriptedModel`: the same scenarios, played by the scripted model and by
//! the OpenAI client against a local server, assemble into the same messages (and fail the
//! same way), so both feed the engine identically.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope_core::ModelError;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::json;
use support::scenarios::{self, Scenario, Step};
use support::{Outcome, Reply, TestServer, builder, hello, run};

fn scripted(scenario: &Scenario) -> ScriptedResponse {
    let chunks = scenario.steps.iter().map(|step| match *step {
        Step::Text(text) => ScriptedChunk::text(text),
        Step::Thinking(text) => ScriptedChunk::thinking(text),
        Step::ToolStart { id, name } => ScriptedChunk::tool_call_start(id, name),
        Step::ToolArgs(piece) => ScriptedChunk::tool_call_args(piece),
    });
    ScriptedResponse::chunks(chunks)
        .with_usage(scenario.usage.input_tokens, scenario.usage.output_tokens)
        .with_finish_reason(scenario.finish_reason)
}

async fn play_openai(reply: Reply) -> Outcome {
    let server = TestServer::start([reply]).await;
    let model = builder(&server).max_retries(0).build().unwrap();
    run(&model, hello()).await
}

async fn play_scripted(response: ScriptedResponse) -> Outcome {
    let model = ScriptedModel::new([response]);
    run(&model, hello()).await
}

#[tokio::test]
async fn every_scenario_assembles_identically_from_both_models() {
    for scenario in scenarios::all() {
        let openai = play_openai(Reply::sse(scenario.sse)).await.result.unwrap();
        let scripted = play_scripted(scripted(&scenario)).await.result.unwrap();
        assert_eq!(openai.content, scripted.content, "{}", scenario.name);
        assert_eq!(openai.metadata, scripted.metadata, "{}", scenario.name);
        assert_eq!(
            (openai.role, &openai.name),
            (scripted.role, &scripted.name),
            "{}",
            scenario.name
        );
        assert_eq!(openai.content, scenario.expected, "{}", scenario.name);
        assert_eq!(
            openai.metadata,
            scenario.expected_metadata(),
            "{}",
            scenario.name
        );
    }
}

#[tokio::test]
async fn a_mid_stream_error_looks_the_same_from_both_models() {
    let message = "The server had an error while processing your request.";
    let sse = format!(
        "data: {}\n\ndata: {}\n\n",
        json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "Partial"}}]}),
        json!({"error": {"message": message, "type": "server_error"}}),
    );
    let openai = play_openai(Reply::sse(&sse)).await;
    let scripted = play_scripted(ScriptedResponse::chunks([
        ScriptedChunk::text("Partial"),
        ScriptedChunk::error(message),
    ]))
    .await;
    for outcome in [&openai, &scripted] {
        let text: Vec<_> = outcome
            .chunks
            .iter()
            .flat_map(|c| &c.content)
            .cloned()
            .collect();
        assert_eq!(text, vec![agentscope_core::ContentBlock::text("Partial")]);
        assert!(
            matches!(&outcome.result, Err(ModelError::Stream { message: m }) if m == message),
            "{:?}",
            outcome.result
        );
    }
}

#[tokio::test]
async fn a_failure_before_output_looks_the_same_from_both_models() {
    let openai = play_openai(Reply::json(
        429,
        &json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
    ))
    .await;
    let scripted = play_scripted(ScriptedResponse::failure(ModelError::Status {
        status: 429,
        message: "Rate limit reached".into(),
        retry_after: None,
    }))
    .await;
    for outcome in [&openai, &scripted] {
        assert!(outcome.chunks.is_empty());
        let err = outcome.result.as_ref().unwrap_err();
        assert!(err.is_rate_limited());
        assert_eq!(err.to_string(), "HTTP 429: Rate limit reached");
    }
}
