//! The rules of a conversation's shape, as checks an engine runs (see
//! [`ConversationError`](crate::ConversationError) for the rules and their errors).

pub use crate::conversation::{
    check_goto, check_input, check_memory, check_no_system, check_reply, check_tool_results,
};
