//! Built-in hooks.
//!
//! Each built-in hook lives in one file of the same shape: the hook type, its priority and
//! the events it handles documented at the top, its configuration, and its `Hook` impl.
//! They appear in [`ReActAgent::hook_order`](crate::ReActAgent::hook_order) like any other
//! hook.
