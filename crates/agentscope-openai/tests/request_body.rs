//! The exact requests the server receives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope_core::{
    ContentBlock, GenerateOptions, ImageBlock, ModelRequest, Msg, ResponseFormat, Role, ToolChoice,
    ToolResultBlock, ToolSchema, ToolUseBlock,
};
use serde_json::{Value, json};
use support::scenarios;
use support::{API_KEY, HttpReply, TestServer, builder, hello, run};

fn weather_tool() -> ToolSchema {
    ToolSchema::new(
        "get_weather",
        "Current weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

/// Sends `request` and returns the JSON body the server received.
async fn body_of(request: ModelRequest) -> Value {
    let server = TestServer::start([HttpReply::sse(scenarios::text().sse)]).await;
    let model = builder(&server).build().unwrap();
    run(&model, request).await.result.unwrap();
    server.requests()[0].json()
}

#[tokio::test]
async fn a_minimal_request_and_its_headers() {
    let server = TestServer::start([HttpReply::sse(scenarios::text().sse)]).await;
    let model = builder(&server)
        .header("HTTP-Referer", "https://example.com/app")
        .build()
        .unwrap();
    run(&model, hello()).await.result.unwrap();
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.header("accept"),
        Some("text/event-stream, application/json")
    );
    assert_eq!(
        request.header("http-referer"),
        Some("https://example.com/app")
    );
    assert!(
        request
            .header("user-agent")
            .unwrap()
            .starts_with("agentscope-openai/")
    );
    assert_eq!(
        request.json(),
        json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Hello"}],
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
}

#[tokio::test]
async fn a_full_conversation_with_tools_and_every_option() {
    let assistant = Msg::builder()
        .role(Role::Assistant)
        .name("assistant")
        .block(ContentBlock::thinking("I should check both cities."))
        .text("Checking both.")
        .block(ToolUseBlock::new(
            "call_1",
            "get_weather",
            json!({"city": "Paris"}),
        ))
        .block(ToolUseBlock {
            id: "call_2".into(),
            name: "get_weather".into(),
            input: Value::Null.into(),
            raw_input: Some("{\"city\": \"Lon".into()),
        })
        .build();
    let request = ModelRequest::new(
        vec![
            Msg::system("You are a weather bot."),
            Msg::user("Weather in Paris and London?"),
            assistant,
            Msg::tool_result(ToolResultBlock::text(
                "call_1",
                "get_weather",
                "18°C, sunny",
            )),
            Msg::tool_result(ToolResultBlock::error(
                "call_2",
                "get_weather",
                "Error: Parameter validation failed for tool 'get_weather': invalid JSON",
            )),
            Msg::builder()
                .role(Role::Assistant)
                .text("Paris is sunny; let me retry London.")
                .build(),
            Msg::builder()
                .role(Role::User)
                .text("Also, what is in this picture?")
                .block(ContentBlock::Image(ImageBlock {
                    url: "https://example.com/cat.png".into(),
                }))
                .build(),
        ],
        vec![
            weather_tool(),
            ToolSchema::new("get_time", "Current time.", Value::Null),
        ]
        .into(),
        GenerateOptions::default()
            .temperature(0.2)
            .top_p(0.9)
            .max_tokens(256)
            .stop("END")
            .stop("STOP")
            .seed(7)
            .tool_choice(ToolChoice::Specific("get_weather".into()))
            .parallel_tool_calls(false)
            .response_format(ResponseFormat::JsonSchema {
                name: "weather".into(),
                schema: json!({"type": "object"}),
                strict: true,
            })
            .extra("top_k", 20)
            .extra("chat_template_kwargs", json!({"enable_thinking": false})),
    );
    assert_eq!(
        body_of(request).await,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a weather bot."},
                {"role": "user", "content": "Weather in Paris and London?"},
                {"role": "assistant", "content": "Checking both.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Lon"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "18°C, sunny"},
                {"role": "tool", "tool_call_id": "call_2",
                 "content": "Error: Parameter validation failed for tool 'get_weather': invalid JSON"},
                {"role": "assistant", "content": "Paris is sunny; let me retry London."},
                {"role": "user", "content": [
                    {"type": "text", "text": "Also, what is in this picture?"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
                ]}
            ],
            "tools": [
                {"type": "function", "function": {
                    "name": "get_weather", "description": "Current weather for a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                   "required": ["city"]}}}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "top_p": 0.9,
            "max_tokens": 256,
            "stop": ["END", "STOP"],
            "seed": 7,
            // Forcing get_weather: only that tool, and "required".
            "tool_choice": "required",
            "parallel_tool_calls": false,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "weather", "schema": {"type": "object"}, "strict": true}},
            "top_k": 20,
            "chat_template_kwargs": {"enable_thinking": false}
        })
    );
}

#[tokio::test]
async fn tool_call_only_assistant_and_several_results_in_one_message() {
    let request = ModelRequest::new(
        vec![
            Msg::user("Both?"),
            Msg::builder()
                .role(Role::Assistant)
                .block(ToolUseBlock::new("a", "f", json!({})))
                .block(ToolUseBlock::new("b", "g", json!({"x": [1, 2]})))
                .build(),
            Msg::builder()
                .role(Role::Tool)
                .block(ToolResultBlock::text("a", "f", "one"))
                .block(ToolResultBlock {
                    id: "b".into(),
                    name: "g".into(),
                    output: vec![ContentBlock::text("line 1"), ContentBlock::text("line 2")],
                    is_error: false,
                })
                .build(),
        ],
        Default::default(),
        Default::default(),
    );
    assert_eq!(
        body_of(request).await["messages"],
        json!([
            {"role": "user", "content": "Both?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{\"x\":[1,2]}"}}
            ]},
            {"role": "tool", "tool_call_id": "a", "content": "one"},
            {"role": "tool", "tool_call_id": "b", "content": "line 1\nline 2"}
        ])
    );
}

#[tokio::test]
async fn tool_choice_is_sent_with_tools_only() {
    let cases = [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
    ];
    for (choice, expected) in cases {
        let request = ModelRequest::new(
            vec![Msg::user("x")],
            vec![weather_tool()].into(),
            GenerateOptions::default().tool_choice(choice.clone()),
        );
        let body = body_of(request).await;
        assert_eq!(body["tool_choice"], expected, "{choice:?}");
        assert!(body.get("parallel_tool_calls").is_none());

        // The summary step sends no tools: no tool_choice either (OpenAI rejects it).
        let request = ModelRequest::new(
            vec![Msg::user("x")],
            Vec::new().into(),
            GenerateOptions::default()
                .tool_choice(choice.clone())
                .parallel_tool_calls(true),
        );
        let body = body_of(request).await;
        assert!(body.get("tool_choice").is_none(), "{choice:?}");
        assert!(body.get("parallel_tool_calls").is_none());
        assert!(body.get("tools").is_none());
    }
}

#[tokio::test]
async fn a_specific_tool_is_forced_as_that_tool_alone_and_required() {
    let time = ToolSchema::new("get_time", "Current time.", Value::Null);
    let request = |name: &str| {
        ModelRequest::new(
            vec![Msg::user("x")],
            vec![weather_tool(), time.clone()].into(),
            GenerateOptions::default().tool_choice(ToolChoice::Specific(name.into())),
        )
    };
    let body = body_of(request("get_time")).await;
    assert_eq!(body["tool_choice"], json!("required"));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "get_time",
            "description": "Current time.", "parameters": {"type": "object", "properties": {}}}}])
    );
    // A name that is not among the tools goes out as the object form, all tools kept: the
    // server reports the mistake.
    let body = body_of(request("get_wether")).await;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "get_wether"}})
    );
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn response_formats() {
    for (format, expected) in [
        (ResponseFormat::Text, json!({"type": "text"})),
        (ResponseFormat::JsonObject, json!({"type": "json_object"})),
    ] {
        let request = ModelRequest::new(
            vec![Msg::user("x")],
            Default::default(),
            GenerateOptions::default().response_format(format),
        );
        assert_eq!(body_of(request).await["response_format"], expected);
    }
}

#[tokio::test]
async fn include_usage_can_be_turned_off() {
    let server = TestServer::start([HttpReply::sse(scenarios::text().sse)]).await;
    let model = builder(&server).include_usage(false).build().unwrap();
    run(&model, hello()).await.result.unwrap();
    let body = server.requests()[0].json();
    assert!(body.get("stream_options").is_none());
    assert_eq!(body["stream"], true);
}

#[tokio::test]
async fn no_key_means_no_authorization_header_and_queries_are_kept() {
    let server = TestServer::start([HttpReply::sse(scenarios::text().sse)]).await;
    let model = agentscope_openai::OpenAIChatModel::builder()
        .base_url(format!("{}?api-version=2024-10-21", server.base_url()))
        .model("local")
        .build()
        .unwrap();
    run(&model, hello()).await.result.unwrap();
    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        "/v1/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.json()["model"], "local");
}

#[tokio::test]
async fn float_options_are_written_as_written() {
    let server = TestServer::start([HttpReply::sse(scenarios::text().sse)]).await;
    let model = builder(&server).build().unwrap();
    let request = ModelRequest::new(
        vec![Msg::user("x")],
        Default::default(),
        GenerateOptions::default().temperature(0.7).top_p(0.95),
    );
    run(&model, request).await.result.unwrap();
    let raw = String::from_utf8(server.requests()[0].body.clone()).unwrap();
    assert!(raw.contains("\"temperature\":0.7"), "{raw}");
    assert!(raw.contains("\"top_p\":0.95"), "{raw}");
}
