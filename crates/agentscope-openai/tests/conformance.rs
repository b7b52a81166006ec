//! The shared model conformance suite (`agentscope_test::model_conformance`): the same
//! scenarios, played by `ScriptedModel` and by the OpenAI client against a local server,
//! assemble into the same messages and fail the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use agentscope_openai::OpenAIChatModel;
use agentscope_test::model_conformance::{self, Scenario, Stop, Wire};
use serde_json::{Value, json};

struct OpenAI;

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

fn text_delta(text: &str) -> String {
    data(&json!({"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]}))
}

impl Wire for OpenAI {
    type Model = OpenAIChatModel;

    fn model(&self, base_url: &str) -> OpenAIChatModel {
        OpenAIChatModel::builder()
            .api_key(support::API_KEY)
            .base_url(base_url)
            .model("gpt-4o-mini")
            .timeout(Duration::from_secs(5))
            .max_retries(0)
            .build()
            .unwrap()
    }

    fn transcript(&self, scenario: &Scenario) -> String {
        support::scenarios::transcript(scenario.name).to_owned()
    }

    fn finish_reason(&self, stop: Stop) -> &'static str {
        support::scenarios::finish_reason(stop)
    }

    fn empty_response(&self) -> String {
        data(
            &json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant"},
            "finish_reason": "stop"}]}),
        ) + "data: [DONE]\n\n"
    }

    fn mid_stream_error(&self, partial: &str, message: &str) -> String {
        text_delta(partial) + &data(&json!({"error": {"message": message, "type": "server_error"}}))
    }

    fn cut_off(&self, partial: &str) -> String {
        text_delta(partial)
    }

    fn error_body(&self, message: &str) -> Value {
        json!({"error": {"message": message, "type": "requests"}})
    }

    fn signs_thinking(&self) -> bool {
        false
    }
}

#[tokio::test]
async fn the_openai_client_passes_the_shared_conformance_suite() {
    model_conformance::check(&OpenAI).await;
}
