//! [`InMemoryMemory`], the default [`Memory`].

use std::sync::{Arc, PoisonError, RwLock};

use agentscope_core::{Memory, Msg};

/// The default memory: a list of messages in process memory.
///
/// Cloning shares the messages, so a clone kept outside the agent sees what the agent
/// stores.
///
/// ```
/// use agentscope::{InMemoryMemory, Memory, Msg};
///
/// let memory = InMemoryMemory::new();
/// memory.add(Msg::user("hi"));
/// assert_eq!(memory.len(), 1);
/// assert_eq!(memory.messages()[0].text(), "hi");
/// ```
#[derive(Debug, Clone, Default)]
pub struct InMemoryMemory {
    messages: Arc<RwLock<Vec<Msg>>>,
}

impl InMemoryMemory {
    /// An empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// A memory holding `messages`.
    pub fn with_messages(messages: Vec<Msg>) -> Self {
        Self {
            messages: Arc::new(RwLock::new(messages)),
        }
    }
}

impl Memory for InMemoryMemory {
    fn add(&self, message: Msg) {
        self.messages
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message);
    }

    fn extend(&self, messages: Vec<Msg>) {
        self.messages
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(messages);
    }

    fn messages(&self) -> Vec<Msg> {
        self.messages
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn copy_into(&self, out: &mut Vec<Msg>) {
        out.extend_from_slice(&self.messages.read().unwrap_or_else(PoisonError::into_inner));
    }

    fn messages_from(&self, start: usize) -> Vec<Msg> {
        let messages = self.messages.read().unwrap_or_else(PoisonError::into_inner);
        messages.get(start..).map_or_else(Vec::new, <[Msg]>::to_vec)
    }

    fn clear(&self) {
        self.messages
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn len(&self) -> usize {
        self.messages
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
