//! Multi-agent building blocks: agents in one conversation ([`MsgHub`]), agents chained
//! ([`sequential`]) or asked together ([`fanout`]), an agent used as another agent's tool
//! ([`AgentTool`]), and a human in the conversation ([`UserAgent`]).
//!
//! Every block holds agents as `Arc<dyn Agent>` ([`Agent`]): a
//! [`ReActAgent`](crate::ReActAgent) (with the ReAct loop or a custom
//! [`Reply`](crate::Reply)), a [`UserAgent`], or your own type.
//!
//! | AgentScope Python | here |
//! |---|---|
//! | `async with MsgHub(participants, announcement=msg) as hub:` | `let hub = MsgHub::builder().participants(..).announcement(msg).enter().await?;` |
//! | a participant's `await agent(x)` inside the hub (auto-broadcast) | `hub.call(&agent, x)`, `hub.sequential(..)`, `hub.fanout(..)` |
//! | `hub.broadcast(msg)` | [`MsgHub::broadcast`] |
//! | `hub.add(agent)` / `hub.delete(agent)` | [`MsgHub::add`] / [`MsgHub::remove`] (by name or id) |
//! | `sequential_pipeline(agents, msg)`, `SequentialPipeline` | [`sequential`], [`SequentialPipeline`] |
//! | `fanout_pipeline(agents, msg)`, `FanoutPipeline` | [`fanout`], [`FanoutPipeline`] |
//! | `UserAgent` | [`UserAgent`] with a [`UserInput`] ([`StdinInput`], [`ChannelInput`]) |
//!
//! The guide, with the message flow of each block, is `docs/multi-agent.md`.

mod agent_tool;
mod error;
mod fanout;
mod hub;
mod sequential;
mod user;

use std::any::Any;
use std::sync::Arc;

use agentscope_core::{ContentBlock, Msg, Role};

pub use agent_tool::AgentTool;
pub use error::{Activity, AgentFailure, MultiAgentError};
pub use fanout::{FanoutPipeline, fanout};
pub use hub::{MsgHub, MsgHubBuilder};
pub use sequential::{SequentialPipeline, sequential};
pub use user::{ChannelInput, StdinInput, UserAgent, UserInput};

use crate::agent_trait::Agent;

/// `agent` behind an `Arc<dyn Agent>`, without wrapping one twice.
fn shared<A: Agent>(agent: A) -> Arc<dyn Agent> {
    if let Some(shared) = (&agent as &dyn Any).downcast_ref::<Arc<dyn Agent>>() {
        return Arc::clone(shared);
    }
    Arc::new(agent)
}

/// What another agent hears of `message`: what was said (its text and images, not the
/// speaker's thinking or tool calls), as a [`Role::User`] message (from the listener's
/// point of view, only its own replies are assistant turns) with the same id, name, time
/// and metadata. Another agent's reply starts with its speaker's name (`"alice: ..."`), so
/// a model that reads the conversation knows who said what (a `Msg`'s name does not reach
/// every provider's API). `None` when nothing was said (a tool message, a reply of tool
/// calls only).
pub(crate) fn heard(message: &Msg) -> Option<Msg> {
    let mut said: Vec<ContentBlock> = message
        .content
        .iter()
        .filter(|block| matches!(block, ContentBlock::Text(_) | ContentBlock::Image(_)))
        .cloned()
        .collect();
    if said.is_empty() || message.role == Role::System {
        return None;
    }
    if message.role == Role::Assistant {
        let speaker = format!("{}: ", message.name);
        match said.first_mut() {
            Some(ContentBlock::Text(first)) => {
                first.text = format!("{speaker}{}", first.text).into();
            }
            _ => said.insert(0, ContentBlock::text(speaker.trim_end())),
        }
    }
    let mut heard = message.clone();
    heard.role = Role::User;
    heard.content = said.into();
    Some(heard)
}
