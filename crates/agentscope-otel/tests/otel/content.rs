//! Message content, tool arguments and results are exported only when asked for: in code
//! (`TracingHook::with_content`) or by `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.
//! The variable is set only in child processes (this test binary run again on one test), so
//! no test running alongside sees it.

use std::process::Command;

use agentscope::hooks::TracingHook;
use agentscope::prelude::*;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use opentelemetry::Value as OtelValue;
use serde_json::json;

use crate::golden::export;

const VARIABLE: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
/// Tells the child test what it should see (`true` / `false`); unset, it does nothing.
const EXPECT: &str = "AGENTSCOPE_OTEL_TEST_EXPECT_CONTENT";

/// The content attributes of a ReAct call with a system prompt and a tool: span name, key
/// and value, spans by start, keys in order.
async fn content(hook: TracingHook) -> Vec<(String, String, String)> {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"})),
        ScriptedResponse::text("42"),
    ]);
    let agent = ReActAgent::builder()
        .name("assistant")
        .sys_prompt("Be brief.")
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(hook)
        .build()
        .unwrap();
    let mut spans = export(async {
        assert_eq!(agent.call("What is 6*7?").await.unwrap().text(), "42");
    })
    .await;
    spans.sort_by_key(|span| span.start_time);
    let mut found = Vec::new();
    for span in &spans {
        let mut own: Vec<(String, String, String)> = span
            .attributes
            .iter()
            .filter(|kv| {
                matches!(
                    kv.key.as_str(),
                    "gen_ai.system_instructions"
                        | "gen_ai.input.messages"
                        | "gen_ai.output.messages"
                        | "gen_ai.tool.call.arguments"
                        | "gen_ai.tool.call.result"
                )
            })
            .map(|kv| {
                let OtelValue::String(text) = &kv.value else {
                    panic!("{} is not a string", kv.key);
                };
                (span.name.to_string(), kv.key.to_string(), text.to_string())
            })
            .collect();
        own.sort();
        found.extend(own);
    }
    found
}

/// What the call exports with content capture on.
fn all_content() -> Vec<(String, String, String)> {
    let system = r#"[{"content":"Be brief.","type":"text"}]"#;
    let question = r#"{"parts":[{"content":"What is 6*7?","type":"text"}],"role":"user"}"#;
    let call = r#"{"parts":[{"arguments":{"expression":"6*7"},"id":"c1","name":"calculator","type":"tool_call"}],"role":"assistant"}"#;
    let result =
        r#"{"parts":[{"id":"c1","result":"42","type":"tool_call_response"}],"role":"tool"}"#;
    let answer = r#"[{"parts":[{"content":"42","type":"text"}],"role":"assistant"}]"#;
    let rows = [
        (
            "chat scripted-model",
            "gen_ai.input.messages",
            format!("[{question}]"),
        ),
        (
            "chat scripted-model",
            "gen_ai.output.messages",
            format!("[{call}]"),
        ),
        (
            "chat scripted-model",
            "gen_ai.system_instructions",
            system.to_owned(),
        ),
        (
            "execute_tool calculator",
            "gen_ai.tool.call.arguments",
            r#"{"expression":"6*7"}"#.to_owned(),
        ),
        (
            "execute_tool calculator",
            "gen_ai.tool.call.result",
            "42".to_owned(),
        ),
        (
            "chat scripted-model",
            "gen_ai.input.messages",
            format!("[{question},{call},{result}]"),
        ),
        (
            "chat scripted-model",
            "gen_ai.output.messages",
            answer.to_owned(),
        ),
        (
            "chat scripted-model",
            "gen_ai.system_instructions",
            system.to_owned(),
        ),
    ];
    rows.into_iter()
        .map(|(name, key, value)| (name.to_owned(), key.to_owned(), value))
        .collect()
}

#[tokio::test]
async fn content_is_exported_only_when_the_code_asks() {
    assert_eq!(content(TracingHook::new().with_content(false)).await, []);
    assert_eq!(
        content(TracingHook::new().with_content(true)).await,
        all_content()
    );
}

#[test]
fn content_is_exported_when_the_variable_says_true() {
    let exe = std::env::current_exe().unwrap();
    for (value, expected) in [
        (None, false),
        (Some("true"), true),
        (Some(" TRUE "), true),
        (Some("false"), false),
        (Some("1"), false),
    ] {
        let mut child = Command::new(&exe);
        child
            .args([
                "--exact",
                "content::child_reads_the_variable",
                "--ignored",
                "--test-threads=1",
            ])
            .env(EXPECT, expected.to_string());
        match value {
            Some(value) => child.env(VARIABLE, value),
            None => child.env_remove(VARIABLE),
        };
        let output = child.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("test result: ok. 1 passed"),
            "{VARIABLE}={value:?}:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[tokio::test]
#[ignore = "run by content_is_exported_when_the_variable_says_true, in a process of its own"]
async fn child_reads_the_variable() {
    let Ok(expected) = std::env::var(EXPECT) else {
        return;
    };
    let found = content(TracingHook::new()).await;
    if expected == "true" {
        assert_eq!(found, all_content());
    } else {
        assert_eq!(found, []);
    }
    // The code's word wins over the variable.
    assert_eq!(content(TracingHook::new().with_content(false)).await, []);
}
