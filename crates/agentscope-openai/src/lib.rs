//! OpenAI-compatible chat-completions model for agentscope-rs (work in progress).
