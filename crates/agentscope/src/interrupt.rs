//! The texts an interrupted call leaves in its conversation, for code that reads them back
//! (a UI that shows an interrupted call apart, a test that compares memories).
//!
//! [`ReActAgent::interrupt`](crate::ReActAgent::interrupt) stops a call: the call replies
//! [`INTERRUPT_REPLY`] and each tool call it leaves without a result gets
//! [`INTERRUPTED_RESULT`] (an error result). A tool call that started in an earlier call
//! that never stored its result (its process stopped, the call was dropped) and whose tool
//! is not idempotent is not run again: it gets [`INTERRUPTED_WHILE_RUNNING`].
//!
//! ```
//! use agentscope::interrupt::{INTERRUPT_REPLY, INTERRUPTED_RESULT};
//!
//! assert!(INTERRUPT_REPLY.contains("interrupted"));
//! assert!(INTERRUPTED_RESULT.starts_with("Error: "));
//! ```

/// The reply (the assistant's text) of an interrupted call.
pub const INTERRUPT_REPLY: &str = "I noticed that you have interrupted me. What can I do for you?";

/// The error result given to the tool calls an interrupt left without a result.
pub const INTERRUPTED_RESULT: &str = "Error: Tool execution was interrupted.";

/// The error result of a tool call whose tool started in an earlier call that never stored
/// its result (the process stopped, the call was dropped): the tool is not idempotent, so
/// it is not run again, and its effects may or may not have happened.
pub const INTERRUPTED_WHILE_RUNNING: &str = "Error: Tool execution was interrupted while \
     running (the agent stopped before its result was stored), so it was not run again; its \
     effects may or may not have happened.";
