//! Acting: sequential and parallel batches (concurrency proven with a barrier), call-order results when tools finish out of order, `tool_fn` and `typed_tool_fn` tools through the engine, and JSON-schema validation error texts.

use std::sync::Arc;
use std::time::Duration;

use crate::support::fixtures::build_agent;
use crate::support::hooks::{Log, entries, hooks, push};
use agentscope::BoxedHook;
use agentscope::prelude::*;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// A tool that logs "{name}:start", yields a few times, logs "{name}:end" and returns
/// "{name} ok".
fn logging_tool(name: &'static str, log: &Log) -> impl Tool {
    let log = Arc::clone(log);
    tool_fn(
        name,
        "Logs its start and end.",
        empty_schema(),
        move |_, _| {
            let log = Arc::clone(&log);
            async move {
                push(&log, format!("{name}:start"));
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                push(&log, format!("{name}:end"));
                Ok(format!("{name} ok"))
            }
        },
    )
}

/// A tool that can only finish when another tool reaches the same barrier.
fn barrier_tool(name: &'static str, barrier: &Arc<Barrier>, log: &Log) -> impl Tool {
    let barrier = Arc::clone(barrier);
    let log = Arc::clone(log);
    tool_fn(
        name,
        "Meets the other tool.",
        empty_schema(),
        move |_, _| {
            let barrier = Arc::clone(&barrier);
            let log = Arc::clone(&log);
            async move {
                push(&log, format!("{name}:start"));
                barrier.wait().await;
                push(&log, format!("{name}:end"));
                Ok(format!("{name} ok"))
            }
        },
    )
}

/// Logs "pre:{id}" at PreActing and "post:{id}" at PostActing.
fn acting_logger(log: &Log) -> BoxedHook {
    let log = Arc::clone(log);
    BoxedHook::new(
        hook_fn(move |event| {
            match event {
                HookEvent::PreActing(e) => push(&log, format!("pre:{}", e.tool_use().id)),
                HookEvent::PostActing(e) => push(&log, format!("post:{}", e.tool_use().id)),
                _ => {}
            }
            Ok(())
        })
        .with_interests(HookEventType::PreActing | HookEventType::PostActing),
    )
}

fn two_calls(first: &str, second: &str) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_calls([("c1", first, json!({})), ("c2", second, json!({}))]),
        ScriptedResponse::text("both done"),
    ])
}

/// Asserts that memory holds the results of the tools "a" and "b" of [`two_calls`]`("a", "b")`,
/// in call order.
fn assert_a_and_b_results_stored(agent: &ReActAgent) {
    assert_eq!(
        stored_results(agent),
        [ok_result("c1", "a", "a ok"), ok_result("c2", "b", "b ok")]
    );
}

/// The tool results stored in memory, as (id, name, text, is_error), in order.
fn stored_results(agent: &ReActAgent) -> Vec<(String, String, String, bool)> {
    agent
        .memory()
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| {
            assert_eq!(m.content.len(), 1, "one result per tool message");
            m.tool_results()
                .into_iter()
                .map(|r| {
                    (
                        r.id.to_string(),
                        r.name.to_string(),
                        r.text_output(),
                        r.is_error,
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn ok_result(id: &str, name: &str, text: &str) -> (String, String, String, bool) {
    (id.to_owned(), name.to_owned(), text.to_owned(), false)
}

fn err_result(id: &str, name: &str, text: &str) -> (String, String, String, bool) {
    (id.to_owned(), name.to_owned(), text.to_owned(), true)
}

#[tokio::test]
async fn sequential_batches_run_one_tool_after_the_other() {
    let log: Log = Arc::default();
    let model = two_calls("a", "b");
    let toolkit = Toolkit::new()
        .tool(logging_tool("a", &log))
        .tool(logging_tool("b", &log));
    assert!(!toolkit.is_parallel(), "sequential is the default");
    let agent = build_agent(&model, toolkit, vec![acting_logger(&log)]);

    let reply = agent.call("q").await.unwrap();

    assert_eq!(reply.text(), "both done");
    assert_eq!(
        entries(&log),
        [
            "pre:c1", "pre:c2", "a:start", "a:end", "post:c1", "b:start", "b:end", "post:c2"
        ]
    );
    assert_a_and_b_results_stored(&agent);
}

#[tokio::test]
async fn parallel_batches_run_tools_concurrently() {
    // Each tool waits for the other at a barrier: run one after the other, they deadlock.
    let log: Log = Arc::default();
    let barrier = Arc::new(Barrier::new(2));
    let model = two_calls("a", "b");
    let toolkit = Toolkit::new()
        .tool(barrier_tool("a", &barrier, &log))
        .tool(barrier_tool("b", &barrier, &log))
        .parallel(true);
    let agent = build_agent(&model, toolkit, vec![acting_logger(&log)]);

    let reply = tokio::time::timeout(Duration::from_secs(10), agent.call("q"))
        .await
        .expect("the tools did not run concurrently")
        .unwrap();

    assert_eq!(reply.text(), "both done");
    let log = entries(&log);
    assert_eq!(
        log[..2],
        ["pre:c1", "pre:c2"],
        "PreActing for all, before any tool"
    );
    assert_eq!(
        log[2..4],
        ["a:start", "b:start"],
        "both started before either ended"
    );
    assert_eq!(log[6..], ["post:c1", "post:c2"]);
    assert_a_and_b_results_stored(&agent);
}

#[tokio::test]
async fn parallel_results_stay_in_call_order_when_the_second_finishes_first() {
    let log: Log = Arc::default();
    let second_done = Arc::new(Notify::new());
    let (wait_log, wait_notify) = (Arc::clone(&log), Arc::clone(&second_done));
    let waits = tool_fn("waits", "Finishes last.", empty_schema(), move |_, _| {
        let (log, notify) = (Arc::clone(&wait_log), Arc::clone(&wait_notify));
        async move {
            notify.notified().await;
            push(&log, "waits:end");
            Ok("slow result")
        }
    });
    let (quick_log, quick_notify) = (Arc::clone(&log), Arc::clone(&second_done));
    let quick = tool_fn("quick", "Finishes first.", empty_schema(), move |_, _| {
        let (log, notify) = (Arc::clone(&quick_log), Arc::clone(&quick_notify));
        async move {
            push(&log, "quick:end");
            notify.notify_one();
            Ok("quick result")
        }
    });
    let model = two_calls("waits", "quick");
    let rec = RecordingHook::new(100).with_interests(HookEventType::PostActing);
    let agent = build_agent(
        &model,
        Toolkit::new().tool(waits).tool(quick).parallel(true),
        hooks![rec.clone()],
    );

    let events: Vec<Event> = tokio::time::timeout(
        Duration::from_secs(10),
        agent
            .stream(
                "q",
                StreamOptions::default().event_types([EventType::ToolResult]),
            )
            .map(Result::unwrap)
            .collect::<Vec<_>>(),
    )
    .await
    .expect("the batch did not finish");

    assert_eq!(entries(&log), ["quick:end", "waits:end"]);
    let post_acting: Vec<(String, String)> = rec
        .events()
        .iter()
        .map(|e| match e {
            HookEvent::PostActing(e) => {
                (e.tool_use().id.to_string(), e.tool_result().text_output())
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        post_acting,
        [
            ("c1".to_owned(), "slow result".to_owned()),
            ("c2".to_owned(), "quick result".to_owned())
        ]
    );
    let streamed: Vec<String> = events
        .iter()
        .map(|e| e.message.tool_results()[0].id.to_string())
        .collect();
    assert_eq!(streamed, ["c1", "c2"]);
    assert_eq!(
        stored_results(&agent),
        [
            ok_result("c1", "waits", "slow result"),
            ok_result("c2", "quick", "quick result")
        ]
    );
    // The model sees them in call order too.
    let seen: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(seen, ["c1", "c2"]);
}

#[tokio::test]
async fn tool_fn_tools_get_their_arguments_and_context() {
    let greet = tool_fn(
        "greet",
        "Greets someone by name.",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        |input: Value, ctx: ToolContext| async move {
            Ok(format!(
                "Hello, {}! ({})",
                input["name"].as_str().unwrap_or_default(),
                ctx.tool_use().id
            ))
        },
    );
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "greet", json!({"name": "Ada"})),
        ScriptedResponse::text("greeted"),
    ]);
    let agent = build_agent(&model, Toolkit::new().tool(greet), vec![]);

    agent.call("q").await.unwrap();

    let tools = &model.requests()[0].tools;
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "greet");
    assert_eq!(tools[0].description, "Greets someone by name.");
    assert_eq!(
        stored_results(&agent),
        [ok_result("c1", "greet", "Hello, Ada! (c1)")]
    );
}

/// `typed_tool_fn` (the `schema` feature).
#[cfg(feature = "schema")]
mod typed {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, JsonSchema)]
    struct AddArgs {
        /// First addend.
        a: f64,
        /// Second addend.
        b: f64,
    }

    fn add_tool(calls: &Log) -> impl Tool {
        let calls = Arc::clone(calls);
        typed_tool_fn("add", "Adds two numbers.", move |args: AddArgs, _ctx| {
            let calls = Arc::clone(&calls);
            async move {
                push(&calls, format!("{args:?}"));
                Ok((args.a + args.b).to_string())
            }
        })
    }

    #[tokio::test]
    async fn typed_tool_fn_tools_get_a_schema_and_deserialised_arguments() {
        let calls: Log = Arc::default();
        let model = ScriptedModel::new([
            ScriptedResponse::tool_calls([
                ("c1", "add", json!({"a": 2, "b": 3.5})),
                ("c2", "add", json!({"a": "two", "b": 3})),
                ("c3", "add", json!({"a": 1})),
            ]),
            ScriptedResponse::text("sums"),
        ]);
        let agent = build_agent(&model, Toolkit::new().tool(add_tool(&calls)), vec![]);

        agent.call("q").await.unwrap();

        let schema = &model.requests()[0].tools[0].parameters;
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["a", "b"]));
        assert_eq!(schema["properties"]["a"]["description"], "First addend.");
        assert_eq!(entries(&calls), ["AddArgs { a: 2.0, b: 3.5 }"]);
        assert_eq!(
            stored_results(&agent),
            [
                ok_result("c1", "add", "5.5"),
                err_result(
                    "c2",
                    "add",
                    "Error: Parameter validation failed for tool 'add': /a: \"two\" is not of type \"number\""
                ),
                err_result(
                    "c3",
                    "add",
                    "Error: Parameter validation failed for tool 'add': \"b\" is a required property"
                ),
            ]
        );
    }
}

#[tokio::test]
async fn json_schema_validation_errors_are_reported_with_their_paths() {
    let ran: Log = Arc::default();
    let ran_in_tool = Arc::clone(&ran);
    let strict = tool_fn(
        "strict",
        "Takes a positive count.",
        json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["n"],
            "additionalProperties": false
        }),
        move |input: Value, _ctx| {
            let ran = Arc::clone(&ran_in_tool);
            async move {
                push(&ran, input.to_string());
                Ok("accepted")
            }
        },
    );
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ("c1", "strict", json!({"n": 0})),
            ("c2", "strict", json!({"n": 1, "extra": true})),
            ("c3", "strict", json!({"n": 2, "tags": ["a", 7]})),
            ("c4", "strict", json!([1, 2])),
            ("c5", "strict", json!({"n": 3, "tags": ["ok"]})),
        ]),
        ScriptedResponse::text("checked"),
    ]);
    let agent = build_agent(&model, Toolkit::new().tool(strict), vec![]);

    agent.call("q").await.unwrap();

    let prefix = "Error: Parameter validation failed for tool 'strict': ";
    assert_eq!(
        stored_results(&agent),
        [
            err_result(
                "c1",
                "strict",
                &format!("{prefix}/n: 0 is less than the minimum of 1")
            ),
            err_result(
                "c2",
                "strict",
                &format!("{prefix}Additional properties are not allowed ('extra' was unexpected)")
            ),
            err_result(
                "c3",
                "strict",
                &format!("{prefix}/tags/1: 7 is not of type \"string\"")
            ),
            err_result(
                "c4",
                "strict",
                &format!("{prefix}[1,2] is not of type \"object\"")
            ),
            ok_result("c5", "strict", "accepted"),
        ]
    );
    assert_eq!(entries(&ran), [r#"{"n":3,"tags":["ok"]}"#]);
    // The model saw exactly these results.
    let seen: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.text_output())
        .collect();
    let stored: Vec<String> = stored_results(&agent).into_iter().map(|r| r.2).collect();
    assert_eq!(seen, stored);
}
