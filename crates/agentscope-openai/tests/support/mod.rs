//! Shared test support: the OpenAI transcripts of the conformance scenarios, the builder.
#![allow(dead_code, unreachable_pub, unused_imports)]

pub mod scenarios;

use std::time::Duration;

use agentscope_openai::{OpenAIChatModel, OpenAIChatModelBuilder};

pub use agentscope_test::http::{HttpReply, Recorded, TestServer};
pub use agentscope_test::model_conformance::{Outcome, hello, run};

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
