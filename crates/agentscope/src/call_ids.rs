//! Tool call ids unique in their conversation. A tool call's idempotency key is made from
//! the conversation and the call id ([`ToolContext::idempotency_key`]), and some providers
//! repeat call ids (`"0"` on every turn), so two payments could share a key. As the model's
//! answer streams in, a call id used earlier in the conversation (or earlier in the same
//! answer) is replaced by a fresh one, before any hook, memory or the stream sees the
//! answer; the provider gets the new id back with the call's result. A call keeps the id it
//! was stored with, so a retry of a call in doubt has the key of its first attempt in any
//! process, and whoever computes a key from a stored call gets the one the tool got.
//!
//! [`ToolContext::idempotency_key`]: agentscope_core::ToolContext::idempotency_key

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use agentscope_core::{ChatResponse, ContentBlock, Msg, Role, SharedString, ToolUseBlock};

use crate::sync::lock;

/// The tool call ids of the conversation in an agent's memory, kept with the agent. Each
/// reasoning step brings it up to date from the copy of memory it makes for the model
/// anyway ([`sync`](Self::sync)), reading only the messages added since the step before:
/// a whole read happens once per agent, and when memory was rewritten (a session holding
/// another conversation, a memory cleared).
///
/// It keeps a 64-bit fingerprint of each id, not the id: two ids with one fingerprint only
/// make the second look used, and a used id is replaced, which is harmless.
#[derive(Default)]
pub(crate) struct ConversationCallIds {
    ids: HashSet<u64, BuildHasherDefault<Prehashed>>,
    /// How many of memory's first messages `ids` covers.
    read: usize,
    /// The id of the last of them, to notice a memory that was rewritten.
    last: Option<SharedString>,
}

impl ConversationCallIds {
    /// Reads what `memory` (the agent's memory, as a reasoning step copied it) gained since
    /// the last read: the messages after the last one read, or all of them when that one
    /// is no longer where it was.
    pub(crate) fn sync(&mut self, memory: &[Msg]) {
        let kept = self.read.checked_sub(1).and_then(|at| memory.get(at));
        let start = match (kept, &self.last) {
            (Some(message), Some(last)) if message.id == *last => self.read,
            _ => {
                self.ids.clear();
                0
            }
        };
        let Some(added) = memory.get(start..) else {
            return;
        };
        for message in added
            .iter()
            .filter(|message| message.role == Role::Assistant)
        {
            for block in message.content.iter() {
                if let ContentBlock::ToolUse(call) = block {
                    self.ids.insert(fingerprint(&call.id));
                }
            }
        }
        self.read = memory.len();
        if let Some(message) = memory.last()
            && self.last.as_ref() != Some(&message.id)
        {
            self.last = Some(message.id.clone());
        }
    }

    fn contains(&self, id: &str) -> bool {
        !self.ids.is_empty() && self.ids.contains(&fingerprint(id))
    }
}

/// A 64-bit fingerprint of a call id (FxHash's word step, then a final mix).
fn fingerprint(id: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut hash = id.len() as u64;
    let mut words = id.as_bytes().chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(bytes)).wrapping_mul(K);
    }
    let mut rest = [0; 8];
    rest[..words.remainder().len()].copy_from_slice(words.remainder());
    hash = (hash.rotate_left(5) ^ u64::from_le_bytes(rest)).wrapping_mul(K);
    hash ^= hash >> 29;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^ (hash >> 32)
}

/// The hasher of a set of fingerprints: they are hashes already.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// Makes the call ids of one streamed answer unique in its conversation (see the module
/// docs): [`apply`](Self::apply) to each chunk before it is accumulated.
pub(crate) struct UniqueCallIds<'a> {
    /// The conversation's ids, as the reasoning step that asked for this answer synced them.
    conversation: &'a Mutex<ConversationCallIds>,
    /// The provider's id of the call being streamed, and the id it was given: fragments
    /// that repeat the provider's id continue that call.
    current: Option<(SharedString, SharedString)>,
    /// The ids given to this answer's calls before the current one.
    earlier: Vec<SharedString>,
}

impl<'a> UniqueCallIds<'a> {
    pub(crate) fn new(conversation: &'a Mutex<ConversationCallIds>) -> Self {
        Self {
            conversation,
            current: None,
            earlier: Vec::new(),
        }
    }

    /// Gives the calls `chunk` starts their ids; a fragment that continues a call (no id, or
    /// the provider's id of the call being streamed) gets that call's. Costs a branch per
    /// block of a chunk that starts no call.
    #[inline]
    pub(crate) fn apply(&mut self, chunk: &mut ChatResponse) {
        for block in &mut chunk.content {
            if let ContentBlock::ToolUse(fragment) = block
                && !fragment.id.is_empty()
            {
                self.identify(fragment);
            }
        }
    }

    fn identify(&mut self, fragment: &mut ToolUseBlock) {
        if let Some((provided, given)) = &self.current
            && fragment.id == *provided
        {
            if fragment.id != *given {
                fragment.id = given.clone();
            }
            return;
        }
        let provided = fragment.id.clone();
        let used = self.earlier.contains(&provided)
            || self
                .current
                .as_ref()
                .is_some_and(|(_, given)| *given == provided)
            || lock(self.conversation).contains(&provided);
        if used {
            fragment.id = format!("call_{}", uuid::Uuid::new_v4().simple()).into();
        }
        if let Some((_, given)) = self.current.take() {
            self.earlier.push(given);
        }
        self.current = Some((provided, fragment.id.clone()));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> Msg {
        Msg::new(
            Role::Assistant,
            "a",
            vec![ContentBlock::ToolUse(ToolUseBlock::new(
                id,
                "pay",
                json!({}),
            ))],
        )
    }

    fn has(index: &ConversationCallIds, ids: &[&str]) -> Vec<bool> {
        ids.iter().map(|id| index.contains(id)).collect()
    }

    #[test]
    fn the_index_reads_what_memory_gained_and_rereads_a_rewritten_memory() {
        let mut memory = vec![Msg::user("q"), call("a")];
        let mut index = ConversationCallIds::default();
        index.sync(&memory);
        assert_eq!(
            (has(&index, &["a", "b"]), index.read),
            (vec![true, false], 2)
        );
        memory.push(call("b"));
        index.sync(&memory);
        assert_eq!(
            (has(&index, &["a", "b"]), index.read),
            (vec![true, true], 3)
        );
        // Rewritten: another conversation of the same length forgets the old ids.
        let memory = vec![Msg::user("q"), call("c"), Msg::user("r")];
        index.sync(&memory);
        assert_eq!(
            (has(&index, &["a", "b", "c"]), index.read),
            (vec![false, false, true], 3)
        );
        // Shorter: read again.
        index.sync(&[]);
        assert_eq!((has(&index, &["c"]), index.read), (vec![false], 0));
        index.sync(&[call("d")]);
        assert_eq!(
            (has(&index, &["c", "d"]), index.read),
            (vec![false, true], 1)
        );
    }

    #[test]
    fn fingerprints_of_ids_differ() {
        let ids = [
            "0",
            "1",
            "00",
            "call_0",
            "call_1",
            "toolu_01A",
            "toolu_01B",
            "",
        ];
        let prints: HashSet<u64> = ids.iter().map(|id| fingerprint(id)).collect();
        assert_eq!(prints.len(), ids.len());
        // Every byte counts, past the first word too.
        assert_ne!(fingerprint("call_abcdefgh1"), fingerprint("call_abcdefgh2"));
        assert_ne!(fingerprint("abcdefgh"), fingerprint("abcdefgh\0"));
    }

    #[test]
    fn a_repeated_id_is_replaced_and_its_fragments_follow_it() {
        let conversation = Mutex::new(ConversationCallIds::default());
        lock(&conversation).sync(&[call("0")]);
        let mut unique = UniqueCallIds::new(&conversation);
        let fragment = |id: &str| {
            ChatResponse::new(vec![ContentBlock::ToolUse(ToolUseBlock::new(
                id,
                "pay",
                json!({}),
            ))])
        };
        let id_of = |chunk: &ChatResponse| match &chunk.content[0] {
            ContentBlock::ToolUse(call) => call.id.to_string(),
            _ => String::new(),
        };
        let mut first = fragment("0");
        unique.apply(&mut first);
        let given = id_of(&first);
        assert!(given.starts_with("call_"), "{given}");
        // The provider repeats its id on the call's next fragment; an empty id continues.
        let mut again = fragment("0");
        unique.apply(&mut again);
        assert_eq!(id_of(&again), given);
        let mut empty = fragment("");
        unique.apply(&mut empty);
        assert_eq!(id_of(&empty), "");
        // A new id is kept; the provider's "0" after it starts a third call, fresh again,
        // and "1" once more is a fourth, fresh too (used earlier in this answer).
        let mut other = fragment("1");
        unique.apply(&mut other);
        assert_eq!(id_of(&other), "1");
        let mut third = fragment("0");
        unique.apply(&mut third);
        assert!(id_of(&third).starts_with("call_"));
        assert_ne!(id_of(&third), given);
        let mut fourth = fragment("1");
        unique.apply(&mut fourth);
        assert!(id_of(&fourth).starts_with("call_"));
    }
}
