//! Realistic conversation messages, for session-store benchmarks and tests: the same
//! messages for every store, so their figures compare.
//!
//! ```
//! use agentscope_test::conversation;
//!
//! let step = [conversation::assistant_call(7), conversation::tool_result(7)];
//! assert_eq!(step[0].tool_uses()[0].id, step[1].tool_results()[0].id);
//! assert_eq!(conversation::history(1_000).len(), 1_000);
//! ```

use agentscope_core::session::AgentIdentity;
use agentscope_core::{Msg, Role, ToolResultBlock, ToolUseBlock};
use serde_json::json;

/// The agent the conversations belong to.
pub fn agent() -> AgentIdentity {
    AgentIdentity::new("assistant", "agent-0f3c9a12")
}

/// An assistant message with a sentence and a tool call (about 330 bytes of JSON); `step`
/// makes its call id.
pub fn assistant_call(step: usize) -> Msg {
    Msg::builder()
        .role(Role::Assistant)
        .name("assistant")
        .text("Let me look up that order.")
        .block(ToolUseBlock::new(
            format!("call_{step:020}"),
            "lookup_order",
            json!({"order_id": "ORD-2026-004217", "fields": ["status", "items"]}),
        ))
        .build()
}

/// The result of [`assistant_call`]`(step)` (about 520 bytes of JSON).
pub fn tool_result(step: usize) -> Msg {
    Msg::tool_result(ToolResultBlock::text(
        format!("call_{step:020}"),
        "lookup_order",
        "Order ORD-2026-004217: status shipped (carrier DHL, tracking 00340434161234567890), \
         2 items: 1x USB-C cable 2 m (SKU CBL-USBC-2M, 12.90 EUR), 1x travel charger 65 W \
         (SKU CHG-65W-EU, 39.90 EUR); shipped 2026-11-28 from Leipzig, expected 2026-12-02.",
    ))
}

/// A conversation of `n` messages: alternating user questions and assistant answers.
pub fn history(n: usize) -> Vec<Msg> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Msg::user(format!("Question {i}: where is my order ORD-2026-004217?"))
            } else {
                Msg::assistant(format!(
                    "Answer {i}: it was shipped and arrives on Tuesday."
                ))
            }
        })
        .collect()
}
