//! Shared test support: a builder pointed at a local server, and the text fixture.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use agentscope_anthropic::{AnthropicModel, AnthropicModelBuilder};
use agentscope_test::http::TestServer;

pub const API_KEY: &str = "sk-ant-test-3f9a1c2e7b";

/// A builder pointed at `server`, with the test key, fast retries and a short timeout.
pub fn builder(server: &TestServer) -> AnthropicModelBuilder {
    AnthropicModel::builder()
        .api_key(API_KEY)
        .base_url(server.base_url())
        .model("claude-test")
        .timeout(Duration::from_secs(5))
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(5))
}

/// A fixture's text.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}.sse", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}
