//! [`WordHash`]: the fixed hash behind the context hook's fingerprints (of an input sent, of
//! a message's shape, of a counter), stable across processes, platforms and versions so a
//! fingerprint can be stored with a session.

use std::hash::Hasher;

/// `bytes` hashed with [`WordHash`].
pub(super) fn word_hash(bytes: &[u8]) -> u64 {
    let mut hash = WordHash::default();
    hash.write(bytes);
    hash.finish()
}

/// A fast hash, eight bytes at a time, with a fixed algorithm (so fingerprints stay the same
/// across processes, platforms and versions, and can be stored with a session): each word is
/// mixed in the way of rustc's FxHash, and the result is finished with MurmurHash3's mixer.
#[derive(Clone, Copy)]
pub(super) struct WordHash(u64);

impl WordHash {
    pub(super) fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Default for WordHash {
    fn default() -> Self {
        WordHash(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        let mut hash = self.0;
        hash ^= hash >> 33;
        hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
        hash ^= hash >> 33;
        hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        hash ^ (hash >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        let mut word = [0u8; 8];
        for chunk in &mut chunks {
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        self.mix(u64::from_le_bytes(word) ^ ((bytes.len() as u64) << 56));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_hashes_are_fixed_and_see_length() {
        // A fixed value: the same in every process, on every platform.
        assert_eq!(word_hash(b"a"), 0x6fb1_58b7_7044_205f);
        assert_ne!(word_hash(b"a"), word_hash(b"a\0"));
        assert_ne!(word_hash(b"abcdefgh"), word_hash(b"abcdefg"));
    }
}
