//! A hook's session state that this version cannot read (written by another version during a
//! rolling deploy, or edited by hand) is an error, never an erasure: the call fails at PreCall
//! before anything runs, and the entry stays stored as it was.

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore, StateChange};
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::store::temp_store;

#[tokio::test]
async fn an_approval_entry_of_another_version_fails_the_call_and_stays_stored() {
    let (_dir, store) = temp_store();
    // A stopped call awaiting approval, and the hook's entry in a shape this version does
    // not know (decisions as a list, say, by a newer version).
    let asked = Msg::builder()
        .role(Role::Assistant)
        .block(ToolUseBlock::new(
            "c1",
            "calculator",
            json!({"expression": "6*7"}),
        ))
        .build();
    let mut state = AgentState::new(
        AgentIdentity::new("assistant", "a1"),
        vec![Msg::user("What is 6*7?"), asked],
    );
    let newer = json!({"decisions": [{"id": "c1", "decision": "approve"}], "rejected": []});
    state
        .hooks
        .insert(ToolApprovalHook::NAME.to_owned(), newer.clone());
    store
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();

    let approvals = ToolApprovalHook::new(ApprovalPolicy::all());
    let error = approvals
        .restore_state(&store.load("s").await.unwrap().unwrap())
        .unwrap_err();
    assert!(error.to_string().starts_with(
        "the session's state of hook 'tool_approval' cannot be read (invalid type: sequence"
    ));

    let model = ScriptedModel::new([ScriptedResponse::text("42")]);
    let agent = ReActAgent::builder()
        .id("a1")
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(approvals)
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let error = agent.call(()).await.unwrap_err();
    assert!(
        matches!(&error, AgentError::Hook { hook, event: HookEventType::PreCall, .. } if hook == ToolApprovalHook::NAME),
        "{error:?}"
    );
    assert!(model.requests().is_empty());
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.revision, 1, "nothing was saved");
    assert_eq!(stored.hooks[ToolApprovalHook::NAME], newer);
}

#[cfg(feature = "context")]
#[tokio::test]
async fn a_context_entry_of_another_version_fails_the_call_and_stays_stored() {
    use agentscope::context::ContextWindowHook;

    let (_dir, store) = temp_store();
    let mut state = AgentState::new(AgentIdentity::new("assistant", "a1"), vec![]);
    let newer = json!({"summary": "a summary in a format to come"});
    state
        .hooks
        .insert(ContextWindowHook::NAME.to_owned(), newer.clone());
    store
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();

    let model = ScriptedModel::new([ScriptedResponse::text("Hi.")]);
    let agent = ReActAgent::builder()
        .id("a1")
        .model(model.clone())
        .hook(ContextWindowHook::new().with_max_messages(10))
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let error = agent.call("hello").await.unwrap_err();
    assert!(
        matches!(&error, AgentError::Hook { hook, .. } if hook == ContextWindowHook::NAME),
        "{error:?}"
    );
    assert!(model.requests().is_empty());
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.hooks[ContextWindowHook::NAME], newer);
    assert!(
        stored.messages.is_empty(),
        "the input was taken back: {:?}",
        stored.messages
    );
}
