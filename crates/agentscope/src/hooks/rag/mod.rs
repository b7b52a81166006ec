//! Knowledge / retrieval-augmented generation: the [`Knowledge`] seam with an in-memory BM25
//! implementation (`knowledge.rs`, ranked by the index in `bm25.rs`), and the hook that
//! appends what it retrieves to a call's system message ([`GenericRAGHook`], here).
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

mod bm25;
mod knowledge;

use std::fmt;
use std::sync::Arc;

use agentscope_core::{Hook, HookError, HookEvent, SharedString};

pub(crate) use bm25::Bm25;
pub use bm25::{DEFAULT_BM25_B, DEFAULT_BM25_K1};
use knowledge::DynKnowledge;
pub use knowledge::{Document, InMemoryKnowledge, Knowledge, KnowledgeError, ScoredDocument};

use super::retrieval::Retrieval;

/// The text before the retrieved documents (see [`GenericRAGHook::with_header`]).
pub const DEFAULT_RAG_HEADER: &str = "## Retrieved knowledge\n\
Documents retrieved from the knowledge base for the user's latest message, most relevant \
first. Use them when they help to answer; cite a document by its [id].";

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
    retrieval: Retrieval,
    min_score: Option<f64>,
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
            retrieval: Retrieval::new(Self::DEFAULT_TOP_K, DEFAULT_RAG_HEADER),
            min_score: None,
            fail_on_error: false,
        }
    }

    /// How many documents to retrieve at most (default 3; 0 disables retrieval).
    #[must_use]
    pub fn with_top_k(mut self, k: usize) -> Self {
        self.retrieval.top_k = k;
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
        self.retrieval.header = header.into();
        self
    }

    /// Whether a knowledge-base error fails the call (default `false`: it is logged and the
    /// call goes on without knowledge).
    #[must_use]
    pub fn with_fail_on_error(mut self, fail: bool) -> Self {
        self.fail_on_error = fail;
        self
    }
}

impl fmt::Debug for GenericRAGHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericRAGHook")
            .field("top_k", &self.retrieval.top_k)
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
        let Some(query) = self.retrieval.query(event) else {
            return Ok(());
        };
        let hits = match self
            .knowledge
            .retrieve_boxed(&query, self.retrieval.top_k)
            .await
        {
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
        let hits = hits
            .into_iter()
            .filter(|hit| self.min_score.is_none_or(|min| hit.score >= min));
        self.retrieval.append(event, hits, |text, hit| {
            text.push_str(&format!("\n\n[{}] {}", hit.document.id, hit.document.text));
        });
        Ok(())
    }

    builtin_hook_meta!(PreCall);
}
