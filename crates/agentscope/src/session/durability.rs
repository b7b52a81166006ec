//! [`Durability`]: when a session-bound call's saves are written.

use agentscope_core::HookChain;

use crate::hooks::ToolApprovalHook;

/// When a call of an agent bound to a session writes its saves
/// ([`ReActAgentBuilder::durability`](crate::ReActAgentBuilder::durability)).
///
/// A call changes the session at every step: the reasoning message with the tool calls it
/// starts, the calls it records as running before they start, each tool result, the answer.
/// The modes differ in when those changes reach the store, and so in what a killed process
/// leaves behind. In every mode a call that returns `Ok` has all of its changes stored, a
/// failed save fails the call, and saves are compare-and-swap (a concurrent writer's save is
/// a [`SessionError::Conflict`](crate::session::SessionError::Conflict)).
///
/// | mode | the call waits for | a killed process leaves |
/// |---|---|---|
/// | [`Step`](Self::Step) | every save, as it is made | the session as of its last step |
/// | [`Async`](Self::Async) | a decision a hook stored at PreCall (an approval), the "started" record of a tool that is not idempotent, and its last save | the saves written so far: at least up to the decisions and the start of the last tool that is not idempotent |
/// | [`Exit`](Self::Exit) | one save, at the end | the session as of the previous call |
///
/// With a [`ToolApprovalHook`](crate::hooks::ToolApprovalHook), `Step` and `Async` keep its
/// promise (an approved tool runs at most once; a stored decision is never asked for
/// again); `Exit` cannot, and is refused.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope::session::Durability;
/// use agentscope_test::ScriptedModel;
///
/// let store = JsonFileSessionStore::new(std::env::temp_dir().join("my-app-sessions"));
/// let agent = ReActAgent::builder()
///     .model(ScriptedModel::new([]))
///     .session(store, "user-42")
///     .durability(Durability::Async)
///     .build()?;
/// # let _ = agent;
/// # Ok::<(), BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Durability {
    /// Every save is written before the call goes on (the default): a consumer that stops
    /// reading the stream after an event finds that event's effects stored, and a process
    /// killed at any instant leaves the session as of its last step.
    #[default]
    Step,
    /// Saves are written in order while the call goes on working (the model streams, tools
    /// run); the call waits for them only where it must: after PreCall when a hook stored a
    /// decision there (an approval: a crash after it never asks for it again), before a tool
    /// that is not idempotent starts (until its "started" record is stored, so a crash finds it in
    /// doubt rather than running it twice; a tool whose
    /// [`in_doubt`](agentscope_core::Tool::in_doubt) policy is
    /// [`RunAgain`](agentscope_core::InDoubt::RunAgain) does not wait), and before it
    /// returns. Saves that queue up while one is written are written together, as one
    /// change. What a process killed mid-call leaves can lag behind what its stream showed.
    Async,
    /// One save when the call ends, however it ends: the cheapest, and the call's steps are
    /// all-or-nothing. **Gives up at-most-once across a crash**: a process killed mid-call
    /// leaves the session as the previous call left it, with no record that a tool started,
    /// so running the call again runs its tools again. For agents whose tools are all safe
    /// to repeat (lookups, idempotent writes).
    ///
    /// Not with a [`ToolApprovalHook`](crate::hooks::ToolApprovalHook): its promise, that an
    /// approved tool runs at most once, needs the decision and the "started" record stored
    /// before the tool runs, which `Exit` does not do (a crash would ask again and run the
    /// tool twice). The build fails with such a hook, and a call fails at its start when one
    /// was added afterwards ([`ReActAgent::add_hook`](crate::ReActAgent::add_hook)); use
    /// [`Step`](Self::Step) or [`Async`](Self::Async).
    Exit,
}

/// Why an agent whose session uses `durability` cannot run with `hooks`, if it cannot: an
/// approval hook under [`Durability::Exit`] (see there). The build and every call check it.
pub(crate) fn refuses(durability: Durability, hooks: &HookChain) -> Option<String> {
    if durability != Durability::Exit || hooks.of_type::<ToolApprovalHook>().next().is_none() {
        return None;
    }
    Some(
        "durability(Exit) cannot keep a ToolApprovalHook's promise that an approved tool runs \
         at most once: Exit stores neither the decision nor the record that the tool started \
         until the call ends, so a crash while the tool runs would ask for the approval again \
         and run the tool twice. Use Durability::Step or Durability::Async with approvals"
            .to_owned(),
    )
}
