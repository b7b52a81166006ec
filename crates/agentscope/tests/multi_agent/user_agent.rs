//! `UserAgent`: replies read from a channel, as User messages carrying its name, through
//! the agent machinery (hooks, memory, interrupts); a closed source is a clear error.

use std::sync::Arc;

use agentscope::Agent;
use agentscope::interrupt::INTERRUPT_REPLY;
use agentscope::multi_agent::MsgHub;
use agentscope::multi_agent::UserAgent;
use agentscope::multi_agent::{ChannelInput, UserInput, sequential};
use agentscope::prelude::*;
use agentscope_test::{RecordingHook, ScriptedResponse};
use tokio::sync::mpsc;

use crate::{from, heard_by, memory, request, scripted};

#[tokio::test]
async fn a_user_agent_replies_with_the_next_line_of_its_channel() {
    let (tx, rx) = mpsc::channel(4);
    let recorder = RecordingHook::new(100);
    let user = UserAgent::from_builder(
        ReActAgent::builder().name("alice").hook(recorder.clone()),
        ChannelInput::new(rx),
    )
    .unwrap();
    tx.send("Two tickets, please.".to_owned()).await.unwrap();
    tx.send("Window seats.".to_owned()).await.unwrap();

    let first = user.call(from("clerk", "How many?").into()).await.unwrap();
    let second = user.call(().into()).await.unwrap();

    assert_eq!((first.role, first.name.as_str()), (Role::User, "alice"));
    assert_eq!(first.text(), "Two tickets, please.");
    assert_eq!(second.text(), "Window seats.");
    assert_eq!(
        memory(user.agent()),
        [
            "user/clerk: text \"How many?\"",
            "user/alice: text \"Two tickets, please.\"",
            "user/alice: text \"Window seats.\"",
        ]
    );
    assert_eq!(
        recorder.types(),
        [
            HookEventType::PreCall,
            HookEventType::PostCall,
            HookEventType::PreCall,
            HookEventType::PostCall
        ]
    );
    assert_eq!(
        (Agent::name(&user), user.id()),
        ("alice", user.agent().id())
    );
}

#[tokio::test]
async fn a_closed_source_is_a_clear_error() {
    let (tx, rx) = mpsc::channel::<String>(1);
    let user = UserAgent::new("bob", ChannelInput::from(rx)).unwrap();
    drop(tx);

    let error = user.call(from("host", "Bob?").into()).await.unwrap_err();

    assert!(matches!(error, AgentError::InvalidInput { .. }));
    assert_eq!(
        error.to_string(),
        "the input of user agent 'bob' is closed: no more replies will come"
    );
    assert!(
        memory(user.agent()).is_empty(),
        "the unanswered input was rolled back"
    );
}

#[tokio::test]
async fn interrupting_a_waiting_user_agent_loses_no_line() {
    let (tx, rx) = mpsc::channel(4);
    let user = UserAgent::new("carol", ChannelInput::new(rx)).unwrap();
    let waiting = tokio::spawn(user.call(from("host", "Carol?").into()));
    tokio::task::yield_now().await;
    while !user.agent().is_running() {
        tokio::task::yield_now().await;
    }

    user.interrupt();
    let reply = waiting.await.unwrap().unwrap();
    tx.send("Sorry, here now.".to_owned()).await.unwrap();
    let next = user
        .call(from("host", "Carol, are you there?").into())
        .await
        .unwrap();

    assert_eq!(reply.text(), INTERRUPT_REPLY);
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));
    assert_eq!(next.text(), "Sorry, here now.");
    assert_eq!(
        memory(user.agent()),
        [
            "user/host: text \"Carol?\"".to_owned(),
            format!("assistant/carol: text {INTERRUPT_REPLY:?}"),
            "user/host: text \"Carol, are you there?\"".to_owned(),
            "user/carol: text \"Sorry, here now.\"".to_owned(),
        ]
    );
}

#[tokio::test]
async fn a_user_and_an_assistant_talk_in_a_hub_through_a_pipeline() {
    let (tx, rx) = mpsc::channel(4);
    let user: Arc<dyn Agent> = Arc::new(UserAgent::new("user", ChannelInput::new(rx)).unwrap());
    let (assistant, assistant_agent, assistant_model) = scripted(
        "assistant",
        [
            ScriptedResponse::text("Rome, then."),
            ScriptedResponse::text("Booked."),
        ],
    );
    let hub = MsgHub::builder()
        .participants([user.clone(), assistant.clone()])
        .announcement(from("host", "Plan a trip."))
        .enter()
        .await
        .unwrap();
    tx.send("I want to see Rome.".to_owned()).await.unwrap();
    tx.send("Book it.".to_owned()).await.unwrap();

    let agents = [user.clone(), assistant.clone()];
    hub.sequential(&agents, ()).await.unwrap();
    let last = hub.sequential(&agents, ()).await.unwrap();

    assert_eq!(last.text(), "Booked.");
    let lines = [
        ("host", "Plan a trip."),
        ("user", "I want to see Rome."),
        ("assistant", "Rome, then."),
        ("user", "Book it."),
        ("assistant", "Booked."),
    ];
    assert_eq!(memory(&assistant_agent), heard_by("assistant", &lines));
    // The user agent's own replies are user messages too.
    let user_memory = user.save_state().unwrap().messages;
    assert_eq!(
        user_memory
            .iter()
            .map(crate::support::describe::without_reason::describe)
            .collect::<Vec<_>>(),
        heard_by("nobody", &lines)
    );
    assert_eq!(
        request(&assistant_model, 1),
        heard_by("assistant", &lines[..4])
    );
    // Outside the hub too: a pipeline from the user to the assistant.
    drop(tx);
    let error = sequential(&agents, ()).await.unwrap_err();
    assert_eq!(error.failed_agents(), ["user"]);
}

#[tokio::test]
async fn channel_input_reads_in_order_then_reports_closed() {
    let (tx, rx) = mpsc::channel(2);
    let input = ChannelInput::new(rx);
    tx.send("a".to_owned()).await.unwrap();
    tx.send("b".to_owned()).await.unwrap();
    drop(tx);
    assert_eq!(input.read("u").await.unwrap().as_deref(), Some("a"));
    assert_eq!(input.read("u").await.unwrap().as_deref(), Some("b"));
    assert_eq!(input.read("u").await.unwrap(), None);
}
