//! Durable sessions with the JSON file store: AgentState round trips (every content block
//! kind), save_state/load_state/builder state, a session-bound agent loading before and
//! saving after every call (answers, stops, failures, observe, metadata), bad input
//! (corrupt or truncated files, unknown versions, invalid ids, I/O errors) failing with the
//! session named and nothing overwritten, dropped calls, and save failures.

use std::fs;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::describe::texts;
use agentscope::InMemoryMemory;
use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::session::{
    AgentIdentity, AgentState, HookState, JsonFileSessionStore, SessionError, SessionStore,
    StateChange,
};
use agentscope_test::tools::Calculator;
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::json;

use crate::store::{bound_agent, temp_store};

fn state_of(messages: Vec<Msg>) -> AgentState {
    AgentState::new(AgentIdentity::new("assistant", "agent-1"), messages)
        .with_metadata_entry("user", "alice")
        .with_metadata_entry("tags", json!(["a", "b"]))
}

/// What the shared conformance suite (`json_file_conformance`) cannot see: the files.
#[tokio::test]
async fn other_files_in_the_directory_are_not_sessions() {
    let (dir, store) = temp_store();
    store
        .save("b", &StateChange::replace(&state_of(vec![Msg::user("1")])))
        .await
        .unwrap();
    let sessions = dir.path().join("sessions");
    fs::write(sessions.join("notes.txt"), "x").unwrap();
    fs::write(sessions.join(".hidden.json"), "x").unwrap();
    fs::create_dir(sessions.join("sub.json")).unwrap();
    assert_eq!(store.list().await.unwrap(), ["b"]);
    assert_eq!(store.path_of("b").unwrap(), sessions.join("b.jsonl"));
}

#[tokio::test]
async fn invalid_session_ids_never_touch_the_disk() {
    let (dir, store) = temp_store();
    let change = StateChange::replace(&state_of(vec![Msg::user("x")]));
    for id in ["../escape", "a/b", "", ".hidden", "a b"] {
        assert!(store.save(id, &change).await.is_err());
    }
    assert!(!dir.path().join("sessions").exists());
    assert!(!dir.path().join("escape.json").exists());
}

/// A truncated or corrupt session file, or one of an unknown format version, fails the call
/// with an error naming the session, before any hook runs; the file is not changed.
#[tokio::test]
async fn bad_session_files_fail_the_call_and_are_kept() {
    let (_dir, store) = temp_store();
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let agent = bound_agent(model.clone(), store.clone(), "s1");
    agent.call("hi").await.unwrap();
    let path = store.path_of("s1").unwrap();
    let good = fs::read(&path).unwrap();

    let first_line = &good[..good.iter().position(|b| *b == b'\n').unwrap() + 1];
    let corrupt = |detail: &str| {
        format!(
            "session error: session 's1' is corrupt: {}: {detail}",
            path.display()
        )
    };
    let cases: [(&[u8], String); 4] = [
        (
            // A log cut inside its first record: no complete record at all.
            &first_line[..first_line.len() / 2],
            corrupt("the log holds no complete record"),
        ),
        (b"not json\n", corrupt("line 1: the record is not a JSON object")),
        (
            br#"{"version": 7, "revision": 1, "kept": 0, "appended": "from the future"}
"#,
            "session error: session 's1' has state format version 7; this build reads version 1"
                .to_owned(),
        ),
        (
            br#"{"version": 1, "revision": 1, "kept": 0, "agent": {"name": "x", "id": "y"}, "appended": [{"type": "hologram"}], "saved_at": "2026-01-01T00:00:00Z"}
"#,
            corrupt("line 1: missing field `id` at line 1 column 109"),
        ),
    ];
    for (bytes, expected) in cases {
        fs::write(&path, bytes).unwrap();
        let recorder = RecordingHook::new(0);
        let id = agent.add_hook(recorder.clone());
        let before = agent.memory().messages();
        let err = agent.call("next").await.unwrap_err();
        let message = err.to_string();
        assert_eq!(message, expected);
        match &err {
            AgentError::Session(error) => assert_eq!(error.session(), Some("s1")),
            other => panic!("{other:?}"),
        }
        // The store's error is reachable as the source, as the docs promise.
        let source = std::error::Error::source(&err).unwrap();
        assert_eq!(
            source.downcast_ref::<SessionError>().unwrap().session(),
            Some("s1")
        );
        assert!(recorder.events().is_empty(), "no hook sees a failed load");
        assert_eq!(
            fs::read(&path).unwrap(),
            bytes,
            "the stored session is kept"
        );
        assert_eq!(agent.memory().messages(), before, "memory is untouched");
        assert!(!agent.is_running());
        agent.remove_hook(id);
    }
    assert_eq!(model.request_count(), 1);

    // Once the file is fixed, the agent continues from it.
    fs::write(&path, &good).unwrap();
    model.push(ScriptedResponse::text("Again!"));
    agent.call("hello again").await.unwrap();
    assert_eq!(
        texts(&store.load("s1").await.unwrap().unwrap().messages),
        ["hi", "Hello!", "hello again", "Again!"]
    );
}

/// The call's first touch of the disk is its lease, which opens the session's lock file
/// (a load reports the log it reads).
#[tokio::test]
async fn io_errors_name_the_session_and_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    fs::write(&not_a_dir, "I am a file").unwrap();
    let store = JsonFileSessionStore::new(&not_a_dir);
    let agent = bound_agent(ScriptedModel::new([]), store.clone(), "s1");
    let message = agent.call("hi").await.unwrap_err().to_string();
    let expected = format!(
        "session error: session 's1': I/O error: opening lock file {}: ",
        not_a_dir.join(".s1.lock").display()
    );
    assert!(message.starts_with(&expected), "{message}");
    let message = store.load("s1").await.unwrap_err().to_string();
    let expected = format!(
        "session 's1': I/O error: reading {}: ",
        not_a_dir.join("s1.jsonl").display()
    );
    assert!(message.starts_with(&expected), "{message}");
    assert_eq!(fs::read_to_string(&not_a_dir).unwrap(), "I am a file");
    assert!(agent.memory().is_empty());
}

#[tokio::test]
async fn invalid_session_id_fails_the_call() {
    let (_dir, store) = temp_store();
    let agent = bound_agent(ScriptedModel::new([]), store, "a/b");
    assert_eq!(
        agent.call("hi").await.unwrap_err().to_string(),
        "session error: invalid session id 'a/b': it contains '/'; allowed are ASCII letters, digits, '-', '_' and '.'"
    );
}

/// Two tests running `$scenario` on a JSON file store in a new temporary directory: the
/// first with the store's file work on the blocking pool (the default), the second with it
/// inline (`inline(true)`), on the test's current-thread runtime.
macro_rules! in_both_file_work_modes {
    (
        $scenario:ident:
        $(#[doc = $doc:literal])* $pooled:ident,
        $(#[doc = $inline_doc:literal])* $inline:ident $(,)?
    ) => {
        $(#[doc = $doc])*
        #[tokio::test]
        async fn $pooled() {
            let (_dir, store) = temp_store();
            $scenario(store).await;
        }

        $(#[doc = $inline_doc])*
        #[tokio::test]
        async fn $inline() {
            let (_dir, store) = temp_store();
            $scenario(store.inline(true)).await;
        }
    };
}

in_both_file_work_modes! {
    new_instance_continues:
    /// A new agent instance on the same session continues the conversation; the stored
    /// state records the last agent that saved it.
    a_new_instance_continues_the_session,
    /// The same with the store's file work inline, on the test's current-thread runtime: the
    /// calls take leases, load and make fenced saves on the task.
    a_new_instance_continues_the_session_with_inline_file_work,
}

async fn new_instance_continues(store: JsonFileSessionStore) {
    let first = ReActAgent::builder()
        .name("support")
        .id("instance-1")
        .model(ScriptedModel::new([ScriptedResponse::text("Hi Alice!")]))
        .session(store.clone(), "chat")
        .build()
        .unwrap();
    first.call("I am Alice.").await.unwrap();
    let stored = store.load("chat").await.unwrap().unwrap();
    assert_eq!(stored.version, AgentState::CURRENT_VERSION);
    assert_eq!(stored.agent, AgentIdentity::new("support", "instance-1"));
    assert_eq!(stored.messages, first.memory().messages());

    let model = ScriptedModel::new([ScriptedResponse::text("You are Alice.")]);
    let second = ReActAgent::builder()
        .name("support")
        .id("instance-2")
        .sys_prompt("Be brief.")
        .model(model.clone())
        .session(store.clone(), "chat")
        .build()
        .unwrap();
    assert!(
        second.memory().is_empty(),
        "nothing is loaded before a call"
    );
    second.call("Who am I?").await.unwrap();
    assert_eq!(
        texts(&model.requests()[0].messages),
        ["Be brief.", "I am Alice.", "Hi Alice!", "Who am I?"]
    );
    let stored = store.load("chat").await.unwrap().unwrap();
    assert_eq!(stored.agent, AgentIdentity::new("support", "instance-2"));
    assert_eq!(
        texts(&stored.messages),
        ["I am Alice.", "Hi Alice!", "Who am I?", "You are Alice."]
    );
    assert_eq!(stored.messages, second.memory().messages());
}

/// Two instances alternating on one session: each call loads what the other saved.
#[tokio::test]
async fn two_instances_alternating_on_one_session_see_each_other() {
    let (_dir, store) = temp_store();
    let build = |name: &str| {
        let model = ScriptedModel::new([]);
        let agent = ReActAgent::builder()
            .name(name)
            .model(model.clone())
            .session(store.clone(), "shared")
            .build()
            .unwrap();
        (agent, model)
    };
    let (a, model_a) = build("a");
    let (b, model_b) = build("b");
    let mut expected: Vec<String> = Vec::new();
    for round in 0..4 {
        let (agent, model) = if round % 2 == 0 {
            (&a, &model_a)
        } else {
            (&b, &model_b)
        };
        let question = format!("q{round}");
        let answer = format!("a{round}");
        model.push(ScriptedResponse::text(answer.clone()));
        agent.call(question.as_str()).await.unwrap();
        expected.push(question);
        let seen = model.last_request().unwrap().messages;
        assert_eq!(
            texts(&seen),
            expected,
            "the model saw the whole conversation"
        );
        expected.push(answer);
        assert_eq!(texts(&agent.memory().messages()), expected);
    }
    let stored = store.load("shared").await.unwrap().unwrap();
    assert_eq!(texts(&stored.messages), expected);
    let names: Vec<&str> = stored.messages.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["user", "a", "user", "b", "user", "a", "user", "b"]);
}

/// Counts saves and loads; can be told to fail saves.
#[derive(Clone, Default)]
struct CountingStore {
    inner: Arc<CountingInner>,
}

#[derive(Default)]
struct CountingInner {
    files: Option<JsonFileSessionStore>,
    saves: AtomicUsize,
    loads: AtomicUsize,
    fail_saves: AtomicBool,
    /// Saves are written, then reported as failed (a lost acknowledgement).
    fail_after_write: AtomicBool,
}

impl CountingStore {
    fn new(files: JsonFileSessionStore) -> Self {
        Self {
            inner: Arc::new(CountingInner {
                files: Some(files),
                ..CountingInner::default()
            }),
        }
    }

    fn files(&self) -> &JsonFileSessionStore {
        self.inner.files.as_ref().unwrap()
    }

    fn saves(&self) -> usize {
        self.inner.saves.load(Ordering::SeqCst)
    }

    fn loads(&self) -> usize {
        self.inner.loads.load(Ordering::SeqCst)
    }

    fn fail_saves(&self, fail: bool) {
        self.inner.fail_saves.store(fail, Ordering::SeqCst);
    }
}

impl SessionStore for CountingStore {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        self.inner.saves.fetch_add(1, Ordering::SeqCst);
        if self.inner.fail_after_write.load(Ordering::SeqCst) {
            return Box::pin(async move {
                self.files().save(session, change).await?;
                Err(SessionError::backend(
                    Some(session),
                    "saving",
                    std::io::Error::other("connection reset before the reply"),
                ))
            });
        }
        if self.inner.fail_saves.load(Ordering::SeqCst) {
            return Box::pin(async move {
                Err(SessionError::backend(
                    Some(session),
                    "saving",
                    std::io::Error::other("disk full"),
                ))
            });
        }
        self.files().save(session, change)
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        self.inner.loads.fetch_add(1, Ordering::SeqCst);
        self.files().load(session)
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        self.files().delete(session)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        self.files().list()
    }
}

in_both_file_work_modes! {
    saves_after_every_call:
    /// Saves happen after calls that changed memory: answers, stops for approval,
    /// suspensions, and failures after something was stored; not after calls that changed
    /// nothing.
    saves_after_every_call_that_changed_memory,
    /// The same with the store's file work inline, on the test's current-thread runtime.
    saves_after_every_call_with_inline_file_work,
}

async fn saves_after_every_call(files: JsonFileSessionStore) {
    let store = CountingStore::new(files);
    let calc = Calculator::new();
    let approvals = ToolApprovalHook::new(ApprovalPolicy::tools(["calculator"]));
    let model = ScriptedModel::new([]);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .toolkit(Toolkit::new().tool(calc.clone()))
        .hook(approvals.clone())
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let stored = || {
        let store = store.clone();
        async move { store.files().load("s").await.unwrap().unwrap().messages }
    };

    // 1. An answer.
    model.push(ScriptedResponse::text("Hello!"));
    agent.call("hi").await.unwrap();
    assert_eq!((store.loads(), store.saves()), (1, 1));
    assert_eq!(stored().await, agent.memory().messages());

    // 2. A stop for approval: the pending call is durable.
    model.push(ScriptedResponse::tool_call(
        "c1",
        "calculator",
        json!({"expression": "6*7"}),
    ));
    let stopped = agent.call("6*7?").await.unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    assert_eq!((store.loads(), store.saves()), (2, 2));
    let messages = stored().await;
    assert_eq!(messages, agent.memory().messages());
    assert_eq!(messages.last().unwrap().tool_uses()[0].id, "c1");

    // 3. Resuming without a decision fails at PreCall: nothing changed, nothing saved.
    let err = agent.call(()).await.unwrap_err();
    assert!(err.to_string().contains("awaiting approval: [c1]"), "{err}");
    assert_eq!((store.loads(), store.saves()), (3, 2));

    // 4. Approved, the tool runs, then the model fails: every step was saved (the decision
    // after PreCall, the running record before the tool, the result after it) and the
    // failure changed nothing more.
    approvals.approve("c1").unwrap();
    model.push(ScriptedResponse::error("model overloaded"));
    let err = agent.call(()).await.unwrap_err();
    assert_eq!(err.to_string(), "model error: model overloaded");
    assert_eq!((store.loads(), store.saves()), (4, 5));
    assert_eq!(calc.log().count(), 1);
    let messages = stored().await;
    assert_eq!(messages, agent.memory().messages());
    assert_eq!(
        messages.last().unwrap().tool_results()[0].text_output(),
        "42"
    );

    // 5. The model recovers: the conversation continues from the stored result.
    model.push(ScriptedResponse::text("It is 42."));
    agent.call("go on").await.unwrap();
    assert_eq!(
        texts(&stored().await),
        ["hi", "Hello!", "6*7?", "", "", "go on", "It is 42."]
    );
    assert_eq!(calc.log().count(), 1);
}

/// A failed save fails a call that succeeded, with the session named; the next call loads
/// the last saved state, so the unsaved turn is gone everywhere.
#[tokio::test]
async fn a_failed_save_fails_the_call_and_the_next_call_starts_from_the_stored_state() {
    let (_dir, files) = temp_store();
    let store = CountingStore::new(files);
    let model = ScriptedModel::new([
        ScriptedResponse::text("one"),
        ScriptedResponse::text("two"),
        ScriptedResponse::text("three"),
    ]);
    let agent = bound_agent(model.clone(), store.clone(), "s");
    agent.call("1").await.unwrap();
    store.fail_saves(true);
    let err = agent.call("2").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "session error: session 's': storage backend error: saving: disk full"
    );
    assert!(matches!(&err, AgentError::Session(error) if error.session() == Some("s")));
    assert_eq!(texts(&agent.memory().messages()), ["1", "one", "2", "two"]);
    assert!(!agent.is_running());

    // A call that fails anyway keeps its own error when the save fails too: a hook counts
    // errors in its session state, so the failed call has something to save at its end.
    let counter = hook_fn(|event| {
        if let HookEvent::Error(e) = event
            && let Some(state) = e.extensions_mut().get_mut::<HookState>()
        {
            let errors: u64 = state.get("error_counter")?.unwrap_or(0);
            state.set("error_counter", &(errors + 1));
        }
        Ok(())
    })
    .with_name("error_counter");
    let failing = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::error("boom")]))
        .hook(counter)
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let saves_before = store.saves();
    assert_eq!(
        failing.call("x").await.unwrap_err().to_string(),
        "model error: boom"
    );
    assert_eq!(
        store.saves() - saves_before,
        1,
        "the failed call tried to save the hook's count, and the store failed it"
    );

    store.fail_saves(false);
    agent.call("3").await.unwrap();
    assert_eq!(
        texts(&store.files().load("s").await.unwrap().unwrap().messages),
        ["1", "one", "3", "three"]
    );
}

/// A save that is written but reported as failed (a lost acknowledgement) is checked by a
/// load: the call succeeds, and the turn is stored once. A failure that wrote nothing still
/// fails the call.
#[tokio::test]
async fn a_save_written_but_reported_as_failed_counts_as_saved() {
    let (_dir, files) = temp_store();
    let store = CountingStore::new(files);
    let model = ScriptedModel::new([
        ScriptedResponse::text("one"),
        ScriptedResponse::text("two"),
        ScriptedResponse::text("three"),
    ]);
    let agent = bound_agent(model.clone(), store.clone(), "s");
    agent.call("1").await.unwrap();
    store.inner.fail_after_write.store(true, Ordering::SeqCst);
    let loads = store.loads();
    assert_eq!(agent.call("2").await.unwrap().text(), "two");
    assert_eq!(
        store.loads(),
        loads + 2,
        "the call's load and the check after the save"
    );
    store.inner.fail_after_write.store(false, Ordering::SeqCst);
    agent.call("3").await.unwrap();
    let stored = store.files().load("s").await.unwrap().unwrap();
    assert_eq!(
        texts(&stored.messages),
        ["1", "one", "2", "two", "3", "three"]
    );
    assert_eq!(stored.revision, 3);
}

/// An audit hook that records turns at PostCall learns, by an ErrorEvent, that the turn it
/// recorded was neither returned nor stored when the call's final save fails after PostCall;
/// a call whose save succeeds sends it no ErrorEvent.
#[tokio::test]
async fn a_final_save_that_fails_after_post_call_reaches_the_hooks_that_saw_post_call() {
    let (_dir, files) = temp_store();
    let store = CountingStore::new(files);
    let audit: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&audit);
    let hook = hook_fn(move |event: &mut HookEvent| {
        let entry = match event {
            HookEvent::PostCall(e) => format!("turn: {}", e.final_message().text()),
            HookEvent::Error(e) => format!("failed: {}", e.error()),
            _ => return Ok(()),
        };
        log.lock().unwrap().push(entry);
        Ok(())
    })
    .with_interests(HookEventTypes::only(HookEventType::PostCall).with(HookEventType::Error));
    let model = ScriptedModel::new([ScriptedResponse::text("one"), ScriptedResponse::text("two")]);
    let agent = ReActAgent::builder()
        .model(model)
        .hook(hook)
        .session(store.clone(), "s")
        .build()
        .unwrap();
    agent.call("1").await.unwrap();
    // Every save of the second call fails: it has no step boundary before its end, so its
    // final save (after PostCall) is the one that fails.
    store.fail_saves(true);
    let err = agent.call("2").await.unwrap_err();
    assert_eq!(
        *audit.lock().unwrap(),
        [
            "turn: one".to_owned(),
            "turn: two".to_owned(),
            format!("failed: {err}"),
        ]
    );
    assert_eq!(
        err.to_string(),
        "session error: session 's': storage backend error: saving: disk full"
    );
}

/// A dropped call cannot save: the session keeps its state from before the call, and the
/// next call's load brings memory back to it.
#[tokio::test]
async fn a_dropped_call_is_not_saved_and_the_next_call_restores_the_stored_state() {
    let (_dir, store) = temp_store();
    let model = ScriptedModel::new([
        ScriptedResponse::text("one"),
        ScriptedResponse::text("never").with_delay(Duration::from_secs(3600)),
        ScriptedResponse::text("three"),
    ]);
    let reasoning = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&reasoning);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .session(store.clone(), "s")
        .hook(
            hook_fn(move |_| {
                notify.notify_one();
                Ok(())
            })
            .with_interests(HookEventType::PreReasoning),
        )
        .build()
        .unwrap();
    agent.call("1").await.unwrap();
    reasoning.notified().await;

    let mut call = Box::pin(agent.call("2"));
    tokio::select! {
        _ = &mut call => panic!("the call cannot finish"),
        () = reasoning.notified() => {}
    }
    drop(call);
    assert_eq!(texts(&agent.memory().messages()), ["1", "one", "2"]);
    assert_eq!(
        texts(&store.load("s").await.unwrap().unwrap().messages),
        ["1", "one"]
    );

    agent.call("3").await.unwrap();
    assert_eq!(
        texts(&model.last_request().unwrap().messages),
        ["1", "one", "3"]
    );
    assert_eq!(
        texts(&store.load("s").await.unwrap().unwrap().messages),
        ["1", "one", "3", "three"]
    );
}

/// A session that does not exist (yet, or any more) is a fresh conversation: empty, or the
/// builder's state.
#[tokio::test]
async fn a_missing_session_is_a_fresh_conversation() {
    let (_dir, store) = temp_store();
    let model = ScriptedModel::new([ScriptedResponse::text("one"), ScriptedResponse::text("two")]);
    let agent = bound_agent(model.clone(), store.clone(), "s");
    agent.call("1").await.unwrap();
    assert!(store.delete("s").await.unwrap());
    agent.call("2").await.unwrap();
    assert_eq!(texts(&model.last_request().unwrap().messages), ["2"]);
    assert_eq!(texts(&agent.memory().messages()), ["2", "two"]);

    // With a template state.
    let template = state_of(vec![Msg::user("example q"), Msg::assistant("example a")]);
    let model = ScriptedModel::new([ScriptedResponse::text("one"), ScriptedResponse::text("two")]);
    let agent = ReActAgent::builder()
        .model(model.clone())
        .state(template)
        .session(store.clone(), "t")
        .build()
        .unwrap();
    assert_eq!(
        texts(&agent.memory().messages()),
        ["example q", "example a"]
    );
    assert_eq!(agent.metadata()["user"], "alice");
    agent.call("1").await.unwrap();
    assert_eq!(
        texts(&model.last_request().unwrap().messages),
        ["example q", "example a", "1"]
    );
    let stored = store.load("t").await.unwrap().unwrap();
    assert_eq!(stored.metadata["user"], "alice");
    assert!(store.delete("t").await.unwrap());
    agent.call("2").await.unwrap();
    assert_eq!(
        texts(&model.last_request().unwrap().messages),
        ["example q", "example a", "2"]
    );
}

#[tokio::test]
async fn observe_and_metadata_go_through_the_session() {
    let (_dir, store) = temp_store();
    let a = bound_agent(ScriptedModel::new([]), store.clone(), "s");
    a.observe(Msg::user("a note")).await.unwrap();
    a.update_metadata(|m| {
        m.insert("title".into(), json!("Refunds"));
    })
    .await
    .unwrap();
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(texts(&stored.messages), ["a note"]);
    assert_eq!(stored.metadata["title"], "Refunds");

    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    let b = bound_agent(model.clone(), store.clone(), "s");
    assert!(b.metadata().is_empty());
    b.call("hi").await.unwrap();
    assert_eq!(b.metadata()["title"], "Refunds");
    assert_eq!(texts(&model.requests()[0].messages), ["a note", "hi"]);
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(
        stored.metadata["title"], "Refunds",
        "metadata survives other saves"
    );
    assert_eq!(texts(&stored.messages), ["a note", "hi", "ok"]);

    // `a` sees b's turn on its next operation.
    a.observe(Msg::user("another note")).await.unwrap();
    assert_eq!(
        texts(&a.memory().messages()),
        ["a note", "hi", "ok", "another note"]
    );
}

#[tokio::test]
async fn streamed_calls_save_before_the_result_is_delivered() {
    let (_dir, store) = temp_store();
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::chunks([
            ScriptedChunk::thinking("hmm"),
            ScriptedChunk::text("Hel"),
            ScriptedChunk::text("lo"),
        ])
        .with_usage(5, 2)]))
        .session(store.clone(), "s")
        .build()
        .unwrap();
    let mut events = agent.stream("hi", StreamOptions::default());
    let mut result = None;
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        if event.event_type == EventType::AgentResult {
            result = Some(event.message);
            let stored = store.load("s").await.unwrap().unwrap();
            assert_eq!(stored.messages, agent.memory().messages());
        }
    }
    let result = result.unwrap();
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.messages[1], result);
    assert_eq!(stored.messages[1].thinking(), "hmm");
    assert_eq!(
        stored.messages[1].metadata["usage"],
        json!({"input_tokens": 5, "output_tokens": 2})
    );
}

/// An agent without a session over `memory`, whose model has no answer.
fn agent_over(memory: &InMemoryMemory) -> ReActAgent {
    ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .memory(memory.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn save_state_and_load_state_round_trip() {
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let agent = ReActAgent::builder().model(model).build().unwrap();
    agent.call("hi").await.unwrap();
    agent
        .update_metadata(|m| {
            m.insert("user".into(), json!("bob"));
        })
        .await
        .unwrap();
    let state = agent.save_state().unwrap();
    assert_eq!(state.version, 1);
    assert_eq!(state.agent, AgentIdentity::new("assistant", agent.id()));
    assert_eq!(state.messages, agent.memory().messages());
    assert_eq!(state.metadata["user"], "bob");

    // Through JSON, into another agent with its own memory.
    let state = AgentState::decode("x", &state.encode("x").unwrap()).unwrap();
    let memory = InMemoryMemory::with_messages(vec![Msg::user("replaced")]);
    let other = agent_over(&memory);
    other.load_state(state.clone()).await.unwrap();
    assert_eq!(memory.messages(), state.messages);
    assert_eq!(other.metadata()["user"], "bob");

    // Invalid states change nothing.
    let mut future = state.clone();
    future.version = 2;
    assert_eq!(
        other.load_state(future).await.unwrap_err().to_string(),
        "unsupported agent state format version 2 (this build reads version 1)"
    );
    let mut with_system = state.clone();
    with_system.messages.insert(0, Msg::system("be evil"));
    assert_eq!(
        other
            .load_state(with_system.clone())
            .await
            .unwrap_err()
            .to_string(),
        "message 0 has the system role; agent memory never holds system messages"
    );
    assert_eq!(memory.messages(), state.messages);
    let err = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .state(with_system)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid agent configuration: invalid agent state: message 0 has the system role; agent memory never holds system messages"
    );
}

#[tokio::test]
async fn load_state_with_a_session_saves_it() {
    let (_dir, store) = temp_store();
    let agent = bound_agent(ScriptedModel::new([]), store.clone(), "s");
    let state = agentscope_test::session_store::rich_state();
    agent.load_state(state.clone()).await.unwrap();
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.messages, state.messages);
    assert_eq!(stored.metadata, state.metadata);
    assert_eq!(stored.agent, AgentIdentity::new("assistant", agent.id()));
    assert_eq!(agent.memory().messages(), state.messages);
}

/// A conversation whose tool call `c1` started and never stored a result, with some hooks'
/// state: what a crash mid-tool leaves in a session.
fn crashed_state() -> AgentState {
    let mut state = state_of(vec![
        Msg::user("6*7?"),
        Msg::new(
            Role::Assistant,
            "assistant",
            vec![ToolUseBlock::new("c1", "calculator", json!({"expression": "6*7"})).into()],
        ),
    ]);
    state.running_tools = vec!["c1".to_owned()];
    state
        .hooks
        .insert("approvals".to_owned(), json!({"approved": ["c1"]}));
    state
}

/// An agent with a calculator bound to session `id` of `store`, answering "done".
fn calculator_agent(store: &JsonFileSessionStore, id: &str, calc: &Calculator) -> ReActAgent {
    ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::text("done")]))
        .toolkit(Toolkit::new().tool(calc.clone()))
        .session(store.clone(), id)
        .build()
        .unwrap()
}

#[tokio::test]
async fn running_tools_and_hooks_state_survive_save_state_and_load_state() {
    let (_dir, store) = temp_store();
    let state = crashed_state();
    let calc = Calculator::new();
    let first = calculator_agent(&store, "s", &calc);

    first.load_state(state.clone()).await.unwrap();

    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.running_tools, ["c1"]);
    assert_eq!(stored.hooks, state.hooks);
    let saved = first.save_state().unwrap();
    assert_eq!(saved.running_tools, ["c1"]);
    assert_eq!(saved.hooks, state.hooks);

    // Moved to another session by hand, the started tool still does not run again.
    let second = calculator_agent(&store, "t", &calc);
    second.load_state(saved).await.unwrap();
    let reply = second.call(()).await.unwrap();
    assert_eq!(reply.text(), "done");
    assert_eq!(calc.log().count(), 0, "the started tool ran again");
    let results: Vec<_> = second
        .memory()
        .messages()
        .iter()
        .flat_map(|msg| msg.tool_results().into_iter().cloned().collect::<Vec<_>>())
        .collect();
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert!(
        results[0].output[0]
            .as_text()
            .is_some_and(|text| text.contains("interrupted while running")),
        "{results:?}"
    );
    let after = second.save_state().unwrap();
    assert!(after.running_tools.is_empty(), "{after:?}");
    assert_eq!(after.hooks, state.hooks);
    assert_eq!(store.load("t").await.unwrap().unwrap().hooks, state.hooks);
}

#[tokio::test]
async fn a_template_state_keeps_its_running_tools_for_a_new_session() {
    let (_dir, store) = temp_store();
    let calc = Calculator::new();
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::text("done")]))
        .toolkit(Toolkit::new().tool(calc.clone()))
        .state(crashed_state())
        .session(store.clone(), "fresh")
        .build()
        .unwrap();
    assert_eq!(agent.save_state().unwrap().running_tools, ["c1"]);

    assert_eq!(agent.call(()).await.unwrap().text(), "done");

    assert_eq!(calc.log().count(), 0, "the started tool ran again");
    let stored = store.load("fresh").await.unwrap().unwrap();
    assert!(stored.running_tools.is_empty());
    assert_eq!(stored.hooks, crashed_state().hooks);
}

#[tokio::test]
async fn without_a_session_running_tools_and_hooks_state_are_refused_not_dropped() {
    let memory = InMemoryMemory::with_messages(vec![Msg::user("kept")]);
    let agent = agent_over(&memory);
    let expected = "the state records running tools [\"c1\"] and hooks' state for \
                    [\"approvals\"], which only an agent bound to a session keeps: bind one \
                    (`session(..)`), or clear `running_tools` and `hooks` to drop them";

    let error = agent.load_state(crashed_state()).await.unwrap_err();
    assert!(
        matches!(error, AgentError::InvalidInput { .. }),
        "{error:?}"
    );
    assert_eq!(error.to_string(), expected);
    assert_eq!(texts(&memory.messages()), ["kept"]);
    let error = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .state(crashed_state())
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("invalid agent configuration: invalid agent state: {expected}")
    );

    // Cleared, they load.
    let mut cleared = crashed_state();
    cleared.running_tools.clear();
    cleared.hooks.clear();
    agent.load_state(cleared.clone()).await.unwrap();
    assert_eq!(memory.messages(), cleared.messages);
}

#[tokio::test]
async fn state_operations_are_busy_while_a_call_runs() {
    let started = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&started);
    for check_running in [true, false] {
        let agent = ReActAgent::builder()
            .model(ScriptedModel::new([
                ScriptedResponse::text("slow").with_delay(Duration::from_secs(3600))
            ]))
            .check_running(check_running)
            .hook({
                let notify = Arc::clone(&notify);
                hook_fn(move |_| {
                    notify.notify_one();
                    Ok(())
                })
                .with_interests(HookEventType::PreReasoning)
            })
            .build()
            .unwrap();
        let mut call = Box::pin(agent.call("hi"));
        tokio::select! {
            _ = &mut call => panic!("the call cannot finish"),
            () = started.notified() => {}
        }
        assert!(agent.save_state().unwrap_err().is_busy());
        if check_running {
            let state = state_of(Vec::new());
            assert!(agent.load_state(state).await.unwrap_err().is_busy());
            assert!(agent.update_metadata(|_| {}).await.unwrap_err().is_busy());
        }
        drop(call);
        assert_eq!(agent.save_state().unwrap().messages.len(), 1);
    }
}

#[test]
fn session_configuration_errors() {
    let (_dir, store) = temp_store();
    let err = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .session(store.clone(), "s")
        .check_running(false)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid agent configuration: a session needs the busy check (check_running(true)): a call's load would replace memory under another running call"
    );
    let err = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .session(store, "  ")
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid agent configuration: the session id must not be blank"
    );
}

#[tokio::test]
async fn an_agent_takes_a_shared_dyn_session_store() {
    let (_dir, store) = temp_store();
    let shared: Arc<dyn SessionStore> = Arc::new(store);
    let agent = bound_agent(
        ScriptedModel::new([ScriptedResponse::text("ok")]),
        Arc::clone(&shared),
        "s",
    );
    agent.call("hi").await.unwrap();
    assert_eq!(shared.list().await.unwrap(), ["s"]);
    assert_eq!(shared.load("s").await.unwrap().unwrap().messages.len(), 2);
}

#[test]
fn session_types_are_send_sync_and_dyn_compatible() {
    fn check<T: Send + Sync + 'static>() {}
    check::<JsonFileSessionStore>();
    check::<AgentState>();
    check::<SessionError>();
    check::<Arc<dyn SessionStore>>();
    check::<Box<dyn SessionStore>>();
    fn clone<T: Clone>() {}
    clone::<JsonFileSessionStore>();
    clone::<SessionError>();
}
