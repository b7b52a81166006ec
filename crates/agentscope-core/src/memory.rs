//! The memory seam.

use crate::message::Msg;

/// Where an agent keeps its conversation.
///
/// Object-safe and synchronous: memory is read and written between steps of a call, never
/// across an `.await`, which is what lets the engine repair it even when a call is dropped.
/// System messages are never stored (the engine keeps the system message separately).
pub trait Memory: Send + Sync + 'static {
    /// Appends one message.
    fn add(&self, message: Msg);

    /// Appends several messages, in order.
    fn extend(&self, messages: Vec<Msg>) {
        for message in messages {
            self.add(message);
        }
    }

    /// A copy of all messages, oldest first. Copies are cheap: message text is shared.
    fn messages(&self) -> Vec<Msg>;

    /// Appends a copy of all messages, oldest first, to `out`: [`messages`](Self::messages)
    /// without a vector of its own. The engine builds each model request this way, its
    /// system message first; the default copies through `messages()`, implementations that
    /// can copy straight into `out` should.
    fn copy_into(&self, out: &mut Vec<Msg>) {
        out.extend(self.messages());
    }

    /// A copy of the messages from index `start` on (none when `start` is past the end).
    /// The default copies all messages and drops the first `start`; implementations that
    /// can copy just the tail should: a bound session calls this once per step to save what
    /// the step appended.
    fn messages_from(&self, start: usize) -> Vec<Msg> {
        let mut messages = self.messages();
        messages.drain(..start.min(messages.len()));
        messages
    }

    /// Removes every message.
    fn clear(&self);

    /// The number of messages.
    fn len(&self) -> usize;

    /// Whether there are no messages.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<M: Memory> Memory for std::sync::Arc<M> {
    fn add(&self, message: Msg) {
        (**self).add(message);
    }

    fn extend(&self, messages: Vec<Msg>) {
        (**self).extend(messages);
    }

    fn messages(&self) -> Vec<Msg> {
        (**self).messages()
    }

    fn copy_into(&self, out: &mut Vec<Msg>) {
        (**self).copy_into(out);
    }

    fn messages_from(&self, start: usize) -> Vec<Msg> {
        (**self).messages_from(start)
    }

    fn clear(&self) {
        (**self).clear();
    }

    fn len(&self) -> usize {
        (**self).len()
    }

    fn is_empty(&self) -> bool {
        (**self).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Copies straight into the caller's vector, and counts the copies `messages()` makes.
    #[derive(Default)]
    struct Direct {
        messages: Mutex<Vec<Msg>>,
        whole_copies: AtomicUsize,
    }

    impl Memory for Direct {
        fn add(&self, message: Msg) {
            self.messages.lock().unwrap().push(message);
        }

        fn messages(&self) -> Vec<Msg> {
            self.whole_copies.fetch_add(1, Ordering::Relaxed);
            self.messages.lock().unwrap().clone()
        }

        fn copy_into(&self, out: &mut Vec<Msg>) {
            out.extend(self.messages.lock().unwrap().iter().cloned());
        }

        fn clear(&self) {
            self.messages.lock().unwrap().clear();
        }

        fn len(&self) -> usize {
            self.messages.lock().unwrap().len()
        }
    }

    #[test]
    fn a_shared_memory_copies_through_its_own_copy_into() {
        let memory = Arc::new(Direct::default());
        memory.add(Msg::user("a"));
        memory.add(Msg::user("b"));
        let mut out = vec![Msg::system("first")];
        Memory::copy_into(&memory, &mut out);
        let texts: Vec<String> = out.iter().map(Msg::text).collect();
        assert_eq!(texts, ["first", "a", "b"]);
        assert_eq!(memory.whole_copies.load(Ordering::Relaxed), 0);
    }
}
