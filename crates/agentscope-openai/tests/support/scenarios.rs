//! Recorded-style responses, each with the message it must assemble into.
//!
//! Every scenario is described twice: as the SSE body a server sends (`sse`), and as the
//! abstract delta steps a scripted model would play (`steps`). Both must assemble (through
//! `ChatAccumulator`) into `expected` with `usage`.

use agentscope_core::{ChatUsage, ContentBlock, ToolUseBlock};
use serde_json::{Value, json};

/// One delta of a scripted response.
#[derive(Debug, Clone)]
pub enum Step {
    Text(&'static str),
    Thinking(&'static str),
    /// The first fragment of a streamed tool call.
    ToolStart {
        id: &'static str,
        name: &'static str,
    },
    /// A piece of the current tool call's argument text.
    ToolArgs(&'static str),
}

/// A response scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub sse: &'static str,
    pub steps: Vec<Step>,
    pub usage: ChatUsage,
    pub finish_reason: &'static str,
    /// The content of the assembled message.
    pub expected: Vec<ContentBlock>,
}

impl Scenario {
    /// The assembled message's metadata.
    pub fn expected_metadata(&self) -> serde_json::Map<String, Value> {
        let mut metadata = serde_json::Map::new();
        metadata.insert("usage".into(), serde_json::to_value(self.usage).unwrap());
        metadata.insert("finish_reason".into(), self.finish_reason.into());
        metadata
    }
}

fn usage(input_tokens: u64, output_tokens: u64) -> ChatUsage {
    ChatUsage {
        input_tokens,
        output_tokens,
    }
}

fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ToolUseBlock::new(id, name, input).into()
}

pub fn text() -> Scenario {
    Scenario {
        name: "text",
        sse: include_str!("../fixtures/text.sse"),
        steps: ["Hello", "!", " How can I", " help you", " today?"]
            .map(Step::Text)
            .to_vec(),
        usage: usage(19, 10),
        finish_reason: "stop",
        expected: vec![ContentBlock::text("Hello! How can I help you today?")],
    }
}

pub fn thinking_text() -> Scenario {
    let mut steps: Vec<Step> = ["The user", " asks for", " 6 times 7", ".", " That is 42."]
        .map(Step::Thinking)
        .to_vec();
    steps.extend(["6", " × 7", " = **42**."].map(Step::Text));
    Scenario {
        name: "thinking_text",
        sse: include_str!("../fixtures/thinking_text.sse"),
        steps,
        usage: usage(17, 86),
        finish_reason: "stop",
        expected: vec![
            ContentBlock::thinking("The user asks for 6 times 7. That is 42."),
            ContentBlock::text("6 × 7 = **42**."),
        ],
    }
}

pub fn tool_call() -> Scenario {
    let mut steps = vec![Step::ToolStart {
        id: "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        name: "get_weather",
    }];
    steps.extend(["{\"", "location", "\":\"", "Paris", ",", " France", "\"}"].map(Step::ToolArgs));
    Scenario {
        name: "tool_call",
        sse: include_str!("../fixtures/tool_call.sse"),
        steps,
        usage: usage(67, 16),
        finish_reason: "tool_calls",
        expected: vec![tool_use(
            "call_DdmO9pD3xa9XTPNJ32zg2hcA",
            "get_weather",
            json!({"location": "Paris, France"}),
        )],
    }
}

pub fn parallel_tool_calls() -> Scenario {
    Scenario {
        name: "parallel_tool_calls",
        sse: include_str!("../fixtures/parallel_tool_calls.sse"),
        steps: vec![
            Step::ToolStart {
                id: "call_Qx1Hc0mKo9bW2c3P4jrT8fGv",
                name: "get_weather",
            },
            Step::ToolArgs("{\"lo"),
            Step::ToolArgs("cation\": \"Pa"),
            Step::ToolArgs("ris\"}"),
            Step::ToolStart {
                id: "call_Zb4k1lJ7tYbU2WqfE5nRxC3a",
                name: "get_time",
            },
            Step::ToolArgs("{\"time"),
            Step::ToolArgs("zone\": \"Europe/Paris\"}"),
        ],
        usage: usage(82, 51),
        finish_reason: "tool_calls",
        expected: vec![
            tool_use(
                "call_Qx1Hc0mKo9bW2c3P4jrT8fGv",
                "get_weather",
                json!({"location": "Paris"}),
            ),
            tool_use(
                "call_Zb4k1lJ7tYbU2WqfE5nRxC3a",
                "get_time",
                json!({"timezone": "Europe/Paris"}),
            ),
        ],
    }
}

pub fn interleaved_tool_calls() -> Scenario {
    Scenario {
        name: "interleaved_tool_calls",
        sse: include_str!("../fixtures/interleaved_tool_calls.sse"),
        steps: vec![
            Step::Text("Let me look that up."),
            Step::ToolStart {
                id: "call_itl_0",
                name: "search",
            },
            Step::ToolArgs("{\"query\": \"rust sse\"}"),
            Step::ToolStart {
                id: "call_itl_1",
                name: "calculator",
            },
            Step::ToolArgs("{\"expression\": \"6*7\"}"),
        ],
        usage: usage(120, 40),
        finish_reason: "tool_calls",
        expected: vec![
            ContentBlock::text("Let me look that up."),
            tool_use("call_itl_0", "search", json!({"query": "rust sse"})),
            tool_use("call_itl_1", "calculator", json!({"expression": "6*7"})),
        ],
    }
}

pub fn invalid_arguments() -> Scenario {
    let raw = "{\"path\": \"/tmp/report.md\", \"content\": \"# Rep";
    Scenario {
        name: "invalid_arguments",
        sse: include_str!("../fixtures/invalid_arguments.sse"),
        steps: vec![
            Step::ToolStart {
                id: "call_len_1",
                name: "write_file",
            },
            Step::ToolArgs("{\"path\": "),
            Step::ToolArgs("\"/tmp/rep"),
            Step::ToolArgs("ort.md\", \"content\": \"# Rep"),
        ],
        usage: usage(30, 16),
        finish_reason: "length",
        expected: vec![ContentBlock::ToolUse(ToolUseBlock {
            id: "call_len_1".into(),
            name: "write_file".into(),
            input: Value::Null,
            raw_input: Some(raw.into()),
        })],
    }
}

pub fn keepalive_multiline() -> Scenario {
    Scenario {
        name: "keepalive_multiline",
        sse: include_str!("../fixtures/keepalive_multiline.sse"),
        steps: vec![
            Step::Thinking("Greeting."),
            Step::Text("Hi"),
            Step::Text(" there!"),
        ],
        usage: usage(9, 12),
        finish_reason: "stop",
        expected: vec![
            ContentBlock::thinking("Greeting."),
            ContentBlock::text("Hi there!"),
        ],
    }
}

/// Every scenario.
pub fn all() -> Vec<Scenario> {
    vec![
        text(),
        thinking_text(),
        tool_call(),
        parallel_tool_calls(),
        interleaved_tool_calls(),
        invalid_arguments(),
        keepalive_multiline(),
    ]
}
