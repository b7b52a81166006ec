//! Typed tools: a tool whose arguments are a Rust struct. `typed_tool_fn` derives the JSON
//! schema the model sees from the struct (`schemars`; the doc comments become the
//! descriptions), the toolkit checks the model's arguments against it, and the closure gets
//! them deserialised (`serde`).
//!
//! ```sh
//! cargo run -p agentscope-example-typed-tools --example typed_tools                                          # offline, scripted
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run -p agentscope-example-typed-tools --example typed_tools   # a real model
//! ```
//!
//! The model is the one the environment names (see `examples/support/mod.rs`), or offline a
//! demo model (not a language model) that first calls the tool with a unit the schema does
//! not allow, reads the error the toolkit sends back, and calls it again correctly; the
//! first line says which. In your `Cargo.toml`: `agentscope` with the `schema` feature,
//! `schemars = "1"` and `serde` (with `derive`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::ExitCode;

use agentscope::prelude::*;
use agentscope::{ChatStream, ModelError, ModelRequest};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// A temperature unit.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
    Kelvin,
}

/// The arguments of `convert_temperature`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ConvertArgs {
    /// The temperature to convert.
    value: f64,
    /// The unit `value` is in.
    from: Unit,
    /// The unit wanted.
    to: Unit,
}

impl Unit {
    /// `value`, in this unit, in kelvin.
    fn to_kelvin(self, value: f64) -> f64 {
        match self {
            Unit::Celsius => value + 273.15,
            Unit::Fahrenheit => (value - 32.0) * 5.0 / 9.0 + 273.15,
            Unit::Kelvin => value,
        }
    }

    /// `kelvin` in this unit.
    fn kelvin_in(self, kelvin: f64) -> f64 {
        match self {
            Unit::Celsius => kelvin - 273.15,
            Unit::Fahrenheit => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
            Unit::Kelvin => kelvin,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Unit::Celsius => "°C",
            Unit::Fahrenheit => "°F",
            Unit::Kelvin => "K",
        }
    }
}

/// The typed tool: the closure gets `ConvertArgs`, never raw JSON.
fn convert_temperature() -> impl Tool {
    typed_tool_fn(
        "convert_temperature",
        "Converts a temperature between Celsius, Fahrenheit and Kelvin.",
        |args: ConvertArgs, _ctx| async move {
            let converted = args.to.kelvin_in(args.from.to_kelvin(args.value));
            Ok(format!("{:.1} {}", converted, args.to.symbol()))
        },
    )
}

/// The offline demo model: a call the schema rejects, the corrected call, then an answer
/// quoting the tool's result.
struct DemoModel {
    script: ScriptedModel,
}

impl DemoModel {
    fn new() -> Self {
        Self {
            script: ScriptedModel::new([]).with_name("demo-model (offline, scripted)"),
        }
    }

    fn respond(messages: &[Msg]) -> ScriptedResponse {
        let Some(result) = messages
            .last()
            .and_then(|m| m.tool_results().first().cloned())
        else {
            // "centigrade" is not a unit the schema allows.
            return ScriptedResponse::tool_call(
                "call_1",
                "convert_temperature",
                json!({"value": 21, "from": "centigrade", "to": "fahrenheit"}),
            );
        };
        if result.is_error {
            return ScriptedResponse::tool_call(
                "call_2",
                "convert_temperature",
                json!({"value": 21, "from": "celsius", "to": "fahrenheit"}),
            );
        }
        ScriptedResponse::text(format!("21 °C is {}.", result.text_output()))
    }
}

impl Model for DemoModel {
    fn model_name(&self) -> &str {
        self.script.model_name()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        self.script.push(Self::respond(&request.messages));
        self.script.stream(request).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    let model = support::model_or(DemoModel::new())?;
    let toolkit = Toolkit::new().tool(convert_temperature());
    println!("the schema the model sees, derived from ConvertArgs:");
    println!("{:#}\n", toolkit.schemas()[0].parameters);

    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are a helpful assistant. Use convert_temperature for conversions.")
        .model(model)
        .toolkit(toolkit)
        .max_iters(5)
        .build()?;

    let question = "What is 21 degrees Celsius in Fahrenheit?";
    println!("user: {question}");
    let mut events = agent.stream(question, StreamOptions::default());
    while let Some(event) = events.next().await {
        let event = event?;
        if !event.is_last {
            continue;
        }
        for call in event.message.tool_uses() {
            println!("  model calls {}({})", call.name, call.input);
        }
        for result in event.message.tool_results() {
            // An error result's text starts with "Error: "; the model reads it as it is.
            println!("  result: {}", result.text_output());
        }
        if event.event_type == EventType::AgentResult {
            println!("assistant: {}", event.message.text());
        }
    }
    Ok(())
}
