//! [`CountCache`]: the tokens of each message, counted once. Tokenizing a long conversation
//! at every step would cost more than everything else the context hook does.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, PoisonError};

use agentscope_core::{ContentBlock, Msg, SharedString};

use super::hash::WordHash;
use super::tokens::TokenCounter;

/// Token counts by message id, with the shape of the message counted (and the counter), so a
/// message edited since, or counted by another counter, is counted again.
#[derive(Default)]
pub(super) struct CountCache {
    entries: Mutex<HashMap<SharedString, (u64, usize), BuildHasherDefault<WordHash>>>,
}

impl CountCache {
    /// The tokens of each message, from the cache when the message was counted before with
    /// the counter `counter_key` stands for.
    pub(super) fn count(
        &self,
        msgs: &[Msg],
        counter: &dyn TokenCounter,
        counter_key: u64,
    ) -> Vec<usize> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        // Kept bounded: cleared when it holds far more messages than one input.
        if entries.len() > msgs.len().saturating_mul(4).max(4_096) {
            entries.clear();
        }
        msgs.iter()
            .map(|message| {
                let key = shape(message) ^ counter_key;
                match entries.get(&message.id) {
                    Some(&(known, tokens)) if known == key => tokens,
                    _ => {
                        let tokens = counter.count_message(message);
                        entries.insert(message.id.clone(), (key, tokens));
                        tokens
                    }
                }
            })
            .collect()
    }
}

/// A cheap fingerprint of what a message's count depends on: role, block kinds and lengths.
fn shape(message: &Msg) -> u64 {
    let mut hash = WordHash::default();
    let word = |kind: u64, a: usize, b: usize| kind << 56 ^ (a as u64) << 24 ^ b as u64;
    hash.mix(message.role as u64);
    for block in message.content.iter() {
        match block {
            ContentBlock::Text(text) => hash.mix(word(1, text.text.len(), 0)),
            ContentBlock::Thinking(thinking) => hash.mix(word(2, thinking.thinking.len(), 0)),
            ContentBlock::ToolUse(call) => {
                let raw = call.raw_input.as_ref().map_or(0, |raw| raw.len() + 1);
                // The arguments' top level: enough to notice an edit, and no serialisation.
                let arguments = call.input.as_object().map_or(0, |map| map.len() + 1);
                hash.mix(word(3, call.name.len(), raw));
                hash.mix(arguments as u64);
            }
            ContentBlock::ToolResult(result) => {
                hash.mix(word(4, result.name.len(), result.output.len()));
                for output in &result.output {
                    hash.mix(output.as_text().map_or(u64::MAX, |text| text.len() as u64));
                }
            }
            _ => hash.mix(5 << 56),
        }
    }
    hash.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_change_with_content() {
        let a = Msg::user("abc");
        let mut b = a.clone();
        assert_eq!(shape(&a), shape(&b));
        b.content.push(ContentBlock::text("d"));
        assert_ne!(shape(&a), shape(&b));
    }
}
