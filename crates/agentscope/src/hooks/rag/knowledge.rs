//! The [`Knowledge`] seam and [`InMemoryKnowledge`], a BM25-ranked implementation.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};

use agentscope_core::ErrorSource;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::bm25::Bm25;

/// A piece of knowledge: an id, its text, and free-form metadata.
///
/// ```
/// use agentscope::hooks::Document;
///
/// let doc = Document::new("faq-1", "Opening hours are 9 to 5.").with_metadata("source", "faq.md");
/// assert_eq!(doc.metadata["source"], "faq.md");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct ScoredDocument {
    /// The document.
    pub document: Document,
    /// Its relevance to the query.
    pub score: f64,
}

impl ScoredDocument {
    /// `document` with its relevance `score` to a query.
    pub fn new(document: Document, score: f64) -> Self {
        Self { document, score }
    }
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
            source: Some(ErrorSource::new(source)),
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
///         let hit = ScoredDocument::new(Document::new("motd", "Be kind."), 1.0);
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
pub(super) trait DynKnowledge: Send + Sync + 'static {
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

    /// Sets the BM25 parameters (defaults [`DEFAULT_BM25_K1`](super::DEFAULT_BM25_K1) and [`DEFAULT_BM25_B`](super::DEFAULT_BM25_B)). `k1`
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
}
