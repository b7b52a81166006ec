//! Token usage on the spans: each `chat` span its model call's counts, prompt-cache reads and
//! writes included, and the `invoke_agent` span their sums, all as integers.

use agentscope::ChatUsage;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};

use crate::golden::{export, tree};
use crate::in_memory::traced_calculator;

fn usage(node: &Value) -> Value {
    let attributes = node["attributes"].as_object().unwrap();
    attributes
        .iter()
        .filter(|(key, _)| key.starts_with("gen_ai.usage."))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

#[tokio::test]
async fn cache_reads_and_writes_are_counted_per_model_call_and_summed_per_call() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"}))
            .with_usage_detail(ChatUsage::new(1200, 5).with_cache_creation(1000)),
        ScriptedResponse::text("42")
            .with_usage_detail(ChatUsage::new(1230, 3).with_cache_read(1000)),
    ]);
    let agent = traced_calculator(model).build().unwrap();
    let spans = export(async {
        assert_eq!(agent.call("What is 6*7?").await.unwrap().text(), "42");
    })
    .await;
    let tree = tree(&spans);
    let call = &tree[0];
    let chats: Vec<Value> = call["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|child| child["name"] == "chat scripted-model")
        .map(usage)
        .collect();
    assert_eq!(
        chats,
        [
            json!({"gen_ai.usage.input_tokens": 1200, "gen_ai.usage.output_tokens": 5,
                   "gen_ai.usage.cache_creation.input_tokens": 1000}),
            json!({"gen_ai.usage.input_tokens": 1230, "gen_ai.usage.output_tokens": 3,
                   "gen_ai.usage.cache_read.input_tokens": 1000}),
        ]
    );
    assert_eq!(
        usage(call),
        json!({"gen_ai.usage.input_tokens": 2430, "gen_ai.usage.output_tokens": 8,
               "gen_ai.usage.cache_creation.input_tokens": 1000,
               "gen_ai.usage.cache_read.input_tokens": 1000})
    );
}
