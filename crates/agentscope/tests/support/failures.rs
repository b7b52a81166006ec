//! How a call failed: which hook failed it, at which event, and with what; which conversation
//! rule it broke.

use agentscope::ConversationError;
use agentscope::prelude::*;

/// What hook `hook` returned when it failed the call at `event`. Panics unless `err` is an
/// [`AgentError::Hook`] of that hook at that event.
#[track_caller]
pub(crate) fn hook_error<'e>(
    err: &'e AgentError,
    hook: &str,
    event: HookEventType,
) -> &'e HookError {
    match err {
        AgentError::Hook {
            hook: failed,
            event: at,
            source,
        } => {
            assert_eq!(
                (failed.as_str(), *at),
                (hook, event),
                "the hook that failed the call, and the event: {err:?}"
            );
            source
        }
        other => panic!("expected hook '{hook}' to fail the call at {event}, got {other:?}"),
    }
}

/// `err` is hook `hook` failing the call at `event` with [`HookError::Failed`] (with or
/// without an underlying error) saying `message`.
#[track_caller]
pub(crate) fn assert_hook_failed(
    err: &AgentError,
    hook: &str,
    event: HookEventType,
    message: &str,
) {
    match hook_error(err, hook, event) {
        HookError::Failed { message: said, .. } => assert_eq!(said, message, "{err:?}"),
        other => panic!("expected hook '{hook}' to fail with {message:?}, got {other:?}"),
    }
}

/// `err` is hook `hook` panicking at `event` with the payload `message`.
#[track_caller]
pub(crate) fn assert_hook_panicked(
    err: &AgentError,
    hook: &str,
    event: HookEventType,
    message: &str,
) {
    match hook_error(err, hook, event) {
        HookError::Panicked { message: said } => assert_eq!(said, message, "{err:?}"),
        other => panic!("expected hook '{hook}' to panic with {message:?}, got {other:?}"),
    }
}

/// The conversation rule a failed call broke. Panics unless `err` is an
/// [`AgentError::Conversation`].
#[track_caller]
pub(crate) fn conversation_error(err: &AgentError) -> &ConversationError {
    let AgentError::Conversation(rule) = err else {
        panic!("expected a conversation error, got {err:?}");
    };
    rule
}

/// The ids of the pending tool calls that failed a call. Panics unless `err` is a
/// [`ConversationError::PendingToolCalls`].
#[track_caller]
pub(crate) fn pending_calls(err: &AgentError) -> &[String] {
    match conversation_error(err) {
        ConversationError::PendingToolCalls { ids } => ids,
        other => panic!("expected pending tool calls, got {other:?}"),
    }
}

/// The conversation rule a rejected `goto_reasoning` broke. Panics unless `error` is a
/// [`HookError::InvalidGoto`].
#[track_caller]
pub(crate) fn invalid_goto(error: &HookError) -> &ConversationError {
    match error {
        HookError::InvalidGoto(rule) => rule,
        other => panic!("expected an invalid goto, got {other:?}"),
    }
}
