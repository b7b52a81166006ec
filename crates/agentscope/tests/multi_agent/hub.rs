//! `MsgHub`: the announcement, replies observed by every other participant (never twice),
//! the input kept private, broadcasts, add/remove mid-conversation, and failures reported
//! by name after everyone else observed.

use std::sync::Arc;

use agentscope::Agent;
use agentscope::multi_agent::MsgHub;
use agentscope::multi_agent::{Activity, MultiAgentError};
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};

use crate::{answers, from, heard_by, hub_of, memory, request, scripted};

fn announcement() -> Msg {
    from("host", "Plan a picnic. Alice, Bob and Carol speak in turn.")
}

const ANNOUNCEMENT: &str = "user/host: text \"Plan a picnic. Alice, Bob and Carol speak in turn.\"";

/// Fails every observation (a PreCall hook refusing `is_observation()` events).
fn refusing_observer(name: &str) -> (Arc<dyn Agent>, ReActAgent, ScriptedModel) {
    let model = ScriptedModel::new([]);
    let refuse = hook_fn(|event| {
        if let HookEvent::PreCall(e) = event
            && e.is_observation()
        {
            return Err(HookError::msg("not listening"));
        }
        Ok(())
    })
    .with_interests(HookEventType::PreCall)
    .with_name("refuse");
    let agent = ReActAgent::builder()
        .name(name)
        .model(model.clone())
        .hook(refuse)
        .build()
        .unwrap();
    (Arc::new(agent.clone()), agent, model)
}

#[tokio::test]
async fn every_participant_observes_the_announcement_and_every_other_reply_once() {
    let (alice, alice_agent, alice_model) =
        scripted("alice", [ScriptedResponse::text("Saturday?")]);
    let (bob, bob_agent, bob_model) = scripted("bob", [ScriptedResponse::text("Saturday works.")]);
    let (carol, carol_agent, carol_model) =
        scripted("carol", [ScriptedResponse::text("I'll bring bread.")]);
    let hub = hub_of(
        [alice.clone(), bob.clone(), carol.clone()],
        Some(announcement()),
    )
    .await;
    assert_eq!(hub.names(), ["alice", "bob", "carol"]);
    assert_eq!(hub.announcement().unwrap().text(), announcement().text());
    for agent in [&alice_agent, &bob_agent, &carol_agent] {
        assert_eq!(memory(agent), [ANNOUNCEMENT]);
    }

    let a = hub.call(&alice, ()).await.unwrap();
    let b = hub.call(&bob, ()).await.unwrap();
    let c = hub.call(&carol, ()).await.unwrap();

    assert_eq!(
        [a.name.as_str(), b.name.as_str(), c.name.as_str()],
        ["alice", "bob", "carol"]
    );
    let lines = [
        ("host", "Plan a picnic. Alice, Bob and Carol speak in turn."),
        ("alice", "Saturday?"),
        ("bob", "Saturday works."),
        ("carol", "I'll bring bread."),
    ];
    // Everyone holds the same conversation: each message exactly once, in the order said;
    // the others' words as user messages carrying their names.
    for agent in [&alice_agent, &bob_agent, &carol_agent] {
        assert_eq!(memory(agent), heard_by(agent.name(), &lines));
    }
    // Each model saw what was said before its turn.
    assert_eq!(request(&alice_model, 0), heard_by("alice", &lines[..1]));
    assert_eq!(request(&bob_model, 0), heard_by("bob", &lines[..2]));
    assert_eq!(request(&carol_model, 0), heard_by("carol", &lines[..3]));
}

#[tokio::test]
async fn the_input_of_a_hub_call_stays_private_and_broadcast_reaches_everyone() {
    let (alice, alice_agent, alice_model) = scripted("alice", answers(["Psst: Sunday.", "Noted."]));
    let (bob, bob_agent, _) = scripted("bob", []);
    let hub = MsgHub::builder()
        .participant(alice.clone())
        .participant(bob.clone())
        .enter()
        .await
        .unwrap();

    hub.call(&alice, from("user", "Which day? (only for you)"))
        .await
        .unwrap();
    let news = from("user", "It will rain on Sunday.");
    hub.broadcast(news.clone()).await.unwrap();
    // Alice already has the broadcast message: passing it again as input does not store
    // it twice.
    hub.call(&alice, news).await.unwrap();

    assert_eq!(
        memory(&alice_agent),
        [
            "user/user: text \"Which day? (only for you)\"",
            "assistant/alice: text \"Psst: Sunday.\"",
            "user/user: text \"It will rain on Sunday.\"",
            "assistant/alice: text \"Noted.\"",
        ]
    );
    assert_eq!(
        memory(&bob_agent),
        [
            "user/alice: text \"alice: Psst: Sunday.\"",
            "user/user: text \"It will rain on Sunday.\"",
            "user/alice: text \"alice: Noted.\"",
        ]
    );
    assert_eq!(request(&alice_model, 1), memory(&alice_agent)[..3]);
}

#[tokio::test]
async fn participants_added_or_removed_mid_conversation_hear_from_then_on() {
    let (alice, alice_agent, alice_model) = scripted("alice", answers(["a1", "a2"]));
    let (bob, bob_agent, _) = scripted("bob", answers(["b1", "b2"]));
    let (carol, carol_agent, _) = scripted("carol", [ScriptedResponse::text("c1")]);
    let hub = hub_of([alice.clone(), bob.clone()], Some(announcement())).await;

    hub.call(&alice, ()).await.unwrap();
    // Carol joins: she observes the announcement, not what was said before.
    hub.add(carol.clone()).await.unwrap();
    assert_eq!(memory(&carol_agent), [ANNOUNCEMENT]);
    assert_eq!(hub.names(), ["alice", "bob", "carol"]);
    hub.call(&bob, ()).await.unwrap();
    // Alice leaves (by name); Bob's next words do not reach her.
    let removed = hub.remove("alice").unwrap();
    assert_eq!(removed.id(), alice.id());
    assert_eq!(hub.names(), ["bob", "carol"]);
    hub.call(&carol, ()).await.unwrap();
    hub.call(&bob, ()).await.unwrap();
    // Carol leaves (by id).
    assert_eq!(hub.remove(carol.id()).unwrap().name(), "carol");
    assert!(hub.remove("carol").is_none());
    assert_eq!((hub.len(), hub.is_empty()), (1, false));

    assert_eq!(
        memory(&alice_agent),
        [
            ANNOUNCEMENT,
            "assistant/alice: text \"a1\"",
            "user/bob: text \"bob: b1\"",
        ]
    );
    assert_eq!(
        memory(&bob_agent),
        [
            ANNOUNCEMENT,
            "user/alice: text \"alice: a1\"",
            "assistant/bob: text \"b1\"",
            "user/carol: text \"carol: c1\"",
            "assistant/bob: text \"b2\"",
        ]
    );
    assert_eq!(
        memory(&carol_agent),
        [
            ANNOUNCEMENT,
            "user/bob: text \"bob: b1\"",
            "assistant/carol: text \"c1\"",
            "user/bob: text \"bob: b2\"",
        ]
    );
    // A former participant cannot speak in the hub: nothing runs.
    let error = hub.call(&alice, ()).await.unwrap_err();
    assert!(matches!(&error, MultiAgentError::NotParticipant { agent } if agent == "alice"));
    assert_eq!(
        error.to_string(),
        "agent 'alice' is not a participant of the hub"
    );
    assert_eq!(alice_model.request_count(), 1);
}

#[tokio::test]
async fn names_and_ids_are_unique_within_a_hub() {
    let (alice, _, _) = scripted("alice", []);
    let (other_alice, _, _) = scripted("alice", []);
    let error = MsgHub::builder()
        .participants([alice.clone(), other_alice.clone()])
        .enter()
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the hub already has a participant named 'alice' (or with its id)"
    );

    let hub = MsgHub::builder()
        .participant(alice.clone())
        .enter()
        .await
        .unwrap();
    let again = hub.add(alice.clone()).await.unwrap_err();
    assert!(matches!(again, MultiAgentError::DuplicateParticipant { agent } if agent == "alice"));
    assert_eq!(hub.names(), ["alice"]);
}

#[tokio::test]
async fn a_failing_observer_is_named_after_every_other_participant_observed() {
    let (alice, alice_agent, _) = scripted("alice", [ScriptedResponse::text("Hello all.")]);
    let (bob, bob_agent, _) = refusing_observer("bob");
    let (carol, carol_agent, _) = scripted("carol", []);
    let hub = hub_of([alice.clone(), bob.clone(), carol.clone()], None).await;

    let error = hub
        .call(&alice, from("user", "Greet everyone."))
        .await
        .unwrap_err();

    let MultiAgentError::Agents { replies, failures } = &error else {
        panic!("unexpected error: {error:?}");
    };
    // The reply was made and is kept; Carol observed it; Bob is named.
    assert_eq!(replies.len(), 1);
    let reply = replies[0].as_ref().unwrap();
    assert_eq!(reply.text(), "Hello all.");
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].agent, "bob");
    assert_eq!(
        failures[0].activity,
        Activity::Observe {
            from: "alice".into(),
            message_id: reply.id.to_string()
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "agent 'bob' failed to observe message {} from 'alice': hook 'refuse' failed at \
             PreCall: not listening",
            reply.id
        )
    );
    assert_eq!(error.failed_agents(), ["bob"]);
    assert_eq!(
        memory(&alice_agent),
        [
            "user/user: text \"Greet everyone.\"",
            "assistant/alice: text \"Hello all.\"",
        ]
    );
    assert_eq!(
        memory(&carol_agent),
        ["user/alice: text \"alice: Hello all.\""]
    );
    assert!(memory(&bob_agent).is_empty());
    // Broadcasts report the same way.
    let error = hub.broadcast(from("host", "Lunch!")).await.unwrap_err();
    assert_eq!(error.failed_agents(), ["bob"]);
    assert!(error.replies().is_empty());
    assert_eq!(memory(&alice_agent)[2], "user/host: text \"Lunch!\"");
    assert_eq!(memory(&carol_agent)[1], "user/host: text \"Lunch!\"");
}

#[tokio::test]
async fn a_failing_speaker_is_named_and_nothing_is_broadcast() {
    let (alice, alice_agent, _) = scripted("alice", [ScriptedResponse::error("overloaded")]);
    let (bob, bob_agent, _) = scripted("bob", []);
    let hub = hub_of([alice.clone(), bob.clone()], None).await;

    let error = hub.call(&alice, from("user", "Anyone?")).await.unwrap_err();

    assert_eq!(error.replies(), [None]);
    assert_eq!(error.failures().len(), 1);
    assert_eq!(error.failures()[0].activity, Activity::Reply);
    assert!(!error.failures()[0].is_observe());
    assert_eq!(
        error.to_string(),
        "agent 'alice' failed to reply: model error: overloaded"
    );
    // The failed call's input was rolled back; Bob heard nothing.
    assert!(memory(&alice_agent).is_empty());
    assert!(memory(&bob_agent).is_empty());
}

#[tokio::test]
async fn a_participant_that_cannot_observe_the_announcement_is_not_added() {
    let (alice, alice_agent, _) = scripted("alice", []);
    let (bob, _, _) = refusing_observer("bob");
    let hub = MsgHub::builder()
        .participant(alice.clone())
        .announcement(announcement())
        .enter()
        .await
        .unwrap();

    let error = hub.add(bob.clone()).await.unwrap_err();

    assert_eq!(error.failed_agents(), ["bob"]);
    assert_eq!(hub.names(), ["alice"]);
    assert_eq!(memory(&alice_agent), [ANNOUNCEMENT]);
    // Entering fails the same way when a first participant refuses.
    let error = MsgHub::builder()
        .participants([bob])
        .announcement(announcement())
        .enter()
        .await
        .unwrap_err();
    assert_eq!(error.failed_agents(), ["bob"]);
}

#[tokio::test]
async fn a_reply_streamed_outside_the_hub_is_shared_with_broadcast_from() {
    use futures::StreamExt;

    let (alice, alice_agent, _) = scripted("alice", [ScriptedResponse::text("Streamed.")]);
    let (bob, bob_agent, _) = scripted("bob", []);
    let (carol, _, _) = scripted("carol", []);
    let hub = hub_of([alice.clone(), bob.clone()], None).await;

    let mut events = alice.stream(
        from("user", "Say something.").into(),
        StreamOptions::default(),
    );
    let mut reply = None;
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        if event.event_type == EventType::AgentResult {
            reply = Some(event.message);
        }
    }
    hub.broadcast_from(&alice, reply.unwrap()).await.unwrap();

    assert_eq!(
        memory(&alice_agent),
        [
            "user/user: text \"Say something.\"",
            "assistant/alice: text \"Streamed.\"",
        ]
    );
    assert_eq!(
        memory(&bob_agent),
        ["user/alice: text \"alice: Streamed.\""]
    );
    let error = hub
        .broadcast_from(&carol, from("carol", "hi"))
        .await
        .unwrap_err();
    assert!(matches!(error, MultiAgentError::NotParticipant { agent } if agent == "carol"));
}
