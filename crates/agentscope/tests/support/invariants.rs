//! The invariants of `docs/reliability.md`, checked after a call ended (success, error,
//! panic, timeout, interrupt or drop):
//!
//! - (a) the agent accepts a new call at once;
//! - (b) memory has no tool-use without a result (unless the call deliberately stopped or
//!   suspended with those calls pending), and no result that answers no call or answers one
//!   twice;
//! - (c) no SYSTEM message is in memory;
//! - (d) every hook that saw PreCall saw exactly one of PostCall or Error (a dropped call
//!   fires neither; a busy rejection is seen by no hook). The one exception, which these
//!   agents (no session) never meet: a session's final save that fails after PostCall sends
//!   Error to every hook, also those that saw PostCall.

use std::collections::HashSet;

use agentscope::prelude::*;
use agentscope_test::{RecordingHook, ScriptedResponse};
use futures::FutureExt;

use super::describe::describe;
use super::fixtures::SwapModel;

/// Names of tools that suspend (their calls stay pending on purpose).
pub(crate) const SUSPENDING_TOOLS: &[&str] = &["external"];

/// Which tool calls may be left without a result.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pending<'a> {
    /// None: every tool-use has a result.
    None,
    /// Exactly these ids, all in the last assistant message with tool calls.
    Exactly(&'a [&'a str]),
    /// Those a deliberate stop or suspension left: in the last message with tool calls,
    /// which is marked `ReasoningStopRequested`, or calls of a suspending tool.
    Deliberate,
}

/// How one call ended, as one hook saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// PreCall, then PostCall.
    PostCall,
    /// PreCall, then Error.
    Error,
    /// Error without PreCall: a PreCall hook that ran before this one failed the call.
    ErrorOnly,
    /// PreCall and no ending: the call was dropped (or is still running).
    Open,
}

/// The endings of the calls `rec` saw, in order (of every agent: use [`endings_for`] when
/// the recorder is shared). Panics when a call's events contradict invariant (d): a
/// PostCall without PreCall, or a second ending for one call.
pub(crate) fn endings(rec: &RecordingHook) -> Vec<Ending> {
    let kinds = rec
        .events()
        .iter()
        .filter(|e| !is_observation(e))
        .map(HookEvent::event_type)
        .collect();
    parse_endings(Hook::name(rec), kinds)
}

/// An `observe()`'s PreCall: it opens no call.
fn is_observation(event: &HookEvent) -> bool {
    matches!(event, HookEvent::PreCall(e) if e.is_observation())
}

/// [`endings`] of the calls of `agent` only.
pub(crate) fn endings_for(rec: &RecordingHook, agent: &ReActAgent) -> Vec<Ending> {
    let kinds = rec
        .events()
        .iter()
        .filter(|e| e.agent().id() == agent.id() && !is_observation(e))
        .map(HookEvent::event_type)
        .collect();
    parse_endings(Hook::name(rec), kinds)
}

/// Parses the call endings out of a sequence of event kinds (see [`endings`]).
pub(crate) fn parse_endings(name: &str, kinds: Vec<HookEventType>) -> Vec<Ending> {
    let mut endings = Vec::new();
    let mut open = false;
    for kind in kinds.iter().copied() {
        match kind {
            HookEventType::PreCall => {
                if open {
                    endings.push(Ending::Open);
                }
                open = true;
            }
            HookEventType::PostCall => {
                assert!(
                    open,
                    "{name}: PostCall without PreCall (or a second ending): {kinds:?}"
                );
                endings.push(Ending::PostCall);
                open = false;
            }
            HookEventType::Error => {
                endings.push(if open {
                    Ending::Error
                } else {
                    Ending::ErrorOnly
                });
                open = false;
            }
            _ => {}
        }
    }
    if open {
        endings.push(Ending::Open);
    }
    endings
}

/// Checks every invariant after calls that all completed (none was dropped).
pub(crate) fn assert_invariants(
    agent: &ReActAgent,
    recorders: &[&RecordingHook],
    pending: Pending<'_>,
) {
    assert_invariants_after_drops(agent, recorders, pending, 0);
}

/// Checks every invariant after calls of which at most `dropped` were dropped (their
/// PreCall may have no ending).
pub(crate) fn assert_invariants_after_drops(
    agent: &ReActAgent,
    recorders: &[&RecordingHook],
    pending: Pending<'_>,
    dropped: usize,
) {
    assert_accepts_a_call_at_once(agent);
    assert_memory_well_formed(&agent.memory().messages(), pending);
    for rec in recorders {
        let endings = endings_for(rec, agent);
        let open = endings.iter().filter(|e| **e == Ending::Open).count();
        assert!(
            open <= dropped,
            "{}: {open} call(s) without PostCall or Error but {dropped} dropped: {endings:?} from {:?}",
            Hook::name(*rec),
            rec.types_without_chunks()
        );
    }
}

/// (a): the busy flag is free now: `observe(())` takes the same busy check as a call (and
/// changes nothing, fires no hook); it must succeed without waiting.
pub(crate) fn assert_accepts_a_call_at_once(agent: &ReActAgent) {
    assert!(!agent.is_running(), "the agent still counts a running call");
    match agent.observe(Vec::<Msg>::new()).now_or_never() {
        Some(Ok(())) => {}
        Some(Err(err)) => panic!("the agent does not accept a new call: {err:?}"),
        None => panic!("the busy probe did not complete at once"),
    }
}

/// (b) and (c) on a list of messages.
pub(crate) fn assert_memory_well_formed(memory: &[Msg], pending: Pending<'_>) {
    let shown = || memory.iter().map(describe).collect::<Vec<_>>();
    // (c)
    assert!(
        memory.iter().all(|m| m.role != Role::System),
        "a SYSTEM message is in memory: {:#?}",
        shown()
    );
    // Results answer an earlier call, once.
    let mut called: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for msg in memory {
        for block in &msg.content {
            match block {
                ContentBlock::ToolUse(call) => {
                    let first_use = called.insert(call.id.as_str());
                    assert!(
                        first_use,
                        "tool call id {} used twice: {:#?}",
                        call.id,
                        shown()
                    );
                }
                ContentBlock::ToolResult(result) => {
                    let id = result.id.as_str();
                    let answers_a_call = called.contains(id);
                    assert!(
                        answers_a_call,
                        "tool result {id} answers no earlier tool call: {:#?}",
                        shown()
                    );
                    let first_answer = answered.insert(id);
                    assert!(
                        first_answer,
                        "tool call {id} answered twice: {:#?}",
                        shown()
                    );
                }
                _ => {}
            }
        }
    }
    // (b) Tool-uses without a result.
    let last_with_calls = memory.iter().rposition(Msg::has_tool_uses);
    let mut orphans: Vec<(usize, &ToolUseBlock)> = Vec::new();
    for (at, msg) in memory.iter().enumerate() {
        for call in msg.tool_uses() {
            if !answered.contains(call.id.as_str()) {
                orphans.push((at, call));
            }
        }
    }
    let orphan_ids: Vec<&str> = orphans.iter().map(|(_, c)| c.id.as_str()).collect();
    match pending {
        Pending::None => assert!(
            orphans.is_empty(),
            "tool-use without a result: {orphan_ids:?} in {:#?}",
            shown()
        ),
        Pending::Exactly(ids) => {
            assert_eq!(orphan_ids, ids, "pending tool calls in {:#?}", shown());
            assert!(
                orphans.iter().all(|(at, _)| Some(*at) == last_with_calls),
                "pending tool calls outside the last message with calls: {:#?}",
                shown()
            );
        }
        Pending::Deliberate => {
            for (at, call) in &orphans {
                assert_eq!(
                    Some(*at),
                    last_with_calls,
                    "tool-use {} without a result before the last message with calls: {:#?}",
                    call.id,
                    shown()
                );
                let stopped =
                    memory[*at].generate_reason() == Some(GenerateReason::ReasoningStopRequested);
                assert!(
                    stopped || SUSPENDING_TOOLS.contains(&call.name.as_str()),
                    "tool-use {} ({}) left without a result by neither a stop nor a suspension: {:#?}",
                    call.id,
                    call.name,
                    shown()
                );
            }
            if let Some(at) = last_with_calls
                && !orphans.is_empty()
            {
                assert!(
                    memory[at + 1..].iter().all(|m| m.role == Role::Tool),
                    "only tool results may follow calls left pending: {:#?}",
                    shown()
                );
            }
        }
    }
}

/// The ids of the tool calls of the last message with calls that have no result.
pub(crate) fn pending_ids(memory: &[Msg]) -> Vec<String> {
    let Some(at) = memory.iter().rposition(Msg::has_tool_uses) else {
        return Vec::new();
    };
    let answered = |id: &str| {
        memory[at + 1..]
            .iter()
            .flat_map(|m| m.tool_results())
            .any(|r| r.id == id)
    };
    memory[at]
        .tool_uses()
        .into_iter()
        .map(|c| c.id.to_string())
        .filter(|id| !answered(id))
        .collect()
}

/// (a) in full: an immediate follow-up call succeeds and every recorder sees it begin and
/// end with PostCall. With calls left pending on purpose, the follow-up resumes them (no
/// input); otherwise it sends "follow-up". The model answers "follow-up ok" (its script is
/// replaced, so nothing a failed call left over is played). Then the invariants again.
pub(crate) async fn assert_follow_up_call(
    agent: &ReActAgent,
    model: &SwapModel,
    recorders: &[&RecordingHook],
) {
    let pending = pending_ids(&agent.memory().messages());
    model.set_script([ScriptedResponse::text("follow-up ok")]);
    let before: Vec<usize> = recorders
        .iter()
        .map(|r| endings_for(r, agent).len())
        .collect();
    let result = if pending.is_empty() {
        agent.call("follow-up").await
    } else {
        agent.call(()).await
    };
    let reply = match result {
        Ok(reply) => reply,
        Err(err) => panic!("the follow-up call failed: {err:?}"),
    };
    if pending.is_empty() {
        assert_eq!(reply.text(), "follow-up ok");
        assert_eq!(reply.generate_reason(), Some(GenerateReason::ModelStop));
    }
    for (rec, before) in recorders.iter().zip(before) {
        let endings = endings_for(rec, agent);
        assert_eq!(endings.len(), before + 1, "{}", Hook::name(*rec));
        assert_eq!(
            endings.last(),
            Some(&Ending::PostCall),
            "{}",
            Hook::name(*rec)
        );
    }
    assert_accepts_a_call_at_once(agent);
    assert_memory_well_formed(&agent.memory().messages(), Pending::Deliberate);
}

/// Every tool-use in `memory` has a tool result after it.
pub(crate) fn assert_no_orphan_tool_use(memory: &[Msg]) {
    for (at, msg) in memory.iter().enumerate() {
        for call in msg.tool_uses() {
            assert!(
                memory[at + 1..]
                    .iter()
                    .flat_map(|m| m.tool_results())
                    .any(|r| r.id == call.id),
                "orphan tool-use {} in {memory:#?}",
                call.id
            );
        }
    }
}
