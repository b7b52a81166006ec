//! Built-in hooks.
//!
//! Each built-in hook lives in one module of the same shape: a table of its priority, the
//! events it handles and what it changes, then the hook type (with `NAME` and `PRIORITY`
//! constants), its configuration, and its `Hook` impl. They appear in
//! [`ReActAgent::hook_order`](crate::ReActAgent::hook_order) like any other hook, except the
//! structured-output hook, which exists only inside one `call_structured` call.
//!
//! | hook | priority | events | changes |
//! |---|---|---|---|
//! | [`PendingToolRecoveryHook`] | 10 | PreCall | adds error results for pending tool calls when new input moves on |
//! | [`StructuredOutputHook`] | 50 | PreReasoning, PostReasoning, PostActing | forces `tool_choice`, reminds (goto), stops on a valid answer |
//! | [`GenericRAGHook`] | 50 | PreCall | appends retrieved documents to this call's system message |
//! | [`StaticLongTermMemoryHook`] | 50 | PreCall, PostCall | appends recalled memories to this call's system message; records the exchange |
//! | [`SkillHook`] | 85 | PreCall | appends the skill catalogue to the system message |
//! | [`ToolApprovalHook`] | 200 | PreCall, PostReasoning, PreActing, PostActing | stops for approval; applies approve / edit / reject |
//! | [`TracingHook`] | 0 | Pre*/Post*, Error | nothing: emits `tracing` spans |
//! | [`ContextWindowHook`](crate::context::ContextWindowHook) | 800 | PreCall, PreReasoning, PreSummary | previews large tool results, summarises old turns, slides a window over the model's input |
//! | [`JsonlTraceHook`] | 900 | all but chunks (chunks opt-in) | nothing: writes JSON lines |
//!
//! See `docs/builtin-hooks.md` for the effective order with your own hooks.

pub(crate) mod call_state;
mod retrieval;

pub mod structured_output;
pub use structured_output::StructuredOutputHook;

pub mod pending_tool_recovery;
pub use pending_tool_recovery::PendingToolRecoveryHook;

pub mod tool_approval;
pub use tool_approval::{ApprovalDecision, ApprovalError, ApprovalPolicy, ToolApprovalHook};

pub mod skills;
pub use skills::{
    DEFAULT_SKILLS_HEADER, LOAD_SKILL_TOOL, LoadSkillTool, SKILL_FILE, Skill, SkillError, SkillHook,
};

pub mod rag;
pub use rag::{
    DEFAULT_BM25_B, DEFAULT_BM25_K1, DEFAULT_RAG_HEADER, Document, GenericRAGHook,
    InMemoryKnowledge, Knowledge, KnowledgeError, ScoredDocument,
};

pub mod long_term_memory;
pub use long_term_memory::{
    DEFAULT_LONG_TERM_MEMORY_HEADER, InMemoryLongTermMemory, LongTermMemory, LongTermMemoryError,
    StaticLongTermMemoryHook,
};

pub mod tracing;
// `self::` because the `tracing` crate has the same name.
pub use self::tracing::TracingHook;

pub mod jsonl_trace;
pub use jsonl_trace::{
    JsonlTraceHook, TraceAgent, TraceEvent, TraceReadError, TraceRecord, read_trace,
};
