//! Knowledge / retrieval-augmented generation.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 50 | PreCall | appends the documents retrieved for the last user message of the new input to this call's system message; never stored in memory |
//!
//! [`GenericRAGHook`] queries a [`Knowledge`] base with the text of the last user message of
//! the call's new input and appends the hits to the system message of this call, so every
//! reasoning step of the call sees them. Nothing is stored: the next call retrieves again
//! for its own input, and memory holds only the conversation. A call without a user message
//! with text (a resume, tool results) retrieves nothing.
//!
//! [`InMemoryKnowledge`] ranks documents with BM25 (see its docs for the exact formula and
//! tokenizer).
//!
//! ```
//! use agentscope::hooks::{Document, GenericRAGHook, InMemoryKnowledge};
//!
//! let knowledge = InMemoryKnowledge::new().with_documents(vec![
//!     Document::new("returns", "Items can be returned within 30 days with the receipt."),
//!     Document::new("shipping", "Orders ship within two business days."),
//! ]);
//! let rag = GenericRAGHook::new(knowledge).with_top_k(2).with_min_score(0.1);
//! // ReActAgent::builder().hook(rag)...
//! # let _ = rag;
//! ```

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};

use agentscope_core::{
    ErrorSource, Hook, HookError, HookEvent, HookEventType, HookEventTypes, Msg, Role, SharedString,
};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The text before the retrieved documents (see [`GenericRAGHook::with_header`]).
pub const DEFAULT_RAG_HEADER: &str = "## Retrieved knowledge\n\
Documents retrieved from the knowledge base for the user's latest message, most relevant \
first. Use them when they help to answer; cite a document by its [id].";

/// A piece of knowledge: an id, its text, and free-form metadata.
///
/// ```
/// use agentscope::hooks::Document;
///
/// let doc = Document::new("faq-1", "Opening hours are 9 to 5.").with_metadata("source", "faq.md");
/// assert_eq!(doc.metadata["source"], "faq.md");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Identifies the document (adding a document with the same id replaces it in
    /// [`InMemoryKnowledge`]).
    pub id: String,
    /// The text that is searched and shown to the model.
    pub text: String,
    /// Anything else (source, title, ...); not searched.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl Document {
    /// A document without metadata.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            text: text.into(),
            metadata: Map::new(),
        }
    }

    /// Adds a metadata entry.
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

/// A retrieved document and its relevance score (higher is more relevant; the scale depends
/// on the [`Knowledge`] implementation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredDocument {
    /// The document.
    pub document: Document,
    /// Its relevance to the query.
    pub score: f64,
}

/// A knowledge base failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum KnowledgeError {
    /// The operation failed.
    #[error("{message}")]
    Failed {
        /// What went wrong.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<ErrorSource>,
    },
}

impl KnowledgeError {
    /// A failure with a message.
    pub fn msg(message: impl fmt::Display) -> Self {
        KnowledgeError::Failed {
            message: message.to_string(),
            source: None,
        }
    }

    /// A failure caused by another error (its message becomes this error's message).
    pub fn new(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        KnowledgeError::Failed {
            message: source.to_string(),
            source: Some(Arc::new(source)),
        }
    }
}

/// A searchable store of documents.
///
/// Implement it with `async fn` (a vector database client, a search service, ...); the
/// hook erases it once. `Arc<K>` is a `Knowledge` too, to share one base between hooks.
///
/// ```
/// use agentscope::hooks::{Document, Knowledge, KnowledgeError, ScoredDocument};
///
/// /// Always returns the same document.
/// struct Fixed;
///
/// impl Knowledge for Fixed {
///     async fn add_documents(&self, _documents: Vec<Document>) -> Result<(), KnowledgeError> {
///         Err(KnowledgeError::msg("read-only"))
///     }
///
///     async fn retrieve(&self, _query: &str, k: usize) -> Result<Vec<ScoredDocument>, KnowledgeError> {
///         let hit = ScoredDocument { document: Document::new("motd", "Be kind."), score: 1.0 };
///         Ok(std::iter::once(hit).take(k).collect())
///     }
/// }
/// ```
pub trait Knowledge: Send + Sync + 'static {
    /// Adds documents (an implementation may replace documents with the same id).
    fn add_documents(
        &self,
        documents: Vec<Document>,
    ) -> impl Future<Output = Result<(), KnowledgeError>> + Send;

    /// The at most `k` documents most relevant to `query`, most relevant first.
    fn retrieve(
        &self,
        query: &str,
        k: usize,
    ) -> impl Future<Output = Result<Vec<ScoredDocument>, KnowledgeError>> + Send;
}

impl<K: Knowledge> Knowledge for Arc<K> {
    fn add_documents(
        &self,
        documents: Vec<Document>,
    ) -> impl Future<Output = Result<(), KnowledgeError>> + Send {
        (**self).add_documents(documents)
    }

    fn retrieve(
        &self,
        query: &str,
        k: usize,
    ) -> impl Future<Output = Result<Vec<ScoredDocument>, KnowledgeError>> + Send {
        (**self).retrieve(query, k)
    }
}

/// The dyn-compatible twin of [`Knowledge`] (only retrieval is needed by the hook).
trait DynKnowledge: Send + Sync + 'static {
    fn retrieve_boxed<'a>(
        &'a self,
        query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<ScoredDocument>, KnowledgeError>>;
}

impl<K: Knowledge> DynKnowledge for K {
    fn retrieve_boxed<'a>(
        &'a self,
        query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<ScoredDocument>, KnowledgeError>> {
        Box::pin(self.retrieve(query, k))
    }
}

/// The BM25 `k1` parameter used by default (term-frequency saturation).
pub const DEFAULT_BM25_K1: f64 = 1.2;
/// The BM25 `b` parameter used by default (document-length normalisation).
pub const DEFAULT_BM25_B: f64 = 0.75;

/// An in-memory [`Knowledge`] base ranked with Okapi BM25.
///
/// A cheap `Clone` handle: clones share the documents, so you can keep one to add documents
/// while a hook retrieves from another.
///
/// # Ranking
///
/// Text is tokenized by splitting on every character that is not alphanumeric (Unicode
/// `char::is_alphanumeric`) and lowercasing the pieces: `"Rust's B-tree"` gives `rust`, `s`,
/// `b`, `tree`. No stemming and no stop words. Repeated query terms count once. A document's
/// score for query terms `q` is
///
/// ```text
/// score(D) = Σ_q idf(q) · tf(q,D)·(k1+1) / (tf(q,D) + k1·(1 − b + b·|D|/avgdl))
/// idf(q)   = ln(1 + (N − n(q) + 0.5) / (n(q) + 0.5))
/// ```
///
/// with `N` documents, `n(q)` of them containing `q`, `|D|` the document's token count and
/// `avgdl` the average; `k1` = 1.2 and `b` = 0.75 unless set with
/// [`with_bm25`](Self::with_bm25). Documents sharing no term with the query are not
/// returned. Equal scores keep the order in which the documents were first added.
///
/// ```
/// use agentscope::hooks::{Document, InMemoryKnowledge, Knowledge};
///
/// let knowledge = InMemoryKnowledge::new().with_documents(vec![
///     Document::new("a", "The cat sat on the mat."),
///     Document::new("b", "Dogs chase cats."),
/// ]);
/// let hits = futures::executor::block_on(knowledge.retrieve("where did the cat sit", 5))?;
/// assert_eq!(hits.len(), 1);
/// assert_eq!(hits[0].document.id, "a");
/// # Ok::<(), agentscope::hooks::KnowledgeError>(())
/// ```
#[derive(Clone, Default)]
pub struct InMemoryKnowledge {
    inner: Arc<RwLock<KnowledgeIndex>>,
}

#[derive(Default)]
struct KnowledgeIndex {
    bm25: Bm25,
    documents: Vec<Document>,
    by_id: HashMap<String, usize>,
}

impl InMemoryKnowledge {
    /// An empty knowledge base.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds documents at once (no `.await`); a document whose id is already present replaces
    /// the old one, keeping its position for tie-breaking.
    #[must_use]
    pub fn with_documents(self, documents: Vec<Document>) -> Self {
        self.insert(documents);
        self
    }

    /// Sets the BM25 parameters (defaults [`DEFAULT_BM25_K1`] and [`DEFAULT_BM25_B`]). `k1`
    /// below 0 is taken as 0 and `b` is clamped to `0..=1`; a NaN keeps the default.
    #[must_use]
    pub fn with_bm25(self, k1: f64, b: f64) -> Self {
        self.write().bm25.set_params(k1, b);
        self
    }

    /// The number of documents.
    pub fn len(&self) -> usize {
        self.read().documents.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the documents, in the order they were first added.
    pub fn documents(&self) -> Vec<Document> {
        self.read().documents.clone()
    }

    /// Adds documents synchronously (what [`Knowledge::add_documents`] does).
    pub fn insert(&self, documents: Vec<Document>) {
        let mut index = self.write();
        for document in documents {
            match index.by_id.get(&document.id).copied() {
                Some(position) => {
                    index.bm25.replace(position, &document.text);
                    index.documents[position] = document;
                }
                None => {
                    let position = index.bm25.push(&document.text);
                    index.by_id.insert(document.id.clone(), position);
                    index.documents.push(document);
                }
            }
        }
    }

    /// Ranks the documents for `query` synchronously (what [`Knowledge::retrieve`] does).
    pub fn search(&self, query: &str, k: usize) -> Vec<ScoredDocument> {
        let index = self.read();
        index
            .bm25
            .search(query, k)
            .into_iter()
            .filter_map(|(position, score)| {
                let document = index.documents.get(position)?.clone();
                Some(ScoredDocument { document, score })
            })
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, KnowledgeIndex> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, KnowledgeIndex> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for InMemoryKnowledge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryKnowledge")
            .field("documents", &self.len())
            .finish()
    }
}

impl Knowledge for InMemoryKnowledge {
    async fn add_documents(&self, documents: Vec<Document>) -> Result<(), KnowledgeError> {
        self.insert(documents);
        Ok(())
    }

    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<ScoredDocument>, KnowledgeError> {
        Ok(self.search(query, k))
    }
}

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

/// The text of the last user message of `messages`, when it has any (not blank).
pub(crate) fn last_user_text(messages: &[Msg]) -> Option<String> {
    let text = messages.iter().rev().find(|m| m.role == Role::User)?.text();
    (!text.trim().is_empty()).then_some(text)
}

/// Adds knowledge retrieved for the last user message to the system message of each call.
///
/// Priority 50; handles PreCall only. What it appends belongs to this call's system message:
/// every reasoning step of the call sees it, memory never holds it, and the next call
/// retrieves again for its own input.
///
/// At PreCall it queries the knowledge base with the text of the last user message of the
/// new input, keeps the [`top_k`](Self::with_top_k) hits whose score reaches
/// [`min_score`](Self::with_min_score), and appends them to this call's system message as
///
/// ```text
/// <header>
///
/// [<id>] <text>
///
/// [<id>] <text>
/// ```
///
/// Nothing is appended when there is no query or no hit. A failing knowledge base is
/// logged (`tracing` warning) and the call goes on without knowledge, unless
/// [`with_fail_on_error`](Self::with_fail_on_error) is set.
///
/// ```
/// use agentscope::hooks::{Document, GenericRAGHook, InMemoryKnowledge};
/// use agentscope::Hook;
///
/// let rag = GenericRAGHook::new(InMemoryKnowledge::new()).with_top_k(5);
/// assert_eq!((rag.name(), rag.priority()), ("rag", 50));
/// ```
#[derive(Clone)]
pub struct GenericRAGHook {
    knowledge: Arc<dyn DynKnowledge>,
    top_k: usize,
    min_score: Option<f64>,
    header: SharedString,
    fail_on_error: bool,
}

impl GenericRAGHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order).
    pub const NAME: &'static str = "rag";
    /// The hook's priority.
    pub const PRIORITY: i32 = 50;

    /// The number of documents retrieved by default.
    pub const DEFAULT_TOP_K: usize = 3;

    /// A hook retrieving from `knowledge`.
    pub fn new(knowledge: impl Knowledge) -> Self {
        Self {
            knowledge: Arc::new(knowledge),
            top_k: Self::DEFAULT_TOP_K,
            min_score: None,
            header: DEFAULT_RAG_HEADER.into(),
            fail_on_error: false,
        }
    }

    /// How many documents to retrieve at most (default 3; 0 disables retrieval).
    #[must_use]
    pub fn with_top_k(mut self, k: usize) -> Self {
        self.top_k = k;
        self
    }

    /// Drops hits scoring below `score` (default: keep every hit).
    #[must_use]
    pub fn with_min_score(mut self, score: f64) -> Self {
        self.min_score = Some(score);
        self
    }

    /// Replaces the text before the documents (default [`DEFAULT_RAG_HEADER`]).
    #[must_use]
    pub fn with_header(mut self, header: impl Into<SharedString>) -> Self {
        self.header = header.into();
        self
    }

    /// Whether a knowledge-base error fails the call (default `false`: it is logged and the
    /// call goes on without knowledge).
    #[must_use]
    pub fn with_fail_on_error(mut self, fail: bool) -> Self {
        self.fail_on_error = fail;
        self
    }

    /// The text appended for `hits` (empty hits give `None`).
    fn render(&self, hits: &[ScoredDocument]) -> Option<String> {
        if hits.is_empty() {
            return None;
        }
        let mut text = self.header.to_string();
        for hit in hits {
            text.push_str(&format!("\n\n[{}] {}", hit.document.id, hit.document.text));
        }
        Some(text)
    }
}

impl fmt::Debug for GenericRAGHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericRAGHook")
            .field("top_k", &self.top_k)
            .field("min_score", &self.min_score)
            .field("fail_on_error", &self.fail_on_error)
            .finish_non_exhaustive()
    }
}

impl Hook for GenericRAGHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        let HookEvent::PreCall(event) = event else {
            return Ok(());
        };
        if self.top_k == 0 {
            return Ok(());
        }
        let Some(query) = last_user_text(event.input_messages()) else {
            return Ok(());
        };
        let hits = match self.knowledge.retrieve_boxed(&query, self.top_k).await {
            Ok(hits) => hits,
            Err(error) if self.fail_on_error => return Err(HookError::new(error)),
            Err(error) => {
                tracing::warn!(
                    agent = event.agent().name(),
                    %error,
                    "knowledge retrieval failed; the call goes on without retrieved knowledge"
                );
                return Ok(());
            }
        };
        let hits: Vec<ScoredDocument> = hits
            .into_iter()
            .filter(|hit| self.min_score.is_none_or(|min| hit.score >= min))
            .take(self.top_k)
            .collect();
        if let Some(text) = self.render(&hits) {
            event.append_system_content(text);
        }
        Ok(())
    }

    fn priority(&self) -> i32 {
        Self::PRIORITY
    }

    fn interests(&self) -> HookEventTypes {
        HookEventType::PreCall.into()
    }

    fn name(&self) -> &str {
        Self::NAME
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn corpus() -> InMemoryKnowledge {
        InMemoryKnowledge::new().with_documents(vec![
            Document::new("d0", "The cat sat"),
            Document::new("d1", "the dog sat on THE mat"),
            Document::new("d2", "cats and dogs"),
        ])
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn tokenizer_lowercases_and_splits_on_non_alphanumerics() {
        let tokens: Vec<String> = tokenize("Rust's B-tree, 2024!  Ünïcode").collect();
        assert_eq!(tokens, ["rust", "s", "b", "tree", "2024", "ünïcode"]);
    }

    #[test]
    fn single_term_score_matches_hand_computation() {
        // N = 3, avgdl = 12 / 3 = 4, "cat" is in d0 only (|d0| = 3, tf = 1).
        // idf = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3)
        // tf part = 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3/4)) = 2.2 / 1.975
        let hits = corpus().search("cat", 10);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].document.id, "d0");
        assert!(
            close(hits[0].score, (8.0f64 / 3.0).ln() * 2.2 / 1.975),
            "{}",
            hits[0].score
        );
    }

    #[test]
    fn multi_term_ranking_matches_hand_computation() {
        // "the" and "sat" are each in 2 of 3 documents: idf = ln(1 + 1.5 / 2.5) = ln(1.6).
        // d0 (|d| = 3): both tf = 1 -> 2 * 2.2 / 1.975
        // d1 (|d| = 6, norm = 1.2 * (0.25 + 0.75 * 6/4) = 1.65): the tf = 2 -> 4.4 / 3.65,
        //    sat tf = 1 -> 2.2 / 2.65. "The" repeated in the query counts once.
        let hits = corpus().search("The sat the", 10);
        let ids: Vec<&str> = hits.iter().map(|h| h.document.id.as_str()).collect();
        assert_eq!(ids, ["d0", "d1"]);
        let idf = 1.6f64.ln();
        assert!(close(hits[0].score, idf * 2.0 * 2.2 / 1.975));
        assert!(close(hits[1].score, idf * (4.4 / 3.65 + 2.2 / 2.65)));
    }

    #[test]
    fn ties_keep_insertion_order_and_k_truncates() {
        let knowledge = InMemoryKnowledge::new().with_documents(vec![
            Document::new("z", "apple pie"),
            Document::new("a", "apple pie"),
            Document::new("m", "apple pie"),
        ]);
        let ids: Vec<String> = knowledge
            .search("apple", 2)
            .into_iter()
            .map(|h| h.document.id)
            .collect();
        assert_eq!(ids, ["z", "a"]);
        assert!(knowledge.search("apple", 0).is_empty());
        assert!(knowledge.search("!!!", 5).is_empty());
        assert!(InMemoryKnowledge::new().search("apple", 5).is_empty());
    }

    #[test]
    fn same_id_replaces_the_document_and_its_terms() {
        let knowledge = corpus();
        knowledge.insert(vec![Document::new("d0", "a parrot")]);
        assert_eq!(knowledge.len(), 3);
        assert!(knowledge.search("cat", 5).is_empty());
        let hits = knowledge.search("parrot", 5);
        assert_eq!(hits[0].document.text, "a parrot");
        // Same statistics as a fresh index of the same texts.
        let fresh = InMemoryKnowledge::new().with_documents(vec![
            Document::new("d0", "a parrot"),
            Document::new("d1", "the dog sat on THE mat"),
            Document::new("d2", "cats and dogs"),
        ]);
        assert_eq!(
            knowledge.search("the sat parrot", 5),
            fresh.search("the sat parrot", 5)
        );
    }

    #[test]
    fn bm25_parameters_change_the_length_normalisation() {
        // With b = 0 length does not matter: d0 and d1 both hold "sat" once.
        let knowledge = corpus().with_bm25(1.2, 0.0);
        let hits = knowledge.search("sat", 5);
        assert!(close(hits[0].score, hits[1].score));
        assert_eq!(hits[0].document.id, "d0");
    }

    #[test]
    fn last_user_text_skips_other_roles_and_blank_text() {
        let msgs = [Msg::user("first"), Msg::user("second"), Msg::assistant("x")];
        assert_eq!(last_user_text(&msgs).as_deref(), Some("second"));
        assert_eq!(last_user_text(&[Msg::user("  ")]), None);
        assert_eq!(last_user_text(&[]), None);
    }
}
