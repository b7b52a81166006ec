//! What a [`ContextWindowHook`](super::ContextWindowHook) remembers within one call: the
//! model of its reasoning steps and the size of the input it sent, kept in the call's
//! extensions as every built-in hook keeps its per-call state ([`call_state`]).

use agentscope_core::Extensions;

use crate::call_state::{self, InstanceId};

/// The notes of one hook instance in one call.
#[derive(Default)]
pub(super) struct Notes {
    /// The model of the call's reasoning steps (PreSummary does not name it).
    pub(super) model: Option<String>,
    /// The tokens of the input last sent: the size a refusal refers to.
    pub(super) sent_tokens: Option<usize>,
}

/// The notes of the hook `instance` in the call whose extensions these are.
pub(super) fn notes(extensions: &mut Extensions, instance: InstanceId) -> &mut Notes {
    call_state::get_or_default(extensions, instance)
}
