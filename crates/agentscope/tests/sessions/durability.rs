//! The durability modes in one process: when `Async` and `Exit` write a call's saves, what
//! the call waits for, and what a failed save does. (What a killed process leaves in each
//! mode: the `durability` test binary's `modes`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentscope::CancellationToken;
use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::session::{
    AgentState, Durability, JsonFileSessionStore, SessionError, SessionLease, SessionStore,
    StateChange,
};
use agentscope::{InDoubt, ReActAgentBuilder};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::future::BoxFuture;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::store::{Recording, temp_store};

/// Records each change, then writes it once the gate lets it through (one permit per save);
/// the save numbered `fail` (from 0) fails with a conflict instead.
#[derive(Clone)]
struct Gated {
    inner: Recording,
    gate: Arc<Semaphore>,
    fail: Option<usize>,
}

impl Gated {
    fn new(inner: Recording, open: bool) -> Self {
        let permits = if open { Semaphore::MAX_PERMITS } else { 0 };
        Self {
            inner,
            gate: Arc::new(Semaphore::new(permits)),
            fail: None,
        }
    }

    fn open(&self) {
        self.gate.add_permits(1_000);
    }

    fn attempts(&self) -> usize {
        self.inner.changes.lock().unwrap().len()
    }
}

impl SessionStore for Gated {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        Box::pin(async move {
            let number = {
                let mut changes = self.inner.changes.lock().unwrap();
                changes.push(change.clone());
                changes.len() - 1
            };
            self.gate.acquire().await.unwrap().forget();
            if self.fail == Some(number) {
                return Err(SessionError::Conflict {
                    session: session.to_owned(),
                    expected: change.base,
                    found: change.base + 1,
                });
            }
            self.inner.files.save(session, change).await
        })
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        self.inner.files.load(session)
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        self.inner.files.delete(session)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        self.inner.files.list()
    }

    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Option<SessionLease>, SessionError>> {
        self.inner.files.lease(session, interrupt)
    }
}

/// A tool counting its runs, with the in-doubt policy `policy`.
struct Counted {
    runs: Arc<AtomicUsize>,
    policy: Option<InDoubt>,
}

impl Tool for Counted {
    fn name(&self) -> &str {
        "act"
    }

    fn description(&self) -> &str {
        "Does something."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }

    async fn call(
        &self,
        _input: serde_json::Value,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text("done"))
    }

    fn in_doubt(&self) -> Option<InDoubt> {
        self.policy
    }
}

/// An agent on session "s" of `store` (in `durability`) whose model calls "act" once, then
/// answers "Done.".
fn one_tool_round(
    store: impl SessionStore,
    durability: Durability,
    model: &ScriptedModel,
    runs: &Arc<AtomicUsize>,
    policy: Option<InDoubt>,
) -> ReActAgentBuilder {
    ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Counted {
            runs: Arc::clone(runs),
            policy,
        }))
        .session(store, "s")
        .durability(durability)
}

fn tool_round_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("t1", "act", json!({})),
        ScriptedResponse::text("Done."),
    ])
}

/// (base, kept, number of appended messages, running tools) of each save.
fn shape(changes: &[StateChange]) -> Vec<(u64, usize, usize, Vec<String>)> {
    changes
        .iter()
        .map(|c| (c.base, c.kept, c.appended.len(), c.running_tools.clone()))
        .collect()
}

/// Waits (up to 5 s) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test]
async fn async_saves_are_written_beside_the_work_and_the_call_returns_once_they_are_stored() {
    let (_dir, files) = temp_store();
    let store = Gated::new(Recording::new(files.clone(), true), false);
    // The model takes 200 ms over its answer: time the call spends working.
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("t1", "act", json!({})),
        ScriptedResponse::text("Done.").with_delay(Duration::from_millis(200)),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    // An idempotent tool: it need not wait for its "started" record.
    let agent = one_tool_round(
        store.clone(),
        Durability::Async,
        &model,
        &runs,
        Some(InDoubt::RunAgain),
    )
    .build()
    .unwrap();
    let call = tokio::spawn(async move { agent.call("go").await });

    // The first save reaches the store while the model works on its answer: the tool ran
    // and the model was asked again without waiting for it.
    until("a save reaches the store", || store.attempts() == 1).await;
    assert_eq!(model.requests().len(), 2);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The model has answered since; the call waits for its saves, held at the gate.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!call.is_finished(), "the call waits for its saves");
    assert_eq!(files.load("s").await.unwrap(), None, "nothing stored yet");

    store.open();
    let reply = call.await.unwrap().unwrap();
    assert_eq!(reply.text(), "Done.");
    assert_eq!(
        shape(&store.inner.changes.lock().unwrap()),
        [
            // What was queued when the model was asked again, as one change: the input,
            // the reasoning message and the tool's result (which ends its running record).
            (0, 0, 3, vec![]),
            // The answer.
            (1, 3, 1, vec![]),
        ]
    );
    let stored = files.load("s").await.unwrap().unwrap();
    assert_eq!(stored.revision, 2);
    assert_eq!(stored.messages.len(), 4);
    assert_eq!(stored.messages[3].text(), "Done.");
    assert!(stored.running_tools.is_empty());
}

#[tokio::test]
async fn async_waits_for_the_started_record_before_a_tool_that_is_not_idempotent() {
    let (_dir, files) = temp_store();
    let store = Gated::new(Recording::new(files.clone(), true), false);
    let model = tool_round_model();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = one_tool_round(store.clone(), Durability::Async, &model, &runs, None)
        .build()
        .unwrap();
    let call = tokio::spawn(async move { agent.call("go").await });

    until("the first save is made", || store.attempts() == 1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the tool waits for its record"
    );
    assert_eq!(model.requests().len(), 1);
    assert_eq!(
        shape(&store.inner.changes.lock().unwrap()),
        [(0, 0, 2, vec!["t1".to_owned()])]
    );

    store.open();
    assert_eq!(call.await.unwrap().unwrap().text(), "Done.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let stored = files.load("s").await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 4);
    assert!(stored.running_tools.is_empty());
}

#[tokio::test]
async fn an_async_save_that_fails_fails_the_call_and_nothing_after_it_is_written() {
    let (_dir, files) = temp_store();
    let mut store = Gated::new(Recording::new(files.clone(), true), true);
    // The second save (the tool's result) fails.
    store.fail = Some(1);
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("t1", "act", json!({})),
        ScriptedResponse::tool_call("t2", "act", json!({})),
        ScriptedResponse::text("Done."),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = one_tool_round(store.clone(), Durability::Async, &model, &runs, None)
        .build()
        .unwrap();

    let error = agent.call("go").await.unwrap_err();
    assert!(
        matches!(error, AgentError::Session(SessionError::Conflict { .. })),
        "{error:?}"
    );
    // The failure is found at the next tool's start, which does not run; nothing after
    // the failed save was written.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(store.attempts(), 2);
    let stored = files.load("s").await.unwrap().unwrap();
    assert_eq!(stored.revision, 1);
    assert_eq!(stored.running_tools, ["t1"]);
}

#[tokio::test]
async fn exit_saves_once_when_the_call_ends() {
    let (_dir, files) = temp_store();
    let store = Recording::new(files.clone(), true);
    let model = tool_round_model();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = one_tool_round(store.clone(), Durability::Exit, &model, &runs, None)
        .build()
        .unwrap();
    assert_eq!(agent.call("go").await.unwrap().text(), "Done.");

    // The whole call in one change, with no running record.
    assert_eq!(shape(&store.changes.lock().unwrap()), [(0, 0, 4, vec![])]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(files.load("s").await.unwrap().unwrap().revision, 1);
}

/// Makes a call on session "s" of `files` (in `durability`) whose tool "act" hangs, and
/// drops it once the tool has started; how many times the tool started.
async fn drop_mid_tool(files: &JsonFileSessionStore, durability: Durability) -> usize {
    let runs = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(tokio::sync::Notify::new());
    let hanging = {
        let (runs, started) = (Arc::clone(&runs), Arc::clone(&started));
        tool_fn(
            "act",
            "Hangs.",
            json!({"type": "object"}),
            move |_input, _ctx| {
                let (runs, started) = (Arc::clone(&runs), Arc::clone(&started));
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    started.notify_one();
                    std::future::pending::<()>().await;
                    Ok("never")
                }
            },
        )
    };
    let agent = ReActAgent::builder()
        .model(tool_round_model())
        .toolkit(Toolkit::new().tool(hanging))
        .session(files.clone(), "s")
        .durability(durability)
        .build()
        .unwrap();
    tokio::select! {
        _ = agent.call("go") => panic!("the tool never returns"),
        () = started.notified() => {}
    }
    runs.load(Ordering::SeqCst)
}

#[tokio::test]
async fn exit_leaves_nothing_of_a_dropped_call_so_running_it_again_runs_its_tool_again() {
    let (_dir, files) = temp_store();
    assert_eq!(drop_mid_tool(&files, Durability::Exit).await, 1);
    // Dropped mid-tool: nothing of the call was stored, not even that the tool started.
    assert_eq!(files.load("s").await.unwrap(), None);

    let runs_again = Arc::new(AtomicUsize::new(0));
    let agent = one_tool_round(
        files.clone(),
        Durability::Exit,
        &tool_round_model(),
        &runs_again,
        None,
    )
    .build()
    .unwrap();
    assert_eq!(agent.call("go").await.unwrap().text(), "Done.");
    // The tool ran in both calls: what Exit gives up.
    assert_eq!(runs_again.load(Ordering::SeqCst), 1);
    let stored = files.load("s").await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 4);
}

#[tokio::test]
async fn step_and_async_leave_the_started_record_of_a_dropped_call() {
    // The same drop under the default and under Async (the tool is not idempotent, so the
    // call waited for its record): the tool is recorded as running.
    for durability in [Durability::Step, Durability::Async] {
        let (_dir, files) = temp_store();
        assert_eq!(drop_mid_tool(&files, durability).await, 1);
        let stored = files.load("s").await.unwrap().unwrap();
        assert_eq!(stored.running_tools, ["t1"], "{durability:?}");
        assert_eq!(stored.messages.len(), 2, "{durability:?}");
    }
}

/// Why `Exit` is refused with an approval hook (the build's and the call's error).
const EXIT_WITH_APPROVALS: &str = "durability(Exit) cannot keep a ToolApprovalHook's promise \
     that an approved tool runs at most once: Exit stores neither the decision nor the record \
     that the tool started until the call ends, so a crash while the tool runs would ask for \
     the approval again and run the tool twice. Use Durability::Step or Durability::Async \
     with approvals";

#[test]
fn exit_with_an_approval_hook_is_refused_at_build_and_the_other_modes_are_not() {
    let (_dir, files) = temp_store();
    let approvals = || ToolApprovalHook::new(ApprovalPolicy::all());
    let built = |durability| {
        ReActAgent::builder()
            .model(ScriptedModel::new([]))
            .hook(approvals())
            .session(files.clone(), "s")
            .durability(durability)
            .build()
    };
    match built(Durability::Exit) {
        Err(BuildError::InvalidConfig { message }) => assert_eq!(message, EXIT_WITH_APPROVALS),
        other => panic!("expected the build to be refused, got {other:?}"),
    }
    assert!(built(Durability::Step).is_ok());
    assert!(built(Durability::Async).is_ok());
    // Exit without an approval hook stays allowed (its tools must be safe to repeat).
    let exit = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .session(files.clone(), "s")
        .durability(Durability::Exit)
        .build();
    assert!(exit.is_ok());
}

#[tokio::test]
async fn an_approval_hook_added_after_build_under_exit_refuses_the_call_before_anything_runs() {
    let (_dir, files) = temp_store();
    let store = Recording::new(files.clone(), true);
    let model = ScriptedModel::new([ScriptedResponse::text("Hi.")]);
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .hook(
            hook_fn(move |_event| {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .with_interests(HookEventType::PreCall),
        )
        .session(store.clone(), "s")
        .durability(Durability::Exit)
        .build()
        .unwrap();

    // Added with `add_hook`, and with `edit_hooks`: the next call is refused at its start.
    let id = agent.add_hook(ToolApprovalHook::new(ApprovalPolicy::all()));
    match agent.call("hello").await {
        Err(AgentError::InvalidInput { message }) => assert_eq!(message, EXIT_WITH_APPROVALS),
        other => panic!("expected the call to be refused, got {other:?}"),
    }
    assert!(agent.remove_hook(id));
    agent.edit_hooks(|hooks| hooks.push(ToolApprovalHook::new(ApprovalPolicy::all())));
    let refused = agent.call("hello").await.unwrap_err();
    assert_eq!(refused.to_string(), EXIT_WITH_APPROVALS);
    // Nothing ran, nothing was loaded into memory or stored, no hook saw the calls.
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    assert_eq!(model.request_count(), 0);
    assert!(agent.memory().is_empty());
    assert!(store.changes.lock().unwrap().is_empty());
    assert_eq!(files.load("s").await.unwrap(), None);

    // Without it, the agent works again.
    agent.edit_hooks(|hooks| {
        let ids: Vec<_> = hooks
            .of_type::<ToolApprovalHook>()
            .map(|(id, _)| id)
            .collect();
        for id in ids {
            hooks.remove(id);
        }
    });
    assert_eq!(agent.call("hello").await.unwrap().text(), "Hi.");
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "the PreCall of the call that ran"
    );
}
