//! [`InDoubt`]: what happens to a tool call found started but never finished, and the
//! idempotency key that lets a tool make running it twice harmless.

/// What the agent does with a call of a tool that is **in doubt**: the session records that
/// it started, but its result was never stored (the process was killed mid-tool, the call
/// was dropped, the stream disconnected). Its effects may or may not have happened.
///
/// A tool declares its policy with [`Tool::in_doubt`](crate::Tool::in_doubt); a tool that
/// declares none gets the one a hook chose at PreCall
/// ([`PreCallEvent::set_in_doubt`](crate::PreCallEvent::set_in_doubt): the
/// `ToolApprovalHook` chooses [`Stop`](Self::Stop) for the calls its policy guards), else
/// [`Tell`](Self::Tell). The caller can always run one call again with the same
/// [idempotency key](crate::ToolContext::idempotency_key) (`CallInput::retry` in the
/// `agentscope` crate). A call whose result was stored is never in doubt and never runs
/// again.
///
/// ```
/// use agentscope_core::InDoubt;
///
/// // A payment must be reconciled by the application, a lookup can simply run again.
/// let payment = InDoubt::Stop;
/// let lookup = InDoubt::RunAgain;
/// assert_ne!(payment, lookup);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InDoubt {
    /// Tell the model: the call is not run again, and its result is an error saying the
    /// call was interrupted while running and may or may not have had its effects.
    Tell,
    /// Stop the agent: the call ends with
    /// [`GenerateReason::ToolInDoubt`](crate::GenerateReason::ToolInDoubt), its reply lists
    /// the calls in doubt, and they stay pending (nothing of their batch runs). The
    /// application resolves each: with a result it verified (resume with
    /// [`Msg::tool_result`](crate::Msg::tool_result)), or by running it again with the same
    /// idempotency key. New input that moves on (a user message) tells the model instead.
    Stop,
    /// Run the call again: the tool is idempotent (a lookup, an upsert keyed by the call),
    /// or it passes its [idempotency key](crate::ToolContext::idempotency_key) to a service
    /// that deduplicates by it.
    RunAgain,
}

/// The namespace of idempotency keys (a fixed UUID: keys are UUID v5 names in it).
const KEY_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6a2c_9e4b_1f3d_4c8a_9b7e_5d0f_2a61_c3e8);

/// The idempotency key of tool call `call_id` in conversation `scope` (a session id, or the
/// agent's id for an agent without a session): a UUID v5, the same in every process and
/// for every retry of the call, different for every other call.
pub(crate) fn idempotency_key(scope: &str, call_id: &str) -> String {
    let mut name = Vec::with_capacity(scope.len() + 1 + call_id.len());
    name.extend_from_slice(scope.as_bytes());
    // A separator no session id or call id holds: ("a", "bc") and ("ab", "c") differ.
    name.push(0);
    name.extend_from_slice(call_id.as_bytes());
    uuid::Uuid::new_v5(&KEY_NAMESPACE, &name)
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::idempotency_key;

    #[test]
    fn a_key_depends_on_the_conversation_and_the_call_and_on_nothing_else() {
        let key = idempotency_key("chat-1", "call_7");
        // Stable across processes and versions: a key stored by a service must keep
        // matching (checked against Python's uuid.uuid5 with the same namespace and name).
        assert_eq!(key, "21dcd536-d118-5518-af9e-178ec738d403");
        assert_ne!(key, idempotency_key("chat-2", "call_7"));
        assert_ne!(key, idempotency_key("chat-1", "call_8"));
        assert_ne!(idempotency_key("a", "bc"), idempotency_key("ab", "c"));
    }
}
