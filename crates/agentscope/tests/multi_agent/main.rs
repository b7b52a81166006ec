//! Multi-agent building blocks, with the exact message flow: the message hub (who observed
//! what, in which order, under which name; add/remove; the announcement; failures), the
//! sequential and fan-out pipelines, an agent used as a tool (the nested stream, the
//! cancellation), and the user agent. One test binary, one module per block.
#![cfg(feature = "multi-agent")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/mod.rs"]
mod support;

mod agent_tool;
mod hub;
mod pipelines;
mod send_sync;
mod user_agent;

use std::sync::Arc;

use agentscope::Agent;
use agentscope::multi_agent::MsgHub;
use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};

use support::describe::without_reason;

/// A scripted agent: the handle the blocks take, the agent (to read its memory) and its
/// model (to read its requests).
pub(crate) fn scripted(
    name: &str,
    responses: impl IntoIterator<Item = ScriptedResponse>,
) -> (Arc<dyn Agent>, ReActAgent, ScriptedModel) {
    let model = ScriptedModel::new(responses);
    let agent = ReActAgent::builder()
        .name(name)
        .model(model.clone())
        .build()
        .unwrap();
    (Arc::new(agent.clone()), agent, model)
}

/// Text answers, one per call.
pub(crate) fn answers<const N: usize>(texts: [&str; N]) -> [ScriptedResponse; N] {
    texts.map(ScriptedResponse::text)
}

/// A hub entered with `participants` and, when there is one, the `announcement`.
pub(crate) async fn hub_of<const N: usize>(
    participants: [Arc<dyn Agent>; N],
    announcement: Option<Msg>,
) -> MsgHub {
    let mut hub = MsgHub::builder().participants(participants);
    if let Some(announcement) = announcement {
        hub = hub.announcement(announcement);
    }
    hub.enter().await.unwrap()
}

/// The agent's memory as `role/name: blocks`.
pub(crate) fn memory(agent: &ReActAgent) -> Vec<String> {
    without_reason::memory_of(agent)
}

/// The messages of the model's `i`-th request as `role/name: blocks`.
pub(crate) fn request(model: &ScriptedModel, i: usize) -> Vec<String> {
    model.requests()[i]
        .messages
        .iter()
        .map(without_reason::describe)
        .collect()
}

/// A message from `name` with the role User.
pub(crate) fn from(name: &str, text: &str) -> Msg {
    Msg::builder().name(name).text(text).build()
}

/// Speakers in the tests that are people (their messages are user messages), not agents.
const PEOPLE: [&str; 2] = ["host", "user"];

/// A conversation of `(speaker, text)` lines as `me` holds it (`role/name: blocks`): its own
/// replies as assistant turns, everything else as user messages carrying the speaker's name.
pub(crate) fn heard_by(me: &str, lines: &[(&str, &str)]) -> Vec<String> {
    lines
        .iter()
        .map(|(speaker, text)| {
            if *speaker == me {
                format!("assistant/{speaker}: text {text:?}")
            } else if PEOPLE.contains(speaker) {
                format!("user/{speaker}: text {text:?}")
            } else {
                // Another agent's reply, heard with its speaker's name in front.
                format!("user/{speaker}: text {:?}", format!("{speaker}: {text}"))
            }
        })
        .collect()
}
