//! Tool call ids a provider repeats (`"0"` every turn, as some do): each call of a
//! conversation gets an id of its own, so no two calls share an idempotency key (made from
//! the conversation and the call id), while a retry of a call in doubt keeps its key in any
//! process.

use std::sync::{Arc, Mutex};

use agentscope::prelude::*;
use agentscope::session::{JsonFileSessionStore, SessionStore};
use agentscope::{CallInput, InDoubt, ToolContext};
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

use crate::store::temp_store;

/// Each run of the `pay` tool: the call id it got and its idempotency key.
type Runs = Arc<Mutex<Vec<(String, String)>>>;

/// The `pay` tool: records each run; the run numbered `hang` (from 0) never finishes.
fn pay(runs: &Runs, hang: Option<usize>) -> impl Tool + use<> {
    let runs = runs.clone();
    tool_fn(
        "pay",
        "Pays.",
        json!({"type": "object"}),
        move |_input, ctx: ToolContext| {
            let runs = runs.clone();
            async move {
                let run = {
                    let mut runs = runs.lock().unwrap();
                    runs.push((ctx.tool_use().id.to_string(), ctx.idempotency_key()));
                    runs.len() - 1
                };
                if Some(run) == hang {
                    std::future::pending::<()>().await;
                }
                Ok("paid")
            }
        },
    )
    .in_doubt(InDoubt::Stop)
}

fn agent(
    store: &JsonFileSessionStore,
    model: &ScriptedModel,
    runs: &Runs,
    hang: Option<usize>,
) -> ReActAgent {
    ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(pay(runs, hang)))
        .session(store.clone(), "s")
        .build()
        .unwrap()
}

/// The key of call `id` in session `scope`.
fn key_of(scope: &str, id: &str) -> String {
    ToolContext::new(ToolUseBlock::new(id, "pay", json!({})))
        .with_scope(scope)
        .idempotency_key()
}

/// The ids of the tool calls, and of the tool results, in `messages`.
fn ids(messages: &[Msg]) -> (Vec<String>, Vec<String>) {
    let calls = messages
        .iter()
        .flat_map(Msg::tool_uses)
        .map(|call| call.id.to_string())
        .collect();
    let results = messages
        .iter()
        .flat_map(Msg::tool_results)
        .map(|result| result.id.to_string())
        .collect();
    (calls, results)
}

/// Two turns of one session whose model calls `pay` as `"0"` each time (the second turn
/// twice, in two iterations): three runs, three ids, three keys. The first call keeps the
/// provider's id; the repeats get fresh ones, which memory, the session and the model's
/// next request carry (call and result alike), so the provider gets them back.
#[tokio::test]
async fn a_provider_repeating_call_ids_never_gives_two_calls_one_key() {
    let (_dir, store) = temp_store();
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("0", "pay", json!({"cents": 100})),
        ScriptedResponse::text("Paid 1."),
        ScriptedResponse::tool_call("0", "pay", json!({"cents": 200})),
        ScriptedResponse::tool_call("0", "pay", json!({"cents": 300})),
        ScriptedResponse::text("Paid 2 and 3."),
    ]);
    let agent = agent(&store, &model, &runs, None);
    assert_eq!(agent.call("Pay 1.").await.unwrap().text(), "Paid 1.");
    assert_eq!(
        agent.call("Pay 2 and 3.").await.unwrap().text(),
        "Paid 2 and 3."
    );

    let runs = runs.lock().unwrap().clone();
    let run_ids: Vec<String> = runs.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(run_ids.len(), 3);
    assert_eq!(run_ids[0], "0");
    for fresh in &run_ids[1..] {
        assert!(fresh.starts_with("call_") && fresh.len() > 10, "{fresh}");
    }
    assert_ne!(run_ids[1], run_ids[2]);
    let keys: Vec<String> = runs.iter().map(|(_, key)| key.clone()).collect();
    assert_eq!(
        keys,
        run_ids.iter().map(|id| key_of("s", id)).collect::<Vec<_>>()
    );
    assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2]);

    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(ids(&stored.messages), (run_ids.clone(), run_ids.clone()));
    assert_eq!(
        ids(&agent.memory().messages()),
        (run_ids.clone(), run_ids.clone())
    );
    let last = model.last_request().unwrap();
    assert_eq!(ids(&last.messages), (run_ids.clone(), run_ids));
}

/// A repeated id is replaced as the answer streams in: the chunk events and the stream's
/// chunks carry the new id from the call's first fragment on, as do PostReasoning,
/// PreActing, PostActing and the stream's final events; the provider's `"0"` appears only
/// for the first call.
#[tokio::test]
async fn a_repeated_id_is_replaced_before_any_hook_memory_or_the_stream_sees_it() {
    let (_dir, store) = temp_store();
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("0", "pay", json!({})),
        ScriptedResponse::text("Paid."),
        // Streamed: the provider repeats the id on each fragment of the call.
        ScriptedResponse::chunks([
            ScriptedChunk::text("Paying again."),
            ScriptedChunk::tool_call_start("0", "pay"),
            ScriptedChunk::tool_call_args("{\"ce"),
            ScriptedChunk::tool_call_start("0", ""),
            ScriptedChunk::tool_call_args("nts\": 5}"),
        ]),
        ScriptedResponse::text("Paid again."),
    ]);
    let agent = agent(&store, &model, &runs, None);
    agent.call("Pay.").await.unwrap();
    let hook = RecordingHook::new(0);
    agent.add_hook(hook.clone());

    let events: Vec<Event> = agent
        .stream("Pay again.", StreamOptions::default())
        .map(Result::unwrap)
        .collect()
        .await;
    let fresh = runs.lock().unwrap()[1].0.clone();
    assert_ne!(fresh, "0");
    // One call, whole: its arguments were assembled across the fragments.
    let stored = agent.memory().messages();
    let calls: Vec<&ToolUseBlock> = stored[5].tool_uses();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, fresh.as_str());
    assert_eq!(calls[0].input, json!({"cents": 5}));

    // Every id any hook or the stream saw for this call is the fresh one.
    let mut seen = Vec::new();
    for event in hook.events() {
        match &event {
            HookEvent::ReasoningChunk(e) => {
                seen.extend(e.accumulated().tool_uses().iter().map(|c| c.id.to_string()));
                seen.extend(
                    e.incremental_chunk()
                        .tool_uses()
                        .iter()
                        .map(|c| c.id.to_string()),
                );
            }
            HookEvent::PostReasoning(e) => {
                seen.extend(
                    e.reasoning_message()
                        .tool_uses()
                        .iter()
                        .map(|c| c.id.to_string()),
                );
            }
            HookEvent::PreActing(e) => seen.push(e.tool_use().id.to_string()),
            HookEvent::PostActing(e) => {
                seen.push(e.tool_use().id.to_string());
                seen.push(e.tool_result().id.to_string());
            }
            _ => {}
        }
    }
    for event in &events {
        seen.extend(event.message.tool_uses().iter().map(|c| c.id.to_string()));
        seen.extend(
            event
                .message
                .tool_results()
                .iter()
                .map(|r| r.id.to_string()),
        );
    }
    // Fragments that continue the call carry no id of their own (empty): the rest is fresh.
    seen.retain(|id| !id.is_empty());
    assert!(seen.len() >= 8, "{seen:?}");
    assert!(seen.iter().all(|id| *id == fresh), "{seen:?}");
}

/// A call whose repeated id was replaced, left in doubt (its call dropped while the tool
/// ran), then retried by a fresh agent ("another process"): the retry runs with the key of
/// its first attempt, the key of the stored id.
#[tokio::test]
async fn a_retry_of_a_call_whose_id_was_replaced_keeps_its_key_in_another_process() {
    let (_dir, store) = temp_store();
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("0", "pay", json!({})),
        ScriptedResponse::text("Paid."),
        ScriptedResponse::tool_call("0", "pay", json!({})),
    ]);
    let first = agent(&store, &model, &runs, Some(1));
    first.call("Pay.").await.unwrap();
    let dropped = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        first.call("Pay again."),
    )
    .await;
    assert!(dropped.is_err(), "the second run hangs");
    drop(first);
    let stored = store.load("s").await.unwrap().unwrap();
    let in_doubt = stored.running_tools.clone();
    assert_eq!(in_doubt.len(), 1);
    assert_ne!(in_doubt[0], "0");

    let model = ScriptedModel::new([ScriptedResponse::text("Paid again.")]);
    let fresh = agent(&store, &model, &runs, None);
    assert_eq!(
        fresh.call(()).await.unwrap().generate_reason(),
        Some(GenerateReason::ToolInDoubt)
    );
    let reply = fresh
        .call(CallInput::default().retry(in_doubt.clone()))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Paid again.");
    let runs = runs.lock().unwrap().clone();
    let expected = key_of("s", &in_doubt[0]);
    assert_eq!(
        runs,
        [
            ("0".to_owned(), key_of("s", "0")),
            (in_doubt[0].clone(), expected.clone()),
            (in_doubt[0].clone(), expected),
        ]
    );
}

/// Without a session the conversation is the agent's memory, and its keys are made from
/// the agent's id: the same rule holds.
#[tokio::test]
async fn without_a_session_repeated_ids_get_keys_of_their_own_too() {
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("0", "pay", json!({})),
        ScriptedResponse::text("Paid."),
        ScriptedResponse::tool_call("0", "pay", json!({})),
        ScriptedResponse::text("Paid again."),
    ]);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(pay(&runs, None)))
        .build()
        .unwrap();
    agent.call("Pay.").await.unwrap();
    agent.call("Pay again.").await.unwrap();
    let runs = runs.lock().unwrap().clone();
    assert_eq!(runs[0], ("0".to_owned(), key_of(agent.id(), "0")));
    assert_ne!(runs[1].0, "0");
    assert_eq!(runs[1].1, key_of(agent.id(), &runs[1].0));
    assert_ne!(runs[0].1, runs[1].1);
}
