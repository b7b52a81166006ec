//! Messages reduced to what a test compares: whole rows (role, name, content, generate
//! reason) to check a memory or a model input exactly, their texts (with their roles:
//! [`turns`]), and who spoke.
//!
//! ```
//! use agentscope::{ContentBlock, Msg, Role};
//! use agentscope_test::messages::{rows, speakers, texts, turns};
//!
//! let memory = [Msg::user("hi"), Msg::assistant("Hello!")];
//! assert_eq!(texts(&memory), ["hi", "Hello!"]);
//! assert_eq!(turns(&memory)[1], (Role::Assistant, "Hello!".to_owned()));
//! assert_eq!(speakers(&memory), ["assistant"]);
//! assert_eq!(rows(&memory)[0], (Role::User, "user".to_owned(), vec![ContentBlock::text("hi")], None));
//! ```

use agentscope_core::{ContentBlock, GenerateReason, Msg, Role};

/// A message as `(role, name, content, generate reason)`.
pub type Row = (Role, String, Vec<ContentBlock>, Option<GenerateReason>);

/// The [`Row`] of every message.
pub fn rows(messages: &[Msg]) -> Vec<Row> {
    messages
        .iter()
        .map(|m| {
            (
                m.role,
                m.name.to_string(),
                m.content.to_vec(),
                m.generate_reason(),
            )
        })
        .collect()
}

/// The text of every message.
pub fn texts(messages: &[Msg]) -> Vec<String> {
    messages.iter().map(Msg::text).collect()
}

/// The role and text of every message: a conversation as a model was given it.
pub fn turns(messages: &[Msg]) -> Vec<(Role, String)> {
    messages.iter().map(|m| (m.role, m.text())).collect()
}

/// The names of the assistant messages, in order: which agent answered each turn.
pub fn speakers(messages: &[Msg]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.name.as_str())
        .collect()
}
