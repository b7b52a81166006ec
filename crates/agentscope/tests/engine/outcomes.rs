//! What calls leave behind when they end badly: results that never passed the PostActing
//! hooks listening are never stored raw (an interrupted batch keeps its computed results:
//! see `interrupt`); a failed call takes back an input nothing answered; a cut-off answer
//! says why it stopped; a resume needs something to resume.

use agentscope::prelude::*;
use agentscope::{ConversationError, ModelError};
use agentscope_test::messages::turns;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

const WITHHELD: &str = "Error: The tool ran, but its result was withheld because the agent \
    call ended before the result passed the PostActing hooks.";
const CANCELLED: &str =
    "Error: Tool execution was cancelled because the agent call ended before it finished.";

fn secret_tool(name: &'static str) -> impl Tool {
    tool_fn(
        name,
        "Reads a secret.",
        json!({"type": "object"}),
        |_input, _ctx| async { Ok("password=hunter2") },
    )
}

/// A redaction hook fails on the first result: that result does not reach memory or a later
/// model request raw, and the second call never starts (a sequential batch settles each
/// call before the next starts, and the failure ends the call).
#[tokio::test]
async fn a_failed_post_acting_chain_never_stores_raw_results() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([("a", "read_a", json!({})), ("b", "read_b", json!({}))]),
        ScriptedResponse::text("ok"),
    ]);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(
            Toolkit::new()
                .tool(secret_tool("read_a"))
                .tool(secret_tool("read_b")),
        )
        .hook(
            hook_fn(|event| match event {
                HookEvent::PostActing(_) => Err(HookError::msg("redactor unavailable")),
                _ => Ok(()),
            })
            .with_name("redactor"),
        )
        .build()
        .unwrap();
    let error = agent.call("read both").await.unwrap_err();
    assert!(
        matches!(&error, AgentError::Hook { hook, event: HookEventType::PostActing, .. } if hook == "redactor"),
        "{error:?}"
    );
    let memory = agent.memory().messages();
    let results: Vec<(String, bool, String)> = memory
        .iter()
        .flat_map(Msg::tool_results)
        .map(|r| (r.id.to_string(), r.is_error, r.text_output()))
        .collect();
    assert_eq!(
        results,
        [
            ("a".to_owned(), true, WITHHELD.to_owned()),
            ("b".to_owned(), true, CANCELLED.to_owned()),
        ]
    );
    assert!(memory.iter().all(|msg| !msg.text().contains("hunter2")));
}

#[tokio::test]
async fn resuming_with_nothing_to_resume_is_an_error() {
    let model = ScriptedModel::new([ScriptedResponse::text("Hi.")]);
    let agent = ReActAgent::builder().model(model.clone()).build().unwrap();
    let error = agent.call(()).await.unwrap_err();
    assert!(
        matches!(
            error,
            AgentError::Conversation(ConversationError::NothingToResume)
        ),
        "{error:?}"
    );
    agent.call("hello").await.unwrap();
    assert!(agent.call(()).await.is_err());
    assert_eq!(model.request_count(), 1);
    assert_eq!(agent.memory().len(), 2);
}

/// Why the model stopped is kept on the reply, and an answer cut off by the token limit or
/// a content filter says so instead of passing for a normal stop.
#[tokio::test]
async fn the_finish_reason_is_kept_and_a_cut_off_answer_says_so() {
    for (finish, reason) in [
        (Some("stop"), GenerateReason::ModelStop),
        (Some("end_turn"), GenerateReason::ModelStop),
        (None, GenerateReason::ModelStop),
        (Some("length"), GenerateReason::MaxTokens),
        (Some("max_tokens"), GenerateReason::MaxTokens),
        (Some("content_filter"), GenerateReason::ContentFiltered),
        (Some("refusal"), GenerateReason::ContentFiltered),
    ] {
        let mut response = ScriptedResponse::text("The answer is");
        if let Some(finish) = finish {
            response = response.with_finish_reason(finish);
        }
        let agent = ReActAgent::builder()
            .model(ScriptedModel::new([response]))
            .build()
            .unwrap();
        let reply = agent.call("q").await.unwrap();
        assert_eq!(reply.generate_reason(), Some(reason), "{finish:?}");
        assert_eq!(reply.finish_reason(), finish, "{finish:?}");
        let stored = agent.memory().messages();
        assert_eq!(
            stored[1]
                .metadata
                .get("finish_reason")
                .and_then(|v| v.as_str()),
            finish
        );
    }
}

/// The two failures of a real server (llama.cpp): a request over the context length, then
/// the next call. The refused input is not sent again, and no two user messages follow each
/// other in the next request.
#[tokio::test]
async fn after_a_context_length_refusal_the_next_call_sends_only_its_own_input() {
    let refusal = ModelError::Status {
        status: 400,
        message: "request (6287 tokens) exceeds the available context size (4096 tokens), \
                  try increasing it"
            .into(),
        retry_after: None,
    };
    let model = ScriptedModel::new([
        ScriptedResponse::text("Hello."),
        ScriptedResponse::failure(refusal),
        ScriptedResponse::text("Short answer."),
    ]);
    let agent = ReActAgent::builder().model(model.clone()).build().unwrap();
    agent.call("hi").await.unwrap();
    let error = agent.call("a".repeat(20_000)).await.unwrap_err();
    assert!(
        error
            .model_error()
            .is_some_and(ModelError::is_context_length),
        "{error:?}"
    );
    agent.call("short question").await.unwrap();

    let sent = turns(&model.requests()[2].messages);
    assert_eq!(
        sent,
        [
            (Role::User, "hi".to_owned()),
            (Role::Assistant, "Hello.".to_owned()),
            (Role::User, "short question".to_owned()),
        ]
    );
}
