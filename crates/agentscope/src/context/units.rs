//! Where a conversation may be cut without separating a tool call from its result: the
//! rule every strategy of the context hook obeys.

use std::collections::HashMap;

use agentscope_core::{ContentBlock, Msg, Role};

/// For each position `b` in `0..=messages.len()`, whether the conversation may be cut right
/// before message `b`: no tool result at or after `b` answers a call made before `b`. Calls
/// and results are matched by id; a result whose call is not in `messages` (and a call whose
/// result is not) constrains nothing.
pub(crate) fn cut_points(messages: &[Msg]) -> Vec<bool> {
    let mut calls: HashMap<&str, usize> = HashMap::new();
    // reach[j]: the earliest message whose call message `j` answers (`j` itself if none).
    let mut reach: Vec<usize> = Vec::with_capacity(messages.len());
    for (at, message) in messages.iter().enumerate() {
        let mut earliest = at;
        for block in message.content.iter() {
            match block {
                ContentBlock::ToolUse(call) => {
                    calls.entry(call.id.as_str()).or_insert(at);
                }
                ContentBlock::ToolResult(result) => {
                    if let Some(&call) = calls.get(result.id.as_str()) {
                        earliest = earliest.min(call);
                    }
                }
                _ => {}
            }
        }
        reach.push(earliest);
    }
    let mut allowed = vec![true; messages.len() + 1];
    let mut earliest_after = usize::MAX;
    for b in (0..messages.len()).rev() {
        earliest_after = earliest_after.min(reach[b]);
        allowed[b] = earliest_after >= b;
    }
    allowed
}

/// The conversation as units: maximal runs of messages between two cut points, oldest first,
/// as `start..end` ranges. A tool call and its results are always in one unit.
pub(crate) fn units(messages: &[Msg]) -> Vec<std::ops::Range<usize>> {
    let allowed = cut_points(messages);
    let mut units = Vec::new();
    let mut start = 0;
    for (end, &cut) in allowed.iter().enumerate().skip(1) {
        if cut {
            units.push(start..end);
            start = end;
        }
    }
    units
}

/// Whether `message` is a user turn: a user message with something other than tool results.
pub(crate) fn is_user_turn(message: &Msg) -> bool {
    message.role == Role::User
        && message
            .content
            .iter()
            .any(|block| !matches!(block, ContentBlock::ToolResult(_)))
}

/// The index of the latest user turn.
pub(crate) fn latest_user_turn(messages: &[Msg]) -> Option<usize> {
    messages.iter().rposition(is_user_turn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::{ToolResultBlock, ToolUseBlock};
    use serde_json::json;

    fn call(ids: &[&str]) -> Msg {
        let mut builder = Msg::builder().role(Role::Assistant);
        for id in ids {
            builder = builder.block(ToolUseBlock::new(*id, "t", json!({})));
        }
        builder.build()
    }

    fn result(id: &str) -> Msg {
        Msg::tool_result(ToolResultBlock::text(id, "t", "r"))
    }

    #[test]
    fn calls_and_results_share_a_unit() {
        let messages = [
            Msg::user("q"),
            call(&["a", "b"]),
            result("a"),
            result("b"),
            Msg::assistant("done"),
            Msg::user("again"),
            call(&["c"]),
            result("c"),
        ];
        assert_eq!(
            cut_points(&messages),
            [true, true, false, false, true, true, true, false, true]
        );
        assert_eq!(units(&messages), [0..1, 1..4, 4..5, 5..6, 6..8]);
        assert_eq!(latest_user_turn(&messages), Some(5));
    }

    #[test]
    fn a_late_result_holds_everything_between() {
        // Not what the engine stores, but the rule still holds.
        let messages = [
            call(&["a"]),
            Msg::user("meanwhile"),
            result("a"),
            result("zz"),
        ];
        assert_eq!(cut_points(&messages), [true, false, false, true, true]);
        assert_eq!(units(&messages), [0..3, 3..4]);
    }

    #[test]
    fn results_are_not_user_turns() {
        let mut answer = result("a");
        answer.role = Role::User;
        assert!(!is_user_turn(&answer));
        assert!(is_user_turn(&Msg::user("hi")));
        assert_eq!(latest_user_turn(&[Msg::user("q"), answer]), Some(0));
        assert_eq!(latest_user_turn(&[]), None);
    }
}
