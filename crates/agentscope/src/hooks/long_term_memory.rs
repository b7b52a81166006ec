//! Long-term memory: remember across conversations.
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 50 | PreCall, PostCall | PreCall: appends memories retrieved for the last user message of the new input to this call's system message (never stored in the agent's memory); PostCall: records the call's input and final reply in the long-term memory. Failures are logged, never fail the call |
//!
//! The agent's [`Memory`](crate::Memory) holds one conversation; a [`LongTermMemory`]
//! outlives it (a user profile store, a vector database, ...). [`StaticLongTermMemoryHook`]
//! uses it "statically": the agent does not decide when to remember or recall, the hook does
//! both on every call. [`InMemoryLongTermMemory`] is a BM25-ranked implementation for tests
//! and small programs.
//!
//! ```
//! use agentscope::hooks::{InMemoryLongTermMemory, StaticLongTermMemoryHook};
//!
//! let memory = InMemoryLongTermMemory::new();
//! let hook = StaticLongTermMemoryHook::new(memory.clone()).with_top_k(3);
//! // ReActAgent::builder().hook(hook)...; later: memory.entries()
//! # let _ = hook;
//! ```

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};

use agentscope_core::{ErrorSource, Hook, HookError, HookEvent, Msg, Role, SharedString};
use futures::future::BoxFuture;

use super::rag::Bm25;
use super::retrieval::Retrieval;
use crate::call_state::{self, InstanceId};

/// The text before the retrieved memories (see [`StaticLongTermMemoryHook::with_header`]).
pub const DEFAULT_LONG_TERM_MEMORY_HEADER: &str = "## Long-term memory\n\
What you remember from earlier conversations that may be relevant to the user's latest \
message:";

/// A long-term memory failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LongTermMemoryError {
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

impl LongTermMemoryError {
    /// A failure with a message.
    pub fn msg(message: impl fmt::Display) -> Self {
        LongTermMemoryError::Failed {
            message: message.to_string(),
            source: None,
        }
    }

    /// A failure caused by another error (its message becomes this error's message).
    pub fn new(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        LongTermMemoryError::Failed {
            message: source.to_string(),
            source: Some(ErrorSource::new(source)),
        }
    }
}

/// Memory that outlives conversations: record messages, retrieve what is relevant later.
///
/// Implement it with `async fn`; the hook erases it once. `Arc<M>` is a `LongTermMemory`
/// too.
///
/// ```
/// use agentscope::hooks::{LongTermMemory, LongTermMemoryError};
/// use agentscope::Msg;
///
/// /// Forgets everything.
/// struct Amnesia;
///
/// impl LongTermMemory for Amnesia {
///     async fn record(&self, _messages: Vec<Msg>) -> Result<(), LongTermMemoryError> {
///         Ok(())
///     }
///
///     async fn retrieve(&self, _query: &str, _k: usize) -> Result<Vec<String>, LongTermMemoryError> {
///         Ok(Vec::new())
///     }
/// }
/// ```
pub trait LongTermMemory: Send + Sync + 'static {
    /// Remembers `messages` (an implementation decides what to keep of them).
    fn record(
        &self,
        messages: Vec<Msg>,
    ) -> impl Future<Output = Result<(), LongTermMemoryError>> + Send;

    /// The at most `k` memories most relevant to `query`, most relevant first, as text.
    fn retrieve(
        &self,
        query: &str,
        k: usize,
    ) -> impl Future<Output = Result<Vec<String>, LongTermMemoryError>> + Send;
}

impl<M: LongTermMemory> LongTermMemory for Arc<M> {
    fn record(
        &self,
        messages: Vec<Msg>,
    ) -> impl Future<Output = Result<(), LongTermMemoryError>> + Send {
        (**self).record(messages)
    }

    fn retrieve(
        &self,
        query: &str,
        k: usize,
    ) -> impl Future<Output = Result<Vec<String>, LongTermMemoryError>> + Send {
        (**self).retrieve(query, k)
    }
}

/// The dyn-compatible twin of [`LongTermMemory`].
trait DynLongTermMemory: Send + Sync + 'static {
    fn record_boxed(&self, messages: Vec<Msg>) -> BoxFuture<'_, Result<(), LongTermMemoryError>>;

    fn retrieve_boxed<'a>(
        &'a self,
        query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, LongTermMemoryError>>;
}

impl<M: LongTermMemory> DynLongTermMemory for M {
    fn record_boxed(&self, messages: Vec<Msg>) -> BoxFuture<'_, Result<(), LongTermMemoryError>> {
        Box::pin(self.record(messages))
    }

    fn retrieve_boxed<'a>(
        &'a self,
        query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, LongTermMemoryError>> {
        Box::pin(self.retrieve(query, k))
    }
}

/// An in-memory [`LongTermMemory`] ranked with BM25 (same tokenizer and formula as
/// [`InMemoryKnowledge`](super::InMemoryKnowledge)).
///
/// [`record`](LongTermMemory::record) keeps every user or assistant message that has text,
/// as one entry `"<role>: <text>"` (`"user: I live in Lyon"`); tool and system messages and
/// messages without text are skipped, and an entry identical to one already kept is not
/// added again. Only the text is indexed (the role prefix is not searchable). Retrieval
/// returns the entries sharing a term with the query, best first, ties in recording order.
///
/// A cheap `Clone` handle: clones share the entries.
///
/// ```
/// use agentscope::hooks::{InMemoryLongTermMemory, LongTermMemory};
/// use agentscope::Msg;
///
/// let memory = InMemoryLongTermMemory::new();
/// futures::executor::block_on(async {
///     memory.record(vec![Msg::user("I live in Lyon"), Msg::assistant("Noted!")]).await?;
///     let found = memory.retrieve("Where do I live?", 5).await?;
///     assert_eq!(found, ["user: I live in Lyon"]);
///     Ok::<(), agentscope::hooks::LongTermMemoryError>(())
/// })?;
/// # Ok::<(), agentscope::hooks::LongTermMemoryError>(())
/// ```
#[derive(Clone, Default)]
pub struct InMemoryLongTermMemory {
    inner: Arc<RwLock<MemoryIndex>>,
}

#[derive(Default)]
struct MemoryIndex {
    bm25: Bm25,
    entries: Vec<String>,
    seen: HashSet<String>,
}

impl InMemoryLongTermMemory {
    /// An empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// The kept entries, in recording order.
    pub fn entries(&self) -> Vec<String> {
        self.read().entries.clone()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.read().entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every entry.
    pub fn clear(&self) {
        *self.inner.write().unwrap_or_else(PoisonError::into_inner) = MemoryIndex::default();
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, MemoryIndex> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for InMemoryLongTermMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryLongTermMemory")
            .field("entries", &self.len())
            .finish()
    }
}

impl LongTermMemory for InMemoryLongTermMemory {
    async fn record(&self, messages: Vec<Msg>) -> Result<(), LongTermMemoryError> {
        let mut index = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        for message in messages {
            if !matches!(message.role, Role::User | Role::Assistant) {
                continue;
            }
            let text = message.text();
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let entry = format!("{}: {text}", message.role);
            if index.seen.insert(entry.clone()) {
                index.bm25.push(text);
                index.entries.push(entry);
            }
        }
        Ok(())
    }

    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<String>, LongTermMemoryError> {
        let index = self.read();
        Ok(index
            .bm25
            .search(query, k)
            .into_iter()
            .filter_map(|(position, _)| index.entries.get(position).cloned())
            .collect())
    }
}

/// Retrieves long-term memories at the start of every call and records the call at its end.
///
/// Priority 50; handles PreCall and PostCall.
///
/// - PreCall: retrieves [`top_k`](Self::with_top_k) memories for the text of the last user
///   message of the new input and appends them to this call's system message as
///   `"<header>\n- <memory>\n- <memory>"` (nothing when none are found or there is no user
///   text).
/// - PostCall: records the call's input messages (as PreCall saw them) followed by the final
///   reply.
///
/// A failing retrieval or recording is logged as a `tracing` warning and never fails the
/// call. The input is held between PreCall and PostCall in the call's extensions, so one
/// hook can serve several agents and concurrent calls; a call that fails or is dropped (no
/// PostCall) records nothing, and its held input goes with the call.
///
/// ```
/// use agentscope::hooks::{InMemoryLongTermMemory, StaticLongTermMemoryHook};
/// use agentscope::Hook;
///
/// let hook = StaticLongTermMemoryHook::new(InMemoryLongTermMemory::new());
/// assert_eq!((hook.name(), hook.priority()), ("long_term_memory", 50));
/// ```
#[derive(Clone)]
pub struct StaticLongTermMemoryHook {
    memory: Arc<dyn DynLongTermMemory>,
    retrieval: Retrieval,
    /// Keys this hook's per-call state (the call's input, held from PreCall to PostCall in
    /// the call's extensions).
    instance: InstanceId,
}

impl StaticLongTermMemoryHook {
    /// The hook's name in [`hook_order`](crate::ReActAgent::hook_order).
    pub const NAME: &'static str = "long_term_memory";
    /// The hook's priority.
    pub const PRIORITY: i32 = 50;

    /// The number of memories retrieved by default.
    pub const DEFAULT_TOP_K: usize = 5;

    /// A hook over `memory`.
    pub fn new(memory: impl LongTermMemory) -> Self {
        Self {
            memory: Arc::new(memory),
            retrieval: Retrieval::new(Self::DEFAULT_TOP_K, DEFAULT_LONG_TERM_MEMORY_HEADER),
            instance: InstanceId::next(),
        }
    }

    /// How many memories to retrieve at most (default 5; 0 disables retrieval, recording
    /// goes on).
    #[must_use]
    pub fn with_top_k(mut self, k: usize) -> Self {
        self.retrieval.top_k = k;
        self
    }

    /// Replaces the text before the memories (default [`DEFAULT_LONG_TERM_MEMORY_HEADER`]).
    #[must_use]
    pub fn with_header(mut self, header: impl Into<SharedString>) -> Self {
        self.retrieval.header = header.into();
        self
    }

    async fn pre_call(&self, event: &mut agentscope_core::PreCallEvent) {
        let input = CallInput(event.input_messages().to_vec());
        call_state::insert(event.extensions_mut(), self.instance, input);
        let Some(query) = self.retrieval.query(event) else {
            return;
        };
        match self
            .memory
            .retrieve_boxed(&query, self.retrieval.top_k)
            .await
        {
            Ok(memories) => self.retrieval.append(event, &memories, |text, memory| {
                text.push_str("\n- ");
                text.push_str(memory);
            }),
            Err(error) => tracing::warn!(
                agent = event.agent().name(),
                %error,
                "long-term memory retrieval failed; the call goes on without it"
            ),
        }
    }

    async fn post_call(&self, event: &mut agentscope_core::PostCallEvent) {
        let mut messages = call_state::take::<CallInput>(event.extensions_mut(), self.instance)
            .map(|input| input.0)
            .unwrap_or_default();
        messages.push(event.final_message().clone());
        if let Err(error) = self.memory.record_boxed(messages).await {
            tracing::warn!(
                agent = event.agent().name(),
                %error,
                "recording to long-term memory failed; the call is not affected"
            );
        }
    }
}

/// The input of a running call, held from PreCall to PostCall.
struct CallInput(Vec<Msg>);

impl fmt::Debug for StaticLongTermMemoryHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticLongTermMemoryHook")
            .field("top_k", &self.retrieval.top_k)
            .finish_non_exhaustive()
    }
}

impl Hook for StaticLongTermMemoryHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        match event {
            // Observed messages are stored without a call: nothing to recall for.
            HookEvent::PreCall(event) if !event.is_observation() => self.pre_call(event).await,
            HookEvent::PostCall(event) => self.post_call(event).await,
            _ => {}
        }
        Ok(())
    }

    builtin_hook_meta!(PreCall | PostCall);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use agentscope_core::ToolResultBlock;
    use futures::executor::block_on;

    #[test]
    fn record_keeps_user_and_assistant_text_once() {
        let memory = InMemoryLongTermMemory::new();
        block_on(memory.record(vec![
            Msg::user("I like tea"),
            Msg::tool_result(ToolResultBlock::text("c1", "t", "tea facts")),
            Msg::assistant("  "),
            Msg::assistant("Tea it is."),
            Msg::user("I like tea"),
        ]))
        .unwrap();
        assert_eq!(
            memory.entries(),
            ["user: I like tea", "assistant: Tea it is."]
        );
    }

    #[test]
    fn retrieval_ranks_by_text_not_role() {
        let memory = InMemoryLongTermMemory::new();
        block_on(memory.record(vec![
            Msg::user("My cat is called Miso"),
            Msg::user("I work on compilers"),
        ]))
        .unwrap();
        let found = block_on(memory.retrieve("what is my cat called", 5)).unwrap();
        assert_eq!(found, ["user: My cat is called Miso"]);
        assert!(block_on(memory.retrieve("user", 5)).unwrap().is_empty());
        memory.clear();
        assert!(memory.is_empty());
    }
}
