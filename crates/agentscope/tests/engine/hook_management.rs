//! Runtime hook management (`add_hook`, `remove_hook`, `clear_hooks`, `hook_order`) applies
//! from the next call on, never to the running one; `observe` stores messages without
//! replying and hooks see them as history on the next call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::support::describe::hook_names;
use crate::support::failures::pending_calls;
use crate::support::fixtures::{build_agent, calc_call};
use crate::support::hooks::{PLAIN_CALL, hooks};
use agentscope::prelude::*;
use agentscope::{AgentError, BoxedHook, HookId};
use agentscope_test::tools::Calculator;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};

use agentscope::HookEventType as K;

/// A late-bound handle to the agent, for hooks that manage the agent they belong to.
type Handle = Arc<OnceLock<ReActAgent>>;

fn answers(n: usize) -> ScriptedModel {
    ScriptedModel::new((0..n).map(|i| ScriptedResponse::text(format!("answer {i}"))))
}

fn agent(model: &ScriptedModel, hooks: impl IntoIterator<Item = BoxedHook>) -> ReActAgent {
    ReActAgent::builder()
        .sys_prompt("seed")
        .model(model.clone())
        .hooks(hooks)
        .build()
        .unwrap()
}

/// An agent (see [`agent`]) whose first hook, "manager" (priority 50), runs `manage` with the
/// agent itself on the first PreReasoning it sees, followed by `hooks`; and the count of the
/// PreReasoning events the manager saw.
fn managed_agent(
    model: &ScriptedModel,
    manage: impl Fn(&ReActAgent) + Send + Sync + 'static,
    hooks: impl IntoIterator<Item = BoxedHook>,
) -> (ReActAgent, Arc<AtomicUsize>) {
    let handle: Handle = Arc::default();
    let invocations = Arc::new(AtomicUsize::new(0));
    let manager = {
        let handle = Arc::clone(&handle);
        let invocations = Arc::clone(&invocations);
        hook_fn(move |_event: &mut HookEvent| {
            if invocations.fetch_add(1, Ordering::SeqCst) == 0 {
                manage(handle.get().unwrap());
            }
            Ok(())
        })
        .with_interests(K::PreReasoning)
        .with_priority(50)
        .with_name("manager")
    };
    let agent = agent(model, std::iter::once(BoxedHook::new(manager)).chain(hooks));
    handle.set(agent.clone()).unwrap();
    (agent, invocations)
}

// ---------------------------------------------------------------------------------------
// Changes during a call apply from the next call on
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn hook_added_during_a_call_sees_nothing_of_it_and_everything_of_the_next() {
    let model = answers(2);
    // Priority 1: had it joined the running chain, it would run before everything else.
    let late = RecordingHook::new(1);
    let adder = {
        let late = late.clone();
        move |agent: &ReActAgent| {
            agent.add_hook(late.clone());
        }
    };
    let (agent, invocations) = managed_agent(&model, adder, []);

    agent.call(Msg::user("one")).await.unwrap();

    assert!(late.types().is_empty(), "{:?}", late.types());
    assert_eq!(hook_names(&agent), ["recording@1", "manager"]);

    agent.call(Msg::user("two")).await.unwrap();

    assert_eq!(late.types(), PLAIN_CALL);
    match &late.events()[0] {
        HookEvent::PreCall(e) => assert_eq!(e.input_messages()[0].text(), "two"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(invocations.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn hook_removed_during_a_call_still_sees_all_of_it_and_nothing_of_the_next() {
    let model = answers(2);
    let removed = RecordingHook::new(200);
    let target: Arc<OnceLock<HookId>> = Arc::default();
    let outcome = Arc::new(Mutex::new(None));
    let remover = {
        let target = Arc::clone(&target);
        let outcome = Arc::clone(&outcome);
        move |agent: &ReActAgent| {
            *outcome.lock().unwrap() = Some(agent.remove_hook(*target.get().unwrap()));
        }
    };
    let (agent, _) = managed_agent(&model, remover, []);
    target.set(agent.add_hook(removed.clone())).unwrap();

    agent.call(Msg::user("one")).await.unwrap();

    assert_eq!(*outcome.lock().unwrap(), Some(true));
    assert_eq!(removed.types(), PLAIN_CALL);
    assert_eq!(hook_names(&agent), ["manager"]);

    removed.clear();
    agent.call(Msg::user("two")).await.unwrap();

    assert!(removed.types().is_empty(), "{:?}", removed.types());
}

#[tokio::test]
async fn hooks_cleared_during_a_call_still_see_all_of_it_and_nothing_of_the_next() {
    let model = answers(2);
    let observer = RecordingHook::new(200);
    let (agent, invocations) = managed_agent(
        &model,
        |agent| agent.clear_hooks(),
        [BoxedHook::new(observer.clone())],
    );

    agent.call(Msg::user("one")).await.unwrap();

    assert_eq!(observer.types(), PLAIN_CALL);
    assert!(agent.hook_order().is_empty());

    observer.clear();
    let reply = agent.call(Msg::user("two")).await.unwrap();

    assert_eq!(reply.text(), "answer 1");
    assert!(observer.types().is_empty());
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn changes_between_calls_apply_to_the_next_call() {
    let model = answers(3);
    let first = RecordingHook::new(10);
    let second = RecordingHook::new(20);
    let agent = agent(&model, []);

    let first_id = agent.add_hook(first.clone());
    agent.call(Msg::user("one")).await.unwrap();
    let second_id = agent.add_hook(second.clone());
    assert!(agent.remove_hook(first_id));
    agent.call(Msg::user("two")).await.unwrap();
    agent.clear_hooks();
    agent.call(Msg::user("three")).await.unwrap();

    assert_eq!(first.types(), PLAIN_CALL);
    assert_eq!(second.types(), PLAIN_CALL);
    assert!(!agent.remove_hook(second_id), "cleared hooks are gone");
}

// ---------------------------------------------------------------------------------------
// hook_order
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn hook_order_shows_the_effective_chain_with_ids_names_priorities_and_interests() {
    let agent = ReActAgent::builder()
        .model(answers(0))
        .hook(hook_fn(|_| Ok(())).with_name("b").with_priority(50))
        .hook(
            hook_fn(|_| Ok(()))
                .with_name("a")
                .with_priority(10)
                .with_interests(K::PreCall | K::PostCall),
        )
        .hook(hook_fn(|_| Ok(())).with_name("c"))
        .build()
        .unwrap();
    let d = agent.add_hook(hook_fn(|_| Ok(())).with_name("d").with_priority(10));
    let e = agent.add_hook(RecordingHook::new(-1).with_interests(HookEventTypes::CHUNKS));

    let order = agent.hook_order();
    let summary: Vec<(String, i32, HookEventTypes)> = order
        .iter()
        .map(|info| (info.name.clone(), info.priority, info.interests))
        .collect();
    assert_eq!(
        summary,
        [
            ("recording@-1".to_owned(), -1, HookEventTypes::CHUNKS),
            ("a".to_owned(), 10, K::PreCall | K::PostCall),
            ("d".to_owned(), 10, HookEventTypes::ALL),
            ("b".to_owned(), 50, HookEventTypes::ALL),
            ("c".to_owned(), 100, HookEventTypes::ALL),
        ]
    );
    assert_eq!(order[0].id, e);
    assert_eq!(order[2].id, d);
    let ids: std::collections::HashSet<HookId> = order.iter().map(|info| info.id).collect();
    assert_eq!(ids.len(), 5, "ids are unique");

    // Builder hooks can be removed by the id hook_order reports.
    assert!(agent.remove_hook(order[1].id));
    assert!(agent.remove_hook(d));
    assert!(!agent.remove_hook(d), "removing twice reports false");
    assert_eq!(hook_names(&agent), ["recording@-1", "b", "c"]);

    agent.clear_hooks();
    assert!(agent.hook_order().is_empty());
}

// ---------------------------------------------------------------------------------------
// observe
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn observe_stores_messages_after_an_observation_pre_call_and_asks_no_model() {
    let model = answers(0);
    let rec = RecordingHook::new(100);
    let agent = agent(&model, [BoxedHook::new(rec.clone())]);
    let observed = vec![
        Msg::user("from the user"),
        Msg::builder()
            .role(Role::Assistant)
            .name("other-agent")
            .text("from another agent")
            .build(),
    ];

    agent.observe(observed.clone()).await.unwrap();
    agent.observe("a note").await.unwrap();
    agent.observe(()).await.unwrap();

    let memory = agent.memory().messages();
    assert_eq!(memory.len(), 3);
    assert_eq!(memory[..2], observed[..]);
    assert_eq!(
        (memory[2].role, memory[2].name.as_str()),
        (Role::User, "user")
    );
    assert_eq!(memory[2].text(), "a note");
    assert_eq!(model.request_count(), 0);
    // One PreCall per observation that had messages, flagged, with the history before it
    // and no system message; nothing else (observing nothing fires nothing).
    match &rec.events()[..] {
        [HookEvent::PreCall(first), HookEvent::PreCall(second)] => {
            assert!(first.is_observation() && second.is_observation());
            assert_eq!(first.input_messages(), &observed[..]);
            assert!(first.history().is_empty());
            assert_eq!(second.input_messages(), &memory[2..]);
            assert_eq!(second.history(), &observed[..]);
            assert!(first.system_message().is_none());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(!agent.is_running());
}

#[tokio::test]
async fn a_pre_call_hook_redacts_an_observed_message_before_it_is_stored() {
    let model = answers(1);
    let redact = hook_fn(|event| {
        if let HookEvent::PreCall(e) = event {
            let redacted = e
                .input_messages()
                .iter()
                .map(|m| {
                    let mut m = m.clone();
                    m.content =
                        vec![ContentBlock::text(m.text().replace("secret", "[redacted]"))].into();
                    m
                })
                .collect();
            e.set_input_messages(redacted);
        }
        Ok(())
    })
    .with_interests(K::PreCall)
    .with_name("redact");
    let agent = agent(&model, [BoxedHook::new(redact)]);
    let said = Msg::builder()
        .role(Role::Assistant)
        .name("bob")
        .text("the secret is 42")
        .build();

    agent.observe(said.clone()).await.unwrap();
    agent.call("what did bob say?").await.unwrap();

    let memory = agent.memory().messages();
    assert_eq!(memory[0].text(), "the [redacted] is 42");
    assert_eq!(
        (memory[0].id.as_str(), memory[0].name.as_str()),
        (said.id.as_str(), "bob")
    );
    // The model never saw the secret either.
    let sent: Vec<String> = model.requests()[0].messages.iter().map(Msg::text).collect();
    assert_eq!(sent, ["seed", "the [redacted] is 42", "what did bob say?"]);
}

#[tokio::test]
async fn a_failing_pre_call_hook_stores_nothing_observed() {
    let model = answers(0);
    let deny = hook_fn(|event| match event {
        HookEvent::PreCall(e) if e.is_observation() => Err(HookError::msg("not from strangers")),
        _ => Ok(()),
    })
    .with_interests(K::PreCall)
    .with_name("deny");
    let agent = agent(&model, [BoxedHook::new(deny)]);

    let err = agent.observe("hello").await.unwrap_err();

    assert_eq!(
        err.to_string(),
        "hook 'deny' failed at PreCall: not from strangers"
    );
    assert!(agent.memory().is_empty());
    assert!(!agent.is_running());
}

#[tokio::test]
async fn observed_messages_are_history_in_the_next_pre_call_and_reach_the_model() {
    let model = answers(1);
    let rec = RecordingHook::new(100).with_interests(K::PreCall);
    let agent = agent(&model, [BoxedHook::new(rec.clone())]);
    let observed = vec![Msg::user("context"), Msg::assistant("noted")];
    agent.observe(observed.clone()).await.unwrap();
    let question = Msg::user("question");

    agent.call(question.clone()).await.unwrap();

    match &rec.events()[..] {
        [HookEvent::PreCall(seen), HookEvent::PreCall(e)] => {
            assert!(seen.is_observation());
            assert!(!e.is_observation());
            assert_eq!(e.history(), &observed[..]);
            assert_eq!(e.input_messages(), std::slice::from_ref(&question));
        }
        other => panic!("unexpected {other:?}"),
    }
    let sent = &model.requests()[0].messages;
    assert_eq!(sent.len(), 4);
    assert_eq!(
        (sent[0].role, sent[0].text()),
        (Role::System, "seed".to_owned())
    );
    assert_eq!(sent[1..3], observed[..]);
    assert_eq!(sent[3], question);
}

/// A hook that tries to `observe` on its own agent while the call runs.
struct ObserveDuringCall {
    handle: Handle,
    outcome: Arc<Mutex<Option<Result<(), AgentError>>>>,
}

impl Hook for ObserveDuringCall {
    async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
        let agent = self.handle.get().unwrap().clone();
        let result = agent.observe(Msg::user("sneaky")).await;
        *self.outcome.lock().unwrap() = Some(result);
        Ok(())
    }

    fn interests(&self) -> HookEventTypes {
        K::PreReasoning.into()
    }
}

#[tokio::test]
async fn observe_while_a_call_runs_is_rejected_as_busy() {
    let model = answers(1);
    let handle: Handle = Arc::default();
    let outcome = Arc::new(Mutex::new(None));
    let agent = agent(
        &model,
        [BoxedHook::new(ObserveDuringCall {
            handle: Arc::clone(&handle),
            outcome: Arc::clone(&outcome),
        })],
    );
    handle.set(agent.clone()).unwrap();

    let reply = agent.call(Msg::user("q")).await.unwrap();

    assert_eq!(reply.text(), "answer 0");
    match outcome.lock().unwrap().take() {
        Some(Err(AgentError::Busy)) => {}
        other => panic!("observe during a call returned {other:?}"),
    }
    let memory: Vec<String> = agent.memory().messages().iter().map(Msg::text).collect();
    assert_eq!(memory, ["q", "answer 0"]);
}

/// Observed messages must not land between a stored tool call and its result: the model
/// would receive `[.., assistant tool_use c1, user note, tool result c1]`, which providers
/// reject. Like new call input (DESIGN 5.4), observing while tool calls are pending is an
/// error naming the pending ids, and nothing is stored.
#[tokio::test]
async fn observe_while_tool_calls_are_pending_is_rejected() {
    let model = ScriptedModel::new([calc_call("c1", "1+1"), ScriptedResponse::text("2")]);
    let stop = BoxedHook::new(
        hook_fn(|event: &mut HookEvent| {
            if let HookEvent::PostReasoning(e) = event {
                e.stop_agent();
            }
            Ok(())
        })
        .with_interests(K::PostReasoning)
        .with_name("stopper"),
    );
    let agent = build_agent(&model, Toolkit::new().tool(Calculator::new()), hooks![stop]);
    let stopped = agent.call(Msg::user("1+1?")).await.unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    let before = agent.memory().messages();

    let result = agent.observe(Msg::user("a note")).await;

    assert_eq!(pending_calls(&result.unwrap_err()), ["c1"]);
    assert_eq!(agent.memory().messages(), before);

    // Resuming still gives the model a well-formed conversation.
    agent.clear_hooks();
    agent.call(()).await.unwrap();
    let roles: Vec<Role> = model.requests()[1]
        .messages
        .iter()
        .map(|msg| msg.role)
        .collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
}

/// A hook named `name` receiving `kinds` that logs `"{name}:{kind}"`.
fn logging(log: &Arc<Mutex<Vec<String>>>, name: &'static str, kinds: HookEventTypes) -> BoxedHook {
    let log = Arc::clone(log);
    BoxedHook::new(
        hook_fn(move |event| {
            log.lock()
                .unwrap()
                .push(format!("{name}:{}", event.event_type().as_str()));
            Ok(())
        })
        .with_name(name)
        .with_interests(kinds),
    )
}

fn three_hooks(log: &Arc<Mutex<Vec<String>>>) -> [BoxedHook; 3] {
    [
        logging(log, "audit", K::PreCall | K::PostCall | K::PreReasoning),
        logging(log, "audit", K::PreCall.into()),
        logging(log, "metrics", K::PreCall | K::PostCall),
    ]
}

#[tokio::test]
async fn hooks_are_removed_by_name_and_by_kind_from_the_next_call_on() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = answers(2);
    let agent = agent(&model, three_hooks(&log));

    assert_eq!(agent.edit_hooks(|hooks| hooks.remove_named("audit")), 2);
    agent.call("one").await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["metrics:PreCall", "metrics:PostCall"]
    );

    log.lock().unwrap().clear();
    assert_eq!(
        agent.edit_hooks(|hooks| hooks.remove_interested_in(K::PostCall)),
        1
    );
    agent.call("two").await.unwrap();
    assert!(log.lock().unwrap().is_empty());
    assert!(agent.hook_order().is_empty());
}

#[tokio::test]
async fn clearing_a_kind_keeps_the_hooks_other_kinds() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = answers(1);
    let agent = agent(&model, three_hooks(&log));

    // Both audits and metrics received PreCall; the PreCall-only audit is gone.
    assert_eq!(agent.edit_hooks(|hooks| hooks.clear_kind(K::PreCall)), 3);
    assert_eq!(
        agent
            .hook_order()
            .iter()
            .map(|h| (h.name.as_str(), h.interests))
            .collect::<Vec<_>>(),
        [
            ("audit", K::PostCall | K::PreReasoning),
            ("metrics", K::PostCall.into()),
        ]
    );
    agent.call("one").await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["audit:PreReasoning", "audit:PostCall", "metrics:PostCall"]
    );
}

#[tokio::test]
async fn one_kind_is_removed_from_one_named_hook() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = answers(1);
    let agent = agent(&model, three_hooks(&log));

    assert_eq!(
        agent.edit_hooks(|hooks| hooks.remove_named_for("metrics", K::PreCall)),
        1
    );
    agent.call("one").await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "audit:PreCall",
            "audit:PreCall",
            "audit:PreReasoning",
            "audit:PostCall",
            "metrics:PostCall"
        ]
    );
}
