//! Long conversations: token counting and context management.
//!
//! Memory keeps the whole conversation; what each model call gets is decided by a hook,
//! [`ContextWindowHook`], at PreReasoning, on the copy of memory the event carries. So it
//! composes with every other hook, shows in [`hook_order`](crate::ReActAgent::hook_order),
//! and never loses anything: a message left out of one request is still in memory (and in the
//! session).
//!
//! | piece | what |
//! |---|---|
//! | [`TokenCounter`] | counts a text, a message (content plus a per-message overhead; tool calls and results too), messages |
//! | [`TiktokenCounter`] | OpenAI's tokenizers (`o200k_base`, `cl100k_base`), vocabularies inside the crate, loaded once; the `tiktoken` feature |
//! | [`EstimatedTokens`] | about 4 characters per token; the fallback |
//! | [`InputTokens`], [`reported_usage`] | the provider's reported usage preferred over counting |
//! | [`ContextWindows`] | each model's window, by name prefix, with defaults for well-known models |
//! | [`ContextWindowHook`] | priority 800, PreCall / PreReasoning / PreSummary: summary, tool-result previews, sliding window, hard limit |
//! | [`ToolResultStash`], [`RetrieveStashedTool`] | the full text of the results sent as previews, and the `retrieve_stashed` tool that reads it |
//! | [`Summarizer`], [`SummaryRecord`] | summaries of the oldest turns through a model call, recorded so they are made once |
//! | [`CompactionReport`] | what the hook did to one input, in the call's extensions, for later hooks |
//!
//! See `docs/context.md` for the guide.
//!
//! ```
//! use agentscope::context::{ContextWindowHook, ContextWindows, EstimatedTokens};
//! use agentscope::prelude::*;
//! use agentscope::InMemoryMemory;
//! use agentscope_test::{ScriptedModel, ScriptedResponse};
//!
//! # futures::executor::block_on(async {
//! // 30 old exchanges in memory; the model should get at most 6 messages.
//! let history: Vec<Msg> = (0..30)
//!     .flat_map(|i| [Msg::user(format!("question {i}")), Msg::assistant(format!("answer {i}"))])
//!     .collect();
//! let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
//! let agent = ReActAgent::builder()
//!     .model(model.clone())
//!     .memory(InMemoryMemory::with_messages(history))
//!     .hook(ContextWindowHook::new().with_max_messages(6).with_counter(EstimatedTokens::new()))
//!     .build()?;
//! agent.call("question 30").await?;
//!
//! let sent: Vec<String> = model.requests()[0].messages.iter().map(|m| m.text()).collect();
//! assert_eq!(
//!     sent,
//!     ["answer 27", "question 28", "answer 28", "question 29", "answer 29", "question 30"]
//! );
//! assert_eq!(agent.memory().len(), 62); // memory keeps everything
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

// One job per module; `use super::` edges only point down (no cycles):
//   hook       -> compact, config, state, stash, summary, tokens, window
//                 ContextWindowHook: the type, its settings methods, its Hook impl
//   compact    -> work, state, call_notes, config, report
//                 the decision for one input: window, summary due, budget, report, trace
//   work       -> state, stash, summary, report, units, tokens, hash
//                 the compaction itself: summary in use, previews, new summary, slide
//   call_notes    what the hook remembers within one call (in hooks::call_state)
//   state      -> counts, stash, summary
//                 what it keeps between calls: shared by clones, per conversation
//   config     -> stash, summary, window, tokens, hash
//                 its settings, and the counter for a model
//   counts     -> tokens, hash
//                 token counts by message, counted once
//   hash          WordHash: fingerprints stable across processes and versions
//   report        CompactionReport
//   stash         ToolResultLimit, ToolResultStash, RetrieveStashedTool
//   summary       Summarizer, SummaryRecord
//   tokens        TokenCounter and its implementations
//   units         where a conversation may be cut
//   window        ContextWindows
mod call_notes;
mod compact;
mod config;
mod counts;
mod hash;
mod hook;
mod report;
mod stash;
mod state;
mod summary;
mod tokens;
mod units;
mod window;
mod work;

pub use config::DEFAULT_FORCED_TARGET;
pub use hook::ContextWindowHook;
pub use report::{CollectCompactionReports, CompactionReport, SummaryUse, TruncatedResult};
pub use stash::{
    DEFAULT_PAGE_CHARS, RETRIEVE_STASHED_TOOL, RetrieveStashedTool, StashedResult, ToolResultLimit,
    ToolResultStash,
};
pub use summary::{
    DEFAULT_KEEP_RECENT, DEFAULT_SUMMARY_PROMPT, DEFAULT_SUMMARY_THRESHOLD, SUMMARY_MESSAGE_NAME,
    Summarizer, SummaryRecord,
};
pub use tokens::{
    DEFAULT_MESSAGE_OVERHEAD, EstimatedTokens, IMAGE_TOKENS, InputTokens, TOOL_BLOCK_OVERHEAD,
    TokenCounter, count_blocks, default_counter, reported_usage,
};
#[cfg(feature = "tiktoken")]
pub use tokens::{Encoding, TiktokenCounter};
pub use window::{ContextWindows, DEFAULT_CONTEXT_WINDOW};
