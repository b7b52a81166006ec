//! The call context: one call id per call on every event, resumes naming the call they
//! resume, and per-call extensions that concurrent calls never share and that go with the
//! call however it ends (reply, error, drop).

use crate::support::fixtures::{calc_call, recorded};
use crate::support::hooks::stop_after_first_reasoning;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

#[cfg(feature = "rag")]
use agentscope::hooks::{InMemoryLongTermMemory, StaticLongTermMemoryHook};
use agentscope::prelude::*;
use agentscope::{BoxedModel, CallId, HookFn};
use agentscope_test::tools::Calculator;
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::FutureExt;

/// An agent whose model calls the calculator once, answers "42", then answers `then`; with
/// a recording hook.
fn recorded_calculator_agent(then: &str) -> (ReActAgent, RecordingHook) {
    let model = ScriptedModel::new([
        calc_call("c1", "6*7"),
        ScriptedResponse::text("42"),
        ScriptedResponse::text(then),
    ]);
    let (agent, rec) = recorded(
        ReActAgent::builder()
            .model(model)
            .toolkit(Toolkit::new().tool(Calculator::new())),
    );
    (agent, rec)
}

/// Every event of one call carries the same id; each call has its own.
#[tokio::test]
async fn every_event_of_a_call_carries_its_id() {
    let (agent, rec) = recorded_calculator_agent("again");

    agent.call("6*7?").await.unwrap();
    let first: Vec<CallId> = rec.events().iter().map(HookEvent::call_id).collect();
    assert_eq!(first.len(), 10, "PreCall .. PostCall of a one-tool call");
    assert!(first.iter().all(|id| *id == first[0]), "{first:?}");
    assert!(
        rec.events()
            .iter()
            .all(|e| e.call().resumed_from().is_none())
    );
    assert!(rec.events().iter().all(|e| e.agent().id() == agent.id()));

    rec.clear();
    agent.call("again").await.unwrap();
    let second: Vec<CallId> = rec.events().iter().map(HookEvent::call_id).collect();
    assert!(second.iter().all(|id| *id == second[0]));
    assert_ne!(second[0], first[0], "a new call has a new id");
    assert!(
        rec.events()
            .iter()
            .all(|e| e.call().resumed_from().is_none())
    );
}

/// A call that resumes tool calls left pending by a stop names the call that stopped; a call
/// after a completed one does not.
#[tokio::test]
async fn a_resume_names_the_call_that_stopped() {
    let (agent, rec) = recorded_calculator_agent("next");
    let stopper = agent.add_hook(stop_after_first_reasoning());

    let stopped = agent.call("6*7?").await.unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    let stopped_id = rec.events()[0].call_id();
    agent.remove_hook(stopper);

    rec.clear();
    assert_eq!(agent.call(()).await.unwrap().text(), "42");
    let resumed = rec.events();
    assert_ne!(resumed[0].call_id(), stopped_id);
    assert!(
        resumed
            .iter()
            .all(|e| e.call().resumed_from() == Some(stopped_id)),
        "every event of the resume names the stopped call"
    );
    let resume_id = resumed[0].call_id();

    rec.clear();
    agent.call("next").await.unwrap();
    assert!(
        rec.events()
            .iter()
            .all(|e| e.call().resumed_from().is_none()),
        "the call after a completed resume ({resume_id}) resumes nothing"
    );
}

/// What a hook stores at PreCall: the id of the call it stored it for.
struct Mine(CallId);

/// What the checker saw: each event's kind, its call id, and the id of the `Mine` it found.
type Seen = Arc<Mutex<Vec<(HookEventType, CallId, Option<CallId>)>>>;

/// A hook that stores `Mine` at PreCall and, at every later event, records the id it finds
/// next to the event's own id.
fn checker(seen: &Seen) -> HookFn {
    let seen = Arc::clone(seen);
    hook_fn(move |event| {
        let own = event.call_id();
        if let HookEvent::PreCall(e) = event {
            assert!(
                e.extensions_mut().insert(Mine(own)).is_none(),
                "fresh per call"
            );
        }
        let found = event.extensions().get::<Mine>().map(|mine| mine.0);
        seen.lock().unwrap().push((event.event_type(), own, found));
        Ok(())
    })
    .with_name("checker")
}

#[tokio::test]
async fn concurrent_calls_on_one_agent_each_see_only_their_own_state() {
    // Two calls interleave on one agent (busy check off): each model step waits, so the
    // calls take turns at every step.
    let delay = Duration::from_millis(5);
    let model = ScriptedModel::new([
        calc_call("a1", "1+1").with_delay(delay),
        calc_call("b1", "2+2").with_delay(delay),
        ScriptedResponse::text("done a").with_delay(delay),
        ScriptedResponse::text("done b").with_delay(delay),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .check_running(false)
        .hook(checker(&seen))
        .build()
        .unwrap();

    let (a, b) = tokio::join!(agent.call("a"), agent.call("b"));
    a.unwrap();
    b.unwrap();

    let seen = seen.lock().unwrap().clone();
    let calls: Vec<CallId> = seen
        .iter()
        .filter(|(kind, ..)| *kind == HookEventType::PreCall)
        .map(|(_, own, _)| *own)
        .collect();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0], calls[1]);
    // The two calls really interleaved: the second PreCall came before the first PostCall.
    let first_post_call = seen
        .iter()
        .position(|(kind, ..)| *kind == HookEventType::PostCall)
        .unwrap();
    let second_pre_call = seen
        .iter()
        .enumerate()
        .filter(|(_, (kind, ..))| *kind == HookEventType::PreCall)
        .nth(1)
        .unwrap()
        .0;
    assert!(second_pre_call < first_post_call, "{seen:?}");
    // Every event of each call saw that call's own state, and only it.
    assert_eq!(seen.len(), 20);
    for (kind, own, found) in &seen {
        assert_eq!(found, &Some(*own), "{kind} of call {own} saw {found:?}");
    }
}

/// A value that reports whether anything still holds it.
struct Probe;

/// A hook that stores an `Arc<Probe>` at PreCall and hands a `Weak` to the test.
fn prober(probes: &Arc<Mutex<Vec<Weak<Probe>>>>) -> HookFn {
    let probes = Arc::clone(probes);
    hook_fn(move |event| {
        if let HookEvent::PreCall(e) = event {
            let probe = Arc::new(Probe);
            probes.lock().unwrap().push(Arc::downgrade(&probe));
            e.extensions_mut().insert(probe);
        }
        Ok(())
    })
    .with_interests(HookEventType::PreCall)
}

/// A model whose response never starts.
struct Stuck;

impl Model for Stuck {
    fn model_name(&self) -> &str {
        "stuck"
    }

    async fn stream(
        &self,
        _request: agentscope::ModelRequest,
    ) -> Result<agentscope::ChatStream, agentscope::ModelError> {
        futures::future::pending().await
    }
}

#[tokio::test]
async fn a_call_leaves_nothing_behind_however_it_ends() {
    let probes = Arc::new(Mutex::new(Vec::new()));
    let all_gone = |probes: &Arc<Mutex<Vec<Weak<Probe>>>>| {
        probes
            .lock()
            .unwrap()
            .iter()
            .all(|weak| weak.upgrade().is_none())
    };
    let probed = |model: BoxedModel| {
        ReActAgent::builder()
            .model(model)
            .hook(prober(&probes))
            .build()
            .unwrap()
    };

    // Completed.
    let agent = probed(BoxedModel::new(ScriptedModel::new([
        ScriptedResponse::text("hi"),
    ])));
    agent.call("hello").await.unwrap();
    assert_eq!(probes.lock().unwrap().len(), 1);
    assert!(
        all_gone(&probes),
        "a completed call's extensions are dropped"
    );

    // Failed.
    let agent = probed(BoxedModel::new(ScriptedModel::new([
        ScriptedResponse::error("boom"),
    ])));
    agent.call("hello").await.unwrap_err();
    assert_eq!(probes.lock().unwrap().len(), 2);
    assert!(all_gone(&probes), "a failed call's extensions are dropped");

    // Dropped mid-call: polled once (PreCall ran, the model never answers), then dropped.
    let agent = probed(BoxedModel::new(Stuck));
    let mut call = Box::pin(agent.call("hello"));
    assert!((&mut call).now_or_never().is_none());
    assert_eq!(probes.lock().unwrap().len(), 3);
    assert!(!all_gone(&probes), "the running call holds its state");
    drop(call);
    assert!(all_gone(&probes), "a dropped call's extensions are dropped");

    // A dropped stream, the same.
    let mut stream = agent.stream("hello", StreamOptions::default());
    assert!(
        futures::StreamExt::next(&mut stream)
            .now_or_never()
            .is_none()
    );
    assert_eq!(probes.lock().unwrap().len(), 4);
    drop(stream);
    assert!(
        all_gone(&probes),
        "a dropped stream's call state is dropped"
    );
    assert!(!agent.is_running());
}

#[cfg(feature = "rag")]
#[tokio::test]
async fn long_term_memory_records_each_concurrent_call_with_its_own_input() {
    // Before per-call state, concurrent calls on one agent shared one entry (keyed by agent
    // id): the second PreCall replaced the first call's input.
    let ltm = InMemoryLongTermMemory::new();
    let delay = Duration::from_millis(5);
    let model = ScriptedModel::new([
        ScriptedResponse::text("Tea noted.").with_delay(delay * 2),
        ScriptedResponse::text("Cats noted.").with_delay(delay),
    ]);
    let agent = ReActAgent::builder()
        .model(model)
        .check_running(false)
        .hook(StaticLongTermMemoryHook::new(ltm.clone()).with_top_k(0))
        .build()
        .unwrap();

    let (tea, cats) = tokio::join!(agent.call("I like tea."), agent.call("I like cats."));
    assert_eq!(tea.unwrap().text(), "Tea noted.");
    assert_eq!(cats.unwrap().text(), "Cats noted.");

    // The faster call ("cats") finished first; each recorded its own input with its reply.
    assert_eq!(
        ltm.entries(),
        [
            "user: I like cats.",
            "assistant: Cats noted.",
            "user: I like tea.",
            "assistant: Tea noted.",
        ]
    );
}

#[cfg(feature = "schema")]
#[tokio::test]
async fn structured_output_marks_its_tool_as_an_answer_tool() {
    use agentscope::ToolKind;
    use serde_json::json;
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Answer {
        value: u32,
    }
    let kinds = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&kinds);
    let model = ScriptedModel::new([
        ScriptedResponse::text("plain"),
        ScriptedResponse::tool_call("c1", "generate_response", json!({"value": 7})),
    ]);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(
            hook_fn(move |event| {
                let call = event.call();
                seen.lock().unwrap().push((
                    call.tool_kind("generate_response"),
                    call.tool_kind("calculator"),
                ));
                Ok(())
            })
            .with_interests(HookEventType::PreCall),
        )
        .build()
        .unwrap();

    agent.call("plain").await.unwrap();
    let answer: Answer = agent.call_structured("seven").await.unwrap();
    assert_eq!(answer.value, 7);
    assert_eq!(
        *kinds.lock().unwrap(),
        [(None, None), (Some(ToolKind::Answer), None)],
        "only the structured call has the answer tool; plain tools report no kind"
    );
}
