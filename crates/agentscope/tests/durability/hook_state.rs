//! What hooks keep with the session (`HookState`) is saved with the call's end, also when a
//! hook changed it after the call's last step (at PostCall).

use std::sync::Arc;

use agentscope::HookFn;
use agentscope::prelude::*;
use agentscope::session::HookState;
use agentscope::session::JsonFileSessionStore;
use agentscope::session::SessionStore;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

/// Counts calls in the session's hook state, at PostCall: after the call's last save.
fn post_call_counter() -> HookFn {
    hook_fn(|event| {
        if let HookEvent::PostCall(e) = event
            && let Some(state) = e.extensions_mut().get_mut::<HookState>()
        {
            let calls: u64 = state.get("counter")?.unwrap_or(0);
            state.set("counter", &(calls + 1));
        }
        Ok(())
    })
    .with_interests(HookEventType::PostCall)
    .with_name("counter")
}

#[tokio::test]
async fn a_hook_state_change_at_post_call_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonFileSessionStore::new(dir.path()));
    let agent = |answers: usize| {
        ReActAgent::builder()
            .model(ScriptedModel::new(
                (0..answers).map(|i| ScriptedResponse::text(format!("answer {i}"))),
            ))
            .hook(post_call_counter())
            .session(Arc::clone(&store), "chat")
            .build()
            .unwrap()
    };

    agent(1).call("one").await.unwrap();
    assert_eq!(
        store.load("chat").await.unwrap().unwrap().hooks["counter"],
        json!(1)
    );
    // Another instance continues from the stored count.
    agent(1).call("two").await.unwrap();
    let stored = store.load("chat").await.unwrap().unwrap();
    assert_eq!(stored.hooks["counter"], json!(2));
    assert_eq!(stored.messages.len(), 4);
}
