//! Step-level persistence: what a session-bound call saves at each step, conflicts between
//! writers, tool calls recorded as running, and the approval hook's state kept with the
//! session.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::session::{JsonFileSessionStore, SessionError, SessionStore, StateChange};
use agentscope::{InDoubt, ReActAgentBuilder};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::store::{Recording, bound_agent, temp_store};

/// A tool counting its runs.
fn counted(name: &'static str, runs: Arc<AtomicUsize>) -> impl Tool {
    tool_fn(
        name,
        "Does something once.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        move |_input, _ctx| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok("done")
            }
        },
    )
}

/// (base, kept, number of appended messages, running tools) of each save.
fn shape(changes: &[StateChange]) -> Vec<(u64, usize, usize, Vec<String>)> {
    changes
        .iter()
        .map(|c| (c.base, c.kept, c.appended.len(), c.running_tools.clone()))
        .collect()
}

/// An agent bound to session "s" of `store` whose model calls the counted tool "act" once,
/// then answers "Done.".
fn one_tool_round(store: &Recording, runs: &Arc<AtomicUsize>) -> ReActAgentBuilder {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("t1", "act", json!({"n": 1})),
        ScriptedResponse::text("Done."),
    ]);
    ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(counted("act", Arc::clone(runs))))
        .session(store.clone(), "s")
}

#[tokio::test]
async fn a_call_saves_at_every_step_and_only_what_changed() {
    let (_dir, files) = temp_store();
    let store = Recording::new(files, false);
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = one_tool_round(&store, &runs).build().unwrap();
    agent.call("go").await.unwrap();

    let t1 = vec!["t1".to_owned()];
    assert_eq!(
        shape(&store.changes.lock().unwrap()),
        [
            // Before the tool runs: the input and the reasoning message with the tool
            // call, which is recorded as running (nothing happens between the reasoning
            // step and the tool: one save).
            (0, 0, 2, t1),
            // The result, which ends the running record.
            (1, 2, 1, vec![]),
            // The answer, at the end of the call.
            (2, 3, 1, vec![]),
        ]
    );
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.revision, 3);
    assert_eq!(stored.messages.len(), 4);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // The next call appends to what is stored.
    store.changes.lock().unwrap().clear();
    let model = ScriptedModel::new([ScriptedResponse::text("Again.")]);
    let agent = bound_agent(model, store.clone(), "s");
    agent.call("more").await.unwrap();
    assert_eq!(shape(&store.changes.lock().unwrap()), [(3, 4, 2, vec![])]);
}

/// When something can happen between the reasoning step and the tool (a stream consumer
/// sees the reasoning message, or a PreActing hook runs), the reasoning message is saved
/// first, on its own, and the running record follows in a second save before the tool runs.
#[tokio::test]
async fn the_reasoning_is_saved_apart_when_something_runs_before_the_tool() {
    for streamed in [true, false] {
        let (_dir, files) = temp_store();
        let store = Recording::new(files, false);
        let runs = Arc::new(AtomicUsize::new(0));
        let mut builder = one_tool_round(&store, &runs);
        if !streamed {
            builder = builder.hook(hook_fn(|_| Ok(())).with_interests(HookEventType::PreActing));
        }
        let agent = builder.build().unwrap();
        if streamed {
            let mut events = agent.stream("go", StreamOptions::default());
            while let Some(event) = futures::StreamExt::next(&mut events).await {
                event.unwrap();
            }
        } else {
            agent.call("go").await.unwrap();
        }

        let t1 = vec!["t1".to_owned()];
        assert_eq!(
            shape(&store.changes.lock().unwrap()),
            [
                (0, 0, 2, vec![]),
                (1, 2, 0, t1),
                (2, 2, 1, vec![]),
                (3, 3, 1, vec![]),
            ],
            "streamed: {streamed}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

/// A call that fails before the model answers leaves memory as before the call (its input
/// is taken back), so it saves nothing.
#[tokio::test]
async fn a_call_that_fails_before_the_model_answers_saves_nothing() {
    let (_dir, files) = temp_store();
    let store = Recording::new(files, false);
    let model = ScriptedModel::new([ScriptedResponse::error("overloaded")]);
    let agent = bound_agent(model, store.clone(), "s");
    assert!(agent.call("hi").await.is_err());
    assert!(store.changes.lock().unwrap().is_empty());
    assert_eq!(store.load("s").await.unwrap(), None);
}

/// Makes a whole call of another agent at PreReasoning.
struct Interloper(Arc<ReActAgent>);

impl Hook for Interloper {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        if matches!(event, HookEvent::PreReasoning(_)) {
            self.0.call("in between").await.map_err(HookError::msg)?;
        }
        Ok(())
    }
}

/// Another writer saves the session while a call runs: the call's next step fails with a
/// conflict naming both revisions, before its tool runs, and nothing of it is stored.
///
/// The JSON file store leases sessions, which refuses the other writer before it starts
/// (next test); the conflict is what a store without leases (here `Recording`, which does
/// not forward `lease`) relies on, and what stops a writer whose lease another took.
#[tokio::test]
async fn a_concurrent_writer_makes_the_call_fail_with_a_conflict_before_tools_run() {
    let (_dir, files) = temp_store();
    let store = Recording::new(files, false);
    let first = bound_agent(
        ScriptedModel::new([ScriptedResponse::text("Hi.")]),
        store.clone(),
        "s",
    );
    first.call("hello").await.unwrap(); // revision 1

    let other = Arc::new(bound_agent(
        ScriptedModel::new([ScriptedResponse::text("Other.")]),
        store.clone(),
        "s",
    ));
    // While `agent` reasons, `other` completes a whole call on the same session.
    let interloper = Arc::clone(&other);
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::tool_call(
            "t1",
            "act",
            json!({"n": 1}),
        )]))
        .toolkit(Toolkit::new().tool(counted("act", runs.clone())))
        .hook(Interloper(interloper))
        .session(store.clone(), "s")
        .build()
        .unwrap();

    let error = agent.call("mine").await.unwrap_err();
    let AgentError::Session(SessionError::Conflict {
        session,
        expected,
        found,
    }) = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!((session.as_str(), *expected, *found), ("s", 1, 2));
    let session_error = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<SessionError>())
        .unwrap();
    assert!(matches!(session_error, SessionError::Conflict { .. }));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool must not run");
    let texts: Vec<String> = store
        .load("s")
        .await
        .unwrap()
        .unwrap()
        .messages
        .iter()
        .map(Msg::text)
        .collect();
    assert_eq!(texts, ["hello", "Hi.", "in between", "Other."]);
}

/// Makes a whole call of another agent at PreReasoning, and keeps its outcome.
struct Refused {
    other: Arc<ReActAgent>,
    outcome: Arc<Mutex<Option<Result<Msg, AgentError>>>>,
}

impl Hook for Refused {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        if matches!(event, HookEvent::PreReasoning(_)) {
            let outcome = self.other.call("in between").await;
            *self.outcome.lock().unwrap() = Some(outcome);
        }
        Ok(())
    }
}

/// With the JSON file store itself, the other writer of the previous test is refused: the
/// running call holds the session's lease, so the other call is `Busy` before anything of
/// it happens, and the running call goes on and stores its whole turn.
#[tokio::test]
async fn a_second_call_while_a_call_holds_the_session_is_busy() {
    let (_dir, store) = temp_store();
    let first = bound_agent(
        ScriptedModel::new([ScriptedResponse::text("Hi.")]),
        store.clone(),
        "s",
    );
    first.call("hello").await.unwrap();

    let model = ScriptedModel::new([ScriptedResponse::text("Other.")]);
    let recorder = agentscope_test::RecordingHook::new(0);
    let other = Arc::new(
        ReActAgent::builder()
            .model(model.clone())
            .hook(recorder.clone())
            .session(store.clone(), "s")
            .build()
            .unwrap(),
    );
    let outcome = Arc::new(Mutex::new(None));
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("t1", "act", json!({"n": 1})),
            ScriptedResponse::text("Acted."),
        ]))
        .toolkit(Toolkit::new().tool(counted("act", runs.clone())))
        .hook(Refused {
            other,
            outcome: Arc::clone(&outcome),
        })
        .session(store.clone(), "s")
        .build()
        .unwrap();

    assert_eq!(agent.call("mine").await.unwrap().text(), "Acted.");
    let refused = outcome.lock().unwrap().take().unwrap();
    assert!(matches!(refused, Err(AgentError::Busy)), "{refused:?}");
    assert_eq!(model.request_count(), 0);
    assert!(recorder.events().is_empty(), "no hook sees a refused call");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let stored = store.load("s").await.unwrap().unwrap();
    let texts: Vec<String> = stored.messages.iter().map(Msg::text).collect();
    assert_eq!(texts, ["hello", "Hi.", "mine", "", "", "Acted."]);
    assert_eq!(stored.revision, 5);
}

/// The tool "act" (idempotent or not) counting its runs, whose first run never finishes (its
/// call is dropped meanwhile: the process "dies"), and the signal that run gives when it
/// starts.
fn act_hanging_once(
    idempotent: bool,
) -> (
    impl Tool + use<>,
    Arc<tokio::sync::Notify>,
    Arc<AtomicUsize>,
) {
    let started = Arc::new(tokio::sync::Notify::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = {
        let (started, runs) = (started.clone(), runs.clone());
        let tool = tool_fn(
            "act",
            "Acts.",
            json!({"type": "object"}),
            move |_input, _ctx| {
                let (started, runs) = (started.clone(), runs.clone());
                async move {
                    if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                        started.notify_one();
                        std::future::pending::<()>().await;
                    }
                    Ok("acted")
                }
            },
        );
        if idempotent {
            tool.in_doubt(InDoubt::RunAgain)
        } else {
            tool
        }
    };
    (tool, started, runs)
}

/// Runs `call` until `signal` fires, then drops it (the call cannot finish before).
async fn drop_at(call: impl Future, signal: &tokio::sync::Notify) {
    tokio::select! {
        _ = call => panic!("the call cannot finish"),
        () = signal.notified() => {}
    }
}

/// An agent with `toolkit` bound to session "s" of `store`, answering from `model`.
fn on_session_s(
    store: &JsonFileSessionStore,
    toolkit: Toolkit,
    model: ScriptedModel,
) -> ReActAgent {
    ReActAgent::builder()
        .model(model)
        .toolkit(toolkit)
        .session(store.clone(), "s")
        .build()
        .unwrap()
}

/// A call dropped while its tool runs leaves the call recorded as running; a resume in a
/// fresh agent does not run a non-idempotent tool again and gives it the "interrupted while
/// running" result; an idempotent tool runs again.
#[tokio::test]
async fn tools_recorded_as_running_are_rerun_only_when_idempotent() {
    for idempotent in [false, true] {
        let (_dir, store) = temp_store();
        let (tool, started, runs) = act_hanging_once(idempotent);
        let toolkit = Toolkit::new().tool(tool);
        let model = ScriptedModel::new([
            ScriptedResponse::tool_call("t1", "act", json!({})),
            ScriptedResponse::text("Done."),
        ]);
        let agent = on_session_s(&store, toolkit.clone(), model);
        drop_at(agent.call("go"), &started).await;
        let stored = store.load("s").await.unwrap().unwrap();
        assert_eq!(stored.running_tools, ["t1"]);

        let model = ScriptedModel::new([ScriptedResponse::text("Done.")]);
        let fresh = on_session_s(&store, toolkit, model);
        assert_eq!(fresh.call(()).await.unwrap().text(), "Done.");
        let stored = store.load("s").await.unwrap().unwrap();
        assert!(stored.running_tools.is_empty());
        let result = stored.messages[2].tool_results()[0].clone();
        if idempotent {
            assert_eq!(runs.load(Ordering::SeqCst), 2);
            assert!(!result.is_error);
        } else {
            assert_eq!(runs.load(Ordering::SeqCst), 1);
            assert!(result.is_error);
            // The text the model reads, spelled out here once (every other test uses
            // `agentscope::interrupt::INTERRUPTED_WHILE_RUNNING`).
            assert_eq!(
                result.text_output(),
                "Error: Tool execution was interrupted while running (the agent stopped before \
                 its result was stored), so it was not run again; its effects may or may not \
                 have happened."
            );
        }
    }
}

/// New input on a session whose last call was dropped while its tool ran: the call gets
/// the "interrupted while running" result before the new input (as a resume would give
/// it) instead of the input being refused, and the tool does not run again.
#[tokio::test]
async fn new_input_closes_calls_recorded_as_running() {
    let (_dir, store) = temp_store();
    let (tool, started, runs) = act_hanging_once(false);
    let toolkit = Toolkit::new().tool(tool);
    let model = ScriptedModel::new([ScriptedResponse::tool_call("t1", "act", json!({}))]);
    let agent = on_session_s(&store, toolkit.clone(), model);
    drop_at(agent.call("go"), &started).await;
    let model = ScriptedModel::new([ScriptedResponse::text("Moved on.")]);
    let fresh = on_session_s(&store, toolkit, model.clone());
    assert_eq!(fresh.call("never mind").await.unwrap().text(), "Moved on.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let stored = store.load("s").await.unwrap().unwrap();
    assert!(stored.running_tools.is_empty());
    let roles: Vec<Role> = stored.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User,
            Role::Assistant
        ]
    );
    let result = stored.messages[2].tool_results()[0].clone();
    assert!(result.is_error);
    assert!(result.text_output().contains("interrupted while running"));
    assert_eq!(stored.messages[3].text(), "never mind");
    // The model saw the result before the new input.
    let sent: Vec<Role> = model.requests()[0]
        .messages
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(sent, [Role::User, Role::Assistant, Role::Tool, Role::User]);
}

fn approval_agent(
    store: &JsonFileSessionStore,
    model: ScriptedModel,
    runs: &Arc<AtomicUsize>,
) -> (ReActAgent, ToolApprovalHook) {
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["act"]));
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(counted("act", runs.clone())))
        .hook(approvals.clone())
        .session(store.clone(), "s")
        .build()
        .unwrap();
    (agent, approvals)
}

/// Never lets PreActing finish: the process "dies" there (the test drops the call).
struct HangAtPreActing(Arc<tokio::sync::Notify>);

impl Hook for HangAtPreActing {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        if matches!(event, HookEvent::PreActing(_)) {
            self.0.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    fn priority(&self) -> i32 {
        100 // before the approval hook applies the decision
    }
}

/// An approval decision is stored with the session once the resume passed PreCall: when
/// the resuming process dies after that point, a fresh agent and hook (another process)
/// continue without asking again, and the tool runs once.
#[tokio::test]
async fn approval_decisions_survive_a_restart() {
    let (_dir, store) = temp_store();
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([ScriptedResponse::tool_call("t1", "act", json!({"n": 1}))]);
    let (agent, approvals) = approval_agent(&store, model, &runs);
    agent.call("go").await.unwrap();
    approvals.approve("t1").unwrap();
    let reached = Arc::new(tokio::sync::Notify::new());
    agent.add_hook(HangAtPreActing(reached.clone()));
    drop_at(agent.call(()), &reached).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(
        stored.hooks["tool_approval"]["decisions"]["t1"],
        json!({"decision": "approve"})
    );

    let model = ScriptedModel::new([ScriptedResponse::text("Done.")]);
    let (fresh, _) = approval_agent(&store, model, &runs);
    assert_eq!(fresh.call(()).await.unwrap().text(), "Done.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let stored = store.load("s").await.unwrap().unwrap();
    assert!(!stored.hooks.contains_key("tool_approval"));
}

/// A rejection is remembered with the session: after a restart, the identical call is
/// refused at once instead of stopping for approval again.
#[tokio::test]
async fn remembered_rejections_survive_a_restart() {
    let (_dir, store) = temp_store();
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("t1", "act", json!({"n": 1})),
        ScriptedResponse::text("Understood."),
    ]);
    let (agent, approvals) = approval_agent(&store, model, &runs);
    agent.call("go").await.unwrap();
    approvals.reject("t1", "not today").unwrap();
    agent.call(()).await.unwrap();

    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("t2", "act", json!({"n": 1})),
        ScriptedResponse::text("Fine."),
    ]);
    let (fresh, fresh_approvals) = approval_agent(&store, model, &runs);
    let reply = fresh.call("try again").await.unwrap();
    assert_eq!(reply.text(), "Fine.");
    assert!(fresh_approvals.pending().is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let stored = store.load("s").await.unwrap().unwrap();
    let refused = stored
        .messages
        .iter()
        .flat_map(Msg::tool_results)
        .find(|result| result.id == "t2")
        .map(agentscope::ToolResultBlock::text_output)
        .unwrap();
    assert!(
        refused.starts_with("Rejected by the user: not today (this exact call was rejected before"),
        "{refused}"
    );
}
