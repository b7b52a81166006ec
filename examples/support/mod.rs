//! What the examples share: the model they run on. A real client when the environment
//! names an endpoint (OpenAI-compatible or Anthropic), otherwise an offline demo model.

use agentscope::prelude::*;
use agentscope::{BoxedModel, ChatStream, ModelError, ModelRequest};
use agentscope_anthropic::AnthropicModel;
use agentscope_openai::OpenAIChatModel;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::json;

/// The offline demo model (clearly not a language model): it plays a calculator call, then
/// streams an answer quoting the calculator's result from the conversation.
struct DemoModel {
    script: ScriptedModel,
}

impl DemoModel {
    fn new(question_expression: &str) -> Self {
        Self {
            script: ScriptedModel::new([ScriptedResponse::chunks([
                ScriptedChunk::thinking("The user wants arithmetic; I'll use the calculator."),
                ScriptedChunk::tool_call(
                    "call_1",
                    "calculator",
                    json!({"expression": question_expression}),
                ),
            ])])
            .with_name("demo-model (offline, scripted)"),
        }
    }
}

impl Model for DemoModel {
    fn model_name(&self) -> &str {
        self.script.model_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        // Once the calculator has answered, reply with its result, streamed word by word.
        let result = request
            .messages
            .iter()
            .flat_map(|m| m.tool_results())
            .last()
            .map(|r| r.text_output());
        if let Some(result) = result {
            let answer = format!("The answer is {result}.");
            let words: Vec<ScriptedChunk> = answer
                .split_inclusive(' ')
                .map(ScriptedChunk::text)
                .collect();
            self.script.push(ScriptedResponse::chunks(words));
        }
        self.script.stream(request).await
    }
}

/// The model: the OpenAI-compatible client when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set
/// (with optional `AGENTSCOPE_MODEL`; no key is sent when none is set, as keyless local
/// servers want), the Anthropic client when `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` is
/// set (with `AGENTSCOPE_MODEL`), otherwise the offline demo model, which asks the
/// calculator for `demo_expression`.
pub(crate) fn model(demo_expression: &str) -> Result<BoxedModel, ModelError> {
    let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
    if set("OPENAI_API_KEY") || set("OPENAI_BASE_URL") {
        let model = OpenAIChatModel::from_env()?;
        println!("model: {} at {}\n", model.model(), model.endpoint());
        return Ok(BoxedModel::new(model));
    }
    if set("ANTHROPIC_API_KEY") || set("ANTHROPIC_BASE_URL") {
        let model = AnthropicModel::from_env()?;
        println!("model: {} at {}\n", model.model(), model.endpoint());
        return Ok(BoxedModel::new(model));
    }
    println!(
        "model: offline demo model (set OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY \
         to use a real endpoint)\n"
    );
    Ok(BoxedModel::new(DemoModel::new(demo_expression)))
}
