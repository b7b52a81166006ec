//! A model that refuses its input as too long for its context window: PreReasoning runs once
//! more with `context_exceeded()` set, and the call continues on the shrunk input.

use std::sync::{Arc, Mutex};

use agentscope::prelude::*;
use agentscope::{HookFn, ModelError, ModelRequest};
use agentscope_test::{ScriptedModel, ScriptedResponse};

fn too_long() -> ModelError {
    ModelError::Status {
        status: 400,
        message: "This model's maximum context length is 8192 tokens \
                  (code: context_length_exceeded)"
            .into(),
        retry_after: None,
    }
}

/// Records `context_exceeded()` at each PreReasoning and, when it is set, keeps only the
/// latest message.
fn compacting_hook(seen: &Arc<Mutex<Vec<bool>>>) -> HookFn {
    let seen = Arc::clone(seen);
    hook_fn(move |event| {
        if let HookEvent::PreReasoning(e) = event {
            seen.lock().unwrap().push(e.context_exceeded());
            if e.context_exceeded() {
                let last = e.input_messages().last().cloned();
                e.set_input_messages(last.into_iter().collect());
            }
        }
        Ok(())
    })
    .with_interests(HookEventType::PreReasoning)
    .with_name("compactor")
}

fn texts(request: &ModelRequest) -> Vec<String> {
    request.messages.iter().map(Msg::text).collect()
}

async fn agent_with_history(model: &ScriptedModel, hook: Option<HookFn>) -> ReActAgent {
    let mut builder = ReActAgent::builder()
        .model(model.clone())
        .sys_prompt("You are terse.");
    if let Some(hook) = hook {
        builder = builder.hook(hook);
    }
    let agent = builder.build().unwrap();
    let history = [Msg::user("old question"), Msg::assistant("old answer")];
    agent.observe(history).await.unwrap();
    agent
}

#[tokio::test]
async fn a_refused_input_is_compacted_once_and_the_call_goes_on() {
    let model = ScriptedModel::new([
        ScriptedResponse::failure(too_long()),
        ScriptedResponse::text("short answer"),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = agent_with_history(&model, Some(compacting_hook(&seen))).await;

    let reply = agent.call("new question").await.unwrap();

    assert_eq!(reply.text(), "short answer");
    assert_eq!(*seen.lock().unwrap(), [false, true]);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        texts(&requests[0]),
        [
            "You are terse.",
            "old question",
            "old answer",
            "new question"
        ]
    );
    assert_eq!(texts(&requests[1]), ["You are terse.", "new question"]);
    // Memory is not what the hook sent: the whole conversation is kept.
    let stored: Vec<String> = agent.memory().messages().iter().map(Msg::text).collect();
    assert_eq!(
        stored,
        ["old question", "old answer", "new question", "short answer"]
    );
}

#[tokio::test]
async fn a_second_refusal_fails_the_call() {
    let model = ScriptedModel::new([
        ScriptedResponse::failure(too_long()),
        ScriptedResponse::failure(too_long()),
        ScriptedResponse::text("never sent"),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = agent_with_history(&model, Some(compacting_hook(&seen))).await;

    let err = agent.call("new question").await.unwrap_err();

    assert!(
        matches!(&err, AgentError::Model(e) if e.is_context_length()),
        "{err:?}"
    );
    assert_eq!(*seen.lock().unwrap(), [false, true]);
    assert_eq!(model.request_count(), 2);
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn without_a_pre_reasoning_hook_nothing_is_retried() {
    let model = ScriptedModel::new([
        ScriptedResponse::failure(too_long()),
        ScriptedResponse::text("never sent"),
    ]);
    let agent = agent_with_history(&model, None).await;

    let err = agent.call("new question").await.unwrap_err();

    assert!(
        matches!(&err, AgentError::Model(e) if e.is_context_length()),
        "{err:?}"
    );
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn other_model_errors_are_not_retried() {
    let model = ScriptedModel::new([
        ScriptedResponse::failure(ModelError::Status {
            status: 400,
            message: "invalid tool schema".into(),
            retry_after: None,
        }),
        ScriptedResponse::text("never sent"),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = agent_with_history(&model, Some(compacting_hook(&seen))).await;

    let err = agent.call("new question").await.unwrap_err();

    assert_eq!(
        err.to_string(),
        "model error: HTTP 400: invalid tool schema"
    );
    assert_eq!(*seen.lock().unwrap(), [false]);
    assert_eq!(model.request_count(), 1);
}
