//! Compile-time (and a few runtime) checks of auto traits and dyn-compatibility: the agent
//! handle, the `call`/`observe` futures, `AgentStream`, hook events, and type-erased hooks.

use agentscope_core::engine::TypedEvent;
use std::sync::Arc;

use crate::support::describe::hook_names;
use agentscope::prelude::*;
use agentscope::{BoxedHook, Event, HookFn, HookInfo};
use agentscope_core::engine::events;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::{Stream, StreamExt};

fn send<T: Send>(_: &T) {}
fn send_static<T: Send + 'static>(_: &T) {}

/// Compiles only when every type given is `Send + Sync + Clone + 'static`.
macro_rules! assert_send_sync_clone {
    ($($ty:ty),* $(,)?) => {{
        fn send_sync_clone<T: Send + Sync + Clone + 'static>() {}
        $(send_sync_clone::<$ty>();)*
    }};
}

fn agent_stream<S>(_: &S)
where
    S: Stream<Item = Result<Event, AgentError>> + futures::stream::FusedStream + Send + 'static,
{
}

fn agent(responses: usize, hooks: Vec<BoxedHook>) -> ReActAgent {
    ReActAgent::builder()
        .model(ScriptedModel::new(
            (0..responses).map(|i| ScriptedResponse::text(format!("answer {i}"))),
        ))
        .hooks(hooks)
        .build()
        .unwrap()
}

#[test]
fn agent_handle_and_data_types_are_send_sync_clone() {
    assert_send_sync_clone!(
        ReActAgent,
        HookEvent,
        Event,
        Msg,
        AgentError,
        HookError,
        BoxedHook,
        HookInfo,
        StreamOptions,
        RecordingHook,
    );
}

#[test]
fn agent_error_fits_boxed_std_errors() {
    let err: Box<dyn std::error::Error + Send + Sync + 'static> =
        Box::new(AgentError::invalid_input("x"));
    assert_eq!(err.to_string(), "x");
}

#[tokio::test]
async fn call_future_is_send_and_static_and_outlives_the_handle() {
    let agent = agent(1, Vec::new());
    let memory_view = agent.clone();
    let future = agent.call(Msg::user("hi"));
    send_static(&future);
    drop(agent); // the future owns what it needs

    let reply = tokio::spawn(future).await.unwrap().unwrap();

    assert_eq!(reply.text(), "answer 0");
    assert_eq!(memory_view.memory().len(), 2);
}

#[tokio::test]
async fn observe_future_is_send() {
    let agent = agent(0, Vec::new());
    let future = agent.observe(Msg::user("note"));
    send(&future);
    future.await.unwrap();

    // Spawnable when it owns its handle.
    let handle = agent.clone();
    tokio::spawn(async move { handle.observe("another").await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(agent.memory().len(), 2);
}

#[tokio::test]
async fn agent_stream_is_a_send_static_fused_stream() {
    let agent = agent(1, Vec::new());
    let stream = agent.stream(Msg::user("hi"), StreamOptions::default());
    agent_stream(&stream);
    drop(agent);

    let events: Vec<Event> = tokio::spawn(async move {
        let mut stream = stream;
        let mut events = Vec::new();
        while let Some(item) = stream.next().await {
            events.push(item.unwrap());
        }
        assert!(stream.next().await.is_none(), "fused after the last item");
        events
    })
    .await
    .unwrap();

    let last = events.last().unwrap();
    assert_eq!(last.event_type, EventType::AgentResult);
    assert_eq!(last.message.text(), "answer 0");
}

/// An async hook whose future awaits another Send future.
struct AsyncTagger;

impl Hook for AsyncTagger {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        tokio::task::yield_now().await;
        if let HookEvent::PostCall(e) = event {
            let text = format!("{} [async]", e.final_message().text());
            e.set_final_message(Msg::assistant(text));
        }
        Ok(())
    }

    fn priority(&self) -> i32 {
        20
    }

    fn name(&self) -> &str {
        "async-tagger"
    }
}

fn sync_tagger() -> HookFn {
    hook_fn(|event: &mut HookEvent| {
        if let HookEvent::PostCall(e) = event {
            let text = format!("{} [sync]", e.final_message().text());
            e.set_final_message(Msg::assistant(text));
        }
        Ok(())
    })
    .with_priority(10)
    .with_name("sync-tagger")
}

#[tokio::test]
async fn mixed_hooks_are_kept_together_as_boxed_hooks() {
    let recorder = RecordingHook::new(30);
    let hooks: Vec<BoxedHook> = vec![
        BoxedHook::new(AsyncTagger),
        BoxedHook::new(sync_tagger()),
        BoxedHook::new(Arc::new(recorder.clone())),
        // Boxing a boxed hook keeps it as is.
        BoxedHook::new(BoxedHook::new(hook_fn(|_| Ok(())).with_name("nested"))),
    ];
    assert_eq!(hooks[0].name(), "async-tagger");
    assert_eq!(hooks[0].priority(), 20);
    assert_eq!(hooks[3].name(), "nested");
    let agent = agent(1, hooks.clone());

    let reply = agent.call(Msg::user("hi")).await.unwrap();

    assert_eq!(reply.text(), "answer 0 [sync] [async]");
    let order = hook_names(&agent);
    assert_eq!(
        order,
        ["sync-tagger", "async-tagger", "recording@30", "nested"]
    );
    assert_eq!(recorder.types().len(), 5);

    // The same boxed hooks can be shared with a second agent (cheap clones).
    let other = agent_with_dyn_hooks(hooks);
    let reply = other.call(Msg::user("hi")).await.unwrap();
    assert_eq!(reply.text(), "answer 0 [sync] [async]");
}

/// Hooks can be passed around as trait objects through `BoxedHook`, including through a
/// `Box<dyn Iterator>`.
fn agent_with_dyn_hooks(hooks: Vec<BoxedHook>) -> ReActAgent {
    let iter: Box<dyn Iterator<Item = BoxedHook> + Send> = Box::new(hooks.into_iter());
    ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::text("answer 0")]))
        .hooks(iter)
        .build()
        .unwrap()
}

#[test]
fn boxed_hooks_run_through_the_hook_trait() {
    let boxed = BoxedHook::new(sync_tagger());
    let call =
        agentscope_core::engine::CallContext::new(Arc::new(agentscope::AgentInfo::new("a", "1")));
    let mut event: HookEvent = events::post_call(call.info(), Msg::assistant("x")).into_event();
    futures::executor::block_on(Hook::on_event(&boxed, &mut event)).unwrap();
    match event {
        HookEvent::PostCall(e) => assert_eq!(e.final_message().text(), "x [sync]"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn hook_event_futures_of_sendable_hooks_are_send() {
    fn on_event_is_send<H: Hook>(hook: &H, event: &mut HookEvent) {
        send(&hook.on_event(event));
    }
    let call =
        agentscope_core::engine::CallContext::new(Arc::new(agentscope::AgentInfo::new("a", "1")));
    let mut event: HookEvent = events::post_call(call.info(), Msg::assistant("x")).into_event();
    on_event_is_send(&AsyncTagger, &mut event);
    on_event_is_send(&BoxedHook::new(AsyncTagger), &mut event);
}
