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
//! | `StructuredOutputHook` (feature `schema`) | 50 | PreReasoning, PostReasoning, PostActing | forces `tool_choice`, reminds (goto), stops on a valid answer |
//! | `GenericRAGHook` (feature `rag`) | 50 | PreCall | appends retrieved documents to this call's system message |
//! | `StaticLongTermMemoryHook` (feature `rag`) | 50 | PreCall, PostCall | appends recalled memories to this call's system message; records the exchange |
//! | `SkillHook` (feature `skills`) | 85 | PreCall | appends the skill catalogue to the system message |
//! | [`ToolApprovalHook`] | 200 | PreCall, PostReasoning, PreActing, PostActing | stops for approval; applies approve / edit / reject |
//! | [`TracingHook`] | 0 | Pre*/Post*, Error | nothing: emits `tracing` spans |
//! | `context::ContextWindowHook` (feature `context`) | 800 | PreCall, PreReasoning, PreSummary | previews large tool results, summarises old turns, slides a window over the model's input |
//! | [`JsonlTraceHook`] | 900 | all but chunks (chunks opt-in) | nothing: writes JSON lines |
//!
//! See `docs/builtin-hooks.md` for the effective order with your own hooks.

/// The `priority`, `interests` and `name` of a built-in hook's `Hook` impl: its `PRIORITY`
/// and `NAME` constants, and the event kinds it handles (`PreCall | PostCall`), or an
/// expression of the hook computing them (`|hook| ...`).
macro_rules! builtin_hook_meta {
    (|$hook:ident| $interests:expr) => {
        fn priority(&self) -> i32 {
            Self::PRIORITY
        }

        fn interests(&self) -> ::agentscope_core::HookEventTypes {
            let $hook = self;
            $interests
        }

        fn name(&self) -> &str {
            Self::NAME
        }
    };
    ($($kind:ident)|+) => {
        builtin_hook_meta!(
            |_hook| ::agentscope_core::HookEventTypes::NONE
                $(| ::agentscope_core::HookEventType::$kind)+
        );
    };
}
#[cfg(feature = "context")]
pub(crate) use builtin_hook_meta;

#[cfg(feature = "rag")]
mod retrieval;

#[cfg(feature = "schema")]
mod structured_output;
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub use structured_output::StructuredOutputHook;

mod pending_tool_recovery;
pub use pending_tool_recovery::PendingToolRecoveryHook;

mod tool_approval;
pub use tool_approval::{ApprovalDecision, ApprovalError, ApprovalPolicy, ToolApprovalHook};

#[cfg(feature = "skills")]
mod skills;
#[cfg(feature = "skills")]
#[cfg_attr(docsrs, doc(cfg(feature = "skills")))]
pub use skills::{
    DEFAULT_SKILLS_HEADER, LOAD_SKILL_TOOL, LoadSkillTool, SKILL_FILE, Skill, SkillError, SkillHook,
};

#[cfg(feature = "rag")]
mod rag;
#[cfg(feature = "rag")]
#[cfg_attr(docsrs, doc(cfg(feature = "rag")))]
pub use rag::{
    DEFAULT_BM25_B, DEFAULT_BM25_K1, DEFAULT_RAG_HEADER, Document, GenericRAGHook,
    InMemoryKnowledge, Knowledge, KnowledgeError, ScoredDocument,
};

#[cfg(feature = "rag")]
mod long_term_memory;
#[cfg(feature = "rag")]
#[cfg_attr(docsrs, doc(cfg(feature = "rag")))]
pub use long_term_memory::{
    DEFAULT_LONG_TERM_MEMORY_HEADER, InMemoryLongTermMemory, LongTermMemory, LongTermMemoryError,
    StaticLongTermMemoryHook,
};

pub(crate) mod tracing;
// `self::` because the `tracing` crate has the same name.
pub use self::tracing::TracingHook;

mod jsonl_trace;
pub use jsonl_trace::{
    JsonlTraceHook, TraceAgent, TraceEvent, TraceReadError, TraceRecord, read_trace,
};
