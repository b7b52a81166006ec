//! Multi-agent building blocks: agents in one conversation ([`MsgHub`]), agents chained
//! ([`sequential`]) or asked together ([`fanout`]), an agent used as another agent's tool
//! ([`AgentTool`]), and a human in the conversation ([`UserAgent`]).
//!
//! Every block holds agents as `Arc<dyn Agent>` ([`Agent`](crate::Agent)): a
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

// One job per module; `use super::` edges only point down (no cycles):
//   pipeline   -> hub, sequential, fanout, error   SequentialPipeline, FanoutPipeline
//   hub        -> sequential, fanout, roster, error
//                                                  MsgHub and its builder: the hub's face
//   sequential -> roster, error                    sequential(): each reply is the next input
//   fanout     -> roster, error                    fanout(): one input to every agent at once
//   roster     -> error                            who is in a hub, what each was given, delivery
//   agent_tool                                     AgentTool: an agent as another agent's tool
//   user                                           UserAgent and its inputs
//   error                                          MultiAgentError, AgentFailure, Activity
mod agent_tool;
mod error;
mod fanout;
mod hub;
mod pipeline;
mod roster;
mod sequential;
mod user;

pub use agent_tool::AgentTool;
pub use error::{Activity, AgentFailure, MultiAgentError};
pub use fanout::fanout;
pub use hub::{MsgHub, MsgHubBuilder};
pub use pipeline::{FanoutPipeline, SequentialPipeline};
pub use sequential::sequential;
pub use user::{ChannelInput, StdinInput, UserAgent, UserInput};
