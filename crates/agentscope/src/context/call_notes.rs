//! What a [`ContextWindowHook`](super::ContextWindowHook) remembers within one call, in the
//! call's extensions: the model of its reasoning steps and the size of the input it sent.

use agentscope_core::Extensions;

/// The notes of one hook instance in one call.
#[derive(Default)]
pub(super) struct Notes {
    /// The model of the call's reasoning steps (PreSummary does not name it).
    pub(super) model: Option<String>,
    /// The tokens of the input last sent: the size a refusal refers to.
    pub(super) sent_tokens: Option<usize>,
}

/// The notes of every hook instance in the call, by instance: the call's extensions hold
/// one value per type, and an agent may have two context hooks.
#[derive(Default)]
struct CallNotes(Vec<(u64, Notes)>);

/// The notes of the hook `instance` in the call whose extensions these are.
pub(super) fn notes(extensions: &mut Extensions, instance: u64) -> &mut Notes {
    let entries = &mut extensions.get_or_insert_with(CallNotes::default).0;
    let at = match entries.iter().position(|(id, _)| *id == instance) {
        Some(at) => at,
        None => {
            entries.push((instance, Notes::default()));
            entries.len() - 1
        }
    };
    &mut entries[at].1
}
