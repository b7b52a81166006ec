//! Shared test support: the local HTTP server, the response scenarios, helpers.
#![allow(dead_code, unreachable_pub, unused_imports)]

pub mod scenarios;
pub mod server;

use std::time::Duration;

use agentscope_core::{ChatAccumulator, ChatResponse, Model, ModelError, ModelRequest, Msg};
use agentscope_openai::{OpenAIChatModel, OpenAIChatModelBuilder};
use futures::StreamExt;

pub use server::{Recorded, Reply, TestServer};

pub const API_KEY: &str = "sk-test-3f9a1c2e7b";

/// A builder pointed at `server`, with the test key, fast retries and a short timeout.
pub fn builder(server: &TestServer) -> OpenAIChatModelBuilder {
    OpenAIChatModel::builder()
        .api_key(API_KEY)
        .base_url(server.base_url())
        .model("gpt-4o-mini")
        .timeout(Duration::from_secs(5))
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(5))
}

/// What a model call produced: the chunks received, and the assembled message or the
/// error that ended the call or its stream.
pub struct Outcome {
    pub chunks: Vec<ChatResponse>,
    pub result: Result<Msg, ModelError>,
}

/// Calls `model`, reads its stream to the end and assembles the chunks.
pub async fn run(model: &impl Model, request: ModelRequest) -> Outcome {
    let mut chunks = Vec::new();
    let mut stream = match model.stream(request).await {
        Ok(stream) => stream,
        Err(err) => {
            return Outcome {
                chunks,
                result: Err(err),
            };
        }
    };
    let mut acc = ChatAccumulator::new("assistant");
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => {
                acc.push(&chunk);
                chunks.push(chunk);
            }
            Err(err) => {
                // The stream must end after an error.
                assert!(
                    stream.next().await.is_none(),
                    "stream continued after {err}"
                );
                return Outcome {
                    chunks,
                    result: Err(err),
                };
            }
        }
    }
    Outcome {
        chunks,
        result: Ok(acc.finish()),
    }
}

/// A request with one user message.
pub fn hello() -> ModelRequest {
    ModelRequest {
        messages: vec![Msg::user("Hello")],
        ..ModelRequest::default()
    }
}
