//! The Okapi BM25 index behind [`InMemoryKnowledge`](super::InMemoryKnowledge) and the
//! in-memory long-term memory, and its tokenizer.

use std::collections::HashMap;

/// The BM25 `k1` parameter used by default (term-frequency saturation).
pub const DEFAULT_BM25_K1: f64 = 1.2;
/// The BM25 `b` parameter used by default (document-length normalisation).
pub const DEFAULT_BM25_B: f64 = 0.75;

/// Splits `text` into lowercase alphanumeric tokens (see [`InMemoryKnowledge`]).
pub(crate) fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|token| !token.is_empty())
        .map(str::to_lowercase)
}

/// A BM25 index over texts identified by their position (0, 1, ...).
#[derive(Debug, Clone)]
pub(crate) struct Bm25 {
    k1: f64,
    b: f64,
    /// The term frequencies of each text.
    texts: Vec<HashMap<String, u32>>,
    /// The token count of each text.
    lengths: Vec<usize>,
    total_length: usize,
    /// For each term, the positions of the texts holding it.
    postings: HashMap<String, Vec<usize>>,
}

impl Default for Bm25 {
    fn default() -> Self {
        Self {
            k1: DEFAULT_BM25_K1,
            b: DEFAULT_BM25_B,
            texts: Vec::new(),
            lengths: Vec::new(),
            total_length: 0,
            postings: HashMap::new(),
        }
    }
}

impl Bm25 {
    pub(crate) fn set_params(&mut self, k1: f64, b: f64) {
        if !k1.is_nan() {
            self.k1 = k1.max(0.0);
        }
        if !b.is_nan() {
            self.b = b.clamp(0.0, 1.0);
        }
    }

    /// Indexes `text` at the next position and returns that position.
    pub(crate) fn push(&mut self, text: &str) -> usize {
        let position = self.texts.len();
        self.texts.push(HashMap::new());
        self.lengths.push(0);
        self.index(position, text);
        position
    }

    /// Re-indexes the text at `position` (an unknown position is ignored).
    pub(crate) fn replace(&mut self, position: usize, text: &str) {
        let Some(old) = self.texts.get_mut(position).map(std::mem::take) else {
            return;
        };
        for term in old.keys() {
            if let Some(list) = self.postings.get_mut(term) {
                list.retain(|&p| p != position);
                if list.is_empty() {
                    self.postings.remove(term);
                }
            }
        }
        self.total_length -= self.lengths[position];
        self.lengths[position] = 0;
        self.index(position, text);
    }

    fn index(&mut self, position: usize, text: &str) {
        let mut term_freqs: HashMap<String, u32> = HashMap::new();
        let mut length = 0;
        for token in tokenize(text) {
            *term_freqs.entry(token).or_default() += 1;
            length += 1;
        }
        for term in term_freqs.keys() {
            self.postings
                .entry(term.clone())
                .or_default()
                .push(position);
        }
        self.texts[position] = term_freqs;
        self.lengths[position] = length;
        self.total_length += length;
    }

    /// The at most `k` best `(position, score)` pairs for `query`, best first; ties by
    /// position. Only texts sharing a term with the query are returned.
    pub(crate) fn search(&self, query: &str, k: usize) -> Vec<(usize, f64)> {
        let count = self.texts.len();
        if k == 0 || count == 0 || self.total_length == 0 {
            return Vec::new();
        }
        let average_length = self.total_length as f64 / count as f64;
        let mut terms: Vec<String> = Vec::new();
        for token in tokenize(query) {
            if !terms.contains(&token) {
                terms.push(token);
            }
        }
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for term in &terms {
            let Some(positions) = self.postings.get(term) else {
                continue;
            };
            let holding = positions.len() as f64;
            let idf = (1.0 + (count as f64 - holding + 0.5) / (holding + 0.5)).ln();
            for &position in positions {
                let tf = f64::from(self.texts[position].get(term).copied().unwrap_or(0));
                let length = self.lengths[position] as f64;
                let norm = self.k1 * (1.0 - self.b + self.b * length / average_length);
                *scores.entry(position).or_default() += idf * tf * (self.k1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().filter(|&(_, s)| s > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(k);
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_lowercases_and_splits_on_non_alphanumerics() {
        let tokens: Vec<String> = tokenize("Rust's B-tree, 2024!  Ünïcode").collect();
        assert_eq!(tokens, ["rust", "s", "b", "tree", "2024", "ünïcode"]);
    }
}
