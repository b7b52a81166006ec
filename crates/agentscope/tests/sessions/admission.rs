//! `ReActAgent::stream_admitted`: a call whose input is decided from the session it loaded,
//! holding the session's lease, before any hook runs.

use std::sync::{Arc, Mutex};

use agentscope::prelude::*;
use agentscope::session::{SessionStore, StateChange};
use agentscope::{Admission, CallInput, CancellationToken, Refusal};
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;

use crate::store::{Recording, temp_store};
use agentscope_test::session_store::instances::all_said;

/// What an admission check saw of the session.
#[derive(Debug, Default, Clone, PartialEq)]
struct Seen {
    said: Vec<String>,
    running: Vec<String>,
    revision: u64,
    leased: bool,
    entry: Option<serde_json::Value>,
}

fn seen(session: &mut Admission<'_>) -> Seen {
    Seen {
        said: all_said(session.messages()),
        running: session.running_tools().to_vec(),
        revision: session.revision(),
        leased: session.is_leased(),
        entry: session.hooks().get_value("gate").cloned(),
    }
}

async fn last_item(mut stream: AgentStream) -> Result<Msg, AgentError> {
    let mut last = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) if event.event_type == EventType::AgentResult => {
                last = Some(Ok(event.message))
            }
            Ok(_) => {}
            Err(error) => last = Some(Err(error)),
        }
    }
    last.unwrap()
}

/// An admitted call starts with what the check recorded, stored by the call's first save
/// (before the model is asked); a refused call stores what the check recorded and nothing
/// else, and no hook sees it; each check reads the session as stored, under the lease.
#[tokio::test]
async fn a_check_reads_the_session_under_its_lease_and_what_it_records_is_stored() {
    let (_dir, files) = temp_store();
    let store = Recording::new(files, true);
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let hooks = RecordingHook::new(0);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .hook(hooks.clone())
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let saw = Arc::new(Mutex::new(Vec::new()));

    let check = {
        let saw = Arc::clone(&saw);
        move |session: &mut Admission<'_>| {
            saw.lock().unwrap().push(seen(session));
            session.hooks_mut().set("gate", &json!({"admitted": "m1"}));
            Ok(CallInput::from(
                Msg::builder().id("m1").role(Role::User).text("hi").build(),
            ))
        }
    };
    let reply = last_item(agent.stream_admitted(check, StreamOptions::default()))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Hello!");
    assert_eq!(
        *saw.lock().unwrap(),
        [Seen {
            leased: true,
            ..Seen::default()
        }]
    );
    // The first save holds the check's entry and nothing of the call yet: it came before
    // the model was asked.
    let changes = store.changes.lock().unwrap().clone();
    let shapes: Vec<(u64, usize, Option<serde_json::Value>)> = changes
        .iter()
        .map(|c: &StateChange| (c.base, c.appended.len(), c.hooks.get("gate").cloned()))
        .collect();
    assert_eq!(
        shapes,
        [
            (0, 0, Some(json!({"admitted": "m1"}))),
            (1, 2, Some(json!({"admitted": "m1"}))),
        ]
    );
    let calls = hooks.types().len();

    // A refused call: the check sees the conversation as stored; what it records is stored
    // under the lease; no hook sees the call, the model is not asked.
    let check = {
        let saw = Arc::clone(&saw);
        move |session: &mut Admission<'_>| {
            saw.lock().unwrap().push(seen(session));
            session.hooks_mut().set("gate", &json!({"refused": "m1"}));
            Err(Refusal::new("already received"))
        }
    };
    let refused = last_item(agent.stream_admitted(check, StreamOptions::default()))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, AgentError::Refused { reason } if reason == "already received"),
        "{refused:?}"
    );
    assert_eq!(
        refused.to_string(),
        "the call was not admitted: already received"
    );
    assert_eq!(
        saw.lock().unwrap()[1],
        Seen {
            said: vec!["hi".into(), "Hello!".into()],
            running: Vec::new(),
            revision: 2,
            leased: true,
            entry: Some(json!({"admitted": "m1"})),
        }
    );
    assert_eq!(hooks.types().len(), calls);
    assert_eq!(model.request_count(), 1);
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.revision, 3);
    assert_eq!(all_said(&stored.messages), ["hi", "Hello!"]);
    assert_eq!(stored.hooks["gate"], json!({"refused": "m1"}));

    // A refusal that records nothing stores nothing.
    let quiet = last_item(agent.stream_admitted(
        |_: &mut Admission<'_>| Err(Refusal::new("no")),
        StreamOptions::default(),
    ))
    .await;
    assert!(matches!(quiet, Err(AgentError::Refused { .. })));
    assert_eq!(store.load("s").await.unwrap().unwrap().revision, 3);
}

/// A session another call holds is busy before the check runs: it never sees a state that
/// call may still change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_is_busy_before_the_check_runs() {
    let (_dir, store) = temp_store();
    let lease = store
        .lease("s", &CancellationToken::new())
        .await
        .unwrap()
        .unwrap();
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let ran = Arc::new(Mutex::new(false));
    let check = {
        let ran = Arc::clone(&ran);
        move |_: &mut Admission<'_>| {
            *ran.lock().unwrap() = true;
            Ok(CallInput::from("hi"))
        }
    };
    let busy = last_item(agent.stream_admitted(check, StreamOptions::default()))
        .await
        .unwrap_err();
    assert!(busy.is_busy(), "{busy:?}");
    assert!(!*ran.lock().unwrap());
    lease.release().await.unwrap();
}
