//! Plumbing: what agent engines, model clients and session stores share, and an application
//! never calls.
//!
//! The `agentscope` crate's engine is built on this module, and so are the model clients and
//! the session stores of the workspace. An application that builds agents, writes hooks,
//! tools and models, and picks a store needs none of it: it is public only because those
//! crates are separate (as `tower-service` is for `tower`, or `tracing-core` for `tracing`).
//! It follows the same versioning as the rest of the crate.
//!
//! - **Running hooks.** An engine makes one [`CallContext`] per call, builds each event
//!   with [`events`], runs it through the agent's [`HookChain`] with [`chain`] /
//!   [`chain_in_place`] (Pre*/Post* events, [`ChainedEvent`]) or [`notify`] (chunk events and
//!   the ErrorEvent), and takes the result back out with [`EventParts`]. The dispatch rules
//!   themselves are documented on [`Hook`](crate::Hook#dispatch-rules).
//! - **The conversation's rules** the engine enforces: [`conversation`].
//! - **Tool progress**: the channel between running tools and the engine
//!   ([`progress_channel`], [`attach_progress`]).
//! - **Messages' metadata keys** the engine and model clients write: [`GENERATE_REASON_KEY`],
//!   [`FINISH_REASON_KEY`] (read them with [`Msg::generate_reason`](crate::Msg::generate_reason)
//!   and [`Msg::finish_reason`](crate::Msg::finish_reason)).
//! - **Timestamps** as every stored or sent message writes them: [`rfc3339`].
//! - **Secrets** out of `Debug` output, logs and errors, the same way in every crate:
//!   [`redact`].

pub mod conversation;
pub mod events;
pub mod redact;
pub mod rfc3339;

use std::future::Future;

pub use crate::hook::{CallContext, ChainedEvent};
pub use crate::message::{FINISH_REASON_KEY, GENERATE_REASON_KEY};
pub use crate::tool::{ProgressReceiver, ProgressSender, ToolProgress, progress_channel};
pub use events::EventParts;

use crate::error::AgentError;
use crate::hook::{HookChain, HookEvent, InDoubtChoices};
use crate::tool::{InDoubt, ToolContext};

/// An error's message followed by its sources' (`a: b: c`), each cause left out when the
/// text before already holds it (a message that repeats its source's), for errors that
/// must stay one line (a `Display` built on another error, a log field).
///
/// ```
/// use agentscope_core::plumbing::error_chain;
///
/// let io = std::io::Error::other("connection reset");
/// let error = std::io::Error::new(std::io::ErrorKind::Other, io);
/// assert_eq!(error_chain(&error), "connection reset");
/// ```
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// The in-doubt policy a hook chose for tool call `id` at `call`'s PreCall
/// ([`PreCallEvent::set_in_doubt`](crate::PreCallEvent::set_in_doubt)), if any.
pub fn in_doubt_choice(call: &CallContext, id: &str) -> Option<InDoubt> {
    call.extensions()
        .get::<InDoubtChoices>()?
        .0
        .iter()
        .find(|(chosen, _)| chosen == id)
        .map(|(_, policy)| *policy)
}

/// Runs a chained event (Pre*/Post*) of `call` through the hooks of `hooks` interested in its
/// kind, in order, and gives the event back as the last hook left it.
///
/// While the hooks run, the event holds `call`'s [extensions](crate::Extensions) (moved in,
/// and back into `call` afterwards, also on failure), so hooks keep per-call state across
/// the call's events. `call` remembers which hooks received PostCall, and [`notify`] does not
/// send them the call's ErrorEvent. Build `event` from `call.info()`.
///
/// # Errors
///
/// The first hook `Err` (or panic) stops the chain and is returned as
/// [`AgentError::Hook`] naming the hook; a hook that replaced the event with one of another
/// kind fails the same way.
///
/// ```
/// use std::sync::Arc;
/// use agentscope_core::plumbing::{self, CallContext, EventParts, events};
/// use agentscope_core::{AgentInfo, HookChain, Msg, hook_fn, HookEvent};
///
/// # futures::executor::block_on(async {
/// let mut hooks = HookChain::new();
/// hooks.push(hook_fn(|event| {
///     if let HookEvent::PostCall(e) = event {
///         e.set_final_message(Msg::assistant("changed"));
///     }
///     Ok(())
/// }));
/// let mut call = CallContext::new(Arc::new(AgentInfo::new("assistant", "1")));
/// let event = events::post_call(call.info(), Msg::assistant("hi"));
/// let reply = plumbing::chain(&hooks, event, &mut call).await?.into_parts();
/// assert_eq!(reply.text(), "changed");
/// # Ok::<(), agentscope_core::AgentError>(())
/// # }).unwrap();
/// ```
#[inline]
pub fn chain<'a, E: ChainedEvent>(
    hooks: &'a HookChain,
    event: E,
    call: &'a mut CallContext,
) -> impl Future<Output = Result<E, AgentError>> + Send + 'a {
    hooks.chain(event, call)
}

/// [`chain`] for an event the caller holds as a [`HookEvent`]: the hooks work on it where it
/// is, and the caller takes it back with [`ChainedEvent::from_chained`]. An event is a few
/// hundred bytes and every move of it is a copy: an engine that builds the event in its own
/// frame and runs it here copies it about half as often as through `chain`.
///
/// A notification kind given here is run by the chained rule.
///
/// # Errors
///
/// As [`chain`].
#[inline]
pub fn chain_in_place<'a>(
    hooks: &'a HookChain,
    event: &'a mut HookEvent,
    call: &'a mut CallContext,
) -> impl Future<Output = Result<(), AgentError>> + Send + 'a {
    hooks.chain_in_place(event, call)
}

/// Delivers a notification (a chunk event or the call's ErrorEvent) of `call` to every hook
/// of `hooks` interested in it, in order, lending it `call`'s extensions like [`chain`]. A
/// hook's `Err` (or panic) is logged and affects neither the call nor the other hooks; hooks
/// that received the call's PostCall do not get its ErrorEvent.
///
/// The event is passed by reference (wrap it with `.into()`): chunk events are the hottest
/// events of a call, and a notification is not unwrapped afterwards, so the caller's frame
/// holds it and no future copies it. An event of a chained kind given here is delivered by
/// the same rule (every hook, failures logged); use [`chain`] for those.
#[inline]
pub fn notify<'a>(
    hooks: &'a HookChain,
    event: &'a mut HookEvent,
    call: &'a mut CallContext,
) -> impl Future<Output = ()> + Send + 'a {
    hooks.notify(event, call)
}

/// `context` with its progress chunks going to `sender` (see [`progress_channel`]).
#[must_use]
pub fn attach_progress(context: ToolContext, sender: ProgressSender) -> ToolContext {
    context.with_progress(sender)
}
