//! Compact text forms to compare whole memories and model requests: messages as one line
//! each (in four forms, and the lines of common messages, see below), the system texts and
//! tool names of model requests, and an agent's hook order (names, and priorities).
//!
//! - [`describe`] / [`memory_of`]: `role/name: blocks <generate reason>`, a tool-use with
//!   unparsed arguments shown by its `raw_input`;
//! - [`parsed::describe`] / [`parsed::memory_of`]: the same, but a tool-use always shows its
//!   parsed `input`;
//! - [`without_reason::describe`] / [`without_reason::memory_of`]: `role/name: blocks` with a
//!   tool-use's parsed `input`, without the generate reason;
//! - [`brief::describe`] / [`brief::memory_of`]: `role: blocks`, without the name, the error
//!   flag of tool results, or the generate reason;
//! - [`line`]: the [`describe`] lines of common messages (a user's question, a calculator call
//!   and result, a final answer, and a whole calculator round trip).

use agentscope::ModelRequest;
use agentscope::prelude::*;
use agentscope_test::ScriptedModel;

/// `role/name: blocks <generate reason>`, exact enough to compare whole memories.
pub(crate) fn describe(msg: &Msg) -> String {
    describe_with(msg, true, true)
}

/// [`describe`] for every message of the agent's memory.
pub(crate) fn memory_of(agent: &ReActAgent) -> Vec<String> {
    agent.memory().messages().iter().map(describe).collect()
}

/// `role/name: blocks <generate reason>`; a tool-use shows its `raw_input` when it has one and
/// `show_raw_input` is set, otherwise its parsed `input`; the generate reason only with
/// `show_reason`.
fn describe_with(msg: &Msg, show_raw_input: bool, show_reason: bool) -> String {
    let blocks: Vec<String> = msg
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => format!("text {:?}", t.text.as_str()),
            ContentBlock::Thinking(t) => format!("thinking {:?}", t.thinking.as_str()),
            ContentBlock::ToolUse(t) => match &t.raw_input {
                Some(raw) if show_raw_input => format!("tool_use {} {} raw {raw:?}", t.id, t.name),
                _ => format!("tool_use {} {} {}", t.id, t.name, t.input),
            },
            ContentBlock::ToolResult(r) => format!(
                "tool_result {} {}{} {:?}",
                r.id,
                r.name,
                if r.is_error { " error" } else { "" },
                r.text_output()
            ),
            other => format!("{other:?}"),
        })
        .collect();
    let reason = msg
        .generate_reason()
        .filter(|_| show_reason)
        .map(|r| format!(" <{r:?}>"))
        .unwrap_or_default();
    format!("{}/{}: {}{reason}", msg.role, msg.name, blocks.join(" | "))
}

/// `role/name: blocks <generate reason>` with a tool-use's parsed `input` (never its
/// `raw_input`).
pub(crate) mod parsed {
    use agentscope::prelude::*;

    /// `role/name: blocks <generate reason>`, exact enough to compare whole memories.
    pub(crate) fn describe(msg: &Msg) -> String {
        super::describe_with(msg, false, true)
    }

    /// [`describe`] for every message of the agent's memory.
    pub(crate) fn memory_of(agent: &ReActAgent) -> Vec<String> {
        agent.memory().messages().iter().map(describe).collect()
    }
}

/// `role/name: blocks` with a tool-use's parsed `input` and no generate reason.
pub(crate) mod without_reason {
    use agentscope::prelude::*;

    /// `role/name: blocks`.
    pub(crate) fn describe(msg: &Msg) -> String {
        super::describe_with(msg, false, false)
    }

    /// [`describe`] for every message of the agent's memory.
    pub(crate) fn memory_of(agent: &ReActAgent) -> Vec<String> {
        agent.memory().messages().iter().map(describe).collect()
    }
}

/// `role: blocks`: no name, no error flag on tool results, no generate reason.
pub(crate) mod brief {
    use agentscope::prelude::*;

    /// `role: blocks`.
    pub(crate) fn describe(msg: &Msg) -> String {
        let blocks: Vec<String> = msg
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(t) => format!("text {:?}", t.text.as_str()),
                ContentBlock::ToolUse(t) => format!("tool_use {} {} {}", t.id, t.name, t.input),
                ContentBlock::ToolResult(r) => {
                    format!("tool_result {} {} {:?}", r.id, r.name, r.text_output())
                }
                other => format!("{other:?}"),
            })
            .collect();
        format!("{}: {}", msg.role, blocks.join(" | "))
    }

    /// [`describe`] for every message of the agent's memory.
    pub(crate) fn memory_of(agent: &ReActAgent) -> Vec<String> {
        agent.memory().messages().iter().map(describe).collect()
    }
}

/// The [`describe`] lines of common messages, to write expected memories and model inputs
/// compactly.
pub(crate) mod line {
    use serde_json::json;

    /// The user's message (named "user") with the text `text`.
    pub(crate) fn user(text: &str) -> String {
        format!("user/user: text {text:?}")
    }

    /// The assistant's final answer `text` (the model stopped).
    pub(crate) fn answer(text: &str) -> String {
        format!("assistant/assistant: text {text:?} <ModelStop>")
    }

    /// The assistant's message calling the calculator (call `id`) on `expression`.
    pub(crate) fn calc_use(id: &str, expression: &str) -> String {
        let input = json!({ "expression": expression });
        format!("assistant/assistant: tool_use {id} calculator {input}")
    }

    /// The calculator's result `output` for call `id`.
    pub(crate) fn calc_result(id: &str, output: &str) -> String {
        format!("tool/calculator: tool_result {id} calculator {output:?}")
    }

    /// A whole calculator round trip: the user's `question`, the assistant's call `(id,
    /// expression, output)` and its result, then the final answer `answer`.
    pub(crate) fn calc_round_trip(
        question: &str,
        (id, expression, output): (&str, &str, &str),
        answer: &str,
    ) -> [String; 4] {
        [
            user(question),
            calc_use(id, expression),
            calc_result(id, output),
            self::answer(answer),
        ]
    }
}

/// The text of every message.
pub(crate) fn texts(messages: &[Msg]) -> Vec<String> {
    messages.iter().map(Msg::text).collect()
}

/// The text blocks of the system message of every request (each must start with one).
pub(crate) fn system_texts(model: &ScriptedModel) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|request| {
            let system = &request.messages[0];
            assert_eq!(system.role, Role::System);
            system
                .content
                .iter()
                .map(|block| block.as_text().unwrap().to_owned())
                .collect()
        })
        .collect()
}

/// The names of the tools offered in `request`.
pub(crate) fn tool_names(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

/// The names and priorities of the agent's hooks, in the order they run.
pub(crate) fn hook_priorities(agent: &ReActAgent) -> Vec<(String, i32)> {
    agent
        .hook_order()
        .into_iter()
        .map(|info| (info.name, info.priority))
        .collect()
}

/// The names of the agent's hooks, in the order they run.
pub(crate) fn hook_names(agent: &ReActAgent) -> Vec<String> {
    agent
        .hook_order()
        .into_iter()
        .map(|info| info.name)
        .collect()
}
