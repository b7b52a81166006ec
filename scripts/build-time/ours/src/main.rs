//! The agentscope side of `scripts/build-time.sh`: the hello-world agent whose clean build
//! the script times. An OpenAI-compatible model from the environment, one `tool_fn` tool,
//! one call, the reply printed.
//!
//! ```sh
//! OPENAI_API_KEY=sk-... AGENTSCOPE_MODEL=gpt-4o-mini cargo run
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run    # a keyless local server
//! ```
//!
//! Without either variable it stops at `from_env` with the configuration error.

use agentscope::prelude::*;
use agentscope_openai::OpenAIChatModel;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = OpenAIChatModel::from_env()?;
    let add = tool_fn(
        "add",
        "Adds two integers.",
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]
        }),
        |input, _ctx| async move {
            match (input["a"].as_i64(), input["b"].as_i64()) {
                (Some(a), Some(b)) => Ok(a.saturating_add(b).to_string()),
                _ => Err(ToolError::invalid_arguments("a and b must be integers")),
            }
        },
    );
    let agent = ReActAgent::builder()
        .sys_prompt("You are a helpful assistant. Use the add tool for arithmetic.")
        .model(model)
        .toolkit(Toolkit::new().tool(add))
        .build()?;
    let reply = agent.call("What is 2 + 3?").await?;
    println!("{}", reply.text());
    Ok(())
}
