//! Calling remote agents over A2A 1.0, on the official SDK's client (`a2a-client-lf`):
//! [`RemoteAgent`], a remote agent as a local [`Agent`](agentscope::Agent), and
//! [`RemoteAgentTool`], the same agent as a tool.

// One job per module; `use super::` edges only point down the list (no cycles):
//   agent  -> client, reply, tool, parts  RemoteAgent, RemoteAgentBuilder
//   tool                                   RemoteAgentTool: progress, questions as suspension
//   reply  -> client, parts                one call: a message out, updates in as events
//   client -> error                        the card, the SDK's client, headers, redaction
//   parts                                  Msg <-> A2A parts, seen from the client
//   error                                  RemoteError
mod agent;
mod client;
mod error;
mod parts;
mod reply;
mod tool;

pub use agent::{RemoteAgent, RemoteAgentBuilder};
pub use error::RemoteError;
pub use tool::RemoteAgentTool;
