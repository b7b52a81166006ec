//! Tool progress through ActingChunk hooks: the chunk as the last hook leaves it is what the
//! stream gets; a skipped chunk, or one a hook failed on, is not streamed (later hooks still
//! see it); the guide's redaction hook covers progress and results alike.

use std::sync::{Arc, Mutex};

use crate::support::redaction;
use agentscope::BoxedHook;
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

/// `lookup`: reports each of `progress` as a chunk, then returns `result`.
fn lookup(progress: &'static [&'static str], result: &'static str) -> impl Tool {
    tool_fn(
        "lookup",
        "Finds a customer's contact.",
        json!({"type": "object", "properties": {}}),
        move |_input, ctx| async move {
            for chunk in progress {
                ctx.emit(*chunk).await;
            }
            Ok(result)
        },
    )
}

/// An agent whose model calls `lookup` (`c1`) once, then answers "Done.".
fn agent(tool: impl Tool, hooks: Vec<BoxedHook>) -> ReActAgent {
    ReActAgent::builder()
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("c1", "lookup", json!({})),
            ScriptedResponse::text("Done."),
        ]))
        .toolkit(Toolkit::new().tool(tool))
        .hooks(hooks)
        .build()
        .unwrap()
}

/// Every event of the stream as `type last|chunk: text`, tool results as `id name: output`.
async fn streamed(agent: &ReActAgent) -> Vec<String> {
    let mut stream = agent.stream("Find Ada.", StreamOptions::default());
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        let results = event.message.tool_results();
        let text = match results.first() {
            Some(result) => format!("{} {}: {}", result.id, result.name, result.text_output()),
            None if event.message.tool_uses().is_empty() => event.message.text(),
            None => format!("use {}", event.message.tool_uses()[0].id),
        };
        let last = if event.is_last { "last" } else { "chunk" };
        seen.push(format!("{:?} {last}: {text}", event.event_type));
    }
    seen
}

#[tokio::test]
async fn the_guides_redaction_hook_redacts_progress_and_results() {
    redaction::assert_the_guide_shows_it();
    let tool = lookup(
        &[
            "found ada@example.com, checking",
            "also bob@example.org\nnext",
        ],
        "Ada: ada@example.com",
    );
    let agent = agent(tool, vec![BoxedHook::new(redaction::hook())]);
    assert_eq!(
        streamed(&agent).await,
        [
            "Reasoning chunk: use c1",
            "Reasoning last: use c1",
            "ToolResult chunk: c1 lookup: found [email], checking",
            "ToolResult chunk: c1 lookup: also [email]\nnext",
            "ToolResult last: c1 lookup: Ada: [email]",
            "Reasoning chunk: Done.",
            "Reasoning last: Done.",
            "AgentResult last: Done.",
        ]
    );
    // What memory keeps (and the model reads) is the redacted result too.
    assert_eq!(
        agent.memory().messages()[2].tool_results()[0].text_output(),
        "Ada: [email]"
    );
}

#[tokio::test]
async fn a_skipped_chunk_is_not_streamed_and_later_hooks_still_see_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let skipper = hook_fn(|event| {
        if let HookEvent::ActingChunk(e) = event
            && e.chunk().text_output().contains("secret")
        {
            e.skip();
            // A later change does not bring it back.
            e.set_chunk(ToolResultBlock::text("", "", "harmless"));
        }
        Ok(())
    })
    .with_priority(10)
    .with_interests(HookEventType::ActingChunk);
    let observer = {
        let seen = Arc::clone(&seen);
        hook_fn(move |event| {
            if let HookEvent::ActingChunk(e) = event {
                let chunk = e.chunk();
                let line = format!("{} {}: {}", chunk.id, chunk.name, chunk.text_output());
                seen.lock().unwrap().push((line, e.is_skipped()));
            }
            Ok(())
        })
        .with_priority(20)
        .with_interests(HookEventType::ActingChunk)
    };
    let tool = lookup(&["step 1", "the secret is 42", "step 2"], "looked up");
    let agent = agent(
        tool,
        vec![BoxedHook::new(skipper), BoxedHook::new(observer)],
    );
    assert_eq!(
        streamed(&agent).await,
        [
            "Reasoning chunk: use c1",
            "Reasoning last: use c1",
            "ToolResult chunk: c1 lookup: step 1",
            "ToolResult chunk: c1 lookup: step 2",
            "ToolResult last: c1 lookup: looked up",
            "Reasoning chunk: Done.",
            "Reasoning last: Done.",
            "AgentResult last: Done.",
        ]
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("c1 lookup: step 1".to_owned(), false),
            ("c1 lookup: harmless".to_owned(), true),
            ("c1 lookup: step 2".to_owned(), false),
        ]
    );
}

/// A hook that fails on a chunk (an `Err`, a panic) does not fail the call, and the chunk is
/// withheld: a failing redaction hook is never bypassed.
#[tokio::test]
async fn a_chunk_a_hook_failed_on_is_withheld_and_the_call_goes_on() {
    for async_hook in [false, true] {
        let failing = hook_fn(|event| {
            if let HookEvent::ActingChunk(e) = event {
                match e.chunk().text_output().as_str() {
                    "bad" => return Err(HookError::msg("cannot check it")),
                    "worse" => panic!("the checker crashed"),
                    _ => {}
                }
            }
            Ok(())
        })
        .with_interests(HookEventType::ActingChunk);
        let failing = match async_hook {
            // The same rule through an async hook (the chain's other path).
            true => BoxedHook::new(AsyncHook(failing)),
            false => BoxedHook::new(failing),
        };
        let tool = lookup(&["fine", "bad", "worse", "also fine"], "looked up");
        let agent = agent(tool, vec![failing]);
        assert_eq!(
            streamed(&agent).await,
            [
                "Reasoning chunk: use c1",
                "Reasoning last: use c1",
                "ToolResult chunk: c1 lookup: fine",
                "ToolResult chunk: c1 lookup: also fine",
                "ToolResult last: c1 lookup: looked up",
                "Reasoning chunk: Done.",
                "Reasoning last: Done.",
                "AgentResult last: Done.",
            ],
            "async: {async_hook}"
        );
    }
}

/// Without ActingChunk hooks the stream gets the chunk as the tool emitted it.
#[tokio::test]
async fn without_hooks_progress_is_streamed_as_emitted() {
    let tool = lookup(&["found ada@example.com"], "Ada: ada@example.com");
    let agent = agent(tool, vec![]);
    assert_eq!(
        streamed(&agent).await[2..5],
        [
            "ToolResult chunk: c1 lookup: found ada@example.com",
            "ToolResult last: c1 lookup: Ada: ada@example.com",
            "Reasoning chunk: Done.",
        ]
    );
}

/// A synchronous hook run as an async one.
struct AsyncHook(agentscope::HookFn);

impl Hook for AsyncHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        self.0.on_event(event).await
    }

    fn interests(&self) -> HookEventTypes {
        self.0.interests()
    }
}
