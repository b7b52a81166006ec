//! Process-wide `SystemHooks`: snapshotted into each agent at build time (later additions and
//! removals affect only agents built afterwards), run after the builder's hooks and before
//! hooks added later, at equal priority, and removable from one agent with `remove_hook`. Its
//! own test binary because the registry is process-global; the tests here run one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentscope::prelude::*;
use agentscope::{HookFn, SystemHooks};
use agentscope_test::{RecordingHook, ScriptedModel, ScriptedResponse};
use futures::executor::block_on;
use support::describe::hook_names;
use support::hooks::{Log, PLAIN_CALL, entries, new_log, push};

use agentscope::HookEventType as K;

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the test alone, starting and ending with an empty registry.
struct Isolated {
    _guard: MutexGuard<'static, ()>,
}

impl Drop for Isolated {
    fn drop(&mut self) {
        SystemHooks::clear();
    }
}

fn isolated() -> Isolated {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    SystemHooks::clear();
    Isolated { _guard: guard }
}

fn agent(name: &str) -> ReActAgent {
    ReActAgent::builder()
        .name(name)
        .model(ScriptedModel::new([
            ScriptedResponse::text("ok"),
            ScriptedResponse::text("ok again"),
        ]))
        .build()
        .unwrap()
}

fn system_names() -> Vec<String> {
    SystemHooks::order()
        .into_iter()
        .map(|info| info.name)
        .collect()
}

fn logger(log: &Log, name: &'static str, priority: i32) -> HookFn {
    let log = Arc::clone(log);
    hook_fn(move |_| {
        push(&log, name);
        Ok(())
    })
    .with_priority(priority)
    .with_interests(K::PreCall)
    .with_name(name)
}

fn agents_seen(hook: &RecordingHook) -> Vec<String> {
    hook.events()
        .iter()
        .map(|event| event.agent().name().to_owned())
        .collect()
}

#[test]
fn system_hook_added_before_build_is_snapshotted_into_new_agents_only() {
    let _isolated = isolated();
    let audit = RecordingHook::new(100).with_name("audit");
    let built_before = agent("before");

    let id = SystemHooks::add(audit.clone());
    let built_after = agent("after");

    let registry = SystemHooks::order();
    assert_eq!(registry.len(), 1);
    assert_eq!((registry[0].id, registry[0].name.as_str()), (id, "audit"));
    assert_eq!(hook_names(&built_after), ["audit"]);
    assert_eq!(built_after.hook_order()[0].id, id);
    assert!(built_before.hook_order().is_empty());

    block_on(built_before.call("q")).unwrap();
    assert!(audit.events().is_empty(), "{:?}", audit.types());

    block_on(built_after.call("q")).unwrap();
    assert_eq!(audit.types(), PLAIN_CALL);
    assert_eq!(agents_seen(&audit), vec!["after"; 5]);

    // A system hook added after build does not reach the already-built agent.
    let late = RecordingHook::new(100).with_name("late");
    SystemHooks::add(late.clone());
    assert_eq!(hook_names(&built_after), ["audit"]);
    block_on(built_after.call("again")).unwrap();
    assert!(late.events().is_empty());
    assert_eq!(system_names(), ["audit", "late"]);
}

#[test]
fn system_hook_removal_affects_only_agents_built_later() {
    let _isolated = isolated();
    let audit = RecordingHook::new(100).with_name("audit");
    let id = SystemHooks::add(audit.clone());
    let first = agent("first");

    assert!(SystemHooks::remove(id));
    assert!(!SystemHooks::remove(id), "removing twice reports false");
    let second = agent("second");

    assert!(SystemHooks::order().is_empty());
    assert_eq!(hook_names(&first), ["audit"]);
    assert!(second.hook_order().is_empty());

    block_on(first.call("q")).unwrap();
    block_on(second.call("q")).unwrap();
    assert_eq!(audit.types(), PLAIN_CALL);
    assert_eq!(agents_seen(&audit), vec!["first"; 5]);
}

#[test]
fn system_hooks_run_after_the_builders_hooks_of_equal_priority() {
    let _isolated = isolated();
    let log = new_log();
    // The builder collects its hooks before the system hooks are registered: the snapshot
    // taken at build puts them after the builder's hooks among equals (AgentScope-Java's
    // order), and a hook added after the build comes after both.
    let builder = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::text("ok")]))
        .hook(logger(&log, "agent-100", 100))
        .hook(logger(&log, "agent-10", 10))
        .hook(logger(&log, "agent-5", 5))
        .hook(logger(&log, "agent-200", 200));
    SystemHooks::add(logger(&log, "sys-100", 100));
    SystemHooks::add(logger(&log, "sys-10", 10));
    let agent = builder.build().unwrap();
    agent.add_hook(logger(&log, "added-100", 100));

    let expected = [
        "agent-5",
        "agent-10",
        "sys-10",
        "agent-100",
        "sys-100",
        "added-100",
        "agent-200",
    ];
    assert_eq!(hook_names(&agent), expected);
    let priorities: Vec<i32> = agent
        .hook_order()
        .into_iter()
        .map(|info| info.priority)
        .collect();
    assert_eq!(priorities, [5, 10, 10, 100, 100, 100, 200]);

    block_on(agent.call("q")).unwrap();

    assert_eq!(entries(&log), expected);
}

#[test]
fn remove_hook_with_a_system_hook_id_removes_it_from_that_agent_only() {
    let _isolated = isolated();
    let audit = RecordingHook::new(100).with_name("audit");
    let id = SystemHooks::add(audit.clone());
    let own = RecordingHook::new(100).with_name("own");
    let trimmed = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::text("ok")]))
        .name("trimmed")
        .hook(own.clone())
        .build()
        .unwrap();
    let untouched = agent("untouched");
    assert_eq!(hook_names(&trimmed), ["own", "audit"]);

    assert!(trimmed.remove_hook(id));
    assert!(!trimmed.remove_hook(id), "removing twice reports false");

    assert_eq!(hook_names(&trimmed), ["own"]);
    assert_eq!(hook_names(&untouched), ["audit"]);
    assert_eq!(system_names(), ["audit"], "the registry is unchanged");

    block_on(trimmed.call("q")).unwrap();
    assert!(audit.events().is_empty());
    assert_eq!(own.types(), PLAIN_CALL);

    block_on(untouched.call("q")).unwrap();
    assert_eq!(agents_seen(&audit), vec!["untouched"; 5]);

    // clear_hooks drops the copied system hooks too, for that agent only.
    untouched.clear_hooks();
    assert!(untouched.hook_order().is_empty());
    assert_eq!(system_names(), ["audit"]);
    assert_eq!(hook_names(&agent("fresh")), ["audit"]);
}
