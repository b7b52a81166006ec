//! [`Durability`]: when a session-bound call's saves are written.

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
/// | [`Async`](Self::Async) | the "started" record of a tool that is not idempotent, and its last save | the saves written so far: at least up to the start of the last tool that is not idempotent |
/// | [`Exit`](Self::Exit) | one save, at the end | the session as of the previous call |
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
    /// run); the call waits for them only where it must: before a tool that is not
    /// idempotent starts (until its "started" record is stored, so a crash finds it in
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
    Exit,
}
