//! The sequential and fan-out pipelines, directly and in a hub: the exact inputs each model
//! saw, the order of the replies, and what a failing agent does to the pipeline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentscope::Agent;
use agentscope::multi_agent::MsgHub;
use agentscope::multi_agent::{
    Activity, FanoutPipeline, MultiAgentError, SequentialPipeline, fanout, sequential,
};
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};

use crate::{answers, from, heard_by, hub_of, memory, request, scripted};

/// A scripted agent answering `text` after `delay_ms` milliseconds.
fn answering_after(
    name: &str,
    text: &str,
    delay_ms: u64,
) -> (Arc<dyn Agent>, ReActAgent, ScriptedModel) {
    scripted(
        name,
        [ScriptedResponse::text(text).with_delay(Duration::from_millis(delay_ms))],
    )
}

/// The text of each reply of a pipeline that failed (`None`: the agent made none).
fn reply_texts(error: &MultiAgentError) -> Vec<Option<String>> {
    error
        .replies()
        .iter()
        .map(|r| r.as_ref().map(Msg::text))
        .collect()
}

#[tokio::test]
async fn sequential_gives_each_reply_to_the_next_agent_and_returns_the_last() {
    let (writer, writer_agent, writer_model) =
        scripted("writer", [ScriptedResponse::text("Roses are red.")]);
    let (editor, editor_agent, editor_model) =
        scripted("editor", [ScriptedResponse::text("Roses are crimson.")]);
    let (critic, critic_agent, critic_model) = scripted("critic", [ScriptedResponse::text("8/10")]);

    let reply = sequential(&[writer, editor, critic], from("user", "Write a poem."))
        .await
        .unwrap();

    assert_eq!(
        (reply.name.as_str(), reply.text()),
        ("critic", "8/10".to_owned())
    );
    assert_eq!(
        request(&writer_model, 0),
        ["user/user: text \"Write a poem.\""]
    );
    // Each next agent hears the previous reply: a user message carrying the speaker's name.
    assert_eq!(
        request(&editor_model, 0),
        ["user/writer: text \"writer: Roses are red.\""]
    );
    assert_eq!(
        request(&critic_model, 0),
        ["user/editor: text \"editor: Roses are crimson.\""]
    );
    assert_eq!(
        memory(&editor_agent),
        [
            "user/writer: text \"writer: Roses are red.\"",
            "assistant/editor: text \"Roses are crimson.\"",
        ]
    );
    // Outside a hub, nobody else hears anything.
    assert_eq!(
        memory(&writer_agent),
        [
            "user/user: text \"Write a poem.\"",
            "assistant/writer: text \"Roses are red.\"",
        ]
    );
    assert_eq!(memory(&critic_agent).len(), 2);
}

#[tokio::test]
async fn sequential_stops_at_the_failing_agent_and_keeps_the_replies_before_it() {
    let (a, _, _) = scripted("a", [ScriptedResponse::text("first")]);
    let (b, b_agent, _) = scripted("b", [ScriptedResponse::error("down")]);
    let (c, _, c_model) = scripted("c", [ScriptedResponse::text("never")]);

    let error = sequential(&[a, b, c], "go").await.unwrap_err();

    let replies = reply_texts(&error);
    assert_eq!(replies, [Some("first".to_owned()), None, None]);
    assert_eq!(error.failed_agents(), ["b"]);
    assert_eq!(error.failures()[0].activity, Activity::Reply);
    assert_eq!(
        error.to_string(),
        "agent 'b' failed to reply: model error: down"
    );
    assert_eq!(
        c_model.request_count(),
        0,
        "the agent after the failure ran"
    );
    assert!(
        memory(&b_agent).is_empty(),
        "the failed call's input was rolled back"
    );

    let none = sequential(&[], "go").await.unwrap_err();
    assert!(matches!(none, MultiAgentError::NoAgents));
}

/// Records the order in which agents finished their calls (PostCall).
fn finish_order(agents: &[&ReActAgent]) -> Arc<Mutex<Vec<String>>> {
    let order = Arc::new(Mutex::new(Vec::new()));
    for agent in agents {
        let order = Arc::clone(&order);
        agent.add_hook(
            hook_fn(move |event| {
                if let HookEvent::PostCall(e) = event {
                    order.lock().unwrap().push(e.agent().name().to_owned());
                }
                Ok(())
            })
            .with_interests(HookEventType::PostCall),
        );
    }
    order
}

#[tokio::test]
async fn fanout_runs_concurrently_and_returns_replies_in_agent_order() {
    let (slow, slow_agent, slow_model) = answering_after("slow", "slow says", 90);
    let (fast, fast_agent, fast_model) = answering_after("fast", "fast says", 10);
    let (mid, mid_agent, mid_model) = answering_after("mid", "mid says", 50);
    let finished = finish_order(&[&slow_agent, &fast_agent, &mid_agent]);

    let replies = fanout(&[slow, fast, mid], from("user", "Vote!"))
        .await
        .unwrap();

    let replies: Vec<(String, String)> = replies
        .iter()
        .map(|m| (m.name.to_string(), m.text()))
        .collect();
    assert_eq!(
        replies,
        [
            ("slow".to_owned(), "slow says".to_owned()),
            ("fast".to_owned(), "fast says".to_owned()),
            ("mid".to_owned(), "mid says".to_owned()),
        ]
    );
    // Concurrent: they finished in the order of their delays, not one after another.
    assert_eq!(*finished.lock().unwrap(), ["fast", "mid", "slow"]);
    for model in [&slow_model, &fast_model, &mid_model] {
        assert_eq!(request(model, 0), ["user/user: text \"Vote!\""]);
    }
}

#[tokio::test]
async fn fanout_lets_every_agent_finish_and_names_each_failure() {
    let (a, _, _) = scripted("a", [ScriptedResponse::text("yes")]);
    let (b, _, _) = scripted("b", [ScriptedResponse::error("b is down")]);
    let (c, _, _) = scripted("c", [ScriptedResponse::text("no")]);
    let (d, _, _) = scripted("d", [ScriptedResponse::error("d is down")]);

    let error = fanout(&[a, b, c, d], "Vote!").await.unwrap_err();

    let replies = reply_texts(&error);
    assert_eq!(
        replies,
        [Some("yes".to_owned()), None, Some("no".to_owned()), None]
    );
    assert_eq!(error.failed_agents(), ["b", "d"]);
    assert_eq!(
        error.to_string(),
        "agent 'b' failed to reply: model error: b is down; agent 'd' failed to reply: model \
         error: d is down"
    );
    assert!(fanout(&[], "nobody").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_sequential_pipeline_in_a_hub_broadcasts_each_reply_and_never_repeats_it() {
    let (alice, alice_agent, alice_model) = scripted("alice", [ScriptedResponse::text("A")]);
    let (bob, bob_agent, bob_model) = scripted("bob", [ScriptedResponse::text("B")]);
    let (carol, carol_agent, carol_model) = scripted("carol", []);
    let hub = hub_of(
        [alice.clone(), bob.clone(), carol.clone()],
        Some(from("host", "Topic: lunch.")),
    )
    .await;

    let last = SequentialPipeline::new([alice, bob])
        .run_in(&hub, from("user", "Start, Alice."))
        .await
        .unwrap();

    assert_eq!(last.text(), "B");
    assert_eq!(
        request(&alice_model, 0),
        [
            "user/host: text \"Topic: lunch.\"",
            "user/user: text \"Start, Alice.\"",
        ]
    );
    // Bob observed Alice's reply: his call adds no input, and his model sees it once.
    assert_eq!(
        request(&bob_model, 0),
        [
            "user/host: text \"Topic: lunch.\"",
            "user/alice: text \"alice: A\"",
        ]
    );
    assert_eq!(
        memory(&alice_agent),
        [
            "user/host: text \"Topic: lunch.\"",
            "user/user: text \"Start, Alice.\"",
            "assistant/alice: text \"A\"",
            "user/bob: text \"bob: B\"",
        ]
    );
    let lines = [("host", "Topic: lunch."), ("alice", "A"), ("bob", "B")];
    assert_eq!(memory(&bob_agent), heard_by("bob", &lines));
    assert_eq!(memory(&carol_agent), heard_by("carol", &lines));
    assert_eq!(carol_model.request_count(), 0);
}

#[tokio::test]
async fn a_fanout_in_a_hub_broadcasts_the_replies_in_participant_order_after_all_calls() {
    let (a, a_agent, _) = answering_after("a", "from a", 50);
    let (b, b_agent, _) = answering_after("b", "from b", 10);
    let (c, c_agent, c_model) = scripted("c", [ScriptedResponse::text("summary")]);
    let hub = hub_of([a.clone(), b.clone(), c.clone()], None).await;

    let replies = FanoutPipeline::new([a, b])
        .run_in(&hub, from("user", "Ideas?"))
        .await
        .unwrap();
    assert_eq!(
        replies.iter().map(Msg::text).collect::<Vec<_>>(),
        ["from a", "from b"]
    );
    // The moderator gets both replies as input: it observed them, so they are not repeated.
    let summary = hub.call(&c, replies).await.unwrap();

    assert_eq!(summary.text(), "summary");
    assert_eq!(
        memory(&a_agent),
        [
            "user/user: text \"Ideas?\"",
            "assistant/a: text \"from a\"",
            "user/b: text \"b: from b\"",
            "user/c: text \"c: summary\"",
        ]
    );
    // B finished first and holds its own reply first, then A's (broadcast in agent order).
    assert_eq!(
        memory(&b_agent),
        [
            "user/user: text \"Ideas?\"",
            "assistant/b: text \"from b\"",
            "user/a: text \"a: from a\"",
            "user/c: text \"c: summary\"",
        ]
    );
    assert_eq!(
        request(&c_model, 0),
        ["user/a: text \"a: from a\"", "user/b: text \"b: from b\""]
    );
    assert_eq!(memory(&c_agent).len(), 3);
}

#[tokio::test]
async fn pipelines_in_a_hub_accept_only_participants() {
    let (a, _, a_model) = scripted("a", [ScriptedResponse::text("x")]);
    let (outsider, _, _) = scripted("outsider", []);
    let hub = MsgHub::builder()
        .participant(a.clone())
        .enter()
        .await
        .unwrap();
    let agents: [Arc<dyn Agent>; 2] = [a, outsider];

    let error = hub.sequential(&agents, "go").await.unwrap_err();
    assert!(matches!(&error, MultiAgentError::NotParticipant { agent } if agent == "outsider"));
    let error = hub.fanout(&agents, "go").await.unwrap_err();
    assert!(matches!(&error, MultiAgentError::NotParticipant { agent } if agent == "outsider"));
    assert_eq!(
        a_model.request_count(),
        0,
        "nothing runs when an agent is not a participant"
    );
}

#[tokio::test]
async fn pipeline_values_run_outside_a_hub() {
    let (a, _, _) = scripted("a", answers(["1", "3"]));
    let (b, _, _) = scripted("b", answers(["2", "4"]));
    let sequence = SequentialPipeline::new([a.clone(), b.clone()]);
    let fan = FanoutPipeline::new([a, b]);
    assert_eq!(sequence.agents().len(), 2);
    assert_eq!(
        format!("{fan:?}"),
        "FanoutPipeline { agents: [\"a\", \"b\"] }"
    );

    assert_eq!(sequence.run("go").await.unwrap().text(), "2");
    let texts: Vec<String> = fan.run("go").await.unwrap().iter().map(Msg::text).collect();
    assert_eq!(texts, ["3", "4"]);
}
